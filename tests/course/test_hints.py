"""No rung of the hint ladder states the solution: each hint compared with its solution cell by shape."""

import pytest

from verlstudy.course.hint_shapes import hint_fragments, leaked_fragments
from verlstudy.kit import exercises

EXERCISES = [i for lesson in range(10) for i in exercises.registered_exercises(lesson)]


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_where_and_method_hold_no_piece_of_the_solution(exercise_id):
    solution = exercises._solution_text(exercise_id)  # read without marking the exercise as taken as text
    rungs = (
        ("where", exercises.exercise_where(exercise_id)),
        ("question", exercises.exercise_question(exercise_id)),
        ("method", exercises._METHODS[exercise_id]),
    )
    for rung, text in rungs:
        leaked = leaked_fragments(text, solution)
        assert leaked == [], f"exercise {exercise_id}'s {rung} hint states the solution's code: {leaked}"


@pytest.mark.parametrize(
    ("hint", "solution"),
    [
        ("So predict 2 * S * H * itemsize + S * itemsize", "def f(s, h, b):\n    return 2 * s * h * b + s * b"),
        ("draw with torch.randn(n, generator=g)", "def f(seed, n):\n    return torch.randn(n, generator=gen)"),
        ("round up: `n + (a - n % a) % a`", "def f(n, a):\n    return n + (a - n % a) % a"),
    ],
)
def test_the_comparison_catches_a_formula_whatever_its_names(hint, solution):
    assert leaked_fragments(hint, solution)


def test_words_and_short_names_are_not_formulas():
    solution = "def f(xs):\n    return sorted(set(xs), key=int)"
    assert leaked_fragments("sort the layer numbers as numbers, not as text, and keep each once", solution) == []
    assert hint_fragments("look at `aligned_length` and `x.grad`") == []


def test_a_solution_with_multi_dimensional_slices_is_read_and_compared():
    solution = "def f(x, n):\n    return x[:, :, :n].sum(dim=-1) + x[:, 0, 0]"
    assert leaked_fragments("take `x[:, :, :n].sum(dim=-1)`", solution)
    assert leaked_fragments("sum over the last dimension after cutting each row at n", solution) == []
