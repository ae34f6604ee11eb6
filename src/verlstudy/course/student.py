"""The student edition, from the one source the tests check.

Every cell tagged `solution` keeps its function signatures and docstrings, and each body becomes
`raise NotImplementedError("exercise N.M")`; the checker cell after it (tagged `checker` and
`exercise-N.M`) is found by its tags. The checkers then print "not attempted".

It is what the learner executes, so no cell keeps a stored output (they would show results before
the learner predicts them). A markdown cell tagged `after-you-try-N.M` sits where it reads best in
the full edition and moves to just after exercise N.M's checker here, collapsed, so text stating an
answer is never on screen before the exercise.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Sequence
from pathlib import Path

import nbformat

from verlstudy.course import registry
from verlstudy.course.files import Manifest, WouldOverwriteWork, check_out_dir, check_target, read_notebook, write_all
from verlstudy.course.registry import Lesson
from verlstudy.course.run_out import refuse_learners_folder

EXERCISE_TAG = re.compile(r"^exercise-(\d+)\.(\d+)$")
AFTER_TAG = re.compile(r"^after-you-try-(\d+\.\d+)$")


class MalformedExercise(ValueError):
    """A solution cell that the student edition cannot turn into a stub (named, with the reason)."""


def _exercise_id(cell: nbformat.NotebookNode, where: str, lesson: Lesson) -> str:
    tags = cell.metadata.get("tags", [])
    found = [m for t in tags if (m := EXERCISE_TAG.match(t))]
    if len(found) != 1:
        raise MalformedExercise(f"{where}: a 'solution' cell needs exactly one tag 'exercise-N.M', has {tags}")
    number, part = found[0].groups()
    if int(number) != lesson.number:
        raise MalformedExercise(f"{where}: tag exercise-{number}.{part} belongs to lesson {number}, not {lesson.code}")
    return f"{number}.{part}"


def stub_source(source: str, exercise_id: str, where: str = "solution cell") -> str:
    """Keep imports, signatures and docstrings; replace each function body with NotImplementedError."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise MalformedExercise(f"{where}: does not parse ({e.msg}, line {e.lineno})") from e
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    others = [n for n in tree.body if not isinstance(n, ast.FunctionDef | ast.Import | ast.ImportFrom)]
    if not functions or others:
        raise MalformedExercise(f"{where}: a solution cell may only define functions (and import)")
    lines = source.splitlines()
    out: list[str] = []
    cursor = 0
    for fn in functions:
        body_start = fn.body[0].lineno - 1
        doc = ast.get_docstring(fn, clean=False)
        keep_until = fn.body[0].end_lineno if doc is not None else body_start
        out += lines[cursor:keep_until]
        indent = " " * fn.body[0].col_offset
        out.append(f'{indent}raise NotImplementedError("exercise {exercise_id}")')
        cursor = fn.end_lineno or keep_until
    out += [line for line in lines[cursor:] if not line.strip()]
    return "\n".join(out).rstrip() + "\n"


def after_you_try(cell: nbformat.NotebookNode) -> str | None:
    """The exercise id a cell is held back for (tag `after-you-try-N.M`), or None."""
    found = [m.group(1) for t in cell.metadata.get("tags", []) if (m := AFTER_TAG.match(t))]
    if len(found) > 1:
        raise MalformedExercise(f"a cell may wait for one exercise only, has {found}")
    return found[0] if found else None


