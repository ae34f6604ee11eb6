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
from hypothesis import strategies as st

from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.kit.params import a_kind
from verlstudy.kit.properties import Case, compare_on_inputs, describe_call
from verlstudy.lessons.l07_grpo_recipe.grpo import GRPO_EPSILON, clipped_token_loss, group_advantages, policy_loss

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
                    f"{describe_call('my_dp_sizes', args)} raised ValueError ({e}), but this layout divides: "
                    "return the pair (dp, edp) for it; only a layout that does not divide raises"
                ) from None
            return RAISES
        except _OTHER_ERRORS as e:
            if isinstance(e, NotImplementedError) or _reference_dp_sizes(*args) != RAISES:
                raise
            raise ExerciseFailure(
                f"{describe_call('my_dp_sizes', args)} raised {type(e).__name__} ({e}): this layout does not "
                "divide, and the exercise asks for a ValueError (an `assert` raises AssertionError, and "
                "`python -O` skips it)"
            ) from None

    return run


_SIZES = st.sampled_from((1, 2, 4, 8))


@st.composite
def _layout(draw: Any) -> tuple[int, ...]:
    tp, pp, cp, etp = draw(_SIZES), draw(_SIZES), draw(st.sampled_from((1, 1, 2, 4))), draw(st.sampled_from((1, 1, 2)))
    ep = draw(st.sampled_from((1, 2, 4, 8, 16, 32, 64)))
    base = tp * cp * pp
    world = draw(st.one_of(st.integers(1, 32).map(lambda m: m * base), st.integers(1, 1024)))
    return world, tp, pp, cp, ep, etp


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
        return "this layout does not divide, so raise ValueError"
    if got == RAISES:
        return f"this layout divides (dp={want[0]}, edp={want[1]}) but your function raised ValueError"
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "return a pair (dp, edp)"
    if any(isinstance(g, float) for g in got):
        return "return whole numbers (ints): replicas come in whole numbers"
    pair = tuple(got)
    if pair == (8, 1) and tuple(args) != (512, 8, 8, 1, 64, 1):
        return "(8, 1) is the recipe's answer, not this layout's: does your function read its arguments?"
    if pair == want[::-1]:
        return "the two are swapped"
    # the kind of slip, by the factor it is off by; which sizes belong where is the exercise (the method's job)
    if pair[0] == want[0] and pair[1] * cp == want[1] and cp > 1:
        return f"your dp is right; your edp is cp times too small here (cp={cp})"
    if pair[1] == want[1] and pair[0] == world // (tp * pp) and cp > 1:
        return f"your edp is right; your dp is cp times too large here (cp={cp})"
    if pair[1] == want[1] * etp and etp > 1 and pair[0] == want[0]:
        return f"your dp is right; your edp is etp times too large here (etp={etp})"
    if pair[0] == want[0]:
        return "your dp is right, your edp is not"
    if pair[1] == want[1]:
        return "your edp is right, your dp is not"
    return None


