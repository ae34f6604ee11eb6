"""Lesson 02's checkers: the references pass; plausible wrong answers fail, each with a message naming the mistake."""

import pytest
import torch

from verlstudy.common.trees import detach_tree
from verlstudy.kit.exercises import check_exercise, exercise_results, find_checker
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


def test_2_1_accepts_a_detach_tree_that_keeps_detached_leaves():
    assert find_checker("2.1")(own_detach_tree) == ""


@pytest.mark.parametrize(
    ("wrong", "mentions"),
    [
        (always_detach, "same object"),
        (mutating_detach, "input was mutated"),
        (lambda obj: obj, "return a new dict"),
        (tuples_become_lists, "tuples stay tuples"),
        (fresh_tensors, "keep the values"),
        (lambda obj: {k: v for k, v in obj.items() if k != "meta"}, "same keys"),
    ],
    ids=["detaches-everything", "mutates", "identity", "tuples-to-lists", "new-values", "drops-a-key"],
)
def test_2_1_rejects(assert_wrong, wrong, mentions):
    assert_wrong("2.1", wrong, mentions=mentions)


def test_2_1_refuses_the_courses_detach_tree_and_a_wrapper_of_it(assert_wrong):
    assert_wrong("2.1", detach_tree, mentions="library's own detach_tree")
    assert_wrong("2.1", lambda obj: detach_tree(obj), mentions="calls the library's own detach_tree")


@pytest.mark.skipif(not verl_available(), reason="verl is not installed")
def test_2_1_refuses_verls_own_detach_tree(assert_wrong):
    upstream = load_upstream("workers/engine/utils.py", ["detach_tree"], {"torch": torch})["detach_tree"]
    assert_wrong("2.1", upstream, mentions="library's own detach_tree")


def test_2_1_is_not_passed_by_any_mechanism_function(assert_mechanism_does_not_pass):
    assert assert_mechanism_does_not_pass("2.1", "verlstudy.lessons.l02_detach") > 10


def step(placement):
    def forward_step(policy, micro_batch, loss_function):
        logits = policy(micro_batch["states"])
        lp = torch.log_softmax(logits, -1).gather(-1, micro_batch["actions"][:, None]).squeeze(-1)
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
    assert_wrong("2.2", step(placement), mentions=mentions)


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