def hold_back_answers(nb: nbformat.NotebookNode, lesson: Lesson) -> None:
    """Move each `after-you-try-N.M` markdown cell after N.M's checker, collapsed (in place)."""
    held: dict[str, list[nbformat.NotebookNode]] = {}
    kept = []
    for i, cell in enumerate(nb.cells):
        exercise_id = after_you_try(cell)
        if exercise_id is None:
            kept.append(cell)
            continue
        if cell.cell_type != "markdown":
            raise MalformedExercise(
                f"{lesson.notebook.name}, cell {i}: only markdown can wait for exercise {exercise_id} "
                "(a moved code cell would change what runs); put the exercise before the code instead"
            )
        cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
        held.setdefault(exercise_id, []).append(cell)
    for exercise_id, cells in held.items():
        at = next(
            (
                i
                for i, c in enumerate(kept)
                if "checker" in c.metadata.get("tags", []) and f"exercise-{exercise_id}" in c.metadata.get("tags", [])
            ),
            None,
        )
        if at is None:
            name = lesson.notebook.name
            raise MalformedExercise(f"{name}: cells wait for exercise {exercise_id}, which has no checker")
        kept[at + 1 : at + 1] = cells
    nb.cells = kept


def student_notebook(nb: nbformat.NotebookNode, lesson: Lesson) -> nbformat.NotebookNode:
    """The student edition of one lesson's notebook (a new notebook; the input is not changed)."""
    nb = nbformat.from_dict(nb)
    for cell in nb.cells:  # what the learner executes: nothing on screen before they run it
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    code_index = 0
    exercises = 0
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        code_index += 1
        tags = cell.metadata.get("tags", [])
        if "solution" not in tags:
            continue
        where = f"{lesson.notebook.name}, code cell {code_index - 1}"
        exercise_id = _exercise_id(cell, where, lesson)
        cell.source = stub_source(cell.source, exercise_id, where)
        cell.metadata["tags"] = ["exercise" if t == "solution" else t for t in tags]
        cell.outputs, cell.execution_count = [], None
        checker = next((c for c in nb.cells[i + 1 :] if c.cell_type == "code"), None)
        checker_tags = checker.metadata.get("tags", []) if checker is not None else []
        if "checker" not in checker_tags or f"exercise-{exercise_id}" not in checker_tags:
            raise MalformedExercise(
                f"{where}: exercise {exercise_id} needs a checker cell right after it, tagged "
                f"'checker' and 'exercise-{exercise_id}'"
            )
        checker.outputs, checker.execution_count = [], None
        exercises += 1
    if exercises == 0:
        raise MalformedExercise(f"{lesson.notebook.name}: no cell tagged 'solution' (every lesson has exercises)")
    hold_back_answers(nb, lesson)
    return nb


def write_student_edition(out: Path, lessons: Sequence[Lesson] | None = None, *, force: bool = False) -> list[Path]:
    """Write the student edition of the lessons (default: all) into `out`; return the written paths.

    `out` passes the guard every writing command uses (files.check_target), and a notebook already there is
    replaced only if this command wrote it and it is unchanged since (files.Manifest): a learner's run or edit
    is never overwritten silently. Without `force` nothing is written and the error names the files.
    """
    out = check_target(out, "--out")
    check_out_dir(out)
    refuse_learners_folder(out, "--out", itself=False)  # an edition nested inside a learner's work hides it
    lessons = list(lessons) if lessons else list(registry.LESSONS)
    files = {}
    for lesson in lessons:
        nb = student_notebook(read_notebook(lesson.notebook), lesson)
        files[lesson.notebook.name] = nbformat.writes(nb)
    manifest = Manifest(out)
    if not force:
        try:
            manifest.refuse_foreign({out / name: text for name, text in files.items()}, "--out")
        except WouldOverwriteWork as e:
            force_hint = os.environ.get("VERLSTUDY_FORCE_HINT") or "pass --force"  # `make student` says FORCE=1
            raise WouldOverwriteWork(f"{e}, or {force_hint} to overwrite them") from None
    write_all(out, files)
    manifest.record(out / name for name in files)
    return [out / name for name in files]


def exercise_ids(lesson: Lesson) -> list[str]:
    """The exercise ids ('N.M') of a lesson, in notebook order, read from its solution cells' tags."""
    nb = read_notebook(lesson.notebook)
    return [
        _exercise_id(cell, f"{lesson.stem} cell {i}", lesson)
        for i, cell in enumerate(nb.cells)
        if "solution" in cell.metadata.get("tags", [])
    ]
