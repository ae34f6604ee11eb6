"""Lesson 07's exercise checkers: 7.1 dp/edp arithmetic, 7.2 verl's per-token clipped loss, 7.3 GRPO advantages.

A notebook reaches them only as check_exercise("N.M", answer); the mechanism's own loss and
advantage functions are refused as answers. A wrong answer's message names the mistake it shows; how
to get there is each checker's `method`, shown after repeated tries or by `exercise_hint`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

import torch

from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.lessons.l07_grpo_recipe.grpo import GRPO_EPSILON, clipped_token_loss, group_advantages, policy_loss
from verlstudy.lessons.l07_grpo_recipe.parallel import ParallelLayout

_LAYOUT_CASES: tuple[tuple[int, int, int, int, int, int], ...] = (
    # (world, tp, pp, cp, ep, etp)
    (512, 8, 8, 1, 64, 1),  # the #7788 recipe
    (512, 8, 4, 1, 16, 2),
    (512, 8, 4, 2, 8, 1),  # cp enters dp, not edp: dp 8, edp 16
    (512, 8, 8, 1, 128, 1),  # experts do not divide: 1*128*8 = 1024 > 512
    (384, 8, 4, 1, 64, 1),  # dense divides (dp 12), experts do not: 384 % 256 != 0
    (480, 8, 8, 1, 8, 1),  # 480 % 64 != 0: no whole dp
    (512, 8, 6, 1, 8, 1),  # 512 % 48 != 0
)


@checker(
    "7.1",
    method=(
        "the dense weights are split by tp, cp and pp, so dp = world // (tp*cp*pp); the experts by etp, ep and pp "
        "(cp does not enter), so edp = world // (etp*ep*pp). First check world % (tp*cp*pp) and "
        "world % (etp*ep*pp), and raise ValueError if either is not 0"
    ),
    reveals=["world = tp * cp * dp * pp", "world = etp * ep * edp * pp", "dp = 512 / 64 = 8"],
)
def check_dp_sizes(fn: Callable[[int, int, int, int, int, int], tuple[int, int]]) -> str:
    """Exercise checker: `fn(world, tp, pp, cp, ep, etp)` returns (dp, edp) or raises ValueError."""
    if not callable(fn):
        raise ExerciseFailure("pass your function itself, e.g. check_dp_sizes(dp_sizes)")
    for world, tp, pp, cp, ep, etp in _LAYOUT_CASES:
        args = f"world={world}, tp={tp}, pp={pp}, cp={cp}, ep={ep}, etp={etp}"
        try:
            layout = ParallelLayout(nodes=1, devices_per_node=world, tp=tp, pp=pp, cp=cp, ep=ep, etp=etp)
            want: tuple[int, int] | None = (layout.dp, layout.edp)
        except ValueError:
            want = None
        try:
            got = fn(world, tp, pp, cp, ep, etp)
        except ValueError:
            if want is None:
                continue
            raise ExerciseFailure(
                f"{args} divides (dp={want[0]}, edp={want[1]}) but your function raised ValueError"
            ) from None
        if want is None:
            raise ExerciseFailure(f"{args} does not divide, so raise ValueError; you returned {got!r}")
        if not isinstance(got, tuple | list) or len(got) != 2 or tuple(got) != want:
            raise ExerciseFailure(
                f"for {args} you returned {got!r}, expected (dp, edp) = {want}{_layout_mistake(got, want, cp)}"
            )
    return f"{len(_LAYOUT_CASES)} layouts match"


def _layout_mistake(got: object, want: tuple[int, int], cp: int) -> str:
    """The mistake a wrong (dp, edp) shows, named without the formula."""
    if not isinstance(got, tuple | list) or len(got) != 2:
        return ": return a pair (dp, edp)"
    if tuple(got) == want[::-1]:
        return ": the two are swapped"
    if got[0] == want[0] and got[1] * cp == want[1]:
        return ": your edp is divided by cp too, but cp does not enter the expert grid"
    if got[0] == want[0]:
        return ": your dp is right, your edp is not"
    if got[1] == want[1]:
        return ": your edp is right, your dp is not"
    return ""


_LOSS_CASES: tuple[tuple[float, float, float, float, float], ...] = (
    # (ratio, advantage, clip_low, clip_high, clip_c): one case per region of the surface
    (1.0, 1.0, 0.2, 0.28, 10.0),
    (1.5, 1.0, 0.2, 0.28, 10.0),  # A > 0, above 1 + clip_high: clipped
    (1.25, 1.0, 0.2, 0.2, 10.0),  # symmetric clip binds at 1.25, clip-higher would not
    (1.25, 1.0, 0.2, 0.28, 10.0),
    (0.5, 1.0, 0.2, 0.28, 10.0),  # A > 0, below 1 - clip_low: unclipped (pessimistic side)
    (0.5, -1.0, 0.2, 0.28, 10.0),  # A < 0, below 1 - clip_low: clipped
    (2.0, -1.0, 0.2, 0.28, 10.0),  # A < 0, above 1 + clip_high: unclipped, under the dual cap
    (20.0, -1.0, 0.2, 0.28, 10.0),  # A < 0, past clip_c: the dual clip caps it
    (20.0, -1.0, 0.2, 0.28, 3.0),
    (20.0, 2.0, 0.2, 0.28, 3.0),  # A > 0: the dual clip never applies
)


def _token_loss_variants(ratio: float, adv: float, low: float, high: float, c: float) -> dict[str, float]:
    """The per-token loss and the typical wrong versions of it, to name the learner's mistake."""
    unclipped = -adv * ratio
    pessimistic = max(unclipped, -adv * min(max(ratio, 1 - low), 1 + high))
    symmetric = max(unclipped, -adv * min(max(ratio, 1 - low), 1 + low))
    return {
        "right": min(pessimistic, -adv * c) if adv < 0 else pessimistic,
        "the dual clip is missing: a negative advantage's loss is not capped": pessimistic,
        "the dual clip applies only when A < 0": min(pessimistic, -adv * c),
        "the upper bound is 1 + clip_high, not 1 + clip_low": min(symmetric, -adv * c) if adv < 0 else symmetric,
        "take the max (the pessimistic term), not the min": min(unclipped, -adv * min(max(ratio, 1 - low), 1 + high)),
    }


