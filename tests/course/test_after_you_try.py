"""An after-you-try note reveals nothing before it is opened: its first line (all JupyterLab shows of a
collapsed cell) only names the note."""

import re

import nbformat
import pytest

from verlstudy.course.registry import LESSONS
from verlstudy.course.student import after_you_try

FIRST_LINE = re.compile(r"^\*\*After you try (\d+\.\d+)\*\* \(open once you have run the checker\)$")


def notes():
    for lesson in LESSONS:
        nb = nbformat.read(lesson.notebook, as_version=4)
        for i, cell in enumerate(nb.cells):
            exercise_id = after_you_try(cell)
            if exercise_id is not None:
                yield pytest.param(cell, exercise_id, id=f"{lesson.code}-cell{i}")


@pytest.mark.parametrize(("cell", "exercise_id"), list(notes()))
def test_the_first_line_of_an_after_you_try_note_only_names_it(cell, exercise_id):
    first = cell.source.splitlines()[0] if cell.source else ""
    match = FIRST_LINE.match(first)
    assert match and match.group(1) == exercise_id, f"first line {first!r} may preview the answer"


def test_the_pattern_refuses_a_first_line_that_previews_the_answer():
    assert not FIRST_LINE.match("**After you try 9.1**: the `ast.Attribute` node, and its `ctx` says ...")
    assert FIRST_LINE.match("**After you try 9.1** (open once you have run the checker)")
