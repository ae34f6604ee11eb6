"""Lesson 07's checkers test a contract: new wrong answers of other classes fail, right ones written otherwise pass.

7.1's classes: a size in the wrong grid, a check that misses one grid, the wrong error, floats. 7.2's: a rule
wrong only where clip_c sits inside the band, or for one sign of the advantage, the sign, rounding. 7.3's: the
spread measured otherwise, epsilon elsewhere or another value, half precision, the caller's list changed or
returned, the wrong shape.
"""

from __future__ import annotations

import math
import statistics
import time

import numpy as np
import pytest
import torch

from conftest import Wrong, checker_tests
from verlstudy.kit.exercises import check_exercise, exercise_hint, exercise_results
from verlstudy.lessons.l07_grpo_recipe import check_inputs

# ---------------------------------------------------------------- 7.1


def _sizes(world, tp, pp, cp, ep, etp):
    dense, expert = tp * cp * pp, etp * ep * pp
    if world % dense or world % expert:
        raise ValueError(f"{world} does not divide")
    return world // dense, world // expert


def dp_without_cp(world, tp, pp, cp, ep, etp):
    return _sizes(world, tp, pp, 1, ep, etp)


def edp_with_cp(world, tp, pp, cp, ep, etp):
    return _sizes(world, tp, pp, cp, ep * cp, etp)


def edp_without_etp(world, tp, pp, cp, ep, etp):
    return _sizes(world, tp, pp, cp, ep, 1)


def edp_without_pp(world, tp, pp, cp, ep, etp):
    dp, _ = _sizes(world, tp, pp, cp, 1, 1)
    if world % (etp * ep):
        raise ValueError("experts")
    return dp, world // (etp * ep)


def checks_dense_only(world, tp, pp, cp, ep, etp):
    if world % (tp * cp * pp):
        raise ValueError("dense")
    return world // (tp * cp * pp), world // (etp * ep * pp)


def raises_only_if_both_fail(world, tp, pp, cp, ep, etp):
    if world % (tp * cp * pp) and world % (etp * ep * pp):
        raise ValueError("both")
    return world // (tp * cp * pp), world // (etp * ep * pp)


def true_division(world, tp, pp, cp, ep, etp):
    _sizes(world, tp, pp, cp, ep, etp)
    return world / (tp * cp * pp), world / (etp * ep * pp)


def asserts(world, tp, pp, cp, ep, etp):
    assert world % (tp * cp * pp) == 0 and world % (etp * ep * pp) == 0
    return world // (tp * cp * pp), world // (etp * ep * pp)


def everything_divides(world, tp, pp, cp, ep, etp):
    if world % (tp * cp * pp * ep * etp):
        raise ValueError("all")
    return _sizes(world, tp, pp, cp, ep, etp)


def edp_from_dp(world, tp, pp, cp, ep, etp):  # the experts carved out of the dense replicas
    dp, _ = _sizes(world, tp, pp, cp, 1, 1)
    if dp % ep:
        raise ValueError("ep")
    return dp, dp // ep


def swapped(world, tp, pp, cp, ep, etp):
    return _sizes(world, tp, pp, cp, ep, etp)[::-1]


def sizes_by_divmod(world, tp, pp, cp, ep, etp):
    out = []
    for group in (tp * pp * cp, pp * ep * etp):
        count, rest = divmod(world, group)
        if rest:
            raise ValueError(f"{world} devices do not split into groups of {group}")
        out.append(count)
    return out


class LayoutError(ValueError):
    pass


def sizes_by_multiplying_back(world, tp, pp, cp, ep, etp):
    dp, edp = world // (cp * tp * pp), world // (ep * etp * pp)
    if dp * cp * tp * pp != world or edp * ep * etp * pp != world:
        raise LayoutError("no")
    return (np.int64(dp), np.int64(edp))


