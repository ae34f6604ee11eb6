"""Exercises: `check_exercise("N.M", answer)` finds lesson N's checker by id and records a verdict.

Checkers and their reference answers live in each lesson's `checks.py`, registered with
`@checker("N.M")`; a notebook reaches them only through `check_exercise`, so nothing it imports hands
a learner the answer. The lookup is by naming convention at run time (`verlstudy.lessons.lNN_*.checks`),
which keeps `kit` free of imports of any lesson.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

from verlstudy.kit import records

F = TypeVar("F", bound=Callable[..., Any])
EXERCISE_ID = re.compile(r"^(\d+)\.(\d+)$")
VERDICTS = ("correct", "not yet right", "not attempted")
LESSONS_PACKAGE = "verlstudy.lessons"


class ExerciseFailure(AssertionError):
    """Raised by an exercise checker with an explanation of what is wrong with the learner's answer."""


_CHECKERS: dict[str, Callable[..., object]] = {}
_VERDICTS: dict[str, dict[str, str]] = {}


def _check_id(exercise_id: object) -> tuple[int, int]:
    match = EXERCISE_ID.match(exercise_id) if isinstance(exercise_id, str) else None
    if match is None:
        raise TypeError(f"exercise id must be a string like '1.2' (lesson.exercise), got {exercise_id!r}")
    return int(match.group(1)), int(match.group(2))


def checker(exercise_id: str) -> Callable[[F], F]:
    """Register the decorated function as the checker of `exercise_id` (used in a lesson's checks.py)."""
    _check_id(exercise_id)

    def register(fn: F) -> F:
        if exercise_id in _CHECKERS and _CHECKERS[exercise_id] is not fn:
            previous = _CHECKERS[exercise_id]
            if (previous.__module__, previous.__qualname__) != (fn.__module__, fn.__qualname__):
                raise ValueError(f"exercise {exercise_id} already has a checker: {previous.__qualname__}")
        _CHECKERS[exercise_id] = fn
        return fn

    return register


def lesson_checks_module(lesson_number: int) -> str:
    """The dotted name of lesson `lesson_number`'s checks module, found by the `lNN_` folder prefix."""
    package = importlib.import_module(LESSONS_PACKAGE)
    prefix = f"l{lesson_number:02d}_"
    names = [m.name for m in pkgutil.iter_modules(package.__path__) if m.name.startswith(prefix)]
    if len(names) != 1:
        raise LookupError(f"expected one lesson package named {prefix}* under {LESSONS_PACKAGE}, found {names}")
    return f"{LESSONS_PACKAGE}.{names[0]}.checks"


def find_checker(exercise_id: str) -> Callable[..., object]:
    """The checker registered for `exercise_id`, importing its lesson's checks module on first use."""
    lesson_number, _ = _check_id(exercise_id)
    if exercise_id not in _CHECKERS:
        importlib.import_module(lesson_checks_module(lesson_number))
    if exercise_id not in _CHECKERS:
        known = ", ".join(sorted(i for i in _CHECKERS if i.startswith(f"{lesson_number}."))) or "none"
        raise ValueError(f"no checker for exercise {exercise_id!r}; lesson {lesson_number} has: {known}")
    return _CHECKERS[exercise_id]


def registered_exercises(lesson_number: int) -> list[str]:
    """Every exercise id lesson `lesson_number` has a checker for, in order."""
    importlib.import_module(lesson_checks_module(lesson_number))
    ids = [i for i in _CHECKERS if _check_id(i)[0] == lesson_number]
    return sorted(ids, key=_check_id)


def check_exercise(exercise_id: str, *answer: object, **kwargs: object) -> None:
    """Run exercise `exercise_id`'s checker on the learner's answer; print and record one verdict.

    The verdict is "correct", "not attempted" (the answer still raises NotImplementedError, as the
    student edition's stubs do) or "not yet right" (the checker raised ExerciseFailure, whose message
    says what is wrong). Any other exception in the learner's code is reported, not raised, so one
    broken answer does not stop the rest of the notebook. Verdicts: `exercise_results()`.
    """
    check = find_checker(exercise_id)
    try:
        detail = check(*answer, **kwargs)
    except NotImplementedError:
        verdict, message = "not attempted", ""
    except ExerciseFailure as e:
        verdict, message = "not yet right", str(e)
    except Exception as e:  # the learner's code crashed: say where, briefly
        last = traceback.extract_tb(e.__traceback__)[-1]
        verdict, message = "not yet right", f"your code raised {type(e).__name__}: {e} (in {last.name})"
    else:
        verdict, message = "correct", str(detail) if detail else ""
    _VERDICTS[exercise_id] = {"verdict": verdict, "message": message}
    print(f"exercise {exercise_id}: {verdict}" + (f": {message}" if message else ""))
    records.emit({"kind": "exercise", "id": exercise_id, "verdict": verdict, "message": message})


def exercise_results() -> dict[str, str]:
    """Exercise id -> verdict ("correct", "not yet right", "not attempted") in this process."""
    return {i: v["verdict"] for i, v in _VERDICTS.items()}


def reset_exercises() -> None:
    """Forget this process's verdicts (a lesson's first cell calls it through reset_claims)."""
    _VERDICTS.clear()
