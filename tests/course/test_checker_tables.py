"""Every exercise's checker is tested with >= 5 plausible wrong answers and >= 2 right ones written differently.

Each lesson's tests/lessons/lNN_*/test_checks.py holds the tables WRONG and RIGHT (exercise id -> answers)
and turns them into tests with conftest.checker_tests; this test counts them.
"""

import importlib.util
from pathlib import Path

import pytest

from verlstudy.kit import exercises

TESTS = Path(__file__).resolve().parents[1] / "lessons"
MIN_WRONG, MIN_RIGHT = 5, 2


def tables(lesson: int) -> tuple[dict, dict]:
    (path,) = TESTS.glob(f"l{lesson:02d}_*/test_checks.py")
    spec = importlib.util.spec_from_file_location(f"_tables_{lesson:02d}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, "WRONG", {}), getattr(module, "RIGHT", {})


@pytest.mark.parametrize("lesson", range(10))
def test_each_exercise_has_enough_wrong_and_right_answers(lesson):
    wrong, right = tables(lesson)
    short = {
        i: (len(wrong.get(i, [])), len(right.get(i, [])))
        for i in exercises.registered_exercises(lesson)
        if len(wrong.get(i, [])) < MIN_WRONG or len(right.get(i, [])) < MIN_RIGHT
    }
    assert short == {}, f"lesson {lesson:02d}: (wrong, right) answers below ({MIN_WRONG}, {MIN_RIGHT}): {short}"