def _loss_region(ratio: float, adv: float, low: float, high: float, c: float) -> str:
    """Where on the loss surface a case lies, to say where a wrong loss goes wrong."""
    if adv < 0 and ratio > c:
        return "A < 0 with the ratio past clip_c, where the dual clip binds"
    if ratio > 1 + high:
        side = "the upper clip binds" if adv > 0 else "nothing clips (the pessimistic side)"
        return f"A {'>' if adv > 0 else '<'} 0 with the ratio above 1 + clip_high, where {side}"
    if ratio < 1 - low:
        side = "the lower clip binds" if adv < 0 else "nothing clips (the pessimistic side)"
        return f"A {'>' if adv > 0 else '<'} 0 with the ratio below 1 - clip_low, where {side}"
    return "the ratio inside [1 - clip_low, 1 + clip_high], where nothing clips"


@checker(
    "7.2",
    library_answers=[clipped_token_loss, policy_loss],
    method=(
        "per token, take the pessimistic (larger) of the unclipped and the clipped term: "
        "max(-A*r, -A*min(max(r, 1 - clip_low), 1 + clip_high)); then, only when A < 0, cap it: "
        "min(that, -A*clip_c)"
    ),
    reveals=["max(-A r, -A clip(r, 1 - 0.2, 1 + high))", "`-A c`"],
)
def check_token_loss(fn: Callable[[float, float, float, float, float], float]) -> str:
    """Exercise checker: `fn(ratio, advantage, clip_low, clip_high, clip_c)` must equal verl's per-token loss."""
    if not callable(fn):
        raise ExerciseFailure("pass your function itself, e.g. check_token_loss(token_loss)")
    for ratio, adv, low, high, c in _LOSS_CASES:
        want = float(clipped_token_loss(torch.tensor([ratio]), torch.tensor([adv]), low, high, c)[0])
        got = fn(ratio, adv, low, high, c)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = float(got)
        if isinstance(got, bool) or not isinstance(got, numbers.Real):
            raise ExerciseFailure(f"return one number (a float), got {type(got).__name__} {got!r}")
        if abs(float(got) - want) > 1e-6:
            variants = _token_loss_variants(ratio, adv, low, high, c)
            mistake = next(
                (name for name, v in variants.items() if name != "right" and abs(v - float(got)) < 1e-6),
                f"your loss is wrong for {_loss_region(ratio, adv, low, high, c)}",
            )
            raise ExerciseFailure(
                f"for ratio={ratio}, A={adv}, clip_low={low}, clip_high={high}, clip_c={c} you returned {got:.4g}, "
                f"expected {want:.4g}: {mistake}"
            )
    return f"{len(_LOSS_CASES)} cases match"


