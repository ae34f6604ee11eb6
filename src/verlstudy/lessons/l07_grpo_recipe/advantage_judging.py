"""Exercise 7.3's judging: the reference advantages, the precision a right answer may have, and the mistakes named.

`within_float32` reads a learner's advantages as the reference's where they are as close as float32 arithmetic
gets (verl's rewards are float32 tensors), so float32 answers pass and wrong ones keep their own numbers for
`advantage_mistake` to classify. Only checks.py uses this module.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

import torch

from verlstudy.kit import i18n
from verlstudy.kit.exercises import ExerciseFailure
from verlstudy.kit.params import a_kind
from verlstudy.kit.properties import Case
from verlstudy.lessons.l07_grpo_recipe.check_inputs import advantage_tolerances
from verlstudy.lessons.l07_grpo_recipe.grpo import GRPO_EPSILON, group_advantages


def reference_advantages(rewards: list[float]) -> list[float]:
    return group_advantages(torch.tensor([rewards], dtype=torch.float64)).squeeze(0).tolist()


_OTHER_EPSILONS = (0.0, 1e-8, 1e-7, 1e-5, 1e-4, 1e-3, 1e-2)
ADVANTAGE_RTOL, ADVANTAGE_ATOL = 1e-5, 1e-6  # what the checker forgives (a float32 answer passes)


def _advantage_variants(rewards: list[float]) -> dict[str, list[float]]:
    """Typical wrong versions of GRPO's advantages for one group, keyed by the mistake they make."""
    n, mean = len(rewards), sum(rewards) / len(rewards)
    var = sum((r - mean) ** 2 for r in rewards) / (n - 1)
    population = (sum((r - mean) ** 2 for r in rewards) / n) ** 0.5
    out: dict[str, list[float]] = {}
    if population > 0:
        population_std = i18n._(
            "your std is the population one (divided by n): verl uses the unbiased std, torch's default"
        )
        out[population_std] = [(r - mean) / (population + GRPO_EPSILON) for r in rewards]
    out[i18n._("your epsilon sits inside the square root, added to the variance")] = [
        (r - mean) / (var + GRPO_EPSILON) ** 0.5 for r in rewards
    ]
    if 0 < var**0.5 < GRPO_EPSILON:
        floor = i18n.pick(
            "your answer holds the spread at {eps} or above (a floor): that is not how epsilon enters", eps=GRPO_EPSILON
        )
        out[floor] = [(r - mean) / GRPO_EPSILON for r in rewards]
    # true of a spread of 1 too (the range of 0/1 rewards): on such a group the values cannot tell them apart
    unscaled = i18n._(
        "your advantages are not scaled by the group's std here: they are the deviations from the mean as they are"
    )
    out[unscaled] = [r - mean for r in rewards]
    if var > 0:
        out[i18n._("your epsilon is added to each advantage after the division")] = [
            (r - mean) / var**0.5 + GRPO_EPSILON for r in rewards
        ]
    for eps in _OTHER_EPSILONS:
        if var > 0 or eps > 0:
            other_epsilon = i18n.pick(
                "epsilon must be {eps} (verl's default); your answer matches epsilon={other}",
                eps=GRPO_EPSILON,
                other=f"{eps:g}",
            )
            out[other_epsilon] = [(r - mean) / (var**0.5 + eps) for r in rewards]
    return out


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=ADVANTAGE_RTOL, abs_tol=ADVANTAGE_ATOL)