@checker(
    "7.1",
    where=(
        "the paragraph before the exercise and ParallelLayout's error: which parallel sizes split the dense "
        "(attention) weights, and which split the experts"
    ),
    method=(
        "Multiply together the sizes that shard the dense weights: tensor, context and pipeline parallel. Do the "
        "same for the experts: expert tensor, expert and pipeline parallel; context parallel does not shard "
        "experts. If the world size is not a whole multiple of either product, raise ValueError. Otherwise each "
        "replica count is the world size divided (as a whole number) by its own product."
    ),
    reveals=["world = tp * cp * dp * pp", "world = etp * ep * edp * pp", "dp = 512 / 64 = 8"],
)
def check_dp_sizes(fn: Callable[[int, int, int, int, int, int], tuple[int, int]]) -> str:
    """Exercise checker: `fn(world, tp, pp, cp, ep, etp)` returns (dp, edp) or raises ValueError."""
    if not callable(fn):
        raise ExerciseFailure(f"the answer should be a function, got {type(fn).__name__}")
    return compare_on_inputs(
        _raising_as_value(fn),
        _reference_dp_sizes,
        inputs=_layout(),
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
    return {
        "the dual clip is missing: a negative advantage's loss is not capped": pessimistic,
        "the dual clip applies only when A < 0": min(pessimistic, -adv * c),
        "the upper bound is 1 + clip_high, not 1 + clip_low": min(symmetric, -adv * c) if adv < 0 else symmetric,
        "your cap for a negative advantage is clip_c itself, whatever the size of the advantage": cap_at_c,
        "your loss keeps the optimistic term here (the smaller of the clipped and the unclipped one)": optimistic,
        "the sign is flipped: return the loss (what is minimised), not the objective": -right,
        "your loss is the unclipped one here (the ratio as it is), where the clipped loss differs": unclipped,
    }


def _loss_region(ratio: float, adv: float, low: float, high: float, c: float) -> str:
    if adv < 0 and ratio > c:
        return "A < 0 with the ratio past clip_c, where the dual clip binds"
    if ratio > 1 + high:
        side = "the upper clip binds" if adv > 0 else "nothing clips (the pessimistic side)"
        return f"A {'>' if adv > 0 else '<='} 0 with the ratio above 1 + clip_high, where {side}"
    if ratio < 1 - low:
        side = "the lower clip binds" if adv < 0 else "nothing clips (the pessimistic side)"
        return f"A {'>=' if adv >= 0 else '<'} 0 with the ratio below 1 - clip_low, where {side}"
    return "the ratio inside [1 - clip_low, 1 + clip_high], where nothing clips"


def _token_loss_mistake(args: tuple[Any, ...], got: Any, want: Any) -> str | None:
    if isinstance(got, bool) or not isinstance(got, numbers.Real):
        return "return one number (a float)"
    rounded = any(math.isclose(float(got), round(float(want), d), abs_tol=1e-12) for d in range(1, 7))
    if rounded and got not in (0, want):
        return "your loss is rounded: return it at full precision"
    for name, value in _token_loss_variants(*args).items():
        if math.isclose(float(got), value, rel_tol=1e-6, abs_tol=1e-9):
            return name
    return f"your loss is wrong for {_loss_region(*args)}"


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

_LOSS_INPUTS = st.tuples(
    st.sampled_from(
        (0.1, 0.5, 0.75, 0.9, 1.0, 1.1, 1.2, 1.3, 1.6, 2.0, 4.0, 12.0, 40.0, 0.8660254, 1.0471975, 3.1415927)
    ),
    st.sampled_from((-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.5, -0.7071068, 0.6180339)),
    st.sampled_from((0.0, 0.1, 0.2, 0.3)),
    st.sampled_from((0.0, 0.2, 0.28, 0.5)),
    st.sampled_from((1.5, 3.0, 10.0)),
)


@checker(
    "7.2",
    library_answers=[clipped_token_loss, policy_loss],
    where=(
        "the recipe's clip settings (clip_ratio_low, clip_ratio_high, clip_ratio_c) and the figure of the loss "
        "surface further on; PPO minimises a loss, the negative of the clipped objective"
    ),
    method=(
        "Build two candidate losses for the token: the advantage times the ratio as it is, and the advantage "
        "times the ratio held inside its band (low end one minus clip_low, high end one plus clip_high), both "
        "negated. Keep the larger of the two (the pessimistic choice). Then, only for a negative advantage, do "
        "not let the result exceed clip_c times the negated advantage."
    ),
    reveals=["max(-A r, -A clip(r, 1 - 0.2, 1 + high))", "`-A c`"],
)
def check_token_loss(fn: Callable[[float, float, float, float, float], float]) -> str:
    """Exercise checker: `fn(ratio, advantage, clip_low, clip_high, clip_c)` must equal verl's per-token loss."""
    if not callable(fn):
        raise ExerciseFailure(f"the answer should be a function, got {type(fn).__name__}")
    return compare_on_inputs(
        _as_number(fn),
        _reference_token_loss,
        inputs=_LOSS_INPUTS,
        edge_cases=_LOSS_CASES,
        mistakes=_token_loss_mistake,
        name="my_token_loss",
    )


def _reference_advantages(rewards: list[float]) -> list[float]:
    return group_advantages(torch.tensor([rewards], dtype=torch.float64)).squeeze(0).tolist()


_OTHER_EPSILONS = (0.0, 1e-8, 1e-7, 1e-5, 1e-4, 1e-3, 1e-2)
_ADVANTAGE_RTOL, _ADVANTAGE_ATOL = 1e-5, 1e-6  # what the checker forgives (a float32 answer passes)


def _advantage_variants(rewards: list[float]) -> dict[str, list[float]]:
    """Typical wrong versions of GRPO's advantages for one group, keyed by the mistake they make."""
    n, mean = len(rewards), sum(rewards) / len(rewards)
    var = sum((r - mean) ** 2 for r in rewards) / (n - 1)
    population = (sum((r - mean) ** 2 for r in rewards) / n) ** 0.5
    out: dict[str, list[float]] = {}
    if population > 0:
        out["your std is the population one (divided by n): verl uses the unbiased std, torch's default"] = [
            (r - mean) / (population + GRPO_EPSILON) for r in rewards
        ]
    out["your epsilon sits inside the square root, added to the variance"] = [
        (r - mean) / (var + GRPO_EPSILON) ** 0.5 for r in rewards
    ]
    if 0 < var**0.5 < GRPO_EPSILON:
        floor = f"your answer holds the spread at {GRPO_EPSILON} or above (a floor): that is not how epsilon enters"
        out[floor] = [(r - mean) / GRPO_EPSILON for r in rewards]
    # true of a spread of 1 too (the range of 0/1 rewards): on such a group the values cannot tell them apart
    out["your advantages are not scaled by the group's std here: they are the deviations from the mean as they are"] = [
        r - mean for r in rewards
    ]
    if var > 0:
        out["your epsilon is added to each advantage after the division"] = [
            (r - mean) / var**0.5 + GRPO_EPSILON for r in rewards
        ]
    for eps in _OTHER_EPSILONS:
        if var > 0 or eps > 0:
            out[f"epsilon must be {GRPO_EPSILON} (verl's default); your answer matches epsilon={eps:g}"] = [
                (r - mean) / (var**0.5 + eps) for r in rewards
            ]
    return out


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=_ADVANTAGE_RTOL, abs_tol=_ADVANTAGE_ATOL)