# (rewards, why): the tiny-spread group (std 2e-6) is where epsilon=1e-6 moves the answer visibly
_ADVANTAGE_CASES: tuple[list[float], ...] = (
    [1.0, 0.0, 0.0, 1.0],
    [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [1.0, 1.0, 1.0, 1.0],
    [0.2, 0.9, 0.4],
    [0.0, 0.0, 0.0, 4e-6],  # std 2e-6: epsilon 1e-6 gives the last response 1.0; epsilon 0 would give 1.5
)
_OTHER_EPSILONS = (0.0, 1e-8, 1e-7, 1e-5, 1e-4, 1e-3, 1e-2)


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
    out["your epsilon sits inside the square root: add epsilon to the std, not to the variance"] = [
        (r - mean) / (var + GRPO_EPSILON) ** 0.5 for r in rewards
    ]
    out["your advantages are not scaled by the group's spread"] = [r - mean for r in rewards]
    for eps in _OTHER_EPSILONS:
        if var > 0 or eps > 0:
            out[f"epsilon must be {GRPO_EPSILON} (verl's default); your answer matches epsilon={eps:g}"] = [
                (r - mean) / (var**0.5 + eps) for r in rewards
            ]
    return out


@checker(
    "7.3",
    library_answers=[group_advantages],
    method=(
        f"take the group's mean and its unbiased std (the root of the squared deviations summed and divided by "
        f"n - 1); each advantage is (r - mean) / (std + {GRPO_EPSILON}), so a constant group gives 0, not NaN"
    ),
    reveals=["its reward minus its group's mean, over the group's (unbiased) std + 1e-6"],
)
def check_advantages(fn: Callable[[list[float]], list[float]]) -> str:
    """Exercise checker: `fn(rewards_of_one_group)` must return GRPO's normalised advantages."""
    if not callable(fn):
        raise ExerciseFailure("pass your function itself, e.g. check_advantages(advantages)")
    for rewards in _ADVANTAGE_CASES:
        want = group_advantages(torch.tensor([rewards], dtype=torch.float64)).squeeze(0).tolist()
        try:
            got = fn(list(rewards))
        except ZeroDivisionError as e:
            if len(set(rewards)) != 1:
                raise
            raise ExerciseFailure(
                f"rewards {rewards} raised ZeroDivisionError: every reward is equal, so the std is 0 and "
                f"you divided by it; add epsilon={GRPO_EPSILON}"
            ) from e
        if isinstance(got, torch.Tensor):
            got = got.tolist()
        if not isinstance(got, list | tuple) or len(got) != len(rewards):
            raise ExerciseFailure(f"for rewards {rewards} return a list of {len(rewards)} advantages, got {got!r}")
        if any(isinstance(g, bool) or not isinstance(g, numbers.Real) for g in got):
            raise ExerciseFailure(f"for rewards {rewards} return numbers (floats), got {got!r}")
        if any(math.isnan(float(g)) for g in got):
            raise ExerciseFailure(
                f"rewards {rewards} gave NaN: every reward is equal, so the std is 0; add epsilon={GRPO_EPSILON}"
            )
        if any(abs(float(g) - w) > 1e-4 * max(1.0, abs(w)) for g, w in zip(got, want, strict=True)):
            centred = abs(sum(float(g) for g in got)) <= 1e-6 * len(got)
            mistake = next(
                (
                    mistake
                    for mistake, alt in _advantage_variants(rewards).items()
                    if all(abs(a - float(g)) <= 1e-6 * max(1.0, abs(a)) for a, g in zip(alt, got, strict=True))
                ),
                "" if centred else "your advantages do not sum to 0 over the group: subtract the group mean",
            )
            raise ExerciseFailure(
                f"for rewards {rewards} you returned {[round(float(g), 4) for g in got]}, "
                f"expected {[round(w, 4) for w in want]}" + (f"; {mistake}" if mistake else "")
            )
    return f"{len(_ADVANTAGE_CASES)} groups match"