def sizes_via_math_prod(world, *sizes):
    tp, pp, cp, ep, etp = sizes
    grids = [math.prod((tp, cp, pp)), math.prod((etp, ep, pp))]
    if any(world % g for g in grids):
        raise ValueError("layout")
    return tuple(world // g for g in grids)


# ---------------------------------------------------------------- 7.2


def _clip(r, low, high):
    return min(max(r, 1 - low), 1 + high)


def _loss(r, a, low, high, c):
    loss = max(-a * r, -a * _clip(r, low, high))
    return min(loss, -a * c) if a < 0 else loss


def ceiling_for_every_sign(r, a, low, high, c):
    return min(max(-a * r, -a * _clip(r, low, high)), -a * c)


def ceiling_above_band_only(r, a, low, high, c):
    loss = max(-a * r, -a * _clip(r, low, high))
    return min(loss, -a * c) if a < 0 and r > 1 + high else loss


def symmetric_band(r, a, low, high, c):
    return _loss(r, a, low, low, c)


def optimistic(r, a, low, high, c):
    loss = min(-a * r, -a * _clip(r, low, high))
    return min(loss, -a * c) if a < 0 else loss


def objective(r, a, low, high, c):
    return -_loss(r, a, low, high, c)


def ceiling_is_c(r, a, low, high, c):
    loss = max(-a * r, -a * _clip(r, low, high))
    return min(loss, c) if a < 0 else loss


def ceiling_wrong_sign(r, a, low, high, c):
    loss = max(-a * r, -a * _clip(r, low, high))
    return min(loss, a * c) if a < 0 else loss


def band_swapped(r, a, low, high, c):
    return _loss(r, a, high, low, c)


def rounded(r, a, low, high, c):
    return round(_loss(r, a, low, high, c), 4)


def clipped_only(r, a, low, high, c):
    loss = -a * _clip(r, low, high)
    return min(loss, -a * c) if a < 0 else loss


def loss_by_sign(r, a, low, high, c):
    if a >= 0:
        return -a * min(r, 1 + high)
    return -a * min(max(r, 1 - low), c)


def loss_as_tensor(r, a, low, high, c):
    r, a = torch.tensor(r, dtype=torch.float64), torch.tensor(a, dtype=torch.float64)
    loss = torch.maximum(-a * r, -a * torch.clamp(r, 1 - low, 1 + high))
    return torch.where(a < 0, torch.minimum(loss, a.abs() * c), loss)


def loss_numpy(r, a, low, high, c):
    loss = np.max([-a * r, -a * np.clip(r, 1 - low, 1 + high)])
    return np.min([loss, -a * c]) if a < 0 else loss


# ---------------------------------------------------------------- 7.3


def _std(x):
    return statistics.stdev(x)


def population_std(rewards):
    m = sum(rewards) / len(rewards)
    return list((np.array(rewards) - m) / (np.std(rewards) + 1e-6))


def eps_in_sqrt(rewards):
    m = statistics.fmean(rewards)
    return [(r - m) / math.sqrt(statistics.variance(rewards) + 1e-6) for r in rewards]


def eps_1e8(rewards):
    m = statistics.fmean(rewards)
    return [(r - m) / (_std(rewards) + 1e-8) for r in rewards]


def eps_as_floor(rewards):
    m = statistics.fmean(rewards)
    return [(r - m) / max(_std(rewards), 1e-6) for r in rewards]


def zero_only_if_equal(rewards):
    m, s = statistics.fmean(rewards), _std(rewards)
    return [0.0] * len(rewards) if s == 0 else [(r - m) / s for r in rewards]


def zero_below_eps(rewards):
    m, s = statistics.fmean(rewards), _std(rewards)
    return [0.0] * len(rewards) if s < 1e-6 else [(r - m) / (s + 1e-6) for r in rewards]


def normalises_in_place(rewards):
    m, s = statistics.fmean(rewards), _std(rewards)
    for i, r in enumerate(rewards):
        rewards[i] = (r - m) / (s + 1e-6)
    return rewards


def rounded_advantages(rewards):
    m, s = statistics.fmean(rewards), _std(rewards)
    return [round((r - m) / (s + 1e-6), 4) for r in rewards]


def batch_shaped(rewards):
    x = torch.tensor([rewards], dtype=torch.float64)
    return (x - x.mean(dim=1, keepdim=True)) / (x.std(dim=1, keepdim=True) + 1e-6)


def half_precision(rewards):
    x = torch.tensor(rewards, dtype=torch.float16)
    return ((x - x.mean()) / (x.std() + 1e-6)).float()


def mean_over_n_minus_1(rewards):
    n = len(rewards)
    m = sum(rewards) / (n - 1)
    return [(r - m) / (_std(rewards) + 1e-6) for r in rewards]


def float32_torch(rewards):
    x = torch.tensor(rewards)
    return (x - x.mean()) / (x.std() + 1e-6)


def statistics_module(rewards):
    m, s = statistics.mean(rewards), statistics.stdev(rewards)
    return tuple((r - m) / (s + 1e-6) for r in rewards)


def numpy_ddof(rewards):
    x = np.asarray(rewards, dtype=np.float64)
    return (x - x.mean()) / (x.std(ddof=1) + 1e-6)


WRONG = {
    "7.1": [
        Wrong(dp_without_cp, "dp is cp times too large", why="cp left out of the dense grid"),
        Wrong(edp_with_cp, "edp is cp times too small", why="cp in the expert grid"),
        Wrong(edp_without_etp, ("does not divide", "edp", "raised"), why="etp left out"),
        Wrong(edp_without_pp, ("edp", "does not divide", "raise"), why="pp left out of the expert grid"),
        Wrong(checks_dense_only, "does not divide", why="the expert grid never checked"),
        Wrong(raises_only_if_both_fail, "does not divide", why="raises only when both fail"),
        Wrong(true_division, ("whole numbers", "int"), why="floats"),
        Wrong(asserts, "AssertionError", why="assert, not ValueError"),
        Wrong(everything_divides, "divides", why="one product of every size"),
        Wrong(edp_from_dp, ("edp", "divides", "does not divide"), why="experts carved out of dp"),
        Wrong(swapped, "swapped", why="(edp, dp)"),
    ],
    "7.2": [
        Wrong(ceiling_for_every_sign, ("applies only when A < 0", "wrong for"), why="ceiling for A > 0 too"),
        Wrong(ceiling_above_band_only, "only above the clip band", why="ceiling only above the band"),
        Wrong(symmetric_band, ("1 + clip_high", "wrong for"), why="clip_low both sides"),
        Wrong(optimistic, ("optimistic", "wrong for"), why="min instead of max"),
        Wrong(objective, "sign is flipped", why="the objective"),
        Wrong(ceiling_is_c, ("clip_c itself", "wrong for"), why="ceiling c"),
        Wrong(ceiling_wrong_sign, ("wrong for", "dual clip"), why="ceiling a * c"),
        Wrong(band_swapped, ("wrong for", "1 + clip_high"), why="clip_low and clip_high swapped"),
        Wrong(rounded, "rounded", why="rounded"),
        Wrong(clipped_only, ("wrong for", "optimistic"), why="the clipped term alone"),
    ],
    "7.3": [
        Wrong(population_std, "population", why="np.std, ddof=0"),
        Wrong(eps_in_sqrt, "inside the square root", why="epsilon added to the variance"),
        Wrong(eps_1e8, "epsilon", why="epsilon 1e-8"),
        Wrong(eps_as_floor, ("floor", "epsilon"), why="max(std, eps)"),
        Wrong(zero_only_if_equal, ("epsilon", "eps"), why="no epsilon, zeros for equal rewards"),
        Wrong(zero_below_eps, ("returned", "expected"), why="zeros below epsilon"),
        Wrong(normalises_in_place, ("changed its input", "very list"), why="normalises the caller's list"),
        Wrong(rounded_advantages, "rounded", why="rounded"),
        Wrong(batch_shaped, ("shape", "items", "list"), why="a (1, n) tensor"),
        Wrong(half_precision, ("returned", "expected"), why="float16"),
        Wrong(mean_over_n_minus_1, ("sum to 0", "mean"), why="the mean divided by n - 1"),
    ],
}
RIGHT = {
    "7.1": [sizes_by_divmod, sizes_by_multiplying_back, sizes_via_math_prod],
    "7.2": [loss_by_sign, loss_as_tensor, loss_numpy],
    "7.3": [float32_torch, statistics_module, numpy_ddof],
}
test_new_wrong_answers_fail, test_new_right_answers_pass = checker_tests(WRONG, RIGHT)


@pytest.mark.parametrize("exercise_id", ["7.1", "7.2", "7.3"])
def test_stub_is_not_attempted_and_prints_nothing_of_the_answer(exercise_id, capsys) -> None:
    def stub(*args):
        raise NotImplementedError

    check_exercise(exercise_id, stub)
    assert exercise_results()[exercise_id] == "not attempted"
    printed = capsys.readouterr().out
    for text in ("etp*ep*pp", "tp*cp*pp", "1e-06", "n - 1", "clip_c *"):
        assert text not in printed


@pytest.mark.parametrize("exercise_id", ["7.1", "7.2", "7.3"])
def test_no_rung_before_the_solution_reads_the_formula(exercise_id, capsys) -> None:
    exercise_hint(exercise_id)
    hints = capsys.readouterr().out
    assert "a question first" in hints
    for formula in ("n - 1", "one less than", "1e-06", "1e-6", "tensor, context and pipeline", "clip_c times"):
        assert formula not in hints, (exercise_id, formula)


def test_the_generators_reach_the_recipes_sizes_and_the_hard_regions() -> None:
    from hypothesis import given, settings

    seen = {"ep": set(), "raises": 0, "divides": 0, "inside": 0, "equal": 0, "tiny": 0}

    @settings(max_examples=300, derandomize=True, database=None)
    @given(check_inputs.layouts(), check_inputs.token_inputs(), check_inputs.reward_groups())
    def record(layout, token, group) -> None:
        world, tp, pp, cp, ep, etp = layout
        seen["ep"].add(ep)
        fails = world % (tp * cp * pp) or world % (etp * ep * pp)
        seen["raises" if fails else "divides"] += 1
        ratio, adv, _low, high, c = token
        seen["inside"] += adv < 0 and c < ratio <= 1 + high
        (rewards,) = group
        seen["equal"] += len(set(rewards)) == 1
        seen["tiny"] += 0 < statistics.stdev(rewards) < 1e-5

    record()
    assert {64, 256} <= seen["ep"]
    assert min(seen["raises"], seen["divides"], seen["inside"], seen["equal"], seen["tiny"]) >= 10, seen


def test_float32_answers_pass_on_every_generated_group_and_float16_ones_do_not() -> None:
    """The tolerance is float32's: verl's own float32 arithmetic is right on every group drawn."""
    from hypothesis import given, settings

    from verlstudy.lessons.l07_grpo_recipe.advantage_judging import reference_advantages, within_float32

    @settings(max_examples=300, derandomize=True, database=None)
    @given(check_inputs.reward_groups())
    def float32_is_read_as_the_reference(group) -> None:
        (rewards,) = group
        assert within_float32(float32_torch)(list(rewards)) == reference_advantages(list(rewards))

    float32_is_read_as_the_reference()
    rewards = [0.0, 0.25, 0.5, 1.0, 0.75]
    assert within_float32(half_precision)(rewards) != reference_advantages(rewards)


def test_each_check_is_quick() -> None:
    for exercise_id, answer in (("7.1", _sizes), ("7.2", _loss), ("7.3", statistics_module)):
        start = time.process_time()
        check_exercise(exercise_id, answer)
        assert exercise_results()[exercise_id] == "correct"
        assert time.process_time() - start < 1.0  # CPU, not wall: a loaded machine does not fail it


def test_the_reference_in_its_own_module_is_refused_too(assert_wrong) -> None:
    """7.3's reference lives outside checks.py (advantage_judging): wrapped or called, it must not pass."""
    from verlstudy.lessons.l07_grpo_recipe import advantage_judging

    assert_wrong("7.3", advantage_judging.reference_advantages, mentions="library's own")
    assert_wrong(
        "7.3",
        lambda rewards: advantage_judging.reference_advantages(rewards),
        mentions=("course's own", "library's own"),
    )
    kept = [advantage_judging.reference_advantages]
    assert_wrong("7.3", lambda rewards: kept[0](rewards), mentions=("course's own", "library's own"))
