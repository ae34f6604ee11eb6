"""Lesson 02's checkers: the references pass; plausible wrong answers fail, each with a message naming the mistake."""

import pytest
import torch

from verlstudy.common.trees import detach_tree
from verlstudy.kit.exercises import check_exercise, exercise_method, exercise_results, exercise_reveals, find_checker
from verlstudy.kit.upstream import load_upstream, verl_available


def own_detach_tree(obj):
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: own_detach_tree(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(own_detach_tree(v) for v in obj)
    return obj


def always_detach(obj):
    if isinstance(obj, torch.Tensor):
        return obj.detach()
    if isinstance(obj, dict):
        return {k: always_detach(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(always_detach(v) for v in obj)
    return obj


def mutating_detach(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            obj[k] = mutating_detach(v)
        return dict(obj)
    if isinstance(obj, list):
        obj[:] = [mutating_detach(v) for v in obj]
        return list(obj)
    return own_detach_tree(obj)


def tuples_become_lists(obj):
    if isinstance(obj, tuple | list):
        return [tuples_become_lists(v) for v in obj]
    if isinstance(obj, dict):
        return {k: tuples_become_lists(v) for k, v in obj.items()}
    return own_detach_tree(obj)


def fresh_tensors(obj):
    if isinstance(obj, torch.Tensor):
        return torch.zeros_like(obj) if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: fresh_tensors(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(fresh_tensors(v) for v in obj)
    return obj


def grad_fn_rule(obj):  # detaches by grad_fn, as #6699's comprehension did: misses a leaf that requires grad
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.grad_fn is not None else obj
    if isinstance(obj, dict):
        return {k: grad_fn_rule(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(grad_fn_rule(v) for v in obj)
    return obj


def detach_clone(obj):  # right rule, but copies the bytes
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: detach_clone(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(detach_clone(v) for v in obj)
    return obj


def top_level_like_6699(obj):  # #6699's inline comprehension: one level, grad_fn rule
    return {k: v.detach() if torch.is_tensor(v) and v.grad_fn is not None else v for k, v in obj.items()}


def test_2_1_accepts_a_detach_tree_that_keeps_detached_leaves():
    assert find_checker("2.1")(own_detach_tree) == ""


@pytest.mark.parametrize(
    ("wrong", "mentions"),
    [
        (always_detach, "same object"),
        (mutating_detach, "input was mutated"),
        (lambda obj: obj, "a new dict must come back"),
        (tuples_become_lists, "tuples stay tuples"),
        (fresh_tensors, "keep the values"),
        (lambda obj: {k: v for k, v in obj.items() if k != "meta"}, "same keys"),
        (grad_fn_rule, "has no grad_fn"),
        (detach_clone, "share storage"),
        (top_level_like_6699, "nested containers"),
    ],
    ids=[
        "detaches-everything",
        "mutates",
        "identity",
        "tuples-to-lists",
        "new-values",
        "drops-a-key",
        "grad-fn-rule",
        "detach-clone",
        "top-level-only-6699",
    ],
)
def test_2_1_rejects(assert_wrong, wrong, mentions):
    verdict = assert_wrong("2.1", wrong, mentions=mentions)
    assert "type(obj)" not in verdict and ".detach()" not in verdict  # the nudge never shows the code


def test_2_1_rejects_a_function_that_rebuilds_containers_but_detaches_nothing(assert_wrong):
    def no_detach(obj):
        if isinstance(obj, dict):
            return {k: no_detach(v) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return type(obj)(no_detach(v) for v in obj)
        return obj

    assert_wrong("2.1", no_detach, mentions="must come back detached")


def test_2_1_and_2_2_methods_say_how_and_their_reveals_are_declared():
    assert "type(obj)(recurse(v) for v in obj)" in exercise_method("2.1")
    assert "detach_tree(model_output)" in exercise_method("2.2")
    assert "(right: stored = detach_tree(model_output) here)" in exercise_reveals("2.2")


def test_2_1_refuses_the_courses_detach_tree_and_a_wrapper_of_it(assert_wrong):
    assert_wrong("2.1", detach_tree, mentions="library's own detach_tree")
    assert_wrong("2.1", lambda obj: detach_tree(obj), mentions="calls the library's own detach_tree")


@pytest.mark.skipif(not verl_available(), reason="verl is not installed")
def test_2_1_refuses_verls_own_detach_tree(assert_wrong):
    upstream = load_upstream("workers/engine/utils.py", ["detach_tree"], {"torch": torch})["detach_tree"]
    assert_wrong("2.1", upstream, mentions="library's own detach_tree")


def test_2_1_is_not_passed_by_any_mechanism_function(assert_mechanism_does_not_pass):
    assert assert_mechanism_does_not_pass("2.1", "verlstudy.lessons.l02_detach") > 10


def test_2_1_rejects_the_courses_reconstruction_of_6699s_rule(assert_wrong):
    from verlstudy.lessons.l02_detach.trees import detach_like_6699

    assert_wrong("2.1", detach_like_6699, mentions=("library's own", "recurse"))


def step(placement, log_probs=None):
    def forward_step(policy, micro_batch, loss_function):
        logits = policy(micro_batch["states"])
        lp = (log_probs or _true_log_probs)(logits, micro_batch["actions"])
        model_output = {"log_probs": lp}
        if placement == "before":
            model_output = detach_tree(model_output)
        loss, metrics = loss_function(model_output, micro_batch)
        if placement == "detached-loss":
            loss = loss.detach()
        stored = model_output if placement in ("before", "never") else detach_tree(model_output)
        if placement == "flat":
            return loss, stored
        return loss, {"model_output": stored, "metrics": metrics}

    return forward_step


def _true_log_probs(logits, actions):
    return torch.log_softmax(logits, -1).gather(-1, actions[:, None]).squeeze(-1)


def test_2_2_accepts_detaching_after_the_loss():
    assert find_checker("2.2")(step("after")) == ""


@pytest.mark.parametrize(
    ("placement", "mentions"),
    [
        ("never", "model_output.log_probs still require grad"),
        ("before", "loss does not require grad"),
        ("detached-loss", "loss does not require grad"),
        ("flat", "'model_output'"),
    ],
)
def test_2_2_rejects(assert_wrong, placement, mentions):
    verdict = assert_wrong("2.2", step(placement), mentions=mentions)
    assert "detach_tree" not in verdict  # the placement is the answer: only the method names it


@pytest.mark.parametrize(
    ("log_probs", "mentions"),
    [
        (lambda z, a: torch.softmax(z, -1).gather(-1, a[:, None]).squeeze(-1), "probabilities, not log"),
        (lambda z, a: z.gather(-1, a[:, None]).squeeze(-1), "raw logits"),
        (lambda z, a: torch.log_softmax(z, 0).gather(-1, a[:, None]).squeeze(-1), "action dimension"),
        (lambda z, a: -_true_log_probs(z, a), "negative log-probabilities"),
        (lambda z, a: torch.log_softmax(z, -1).gather(-1, a[:, None]), "shape"),
        (lambda z, a: torch.log_softmax(z, -1)[:, 0], "not the log-probabilities of the taken actions"),
        (lambda z, a: torch.sigmoid(z).gather(-1, a[:, None]).squeeze(-1), "> 0"),
    ],
    ids=["probabilities", "logits", "wrong-dim", "nll", "not-squeezed", "first-action", "sigmoid"],
)
def test_2_2_rejects_log_probs_that_are_not_log_probabilities(assert_wrong, log_probs, mentions):
    verdict = assert_wrong("2.2", step("after", log_probs), mentions=mentions)
    assert "log_softmax" not in verdict and "gather" not in verdict  # names the mistake, not the computation


def test_2_2_rejects_storing_something_else_than_what_the_loss_read(assert_wrong):
    def forward_step(policy, micro_batch, loss_function):
        model_output = {"log_probs": _true_log_probs(policy(micro_batch["states"]), micro_batch["actions"])}
        loss, metrics = loss_function(model_output, micro_batch)
        return loss, {"model_output": {"log_probs": torch.zeros(4)}, "metrics": metrics}

    assert_wrong("2.2", forward_step, mentions="the stored log_probs")


def test_2_2_refuses_the_notebooks_example_engines(assert_wrong):
    import importlib.util

    from verlstudy.kit.resources import data_dir

    for name in ("fsdp", "megatron", "automodel"):
        spec = importlib.util.spec_from_file_location(f"example_{name}", data_dir() / "engines" / f"{name}_engine.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert_wrong("2.2", module.forward_step, mentions="example engines")


def test_2_2_rejects_an_answer_that_returns_nothing(assert_wrong):
    assert_wrong("2.2", lambda *a: None, mentions="return a pair")


def test_2_2_is_not_passed_by_any_mechanism_function(assert_mechanism_does_not_pass):
    assert_mechanism_does_not_pass("2.2", "verlstudy.lessons.l02_detach", exclude=["train_placement_bandit"])


def test_stubs_are_reported_as_not_attempted():
    def stub(*_args):
        raise NotImplementedError("exercise 2.1")

    for exercise_id in ("2.1", "2.2"):
        check_exercise(exercise_id, stub)
        assert exercise_results()[exercise_id] == "not attempted"


def test_a_non_callable_answer_is_a_type_error_naming_what_to_pass():
    with pytest.raises(TypeError, match="pass your function itself"):
        find_checker("2.2")(3)
