"""Lesson 07's exercise checkers: 7.1 dp/edp arithmetic, 7.2 verl's per-token clipped loss, 7.3 GRPO advantages.

Each judges by property (`verlstudy.kit.properties`): named edge cases, then generated inputs.

A notebook reaches them only as check_exercise("N.M", answer); the mechanism's own loss and
advantage functions are refused as answers. A wrong answer's message names the mistake it shows; how
to get there is each checker's `method`, shown after repeated tries or by `exercise_hint`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

import torch

from verlstudy.kit import i18n
from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.kit.properties import Case, compare_on_inputs, describe_call
from verlstudy.lessons.l07_grpo_recipe.advantage_judging import (
    ADVANTAGE_ATOL,
    ADVANTAGE_CASES,
    ADVANTAGE_RTOL,
    advantage_mistake,
    no_zero_division,
    reference_advantages,
    within_float32,
)
from verlstudy.lessons.l07_grpo_recipe.check_inputs import layouts, reward_groups, token_inputs
from verlstudy.lessons.l07_grpo_recipe.grpo import clipped_token_loss, group_advantages, policy_loss

RAISES = "raises ValueError"  # what a layout that does not divide must give


def _reference_dp_sizes(world: int, tp: int, pp: int, cp: int, ep: int, etp: int) -> tuple[int, int] | str:
    dense, expert = tp * cp * pp, etp * ep * pp
    if world % dense or world % expert:
        return RAISES
    return world // dense, world // expert


_OTHER_ERRORS = (AssertionError, ArithmeticError, LookupError, TypeError, RuntimeError)


def _raising_as_value(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The learner's function with ValueError read as the answer 'raises', and a wrong raise named."""

    def run(*args: int) -> Any:
        try:
            return fn(*args)
        except ValueError as e:
            want = _reference_dp_sizes(*args)
            if want != RAISES:
                raise ExerciseFailure(
                    i18n.pick(
                        "{call} raised ValueError ({error}), but this layout divides: return the pair (dp, edp) "
                        "for it; only a layout that does not divide raises",
                        call=describe_call("my_dp_sizes", args),
                        error=e,
                    )
                ) from None
            return RAISES
        except _OTHER_ERRORS as e:
            if isinstance(e, NotImplementedError) or _reference_dp_sizes(*args) != RAISES:
                raise
            raise ExerciseFailure(
                i18n.pick(
                    "{call} raised {error_type} ({error}): this layout does not divide, and the exercise asks for "
                    "a ValueError (an `assert` raises AssertionError, and `python -O` skips it)",
                    call=describe_call("my_dp_sizes", args),
                    error_type=type(e).__name__,
                    error=e,
                )
            ) from None

    return run


# Each case is named by its input: which sizes belong to which grid, and so which product divides, is the exercise
_LAYOUT_CASES = [
    Case((512, 8, 8, 1, 64, 1), "the #7788 recipe"),
    Case((512, 8, 4, 1, 16, 2), "expert tensor parallel 2"),
    Case((512, 8, 4, 2, 8, 1), "cp 2 with ep 8"),
    Case((512, 8, 8, 1, 128, 1), "ep 128 on 512 devices"),
    Case((384, 8, 4, 1, 64, 1), "384 devices, ep 64"),
    Case((480, 8, 8, 1, 8, 1), "480 devices"),
    Case((512, 8, 6, 1, 8, 1), "pp 6 on 512 devices"),
    Case((8, 1, 1, 1, 1, 1), "one device per replica"),
    Case((64, 2, 2, 4, 2, 1), "cp 4 on a small grid"),
]


def _layout_mistake(args: tuple[Any, ...], got: Any, want: Any) -> str | None:
    world, tp, pp, cp, _ep, etp = args
    if want == RAISES:
        return i18n._("this layout does not divide, so raise ValueError")
    if got == RAISES:
        return i18n.pick(
            "this layout divides (dp={dp}, edp={edp}) but your function raised ValueError", dp=want[0], edp=want[1]
        )
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return i18n._("return a pair (dp, edp)")
    if any(isinstance(g, float) for g in got):
        return i18n._("return whole numbers (ints): replicas come in whole numbers")
    pair = tuple(got)
    if pair == (8, 1) and tuple(args) != (512, 8, 8, 1, 64, 1):
        return i18n._("(8, 1) is the recipe's answer, not this layout's: does your function read its arguments?")
    if pair == want[::-1]:
        return i18n._("the two are swapped")
    # the kind of slip, by the factor it is off by; which sizes belong where is the exercise (the method's job)
    if pair[0] == want[0] and pair[1] * cp == want[1] and cp > 1:
        return i18n.pick("your dp is right; your edp is cp times too small here (cp={cp})", cp=cp)
    if pair[1] == want[1] and pair[0] == world // (tp * pp) and cp > 1:
        return i18n.pick("your edp is right; your dp is cp times too large here (cp={cp})", cp=cp)
    if pair[1] == want[1] * etp and etp > 1 and pair[0] == want[0]:
        return i18n.pick("your dp is right; your edp is etp times too large here (etp={etp})", etp=etp)
    if pair[0] == want[0]:
        return i18n._("your dp is right, your edp is not")
    if pair[1] == want[1]:
        return i18n._("your edp is right, your dp is not")
    return None


