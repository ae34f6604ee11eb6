"""Lesson 02's checkers test a contract: new wrong answers of other classes fail, right ones written otherwise pass.

2.1's classes (beyond test_checks.py): a tensor test that misses nn.Parameter, a rule on the dtype instead of
requires_grad, a detach that also makes the tensor contiguous, effects on the caller's tensors (their .grad, their
values, requires_grad flipped on a parameter), a shortcut that hands back empty containers, non-tensor leaves copied,
a Sequence test that recurses into strings. 2.2's classes are below their heading.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence

import pytest
import torch

from conftest import Wrong, checker_tests
from verlstudy.kit.exercises import ExerciseFailure, find_checker

# ---------------------------------------------------------------- 2.1


def _tree(obj, leaf):
    if isinstance(obj, torch.Tensor):
        return leaf(obj)
    if isinstance(obj, dict):
        return {k: _tree(v, leaf) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_tree(v, leaf) for v in obj)
    return obj


def exact_tensor_type(obj):  # `type(obj) is torch.Tensor` misses nn.Parameter, a subclass
    if type(obj) is torch.Tensor:
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: exact_tensor_type(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(exact_tensor_type(v) for v in obj)
    return obj


def floats_detached(obj):  # "a float tensor may carry a graph": detaches plain float tensors too
    return _tree(obj, lambda t: t.detach() if t.is_floating_point() else t)


def detached_and_contiguous(obj):  # a non-contiguous view becomes a copy
    return _tree(obj, lambda t: t.detach().contiguous() if t.requires_grad else t)


def clears_the_grad(obj):  # tidies the caller's parameter: its accumulated .grad is lost
    def leaf(t):
        if t.requires_grad and t.is_leaf:
            t.grad = None
        return t.detach() if t.requires_grad else t

    return _tree(obj, leaf)


def freezes_the_parameter(obj):  # flips requires_grad on the caller's own parameter
    def leaf(t):
        if isinstance(t, torch.nn.Parameter):
            t.requires_grad_(False)
            return t
        return t.detach() if t.requires_grad else t

    return _tree(obj, leaf)


def zeroes_through_data(obj):  # writes into a detached tensor's storage: the caller's values change
    def leaf(t):
        if t.requires_grad and t.numel():
            return t.detach().clamp_(max=1.0)  # the detached tensor shares the caller's storage
        return t

    return _tree(obj, leaf)


def empty_shortcut(obj):  # "nothing to do": an empty container comes back as the caller's own object
    if isinstance(obj, dict | list | tuple) and len(obj) == 0:
        return obj
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: empty_shortcut(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(empty_shortcut(v) for v in obj)
    return obj


def copies_other_leaves(obj):  # "never share with the caller": every non-tensor leaf is copied
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: copies_other_leaves(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(copies_other_leaves(v) for v in obj)
    return copy.copy(obj)


def any_sequence(obj):  # a Sequence test: a string is rebuilt from a generator (its repr)
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: any_sequence(v) for k, v in obj.items()}
    if isinstance(obj, Sequence):
        return type(obj)(any_sequence(v) for v in obj)
    return obj


def keeps_the_grad_fn_rule_for_parameters(obj):  # detaches a live output or a Parameter, not a plain leaf
    return _tree(obj, lambda t: t.detach() if t.grad_fn is not None or isinstance(t, torch.nn.Parameter) else t)


def by_data(obj):  # right: `.data` is a detach too (same storage, no graph)
    return _tree(obj, lambda t: t.data if t.requires_grad else t)


def by_stack(obj):  # right: no recursion, an explicit stack filling new containers
    root = [None]
    stack = [(obj, root, 0)]
    while stack:
        item, parent, slot = stack.pop()
        if isinstance(item, torch.Tensor):
            parent[slot] = item.detach() if item.requires_grad else item
        elif isinstance(item, dict):
            parent[slot] = new = dict.fromkeys(item)
            stack.extend((v, new, k) for k, v in item.items())
        elif isinstance(item, list | tuple):
            new = [None] * len(item)
            stack.extend((v, new, i) for i, v in enumerate(item))
            parent[slot] = new if isinstance(item, list) else (item, new)  # tuples finished below
        else:
            parent[slot] = item
    return _finish_tuples(root[0])


def _finish_tuples(obj):
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], tuple) and isinstance(obj[1], list):
        return tuple(_finish_tuples(v) for v in obj[1])
    if isinstance(obj, dict):
        return {k: _finish_tuples(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finish_tuples(v) for v in obj]
    return obj


def parameter_kept_as_frozen_parameter(obj):  # right: a new Parameter over the same storage, without grad
    def leaf(t):
        if isinstance(t, torch.nn.Parameter) and t.requires_grad:
            return torch.nn.Parameter(t.detach(), requires_grad=False)
        return t.detach() if t.requires_grad else t

    return _tree(obj, leaf)


WRONG = {
    "2.1": [
        Wrong(exact_tensor_type, mentions="nn.Parameter", why="type(obj) is torch.Tensor"),
        Wrong(floats_detached, mentions="same object", why="every float tensor detached"),
        Wrong(detached_and_contiguous, mentions="share storage", why=".contiguous() copies a view"),
        Wrong(clears_the_grad, mentions=".grad", why="the caller's parameter loses its .grad"),
        Wrong(freezes_the_parameter, mentions="in place", why="requires_grad_(False) on the caller's parameter"),
        Wrong(zeroes_through_data, mentions="values", why="writes into the caller's storage"),
        Wrong(empty_shortcut, mentions=("input dict itself", "own list"), why="empty containers handed back"),
        Wrong(copies_other_leaves, mentions="unchanged", why="non-tensor leaves copied"),
        Wrong(any_sequence, mentions="unchanged", why="walks into strings"),
        Wrong(keeps_the_grad_fn_rule_for_parameters, mentions="no grad_fn", why="misses a plain leaf"),
    ],
}
RIGHT = {"2.1": [by_data, by_stack, parameter_kept_as_frozen_parameter]}


def depth_limited(obj, depth=0):  # "outputs are never nested more than a few levels"
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if depth >= 6:
        return obj
    if isinstance(obj, dict):
        return {k: depth_limited(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(depth_limited(v, depth + 1) for v in obj)
    return obj


def string_keys(obj):  # rebuilds a dict through keyword arguments: only string keys survive
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {str(k): string_keys(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(string_keys(v) for v in obj)
    return obj


WRONG["2.1"] += [
    Wrong(depth_limited, mentions="deep enough", why="stops recursing after six levels"),
    Wrong(string_keys, mentions="every key must come back", why="keys turned into strings"),
]


def test_2_1_first_call_is_fast():
    start = time.perf_counter()
    find_checker("2.1")(by_data)
    assert time.perf_counter() - start < 5  # generous: the benchmark measures the 0.5 s budget, not this test


# ---------------------------------------------------------------- 2.2
# Classes: effects on the engine's state (a backward of its own, gradients cleared, grad mode left off, the policy
# switched or frozen, live tensors kept in a global or on the policy), a loss handed part of the micro-batch or
# scaled, a graph cut where the value stays right, a stored copy that loses precision, a loss with no path to the
# parameters; right answers written with cross_entropy, Categorical, float64, a copied micro-batch, a recompute.


def _log_probs(policy, micro_batch):
    logits = policy(micro_batch["states"])
    return torch.log_softmax(logits, -1).gather(-1, micro_batch["actions"][:, None]).squeeze(-1)


def _right(policy, micro_batch, loss_function):
    model_output = {"log_probs": _log_probs(policy, micro_batch)}
    loss, metrics = loss_function(model_output, micro_batch)
    return loss, {"model_output": {"log_probs": model_output["log_probs"].detach()}, "metrics": metrics}


def backward_inside(policy, micro_batch, loss_function):  # "make sure the gradients exist"
    loss, output = _right(policy, micro_batch, loss_function)
    loss.backward(retain_graph=True)
    return loss, output


def zero_grad_first(policy, micro_batch, loss_function):  # "start each step clean"
    policy.zero_grad()
    return _right(policy, micro_batch, loss_function)


def grads_set_to_none(policy, micro_batch, loss_function):
    for p in policy.parameters():
        p.grad = None
    return _right(policy, micro_batch, loss_function)


_LOSSES = []


def keeps_losses_for_logging(policy, micro_batch, loss_function):  # the live loss outlives the mini-batch
    loss, output = _right(policy, micro_batch, loss_function)
    _LOSSES.append(loss)
    return loss, output


def log_probs_on_the_policy(policy, micro_batch, loss_function):  # "keep the last output for debugging"
    loss, output = _right(policy, micro_batch, loss_function)
    policy.last_log_probs = _log_probs(policy, micro_batch)
    return loss, output


def grad_mode_left_off(policy, micro_batch, loss_function):  # switches autograd off to store, never back on
    model_output = {"log_probs": _log_probs(policy, micro_batch)}
    loss, metrics = loss_function(model_output, micro_batch)
    torch.set_grad_enabled(False)
    return loss, {"model_output": {"log_probs": model_output["log_probs"] * 1}, "metrics": metrics}


def eval_mode(policy, micro_batch, loss_function):
    policy.eval()
    return _right(policy, micro_batch, loss_function)


def freezes_the_embedding(policy, micro_batch, loss_function):  # "the embedding is frozen in PEFT"
    policy[0].weight.requires_grad_(False)
    return _right(policy, micro_batch, loss_function)


def hands_only_the_advantages(policy, micro_batch, loss_function):  # "the loss only needs the advantages"
    model_output = {"log_probs": _log_probs(policy, micro_batch)}
    loss, metrics = loss_function(model_output, {"advantages": micro_batch["advantages"]})
    return loss, {"model_output": {"log_probs": model_output["log_probs"].detach()}, "metrics": metrics}


def loss_averaged_over_the_batch(policy, micro_batch, loss_function):  # scales what the engine scales itself
    loss, output = _right(policy, micro_batch, loss_function)
    return loss / len(micro_batch["states"]), output


def normaliser_detached(policy, micro_batch, loss_function):  # right values, half the gradient path cut
    logits = policy(micro_batch["states"])
    log_probs = logits - torch.logsumexp(logits, -1, keepdim=True).detach()
    picked = log_probs.gather(-1, micro_batch["actions"][:, None]).squeeze(-1)
    loss, metrics = loss_function({"log_probs": picked}, micro_batch)
    return loss, {"model_output": {"log_probs": picked.detach()}, "metrics": metrics}


def stored_in_half(policy, micro_batch, loss_function):  # "the stored copy only needs to be small"
    loss, output = _right(policy, micro_batch, loss_function)
    output["model_output"]["log_probs"] = output["model_output"]["log_probs"].half()
    return loss, output


def graph_cut_then_requires_grad(policy, micro_batch, loss_function):  # the "fix" for a loss without grad
    with torch.no_grad():
        model_output = {"log_probs": _log_probs(policy, micro_batch)}
    loss, metrics = loss_function(model_output, micro_batch)
    return loss.requires_grad_(), {"model_output": model_output, "metrics": metrics}


def pair_reversed(policy, micro_batch, loss_function):
    loss, output = _right(policy, micro_batch, loss_function)
    return output, loss


def by_cross_entropy(policy, micro_batch, loss_function):
    picked = -torch.nn.functional.cross_entropy(policy(micro_batch["states"]), micro_batch["actions"], reduction="none")
    loss, metrics = loss_function({"log_probs": picked}, micro_batch)
    return loss, {"model_output": {"log_probs": picked.detach()}, "metrics": metrics}


def by_categorical(policy, micro_batch, loss_function):
    dist = torch.distributions.Categorical(logits=policy(micro_batch["states"]))
    out = {"log_probs": dist.log_prob(micro_batch["actions"])}
    loss, metrics = loss_function(out, micro_batch)
    return loss, {"metrics": metrics, "model_output": {k: v.data for k, v in out.items()}}


def in_float64_with_a_copied_batch(policy, micro_batch, loss_function):
    logits = policy(micro_batch["states"]).double()
    picked = torch.log_softmax(logits, 1)[torch.arange(len(logits)), micro_batch["actions"]]
    loss, metrics = loss_function({"log_probs": picked}, dict(micro_batch))
    return loss, {"model_output": {"log_probs": picked.detach()}, "metrics": metrics}


def stored_by_a_recompute(policy, micro_batch, loss_function):  # a second forward without graph, for the store
    loss, metrics = loss_function({"log_probs": _log_probs(policy, micro_batch)}, micro_batch)
    with torch.no_grad():
        stored = {"log_probs": _log_probs(policy, micro_batch)}
    return loss, {"model_output": stored, "metrics": metrics}


WRONG["2.2"] = [
    Wrong(backward_inside, mentions="counted twice", why="backward(retain_graph=True) inside the step"),
    Wrong(zero_grad_first, mentions="wipes the gradients", why="zero_grad() at the top of the step"),
    Wrong(grads_set_to_none, mentions="wipes the gradients", why="p.grad = None at the top"),
    Wrong(keeps_losses_for_logging, mentions="still reachable", why="the live loss kept in a global list"),
    Wrong(log_probs_on_the_policy, mentions="still reachable", why="live log-probs kept on the policy"),
    Wrong(grad_mode_left_off, mentions="autograd disabled", why="grad mode switched off and left off"),
    Wrong(eval_mode, mentions="eval mode", why="policy.eval() inside the step"),
    Wrong(freezes_the_embedding, mentions="requires_grad changed", why="freezes a parameter"),
    Wrong(hands_only_the_advantages, mentions="micro-batch you were given", why="the loss gets part of the batch"),
    Wrong(
        loss_averaged_over_the_batch, mentions="not the one loss_function built", why="loss divided by the batch size"
    ),
    Wrong(normaliser_detached, mentions="not the engine's", why="logsumexp detached: values right, gradient not"),
    Wrong(stored_in_half, mentions="stored log_probs", why="stored in float16"),
    Wrong(graph_cut_then_requires_grad, mentions="no (or an all-zero) gradient", why="no_grad forward, then a leaf"),
    Wrong(pair_reversed, mentions="return a pair", why="(output, loss)"),
]
RIGHT["2.2"] = [by_cross_entropy, by_categorical, in_float64_with_a_copied_batch, stored_by_a_recompute]

test_wrong_answers_fail_naming_the_mistake, test_right_answers_written_differently_pass = checker_tests(WRONG, RIGHT)


def test_2_2_leaves_grad_mode_as_it_found_it():
    with pytest.raises(ExerciseFailure, match="autograd disabled"):
        find_checker("2.2")(grad_mode_left_off)
    assert torch.is_grad_enabled()


def keeps_graphs_in_a_default_argument(policy, micro_batch, loss_function, _seen=[]):  # noqa: B006 (the leak)
    loss, output = _right(policy, micro_batch, loss_function)
    _seen.append(torch.log_softmax(policy(micro_batch["states"]), -1))  # a second graph, never run backward on
    return loss, output


def test_2_2_finds_a_graph_kept_where_the_engine_never_looks(assert_wrong):
    assert_wrong("2.2", keeps_graphs_in_a_default_argument, mentions="saved for backward")


def test_2_2_refuses_the_checkers_own_reference_step(assert_wrong):
    from verlstudy.lessons.l02_detach import step_cases

    def wrapped(policy, micro_batch, loss_function):
        return step_cases._reference_forward_step(policy, micro_batch, loss_function)

    assert_wrong("2.2", wrapped, mentions=("refuse", "reference", "library"))


def test_2_1_refuses_the_checkers_own_reference_fetched_at_call_time(assert_wrong):
    import importlib

    def fetched(obj):
        module = importlib.import_module("verlstudy.lessons.l02_detach.tree_cases")
        return vars(module)["_reference_detach_tree"](obj)

    assert_wrong("2.1", fetched, mentions=("refuse", "reference", "library"))


def clips_through_a_hook(policy, micro_batch, loss_function):  # a gradient hook registered on every call
    for p in policy.parameters():
        p.register_hook(lambda g: g.clamp(-1.0, 1.0))
    return _right(policy, micro_batch, loss_function)


def test_2_2_sees_hooks_a_step_leaves_on_the_policy(assert_wrong):
    assert_wrong("2.2", clips_through_a_hook, mentions="hooks added")
