"""Lesson 02's checkers: the references pass; plausible wrong answers fail, each with a message naming the mistake."""

import pytest
import torch

from conftest import Wrong, checker_tests
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
    from verlstudy.lessons.l02_detach.tree_cases import _TREE_CASES

    verdict = find_checker("2.1")(own_detach_tree)
    assert verdict.startswith(f"right on {len(_TREE_CASES)} named cases and 60 generated inputs")


def test_2_1_the_nudge_never_shows_the_code_and_the_method_is_words(assert_wrong):
    verdict = assert_wrong("2.1", always_detach, mentions="same object")
    assert "type(obj)" not in verdict and ".detach()" not in verdict
    assert "type(obj)" not in exercise_method("2.1") and "(right: `stored" in exercise_reveals("2.2")[0]


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

    assert_wrong("2.1", detach_like_6699, mentions="library's own")


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
    from verlstudy.lessons.l02_detach.step_messages import _STEP_CASES

    verdict = find_checker("2.2")(step("after"))
    assert verdict.startswith(f"right on {len(_STEP_CASES)} named cases and 24 generated inputs")


def test_2_2_the_nudge_never_names_the_placement(assert_wrong):
    verdict = assert_wrong("2.2", step("before"), mentions="loss does not require grad")
    assert "detach_tree" not in verdict and "log_softmax" not in verdict
    assert "detach_tree" not in exercise_method("2.2")


