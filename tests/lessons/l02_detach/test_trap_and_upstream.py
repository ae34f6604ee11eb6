"""The loud and silent placement cases, the byte loop of the GPU cell on CPU, and the upstream helpers."""

from __future__ import annotations

import pytest
import torch

from verlstudy.common.memtrace import AllocationTracker
from verlstudy.common.trees import detach_tree, detach_tree_always, grad_attached_paths
from verlstudy.kit.upstream import verl_available
from verlstudy.lessons.l02_detach import upstream as upstream_module
from verlstudy.lessons.l02_detach.trees import (
    TinyCheckpointedLM,
    detach_like_6699,
    policy_step,
    retained_per_micro_batch,
    train_placement_bandit,
)
from verlstudy.lessons.l02_detach.upstream import differences, upstream_detach_tree


def _step(placement: str, kl_reads: str) -> tuple[torch.Tensor, dict]:
    torch.manual_seed(0)
    policy = torch.nn.Sequential(torch.nn.Embedding(2, 3), torch.nn.Linear(3, 4))
    states, actions = torch.tensor([0, 0, 1, 1]), torch.tensor([0, 1, 2, 3])
    with torch.no_grad():
        old = torch.log_softmax(policy(states), -1).gather(-1, actions[:, None]).squeeze(-1)
    adv = torch.tensor([1.0, -1.0, 1.0, -1.0])
    ref = old + 0.1
    return policy_step(policy, states, actions, old, adv, ref, kl_coef=0.1, placement=placement, kl_reads=kl_reads)


def test_verl_shaped_loss_detached_before_the_loss_does_not_require_grad_so_backward_is_loud() -> None:
    loss, _ = _step("before_loss", "model_output")
    assert not loss.requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        loss.backward()


def test_a_live_term_outside_model_output_keeps_the_loss_attached_the_silent_case() -> None:
    loss, _ = _step("before_loss", "live")
    assert loss.requires_grad


@pytest.mark.parametrize("kl_reads", ["live", "model_output"])
def test_both_kl_sources_give_the_same_loss_value(kl_reads: str) -> None:
    assert _step("after_loss", kl_reads)[0].item() == _step("after_loss", "live")[0].item()


def test_policy_step_rejects_an_unknown_kl_source() -> None:
    with pytest.raises(ValueError, match="kl_reads must be one of"):
        _step("after_loss", "reference")


def test_wrong_placement_logs_an_exact_zero_kl_and_the_loud_run_raises() -> None:
    wrong = train_placement_bandit("before_loss", steps=4, seed=0)
    right = train_placement_bandit("after_loss", steps=4, seed=0)
    assert wrong.kls == [0.0] * 4 and wrong.grad_norms == [0.0] * 4
    assert right.kls[0] == 0.0 and all(k > 0 for k in right.kls[1:])
    with pytest.raises(RuntimeError, match="does not require grad"):
        train_placement_bandit("before_loss", steps=1, seed=0, kl_reads="model_output")


def test_retained_bytes_per_micro_batch_on_the_cpu_tracker() -> None:
    torch.manual_seed(0)
    model, ids = TinyCheckpointedLM(vocab=16, hidden=8), torch.randint(16, (3, 4))
    with AllocationTracker() as tracker:
        wrapped = retained_per_micro_batch(model, ids, wrap=True, measure=tracker.live_bytes)
        unwrapped = retained_per_micro_batch(model, ids, wrap=False, measure=tracker.live_bytes)
    assert wrapped == ids.numel() * 4  # the stored log-probs only
    assert unwrapped == ids.numel() * 4 + 2 * ids.numel() * 8 * 4  # + embedding output and its gradient


def test_retained_per_micro_batch_rejects_bad_input() -> None:
    model, ids = TinyCheckpointedLM(), torch.randint(16, (1, 2))
    with pytest.raises(TypeError, match="wrap must be True or False"):
        retained_per_micro_batch(model, ids, wrap=1, measure=lambda: 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="measure must be a function"):
        retained_per_micro_batch(model, ids, wrap=True, measure=0)
    with pytest.raises(ValueError, match="micro_batches must be an int >= 3"):
        retained_per_micro_batch(model, ids, wrap=True, measure=lambda: 0, micro_batches=2)


def test_6699_rule_detaches_flat_outputs_and_misses_nested_and_leaf_tensors() -> None:
    out = torch.randn(2, requires_grad=True) * 2
    tree = {"log_probs": out, "nested": [out * 1], "leaf": torch.randn(2, requires_grad=True), "n": 3}
    result = detach_like_6699(tree)
    assert grad_attached_paths(result, "mo") == ["mo.nested[0]", "mo.leaf"]
    assert result["log_probs"].data_ptr() == out.data_ptr() and result["n"] == 3
    with pytest.raises(TypeError, match="model_output must be a dict"):
        detach_like_6699([out])  # type: ignore[arg-type]


def test_differences_names_where_two_detach_functions_part() -> None:
    tree = {"mask": torch.ones(2), "lp": [torch.randn(2, requires_grad=True) * 1]}
    assert differences(tree, detach_tree, detach_tree) is None
    assert "same tensor object" in differences(tree, detach_tree, detach_tree_always)


@pytest.mark.skipif(not verl_available(), reason="verl is not installed")
def test_upstream_detach_tree_loads_and_agrees_on_an_engine_like_output() -> None:
    verl_detach = upstream_detach_tree()
    assert verl_detach.__module__.startswith("upstream:")
    tree = {"log_probs": torch.randn(3, requires_grad=True) * 1, "mask": torch.ones(3), "meta": ("a", 1)}
    assert differences(tree, detach_tree, verl_detach) is None


@pytest.mark.parametrize("value", [None, 7, "detach_tree"])
def test_differences_names_a_function_of_the_wrong_type(value):
    # issue 43 item 8: differences({}, None, ...) ended in "'NoneType' object is not callable"
    with pytest.raises(TypeError, match=r"argument ours must be a detach function \(tree -> tree\)"):
        differences({}, value, detach_tree)
    with pytest.raises(TypeError, match=r"argument theirs must be a detach function \(tree -> tree\)"):
        differences({}, detach_tree, value)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"cases": None}, r"argument cases must be a positive integer, got NoneType None"),
        ({"cases": "3"}, r"argument cases must be a positive integer"),
        ({"seed": [1]}, r"argument seed must be an integer, got list"),
        ({"ours": 7}, r"argument ours must be a function \(the code under comparison\) or None, got int 7"),
    ],
)
def test_compare_detach_tree_names_an_argument_of_the_wrong_type(args, named):
    # issue 43 item 8: cases=None ended in "'NoneType' object cannot be interpreted as an integer"
    with pytest.raises(TypeError, match=named):
        upstream_module.compare_detach_tree(**args)
    with pytest.raises(TypeError, match=r"argument cases must be a positive integer"):
        upstream_module.upstream_check(None)
