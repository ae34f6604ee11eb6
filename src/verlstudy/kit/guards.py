"""Checkers for a guard the learner writes: it must pass every right implementation and fail every wrong one.

A guard fails by raising AssertionError (an `assert`); anything else it raises is its own bug, and a guard that
does not return is cut off at the kit's time limit. A wrong implementation let through is reported as
`GuardLetThrough`, which carries which one and on which calls, so a lesson can name what the guard did wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from verlstudy.kit import check_conditions, i18n
from verlstudy.kit.check_conditions import NoReturn, time_limit
from verlstudy.kit.exercises import ExerciseFailure
from verlstudy.kit.properties import describe_call

__all__ = ["GuardLetThrough", "check_guard", "guard_verdict"]


def guard_verdict(guard: Callable[..., object], *args: object) -> str | None:
    """None when the learner's guard passes, its AssertionError text when it fails.

    Any other exception is the guard's own bug (a guard fails with AssertionError), reported as such;
    NotImplementedError (a student-edition stub) propagates as "not attempted".
    """
    try:
        with time_limit(check_conditions.CALL_TIMEOUT_S):
            guard(*args)
    except (NotImplementedError, ExerciseFailure):  # first: ExerciseFailure is an AssertionError too
        raise
    except AssertionError as e:
        return str(e) or "AssertionError"
    except NoReturn:
        limit = check_conditions.CALL_TIMEOUT_S
        raise ExerciseFailure(
            i18n.pick("your guard did not return within {limit} s (an endless loop?)", limit=f"{limit:g}")
        ) from None
    except Exception as e:
        raise ExerciseFailure(
            i18n.pick(
                "your guard raised {error}: {detail} (a guard fails with AssertionError)",
                error=type(e).__name__,
                detail=e,
            )
        ) from e
    return None


class GuardLetThrough(ExerciseFailure):
    """check_guard's verdict when the guard let a wrong implementation through: which one (`impl`, and `what`
    describes it) and the argument tuples of the calls the guard passed it on (`passed`, in call order), so a
    checker can name what the guard did wrong there without reading the message."""

    def __init__(
        self, message: str, *, impl: Callable[..., Any], what: str, passed: Sequence[tuple[Any, ...]], example: str = ""
    ) -> None:
        super().__init__(message)
        self.impl, self.what, self.passed = impl, what, tuple(passed)
        self.example = example  # the part of the message naming one call it passed: a checker that names it drops it


def check_guard(
    guard: Callable[..., object],
    *,
    good: Iterable[tuple[Callable[..., Any], str]],
    bad: Iterable[tuple[Callable[..., Any], str]],
    calls: Callable[[Callable[..., Any]], Iterable[tuple[Any, ...]]] = lambda impl: [(impl,)],
    every_call: bool = False,
) -> str:
    """The learner's guard must pass every good implementation and fail every bad one.

    `calls(impl)` gives the argument tuples the guard is called with for one implementation (by
    default just `(impl,)`, for a guard that picks its own cases). A bad implementation must be
    caught on at least one of its calls, or on every one with `every_call` (each call is a case
    where it is wrong). Messages name the implementation by its description (translated in the lesson's catalog),
    never the check; a
    wrong implementation let through raises `GuardLetThrough`, which also carries it and the calls passed.
    """
    if not callable(guard):
        raise ExerciseFailure(i18n.pick("the answer should be a function, got {kind}", kind=type(guard).__name__))
    good, bad = list(good), list(bad)
    for impl, what in good:
        for args in calls(impl):
            failed = guard_verdict(guard, *args)
            if failed is not None:
                raise ExerciseFailure(
                    i18n.pick("your guard rejected {what}, which is right: {failed}", what=i18n._(what), failed=failed)
                )
    for impl, what in bad:
        verdicts = [(args, guard_verdict(guard, *args)) for args in calls(impl)]
        passed = [args for args, v in verdicts if v is None]
        if (every_call and passed) or (not every_call and len(passed) == len(verdicts)):
            # with every_call each call is a case where the implementation is wrong: name one it let through
            one = every_call and len(passed[0]) > 1
            where = i18n.pick(" (e.g. on {call})", call=describe_call("guard", passed[0][1:])) if one else ""
            message = i18n.pick("your guard let {what} through{example}", what=i18n._(what), example=where)
            raise GuardLetThrough(message, impl=impl, what=what, passed=passed, example=where)
    return i18n.pick(
        "passes {good} right implementation(s) and catches all {bad} wrong ones", good=len(good), bad=len(bad)
    )