def test_2_2_refuses_the_notebooks_example_engines(assert_wrong):
    import importlib.util

    from verlstudy.kit.resources import data_dir

    for name in ("fsdp", "megatron", "automodel"):
        spec = importlib.util.spec_from_file_location(f"example_{name}", data_dir() / "engines" / f"{name}_engine.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert_wrong("2.2", module.forward_step, mentions="example engines")


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


# ---------------------------------------------------------------- the tables: wrong answers named, right ones pass


def no_detach(obj):
    if isinstance(obj, dict):
        return {k: no_detach(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(no_detach(v) for v in obj)
    return obj


def one_level(obj):  # the top container only
    if isinstance(obj, dict):
        return {k: v.detach() if torch.is_tensor(v) and v.requires_grad else v for k, v in obj.items()}
    return own_detach_tree(obj)


def tuples_untouched(obj):
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: tuples_untouched(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [tuples_untouched(v) for v in obj]
    return obj


def same_list_back(obj):
    if isinstance(obj, list):
        for i, v in enumerate(obj):
            obj[i] = same_list_back(v)
        return obj
    if isinstance(obj, dict):
        return {k: same_list_back(v) for k, v in obj.items()}
    return own_detach_tree(obj)


def drops_none(obj):
    if isinstance(obj, dict):
        return {k: drops_none(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list | tuple):
        return type(obj)(drops_none(v) for v in obj)
    return own_detach_tree(obj)


def numbers_as_tensors(obj):
    if isinstance(obj, int | float) and not isinstance(obj, bool):
        return torch.tensor(obj)
    if isinstance(obj, dict):
        return {k: numbers_as_tensors(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(numbers_as_tensors(v) for v in obj)
    return own_detach_tree(obj)


def iterative_detach_tree(obj):  # right, without recursion: an explicit stack of (source, sink) pairs
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if not isinstance(obj, dict | list | tuple):
        return obj
    if isinstance(obj, dict):
        return dict(zip(obj.keys(), map(iterative_detach_tree, obj.values()), strict=True))
    items = [iterative_detach_tree(v) for v in obj]
    return items if isinstance(obj, list) else tuple(items)


def match_detach_tree(obj):
    match obj:
        case torch.Tensor() if obj.requires_grad:
            return obj.detach()
        case dict():
            return {key: match_detach_tree(value) for key, value in obj.items()}
        case list():
            return list(map(match_detach_tree, obj))
        case tuple():
            return tuple(map(match_detach_tree, obj))
        case _:
            return obj


def squeeze_all(z, a):  # squeeze() without a dimension: a one-sequence batch loses its batch axis
    return torch.log_softmax(z, -1).gather(-1, a[:, None]).squeeze()


def calls_loss_twice(policy, micro_batch, loss_function):
    model_output = {"log_probs": _true_log_probs(policy(micro_batch["states"]), micro_batch["actions"])}
    loss_function(model_output, micro_batch)
    loss, metrics = loss_function(model_output, micro_batch)
    return loss, {"model_output": detach_tree(model_output), "metrics": metrics}


def ignores_the_micro_batch(policy, micro_batch, loss_function):
    model_output = {"log_probs": _true_log_probs(policy(micro_batch["states"]), micro_batch["actions"])}
    loss, metrics = loss_function(model_output, {"advantages": torch.ones(len(micro_batch["states"]))})
    return loss, {"model_output": detach_tree(model_output), "metrics": metrics}


def stores_zeros(policy, micro_batch, loss_function):
    model_output = {"log_probs": _true_log_probs(policy(micro_batch["states"]), micro_batch["actions"])}
    loss, metrics = loss_function(model_output, micro_batch)
    return loss, {"model_output": {"log_probs": torch.zeros(4)}, "metrics": metrics}


def right_with_unsqueeze(policy, micro_batch, loss_function):
    logits = policy(micro_batch["states"])
    picked = torch.log_softmax(logits, dim=1).gather(1, micro_batch["actions"].unsqueeze(1))[:, 0]
    loss, metrics = loss_function({"log_probs": picked}, micro_batch)
    return loss, {"model_output": {"log_probs": picked.detach()}, "metrics": metrics}


def right_by_indexing(policy, micro_batch, loss_function):
    scores = policy(micro_batch["states"])
    rows = torch.arange(scores.shape[0])
    log_probs = (scores - torch.logsumexp(scores, dim=-1, keepdim=True))[rows, micro_batch["actions"]]
    live = {"log_probs": log_probs}
    loss, metrics = loss_function(live, micro_batch)
    kept = {key: value.detach() if value.requires_grad else value for key, value in live.items()}
    return loss, dict(model_output=kept, metrics=metrics)


def tensor_to_the_loss(policy, micro_batch, loss_function):  # the bare tensor, not the dict the exercise writes
    log_probs = _true_log_probs(policy(micro_batch["states"]), micro_batch["actions"])
    loss, metrics = loss_function(log_probs, micro_batch)
    return loss, {"model_output": {"log_probs": log_probs.detach()}, "metrics": metrics}


def stores_the_bare_tensor(policy, micro_batch, loss_function):  # lesson 01's consume_store raises on it
    model_output = {"log_probs": _true_log_probs(policy(micro_batch["states"]), micro_batch["actions"])}
    loss, metrics = loss_function(model_output, micro_batch)
    return loss, {"model_output": model_output["log_probs"].detach(), "metrics": metrics}


def live_log_probs_into_the_micro_batch(policy, micro_batch, loss_function):  # the leak, through another object
    micro_batch["old_log_probs"] = _true_log_probs(policy(micro_batch["states"]), micro_batch["actions"])
    model_output = {"log_probs": micro_batch["old_log_probs"]}
    loss, metrics = loss_function(model_output, micro_batch)
    return loss, {"model_output": detach_tree(model_output), "metrics": metrics}


def detached_copy_into_the_micro_batch(policy, micro_batch, loss_function):  # no graph kept, still the caller's dict
    loss, output = step("after")(policy, micro_batch, loss_function)
    micro_batch["log_probs"] = output["model_output"]["log_probs"]
    return loss, output


def scales_the_advantages_in_place(policy, micro_batch, loss_function):
    micro_batch["advantages"].add_(0.5)  # written into the caller's tensor
    return step("after")(policy, micro_batch, loss_function)


def _metrics_dropped(policy, micro_batch, loss_function):
    loss, output = step("after")(policy, micro_batch, loss_function)
    return loss, {"model_output": output["model_output"]}


def _walk(obj, leaf):
    if isinstance(obj, torch.Tensor):
        return leaf(obj)
    if isinstance(obj, dict):
        return {k: _walk(v, leaf) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_walk(v, leaf) for v in obj)
    return obj


def _detach_leaves_in_place(obj):
    def leaf(t):
        if t.requires_grad and t.grad_fn is None:
            t.detach_()  # changes the caller's tensor
        return t.detach() if t.requires_grad else t

    return _walk(obj, leaf)


def _ints_to_float(obj):
    return _walk(obj, lambda t: t.detach().float() if t.requires_grad or not t.is_floating_point() else t)


def _deepcopy_first(obj):
    import copy

    return _walk(copy.deepcopy(obj), lambda t: t.detach() if t.requires_grad else t)


WRONG = {
    "2.1": [
        Wrong(always_detach, mentions="same object", why="detaches every tensor"),
        Wrong(mutating_detach, mentions="input was mutated", why="assigns into the input"),
        Wrong(lambda obj: obj, mentions="input dict itself", why="same object returned"),
        Wrong(tuples_become_lists, mentions="tuples tuples", why="tuples become lists"),
        Wrong(tuples_untouched, mentions="tuple", why="tuples passed through"),
        Wrong(fresh_tensors, mentions="keep the values", why="new values"),
        Wrong(drops_none, mentions="every key must come back", why="drops None values"),
        Wrong(grad_fn_rule, mentions="no grad_fn", why="grad_fn test misses a leaf"),
        Wrong(detach_clone, mentions="share storage", why="a copy"),
        Wrong(top_level_like_6699, mentions="containers", why="one level (#6699's comprehension)"),
        Wrong(one_level, mentions="reach", why="one level only"),
        Wrong(same_list_back, mentions="input was mutated", why="same list object, assigned into"),
        Wrong(no_detach, mentions="must come back detached", why="rebuilds, detaches nothing"),
        Wrong(numbers_as_tensors, mentions="unchanged", why="numbers turned into tensors"),
        Wrong(_detach_leaves_in_place, mentions="detaching in place", why="detach_() on the caller's tensor"),
        Wrong(_ints_to_float, mentions="another dtype", why="integer tensors cast to float"),
        Wrong(_deepcopy_first, mentions="deep copy", why="copies every tensor first"),
    ],
    "2.2": [
        Wrong(step("never"), mentions="output.model_output.log_probs still require grad", why="never detached"),
        Wrong(step("before"), mentions="loss does not require grad", why="detached before the loss"),
        Wrong(step("detached-loss"), mentions="loss does not require grad", why="loss detached"),
        Wrong(step("flat"), mentions="'model_output'", why="output not under model_output"),
        Wrong(lambda *a: None, mentions="return a pair", why="returns nothing"),
        Wrong(
            step("after", lambda z, a: torch.softmax(z, -1).gather(-1, a[:, None]).squeeze(-1)),
            mentions="probabilities, not log",
            why="probabilities",
        ),
        Wrong(step("after", lambda z, a: z.gather(-1, a[:, None]).squeeze(-1)), mentions="raw logits", why="logits"),
        Wrong(
            step("after", lambda z, a: torch.log_softmax(z, 0).gather(-1, a[:, None]).squeeze(-1)),
            mentions="action dimension",
            why="normalised over the batch",
        ),
        Wrong(step("after", lambda z, a: -_true_log_probs(z, a)), mentions="negative log-prob", why="NLL"),
        Wrong(
            step("after", lambda z, a: torch.log_softmax(z, -1).gather(-1, a[:, None])),
            mentions="shape",
            why="not squeezed",
        ),
        Wrong(
            step("after", lambda z, a: torch.log_softmax(z, -1)[:, 0]),
            mentions="actions taken",
            why="first action only",
        ),
        Wrong(step("after", squeeze_all), mentions="one-sequence", why="B=1 loses its batch axis"),
        Wrong(calls_loss_twice, mentions="exactly once", why="loss_function called twice"),
        Wrong(ignores_the_micro_batch, mentions="micro-batch you were given", why="micro_batch not passed to the loss"),
        Wrong(stores_zeros, mentions="the stored log_probs", why="stores something else"),
        Wrong(_metrics_dropped, mentions="metrics", why="metrics dropped"),
        Wrong(tensor_to_the_loss, mentions="loss_function was handed a Tensor", why="bare tensor to the loss"),
        Wrong(stores_the_bare_tensor, mentions="stored a Tensor under 'model_output'", why="bare tensor stored"),
        Wrong(
            live_log_probs_into_the_micro_batch,
            mentions="into the caller's micro_batch",
            why="live log-probs written into the micro-batch (the leak through another object)",
        ),
        Wrong(detached_copy_into_the_micro_batch, mentions="changed the caller's micro_batch", why="adds a key"),
        Wrong(scales_the_advantages_in_place, mentions="changed the caller's micro_batch", why="in-place change"),
    ],
}

RIGHT = {
    "2.1": [iterative_detach_tree, match_detach_tree],
    "2.2": [right_with_unsqueeze, right_by_indexing],
}

test_wrong_answers_fail_naming_the_mistake, test_right_answers_written_differently_pass = checker_tests(WRONG, RIGHT)


@pytest.mark.parametrize(
    ("exercise_id", "answer"),
    [("2.1", tuples_untouched), ("2.1", one_level), ("2.2", step("after", squeeze_all)), ("2.2", step("never"))],
)
def test_a_message_shows_what_was_returned_not_the_checkers_bookkeeping(assert_wrong, exercise_id, answer):
    verdict = assert_wrong(exercise_id, answer, mentions=" returned ")
    assert "where a list is asked" not in verdict and "(at key" not in verdict, verdict
    assert "breaks the contract" not in verdict and "keeps it there" not in verdict, verdict


def test_2_2_a_message_shows_the_part_of_the_step_that_differs(assert_wrong):
    verdict = assert_wrong(
        "2.2",
        step("after", lambda z, a: torch.softmax(z, -1).gather(-1, a[:, None]).squeeze(-1)),
        mentions="probabilities",
    )
    assert "returned a step that hands loss_function the log_probs [" in verdict and "; expected [-" in verdict
    verdict = assert_wrong("2.2", live_log_probs_into_the_micro_batch, mentions="micro_batch")
    assert "with 'old_log_probs' added, holding a tensor that requires grad" in verdict
    assert "expected as it was there" in verdict


def test_a_kind_reads_with_its_article(assert_wrong):
    verdict = assert_wrong("2.2", lambda policy, micro_batch, loss_function: 3, mentions="not a pair")
    assert "returned an int, not a pair (loss, output dict); expected a pair (loss, output dict) there" in verdict
    verdict = assert_wrong("2.1", lambda obj: 3, mentions=" returned ")
    assert "returned 'an int'; expected {" in verdict, verdict


def test_the_summaries_compared_are_plain_values_shown_by_the_kits_describe_hook():
    from verlstudy.lessons.l02_detach.step_cases import _reference_forward_step, _StepRun
    from verlstudy.lessons.l02_detach.step_messages import _STEP_CASES, _show_steps
    from verlstudy.lessons.l02_detach.tree_cases import _T, _reference_detach_tree, _show_summaries, _TreeRun

    spec = _STEP_CASES[0].args[0]
    want = _StepRun(_reference_forward_step)(spec)
    got = _StepRun(lambda policy, micro_batch, loss_function: 3)(spec)
    # the events of the engine's loop, in order, each a dict of plain values
    assert type(want) is list and all(type(event) is dict for event in want) and len(got) == 1
    # the first part that differs, each side as the message writes it
    assert _show_steps(got, want) == ("an int, not a pair (loss, output dict)", "a pair (loss, output dict)")
    summary = _TreeRun(_reference_detach_tree)({"x": _T("live")})
    assert summary == {"x": "detached"} and _show_summaries(3, summary) == ("3", "{'x': 'detached'}")


def test_2_1_refuses_a_wrapper_of_the_libraries_private_body(assert_wrong):
    # detach_tree delegates to _detach_tree: a wrapper of the private body was called correct
    from verlstudy.common.trees import _detach_tree

    assert_wrong("2.1", lambda obj: _detach_tree(obj), mentions="_detach_tree")
