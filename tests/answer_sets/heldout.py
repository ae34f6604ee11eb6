"""The held-out answer sets as test cases: each answer checked as a learner's first try, its verdict returned."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

HERE = Path(__file__).resolve().parent
FIRST_SET = "heldout_2026_12"  # each set is a folder of answers from one tester who never saw the checkers


@functools.cache  # each answer file executed once per process, not once per answer
def _module(name: str, answer_set: str = FIRST_SET) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"{answer_set}_{name}", HERE / answer_set / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cases(lessons: range, answer_set: str = FIRST_SET) -> list[tuple[str, str, str]]:
    """(exercise id, WRONG or RIGHT, label) of every answer of `lessons`' exercises, in file order."""
    found = []
    for path in sorted((HERE / answer_set).glob("ex_*.py")):
        exercise = path.stem[3:].replace("_", ".")
        if int(exercise.split(".")[0]) in lessons:
            module = _module(path.stem, answer_set)
            found += [(exercise, group, label) for group in ("WRONG", "RIGHT") for label in getattr(module, group)]
    return found


def library_cases(answer_set: str = FIRST_SET) -> list[str]:
    """The labels of the answers that hand over verl's or the course's own function (all must be refused)."""
    return list(_module("library", answer_set).LIBRARY)


def verdict(exercise: str, group: str, label: str, answer_set: str = FIRST_SET) -> str:
    """The verdict of the answer and the line `check_exercise` printed, after forgetting every earlier try."""
    return _run(exercise, getattr(_module("ex_" + exercise.replace(".", "_"), answer_set), group)[label])


def library_verdict(label: str, answer_set: str = FIRST_SET) -> tuple[str, str]:
    """The exercise a library answer is handed to, and its verdict as `verdict` gives it."""
    exercise, args = _module("library", answer_set).LIBRARY[label]
    return exercise, _run(exercise, args)


def _run(exercise: str, args: tuple[object, ...]) -> str:
    from verlstudy.kit.exercises import check_exercise, exercise_results, reset_exercises

    reset_exercises()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        check_exercise(exercise, *args)
    first = next((line for line in printed.getvalue().splitlines() if line.startswith(f"exercise {exercise}:")), "")
    return f"{exercise_results()[exercise]} | {first}"


def verdict_test(lessons: range, answer_set: str = FIRST_SET) -> Callable[[str, str, str], None]:
    """A test, parametrized over `lessons`' answers: every wrong one is refused, every right one passes.

    One test module per group of lessons, so pytest-xdist's workers (one file each) share the answers."""

    known = {}  # label -> why: answers whose labelled verdict the checker does not give, named in the set
    for path in sorted((HERE / answer_set).glob("ex_*.py")):
        known.update(getattr(_module(path.stem, answer_set), "KNOWN_MISSES", {}))
    marked = [
        pytest.param(*case, marks=pytest.mark.xfail(strict=True, reason=known[case[2]])) if case[2] in known else case
        for case in cases(lessons, answer_set)
    ]

    @pytest.mark.parametrize(("exercise", "group", "label"), marked)
    def test_a_held_out_answer_gets_the_verdict_it_deserves(exercise: str, group: str, label: str) -> None:
        got = verdict(exercise, group, label, answer_set)
        expected = "correct" if group == "RIGHT" else "not yet right"
        assert got.startswith(expected + " |"), f"{exercise} {group.lower()} answer '{label}': {got}"

    return test_a_held_out_answer_gets_the_verdict_it_deserves