def _advantage_mistake(args: tuple[Any, ...], got: Any, want: Any) -> str | None:
    (rewards,) = args
    try:
        values = [float(g) for g in got]
    except (TypeError, ValueError):
        return "return a list of numbers, one advantage per reward"
    if len(values) != len(rewards):
        return f"return one advantage per reward ({len(rewards)} here)"
    if any(math.isnan(v) for v in values):
        return "every reward is equal here, so the group's spread is 0: your division gives NaN"
    wanted = [float(w) for w in want]
    in_order = all(_close(v, w) for v, w in zip(values, wanted, strict=True))
    if in_order:  # the numbers are right: what is wrong is what holds them
        kinds = sorted({a_kind(g) for g in got})
        return (
            f"your numbers are right, but each is {' or '.join(kinds)} inside {a_kind(got)}: return "
            "floats, in a list, a tuple, a numpy array or one tensor"
        )
    if all(_close(v, w) for v, w in zip(sorted(values), sorted(wanted), strict=True)):
        return "your advantages are the right numbers in another order: the i-th advantage belongs to the i-th reward"
    for digits in range(1, 7):
        if all(math.isclose(v, round(w, digits), abs_tol=1e-12) for v, w in zip(values, wanted, strict=True)):
            return "your advantages are rounded: return them at full precision"
    for mistake, alt in _advantage_variants(list(rewards)).items():
        if all(_close(a, w) for a, w in zip(alt, wanted, strict=True)):
            continue  # on this group the slip gives the right numbers: it cannot be what went wrong
        if all(math.isclose(a, v, rel_tol=1e-6, abs_tol=1e-9) for a, v in zip(alt, values, strict=True)):
            return mistake
    if abs(sum(values)) > 1e-6 * len(values):
        return "your advantages do not sum to 0 over the group: subtract the group mean"
    return None


def _no_zero_division(fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(rewards: list[float]) -> Any:
        try:
            return fn(rewards)
        except ZeroDivisionError:
            raise ExerciseFailure(
                f"my_advantages({rewards!r}) raised ZeroDivisionError: every reward is equal, so the group's "
                "spread is 0 and you divided by it"
            ) from None

    return run


_ADVANTAGE_CASES = [
    Case(([1.0, 0.0, 0.0, 1.0],), "half the group right"),
    Case(([0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0],), "one right answer in eight"),
    Case(([1.0, 1.0, 1.0, 1.0],), "every reward equal: advantage 0, not NaN"),
    Case(([0.2, 0.9, 0.4],), "an odd group size"),
    Case(([0.0, 1.0],), "the smallest group, two responses"),
    Case(([0.0, 0.0, 0.0, 1e-6],), "std 5e-7, below epsilon"),
    Case(([0.0, 0.0, 0.0, 4e-6],), "std 2e-6: where epsilon 1e-6 moves the answer"),
]

_ADVANTAGE_INPUTS = st.tuples(
    st.lists(
        st.one_of(st.sampled_from((0.0, 1.0, 0.5)), st.floats(-5, 5, allow_nan=False).map(lambda x: round(x, 3))),
        min_size=2,
        max_size=8,
    )
)


@checker(
    "7.3",
    library_answers=[group_advantages],
    where=(
        "the recipe's algorithm settings (GRPO, its epsilon) and the idea of a group: one prompt's responses "
        "are compared with each other, not with a critic"
    ),
    method=(
        "Find the group's mean reward, then its spread: the square root of the squared deviations from the mean, "
        f"summed and divided by one less than the group size (the unbiased estimate). Add {GRPO_EPSILON} to that "
        "spread, then give each reward its deviation from the mean divided by the padded spread; a group of equal "
        "rewards then gets zeros instead of a division by zero."
    ),
    reveals=["its reward minus its group's mean, over the group's (unbiased) std + 1e-6"],
)
def check_advantages(fn: Callable[[list[float]], list[float]]) -> str:
    """Exercise checker: `fn(rewards_of_one_group)` must return GRPO's normalised advantages."""
    if not callable(fn):
        raise ExerciseFailure(f"the answer should be a function, got {type(fn).__name__}")
    return compare_on_inputs(
        _no_zero_division(fn),
        _reference_advantages,
        inputs=_ADVANTAGE_INPUTS,
        edge_cases=_ADVANTAGE_CASES,
        mistakes=_advantage_mistake,
        name="my_advantages",
        rtol=_ADVANTAGE_RTOL,
        atol=_ADVANTAGE_ATOL,
    )
