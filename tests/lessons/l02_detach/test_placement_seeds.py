"""Section 2's claims hold for every seed the lesson accepts, not only seed 0 (issues 41 item 3 and 43).

Seeds 2 and 5 draw a first batch in which no group's rewards differ: its advantages are all 0, the right placement's
first gradient is exactly 0 and its KL is still 0 at step 1. The claim is about the policy after its first update,
which `first_update` finds; the step functions (`loss_detached_before` / `loss_detached_after`) are the lesson's.
"""

from __future__ import annotations

import pytest
import torch

from verlstudy.lessons.l02_detach import trees


def _runs(seed: int, **sizes: float) -> tuple[trees.TrapRun, trees.TrapRun]:
    right, wrong = (trees.train_placement_bandit(p, seed=seed, **sizes) for p in ("after_loss", "before_loss"))
    return right, wrong


def _section_2_claims(right: trees.TrapRun, wrong: trees.TrapRun, steps: int) -> dict[str, bool]:
    """The notebook's section-2 claims, as the cell states them."""
    first_update = next(i for i, g in enumerate(right.grad_norms) if g > 0)
    late_gain = sum(right.rewards[-3:]) / 3 - sum(wrong.rewards[-3:]) / 3
    return {
        "step-0 loss identical": right.losses[0] == wrong.losses[0],
        "loss gap within 0.01": max(abs(a - b) for a, b in zip(right.losses, wrong.losses, strict=True)) <= 0.01,
        "wrong: no gradient": max(wrong.grad_norms) == 0 and wrong.param_change == 0,
        "right: non-zero gradients on >= 75% of steps": sum(g > 0 for g in right.grad_norms) >= 0.75 * steps,
        "right: the policy moved": right.param_change > 0,
        "wrong: KL exactly 0": wrong.kls == [0.0] * steps,
        "right: KL above 0 after the first update": all(k > 0 for k in right.kls[first_update + 1 :]),
        "right ends with a higher reward": late_gain > 0.1,
    }


@pytest.mark.parametrize("seed", range(6))
def test_section_2_claims_hold_for_seeds_0_to_5_at_the_default_sizes(seed: int) -> None:
    right, wrong = _runs(seed, steps=12, group_size=8, lr=0.5, kl_coef=0.001)
    failed = [name for name, held in _section_2_claims(right, wrong, 12).items() if not held]
    assert failed == [], f"seed {seed}: {failed}"


@pytest.mark.parametrize("seed", range(6))
def test_section_2_claims_hold_at_the_smallest_accepted_sizes(seed: int) -> None:
    """At 8 steps the reward gap sat inside the sampling noise for seeds 1, 4 and 5: 12 is the least accepted."""
    right, wrong = _runs(seed, steps=12, group_size=4, lr=0.5, kl_coef=1e-6)
    failed = [name for name, held in _section_2_claims(right, wrong, 12).items() if not held]
    assert failed == [], f"seed {seed}: {failed}"


def test_a_first_batch_without_signal_gives_a_zero_first_gradient_and_a_zero_kl_at_step_1() -> None:
    """Seed 2's first batch: every group's rewards are equal, so its advantages are 0 (why the claim waits)."""
    right, _ = _runs(2, steps=12, group_size=8, lr=0.5, kl_coef=0.001)
    assert right.grad_norms[0] == 0 and right.kls[1] == 0.0 and right.grad_norms[1] > 0 and right.kls[2] > 0


def test_the_two_step_functions_differ_only_in_where_detach_tree_sits() -> None:
    torch.manual_seed(0)
    logits = torch.randn(4, 3, requires_grad=True)
    log_probs = torch.log_softmax(logits, -1)[:, 0]
    args = (log_probs, log_probs.detach() - 0.1, torch.tensor([1.0, -1.0, 1.0, -1.0]), log_probs.detach() + 0.2)
    before, out_before = trees.loss_detached_before(*args, 0.1, True)
    after, out_after = trees.loss_detached_after(*args, 0.1, True)
    assert before.item() == after.item()
    assert not out_before["model_output"]["log_probs"].requires_grad
    assert not out_after["model_output"]["log_probs"].requires_grad
    (g_before,) = torch.autograd.grad(before, logits, retain_graph=True)
    (g_after,) = torch.autograd.grad(after, logits)
    assert not torch.equal(g_before, g_after)  # the trap drops the policy-gradient term's gradient


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 5])  # the two largest gaps at kl_coef=0.005 (0.0135 and 0.0147)
def test_the_loss_gap_stays_within_0_01_at_the_largest_accepted_kl_coef_over_200_steps(seed: int) -> None:
    right, wrong = _runs(seed, steps=200, group_size=4, lr=0.5, kl_coef=0.002)
    assert max(abs(a - b) for a, b in zip(right.losses, wrong.losses, strict=True)) <= 0.01


@pytest.mark.parametrize(("name", "value", "why"), [("steps", 8, "sampling noise"), ("kl_coef", 0.005, "loss")])
def test_a_value_outside_the_range_where_the_claims_hold_is_refused_with_the_reason(name, value, why) -> None:
    from verlstudy.lessons.l02_detach.setup import lesson_setup

    args = {"device": "cpu", "seed": 0, "n_leaves": 10, "steps": 12, "group_size": 8, "lr": 0.5, "kl_coef": 0.001}
    with pytest.raises(ValueError, match=rf"^parameter {name}=.* out of range; allowed: .*: .*{why}"):
        lesson_setup(**(args | {name: value}))
