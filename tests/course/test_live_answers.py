"""The give-away check on live outputs: what the executed student edition printed before each exercise's checker."""

import nbformat
import pytest

from verlstudy.course import live_answers
from verlstudy.kit.exercises import ExerciseFailure, checker

SOLUTION = '''def pack(x):
    """Pack x."""
    return x.contiguous().view(torch.uint8)
'''


@checker("0.93", method="view the bytes", reveals=[".view(torch.uint8)"])
def _check_pack(fn):
    raise ExerciseFailure("not yet")


def _edition(upstream_output: str, where: str = "before") -> nbformat.NotebookNode:
    shown = nbformat.v4.new_code_cell(
        'upstream_source("x.py", "pack")',
        metadata={"tags": ["upstream-source"]},
        outputs=[nbformat.v4.new_output("display_data", data={"text/plain": upstream_output})],
    )
    cells = [
        nbformat.v4.new_code_cell(SOLUTION, metadata={"tags": ["solution", "exercise-0.93"]}),
        nbformat.v4.new_code_cell('check_exercise("0.93", pack)', metadata={"tags": ["checker", "exercise-0.93"]}),
    ]
    cells.insert(0 if where == "before" else 2, shown)
    return nbformat.v4.new_notebook(cells=cells)


def test_an_upstream_cell_printing_the_answer_live_before_the_checker_is_a_leak():
    full = _edition("")  # the full edition stores nothing for an upstream-source cell
    leaks = live_answers.live_leaks(_edition("def pack(x): return x.view(torch.uint8)"), full)
    assert [str(leak) for leak in leaks] == [
        "exercise 0.93: '.view(torch.uint8)' shows before it, in code cell 0 (live output)"
    ]


def test_the_same_cell_after_the_checker_gives_nothing_away():
    full = _edition("")
    assert live_answers.live_leaks(_edition("x.contiguous().view(torch.uint8)", where="after"), full) == []


def test_a_solution_statement_printed_live_is_a_leak_without_being_declared():
    full = _edition("")
    leaks = live_answers.live_leaks(_edition("return x.contiguous().view(torch.uint8)"), full)
    assert {leak.text for leak in leaks} == {".view(torch.uint8)", "return x.contiguous().view(torch.uint8)"}


def test_an_exercise_without_its_checker_in_the_executed_notebook_is_named():
    full = _edition("")
    executed = nbformat.v4.new_notebook(cells=[full.cells[1]])
    with pytest.raises(ValueError, match=r"exercise 0\.93 has no checker cell"):
        live_answers.live_leaks(executed, full)
    with pytest.raises(TypeError, match="executed must be the executed student edition"):
        live_answers.live_leaks("nb", full)