@checker(
    "7.1",
    where=(
        "the paragraph before the exercise and ParallelLayout's error: which parallel sizes split the dense "
        "(attention) weights, and which split the experts"
    ),
    question=(
        "On 16 devices with tp=2, pp=2, cp=2, ep=4, etp=1: how many devices hold between them one whole copy of "
        "the attention weights, and how many one whole copy of the experts? For each of the five sizes, did you "
        "count it for the attention weights, the experts, or both, and why?"
    ),
    method=(
        "For each kind of weight, go through the five sizes and ask: does this size split one copy of these weights "
        "(or the work on them) across devices? The devices that together hold one copy form a group; count how "
        "many such groups the world holds, and check that they come out whole (if not, raise ValueError, which is "
        "what the exercise asks for). Do it once for the attention weights and once for the experts."
    ),
    reveals=["world = tp * cp * dp * pp", "world = etp * ep * edp * pp", "dp = 512 / 64 = 8"],
)
def check_dp_sizes(fn: Callable[[int, int, int, int, int, int], tuple[int, int]]) -> str:
    """Exercise 7.1: `fn(world, tp, pp, cp, ep, etp)` returns (dp, edp) or raises ValueError.

    Contract. Returns the dense and the expert replica counts as two ints (the exercise asks for whole numbers;
    a tuple or a list, numpy ints pass), or raises ValueError (not an assert, not another error) exactly when
    the world does not divide into whole replicas of either grid. Domain: positive sizes of real recipes:
    #7788's 512 devices with tp 8, pp 8, ep 64; GLM-5's 384 experts split up to ep 256; tp up to 16, cp and
    etp up to 8, pipeline sizes 3 and 6; worlds up to 8192 that divide both grids, one of them, or neither.
    Pure arithmetic: no effect to check.
    """
    if not callable(fn):
        raise ExerciseFailure(i18n.pick("the answer should be a function, got {kind}", kind=type(fn).__name__))
    return compare_on_inputs(
        _raising_as_value(fn),
        _reference_dp_sizes,
        inputs=layouts(),
        edge_cases=_LAYOUT_CASES,
        mistakes=_layout_mistake,
        name="my_dp_sizes",
    )


def _reference_token_loss(ratio: float, adv: float, low: float, high: float, c: float) -> float:
    as_tensor = lambda x: torch.tensor([x], dtype=torch.float64)  # noqa: E731
    return float(clipped_token_loss(as_tensor(ratio), as_tensor(adv), low, high, c)[0])


def _as_number(fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: float) -> Any:
        got = fn(*args)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            return float(got)
        return got

    return run


def _token_loss_variants(ratio: float, adv: float, low: float, high: float, c: float) -> dict[str, float]:
    """The typical wrong versions of the per-token loss, keyed by the mistake they make."""
    unclipped = -adv * ratio
    pessimistic = max(unclipped, -adv * min(max(ratio, 1 - low), 1 + high))
    symmetric = max(unclipped, -adv * min(max(ratio, 1 - low), 1 + low))
    optimistic = min(unclipped, -adv * min(max(ratio, 1 - low), 1 + high))
    right = min(pessimistic, -adv * c) if adv < 0 else pessimistic
    cap_at_c = min(pessimistic, c) if adv < 0 else pessimistic
    inside_band = {}
    if adv < 0 and c < ratio <= 1 + high:  # past clip_c, yet not above the band: a ceiling kept for above it misses
        ceiling_too_late = i18n._(
            "your ceiling for a negative advantage acts only above the clip band; here the ratio is past clip_c but "
            "inside the band"
        )
        inside_band[ceiling_too_late] = pessimistic
    return {
        **inside_band,
        i18n._("the dual clip is missing: a negative advantage's loss is not capped"): pessimistic,
        i18n._("the dual clip applies only when A < 0"): min(pessimistic, -adv * c),
        i18n._("the upper bound is 1 + clip_high, not 1 + clip_low"): (
            min(symmetric, -adv * c) if adv < 0 else symmetric
        ),
        i18n._("your cap for a negative advantage is clip_c itself, whatever the size of the advantage"): cap_at_c,
        i18n._("your loss keeps the optimistic term here (the smaller of the clipped and the unclipped one)"): (
            optimistic
        ),
        i18n._("the sign is flipped: return the loss (what is minimised), not the objective"): -right,
        i18n._("your loss is the unclipped one here (the ratio as it is), where the clipped loss differs"): unclipped,
    }


