"""The student edition gives nothing away: no stored outputs, and no answer text before its exercise."""

import nbformat
import pytest

from verlstudy.course import answers, registry, student
from verlstudy.kit.exercises import ExerciseFailure, checker, exercise_method

LESSON0 = registry.get_lesson(0)


@checker("0.91", method="multiply the radius by itself, then by pi", reveals=["math.pi * r * r", "12.566"])
def _area_checker(fn):
    if abs(fn(2.0) - 12.566370614359172) > 1e-9:
        raise ExerciseFailure("area(2) should be about 12.57")
    return "right"


def _nb(before: list[nbformat.NotebookNode], after: list[nbformat.NotebookNode] = ()) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    solution = 'import math\n\n\ndef area(r):\n    """Area."""\n    return math.pi * r * r\n'
    nb.cells = [
        nbformat.v4.new_markdown_cell("# 00 · t"),
        *before,
        nbformat.v4.new_code_cell(solution, metadata={"tags": ["solution", "exercise-0.91"]}),
        nbformat.v4.new_code_cell('check_exercise("0.91", area)', metadata={"tags": ["checker", "exercise-0.91"]}),
        *after,
    ]
    return nb


def _code(source: str, printed: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_code_cell(source, outputs=[nbformat.v4.new_output("stream", text=printed)])


def test_a_declared_answer_in_prose_before_the_exercise_is_found():
    nb = _nb([nbformat.v4.new_markdown_cell("The area is `math.pi * r * r`, so area(2) is 12.566.")])
    found = [str(leak) for leak in answers.answer_leaks(LESSON0, nb)]
    assert found == [
        "exercise 0.91: 'math.pi * r * r' shows before it, in markdown cell 1 (source)",
        "exercise 0.91: '12.566' shows before it, in markdown cell 1 (source)",
    ]


def test_an_answer_printed_by_an_earlier_cell_is_found_although_the_edition_clears_outputs():
    nb = _nb([_code("print(area_of_two)", "area: 12.566\n")])
    assert [leak.where for leak in answers.answer_leaks(LESSON0, nb)] == ["code cell 1 (output)"]


def test_a_solution_statement_used_earlier_is_found_without_being_declared():
    nb = _nb([nbformat.v4.new_code_cell("value = math.pi * radius * radius * 1.0")])
    assert answers.answer_leaks(LESSON0, nb) == []  # different names: not the statement
    nb = _nb([nbformat.v4.new_code_cell("def area2(r):\n    return math.pi * r * r\n")])
    assert {leak.text for leak in answers.answer_leaks(LESSON0, nb)} == {"math.pi * r * r", "return math.pi * r * r"}


def test_a_number_inside_a_longer_number_is_not_the_answer():
    nb = _nb([nbformat.v4.new_markdown_cell("1.125660 and 112.566 are other numbers")])
    assert answers.answer_leaks(LESSON0, nb) == []


def test_an_after_you_try_cell_moves_after_the_checker_collapsed_and_is_no_leak():
    reveal = nbformat.v4.new_markdown_cell("It is `math.pi * r * r`.", metadata={"tags": ["after-you-try-0.91"]})
    nb = _nb([reveal])
    assert answers.answer_leaks(LESSON0, nb) == []
    edition = student.student_notebook(nb, LESSON0)
    assert [c.metadata.get("tags", []) for c in edition.cells][-1] == ["after-you-try-0.91"]
    assert edition.cells[-1].metadata["jupyter"]["source_hidden"] is True
    assert "jupyter" not in nb.cells[1].metadata  # the full edition is unchanged


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        (nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["after-you-try-0.91"]}), "only markdown can wait"),
        (nbformat.v4.new_markdown_cell("x", metadata={"tags": ["after-you-try-0.99"]}), "0.99, which has no checker"),
        (nbformat.v4.new_markdown_cell("x", metadata={"tags": ["after-you-try-0.91", "after-you-try-0.2"]}), "one"),
    ],
)
def test_a_misplaced_after_you_try_cell_is_named(cell, message):
    with pytest.raises(student.MalformedExercise, match=message):
        student.student_notebook(_nb([cell]), LESSON0)


def test_a_declared_reveal_that_appears_nowhere_is_stale():
    assert answers.unshown_reveals(LESSON0, _nb([])) == ["exercise 0.91: '12.566'"]
    assert exercise_method("0.91") == "multiply the radius by itself, then by pi"


# ---------------------------------------------------------------- the course itself


@pytest.fixture(scope="module", params=registry.LESSONS, ids=lambda lesson: lesson.code)
def lesson_nb(request):
    return request.param, nbformat.read(request.param.notebook, as_version=4)


def test_the_student_edition_has_no_stored_outputs(lesson_nb):
    lesson, nb = lesson_nb
    edition = student.student_notebook(nb, lesson)
    shown = [i for i, c in enumerate(edition.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert shown == [], f"{lesson.notebook.name}: cells {shown} keep outputs in the student edition"


def test_every_exercise_declares_what_would_give_its_answer_away_and_each_text_is_real(lesson_nb):
    lesson, nb = lesson_nb
    undeclared = [i for i in student.exercise_ids(lesson) if not answers.exercise_reveals(i)]
    assert undeclared == [], f"exercises {undeclared} declare no reveals=[...] in their checker"
    assert answers.unshown_reveals(lesson, nb) == [], "declared reveals that appear nowhere in the notebook"


def test_no_answer_text_shows_before_its_exercise(lesson_nb):
    lesson, nb = lesson_nb
    assert [str(leak) for leak in answers.answer_leaks(lesson, nb)] == []