def advantage_mistake(args: tuple[Any, ...], got: Any, want: Any) -> str | None:
    (rewards,) = args
    try:
        items = list(got)  # once: a generator is used up by the first pass
        values = [float(g) for g in items]
    except (TypeError, ValueError):
        return i18n._("return a list of numbers, one advantage per reward")
    if len(values) != len(rewards):
        return i18n.pick("return one advantage per reward ({n} here)", n=len(rewards))
    if any(math.isnan(v) for v in values):
        return i18n._("every reward is equal here, so the group's spread is 0: your division gives NaN")
    wanted = [float(w) for w in want]
    in_order = all(_close(v, w) for v, w in zip(values, wanted, strict=True))
    if in_order:  # the numbers are right: what is wrong is what holds them
        kinds = sorted({a_kind(g) for g in items})
        return i18n.pick(
            "your numbers are right, but each is {kinds} inside {container}: return floats, in a list, a tuple, "
            "a numpy array or one tensor",
            kinds=" or ".join(kinds),
            container=a_kind(got),
        )
    if all(_close(v, w) for v, w in zip(sorted(values), sorted(wanted), strict=True)):
        return i18n._(
            "your advantages are the right numbers in another order: the i-th advantage belongs to the i-th reward"
        )
    for digits in range(1, 7):
        if all(math.isclose(v, round(w, digits), abs_tol=1e-12) for v, w in zip(values, wanted, strict=True)):
            return i18n._("your advantages are rounded: return them at full precision")
    for mistake, alt in _advantage_variants(list(rewards)).items():
        if all(_close(a, w) for a, w in zip(alt, wanted, strict=True)):
            continue  # on this group the slip gives the right numbers: it cannot be what went wrong
        if all(math.isclose(a, v, rel_tol=1e-6, abs_tol=1e-9) for a, v in zip(alt, values, strict=True)):
            return mistake
    if abs(sum(values)) > 1e-6 * len(values):
        return i18n._("your advantages do not sum to 0 over the group: subtract the group mean")
    return None


def within_float32(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The learner's advantages, read as the reference's where they are as close as float32 arithmetic gets
    (so a float32 answer passes), or as they are; a returned input list is refused (it aliases the caller's)."""

    def run(rewards: list[float]) -> Any:
        got = fn(rewards)
        if got is rewards:
            raise ExerciseFailure(
                i18n.pick(
                    "{call} returned the very list it was given: return new numbers, the caller's rewards stay theirs",
                    call=f"my_advantages({rewards!r})",
                )
            )
        if isinstance(got, torch.Tensor) and got.dim() == 1:
            values: Any = got.detach().double().tolist()
        elif type(got).__module__ == "numpy" and getattr(got, "ndim", 0) == 1:
            values = [float(v) for v in got]
        elif isinstance(got, (list, tuple)) and all(
            isinstance(g, numbers.Real) and not isinstance(g, bool) for g in got
        ):
            values = [float(g) for g in got]
        else:
            return got
        want = reference_advantages(rewards)
        if len(values) != len(want) or any(math.isnan(v) for v in values):
            return got
        n, mean = len(rewards), sum(rewards) / len(rewards)
        std = (sum((r - mean) ** 2 for r in rewards) / (n - 1)) ** 0.5
        tolerances = advantage_tolerances(rewards, want, std, GRPO_EPSILON)
        return want if all(abs(v - w) <= t for v, w, t in zip(values, want, tolerances, strict=True)) else got

    return run


def no_zero_division(fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(rewards: list[float]) -> Any:
        try:
            return fn(rewards)
        except ZeroDivisionError:
            raise ExerciseFailure(
                i18n.pick(
                    "{call} raised ZeroDivisionError: every reward is equal, so the group's spread is 0 and you "
                    "divided by it",
                    call=f"my_advantages({rewards!r})",
                )
            ) from None

    return run


ADVANTAGE_CASES = [
    Case(([1.0, 0.0, 0.0, 1.0],), "half the group right"),
    Case(([0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0],), "one right answer in eight"),
    Case(([1.0, 1.0, 1.0, 1.0],), "every reward equal: advantage 0, not NaN"),
    Case(([0.2, 0.9, 0.4],), "an odd group size"),
    Case(([0.0, 1.0],), "the smallest group, two responses"),
    Case(([0.0, 0.0, 0.0, 1e-6],), "std 5e-7, below epsilon"),
    Case(([0.0, 0.0, 0.0, 4e-6],), "std 2e-6: where epsilon 1e-6 moves the answer"),
]