def _wrong_in_region(ratio: float, adv: float, low: float, high: float, c: float) -> str:
    """That the loss is wrong, naming the region of (ratio, advantage) it is wrong in: one sentence per region."""
    if adv < 0 and ratio > c:
        return i18n._("your loss is wrong for A < 0 with the ratio past clip_c, where the dual clip binds")
    if ratio > 1 + high and adv > 0:
        return i18n._("your loss is wrong for A > 0 with the ratio above 1 + clip_high, where the upper clip binds")
    if ratio > 1 + high:
        return i18n._(
            "your loss is wrong for A <= 0 with the ratio above 1 + clip_high, where nothing clips "
            "(the pessimistic side)"
        )
    if ratio < 1 - low and adv < 0:
        return i18n._("your loss is wrong for A < 0 with the ratio below 1 - clip_low, where the lower clip binds")
    if ratio < 1 - low:
        return i18n._(
            "your loss is wrong for A >= 0 with the ratio below 1 - clip_low, where nothing clips "
            "(the pessimistic side)"
        )
    return i18n._("your loss is wrong for the ratio inside [1 - clip_low, 1 + clip_high], where nothing clips")


def _token_loss_mistake(args: tuple[Any, ...], got: Any, want: Any) -> str | None:
    if isinstance(got, bool) or not isinstance(got, numbers.Real):
        return i18n._("return one number (a float)")
    rounded = any(math.isclose(float(got), round(float(want), d), abs_tol=1e-12) for d in range(1, 7))
    if rounded and got not in (0, want):
        return i18n._("your loss is rounded: return it at full precision")
    for name, value in _token_loss_variants(*args).items():
        if math.isclose(float(got), value, rel_tol=1e-6, abs_tol=1e-9):
            return name
    return _wrong_in_region(*args)


_LOSS_CASES = [
    Case((1.0, 1.0, 0.2, 0.28, 10.0), "ratio 1: nothing clips"),
    Case((1.5, 1.0, 0.2, 0.28, 10.0), "A > 0 above 1 + clip_high: clipped"),
    Case((1.25, 1.0, 0.2, 0.2, 10.0), "a symmetric clip binds at 1.25"),
    Case((1.25, 1.0, 0.2, 0.28, 10.0), "clip-higher does not bind at 1.25"),
    Case((0.5, 1.0, 0.2, 0.28, 10.0), "A > 0 below 1 - clip_low: unclipped (pessimistic side)"),
    Case((0.5, -1.0, 0.2, 0.28, 10.0), "A < 0 below 1 - clip_low: clipped"),
    Case((2.0, -1.0, 0.2, 0.28, 10.0), "A < 0 above 1 + clip_high: unclipped, under the dual cap"),
    Case((20.0, -1.0, 0.2, 0.28, 10.0), "A < 0 past clip_c: the dual clip caps it"),
    Case((20.0, -1.0, 0.2, 0.28, 3.0), "another clip_c"),
    Case((20.0, 2.0, 0.2, 0.28, 3.0), "A > 0 with the ratio past clip_c"),
    Case((20.0, -2.0, 0.1, 0.5, 3.0), "another clip_low and clip_high"),
    Case((1.0471975, 0.6180339, 0.2, 0.28, 10.0), "values with many digits: nothing clips, no rounding"),
    Case((1.4142136, -0.7071068, 0.2, 0.28, 10.0), "many digits, A < 0 above the band"),
]


@checker(
    "7.2",
    library_answers=[clipped_token_loss, policy_loss],
    where=(
        "the recipe's clip settings (clip_ratio_low, clip_ratio_high, clip_ratio_c) and the figure of the loss "
        "surface further on; PPO minimises a loss, the negative of the clipped objective"
    ),
    question=(
        "Take A = -1, clip_low = clip_high = 0.2, clip_c = 3 and the ratios 0.5, 1.1, 2 and 5. For each, what is "
        "the loss with the ratio as it is, and with the ratio held in its band? Which of the two does PPO keep, "
        "and what does the sentence about clip_c then do to the ratio 5? What changes if A = +1?"
    ),
    method=(
        "Work out the token's loss twice: once with the ratio as it is, once with the ratio held inside the band "
        "the two clip settings give. A loss is minimised, so decide which of the two the pessimistic choice keeps. "
        "Then reread the exercise's sentence on clip_c: decide which tokens it applies to and what ceiling it "
        "puts on their loss, and apply it last."
    ),
    reveals=["max(-A r, -A clip(r, 1 - 0.2, 1 + high))", "`-A c`"],
)
def check_token_loss(fn: Callable[[float, float, float, float, float], float]) -> str:
    """Exercise 7.2: `fn(ratio, advantage, clip_low, clip_high, clip_c)` must equal verl's per-token loss.

    Contract. Returns one number (an int, a float, a numpy scalar or a one-element tensor) equal, to 1e-6
    relative, to verl's compute_policy_loss_vanilla for one token: the pessimistic clipped PPO loss with the band
    [1 - clip_low, 1 + clip_high], then for a negative advantage the dual-clip ceiling. Domain: any ratio a
    token can have (0.01 to 60, the band's edges, clip_c itself), any advantage (0 included), clip_low in
    [0, 0.95], clip_high in [0, 2], clip_c from just above 1 (where the ceiling binds inside the band) to 30.
    Floats in, a float out: no effect to check.
    """
    if not callable(fn):
        raise ExerciseFailure(i18n.pick("the answer should be a function, got {kind}", kind=type(fn).__name__))
    return compare_on_inputs(
        _as_number(fn),
        _reference_token_loss,
        inputs=token_inputs(),
        edge_cases=_LOSS_CASES,
        mistakes=_token_loss_mistake,
        name="my_token_loss",
    )


@checker(
    "7.3",
    library_answers=[group_advantages, reference_advantages],
    where=(
        "the task's own words (GRPO's normalised advantage: which std, which epsilon; the recipe's printout shows "
        "its clip and KL settings, not these) and the idea of a group: one prompt's responses are compared with "
        "each other, not with a critic"
    ),
    question=(
        "Take the group [1, 0, 0, 0]. What is its mean, and what is its spread as torch.std measures it by default "
        "(which divisor does that use)? What advantage does the 1 get then? And for [1, 1, 1, 1], what keeps the "
        "answer from being 0 / 0?"
    ),
    method=(
        "Centre the group on its mean. Measure its spread as torch measures a sample's standard deviation by "
        "default, pad that spread with the small constant the exercise names (added, before dividing), and give "
        "each reward its centred value over the padded spread, in the order of the rewards. Return new numbers: "
        "the caller's list stays as it was."
    ),
    reveals=["its reward minus its group's mean, over the group's (unbiased) std + 1e-6"],
)
def check_advantages(fn: Callable[[list[float]], list[float]]) -> str:
    """Exercise 7.3: `fn(rewards_of_one_group)` must return GRPO's normalised advantages.

    Contract. Returns one float per reward, in order (a list, a tuple, a 1-D numpy array or tensor), equal to
    verl's (r - mean) / (unbiased std + 1e-6) to the precision of float32 arithmetic (verl's rewards are
    float32 tensors): see `check_inputs.advantage_tolerances`. Effects: the caller's list is unchanged and is
    not what is returned. Domain: groups of 2 to 64 responses: 0/1 rewards, graded rewards in [-5, 5], groups
    of equal rewards at any value (advantage 0, never NaN nor a ZeroDivisionError), and spreads near 0 down
    to 1e-7, where epsilon decides the answer.
    """
    if not callable(fn):
        raise ExerciseFailure(i18n.pick("the answer should be a function, got {kind}", kind=type(fn).__name__))
    return compare_on_inputs(
        within_float32(no_zero_division(fn)),
        reference_advantages,
        inputs=reward_groups(),
        edge_cases=ADVANTAGE_CASES,
        mistakes=advantage_mistake,
        name="my_advantages",
        rtol=ADVANTAGE_RTOL,
        atol=ADVANTAGE_ATOL,
    )
