"""Where an exercise's answer would be on screen before the learner tries it, in the student edition.

For each exercise the answer texts are found two ways: the texts its checker declares
(`@checker(..., reveals=[...])`: the numbers, formulas and names that state the answer) and the
statements of the full edition's solution cell itself. Each is looked for in every cell before the
exercise's solution cell: the student edition's sources (prose, code, earlier stubs) and the outputs
those same cells print when the learner runs them (the full edition's stored outputs, which the
student edition clears but the learner's run brings back).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import nbformat

from verlstudy.course.registry import Lesson
from verlstudy.course.student import EXERCISE_TAG, after_you_try, student_notebook
from verlstudy.kit.exercises import exercise_reveals

__all__ = ["Leak", "answer_leaks", "exercise_reveals", "solution_statements", "unshown_reveals"]

# A solution statement shorter than this is too generic to count as the answer (`return out`)
MIN_STATEMENT_CHARS = 20


@dataclass(frozen=True)
class Leak:
    """An answer text of `exercise` found in a cell before it."""

    exercise: str
    text: str
    where: str

    def __str__(self) -> str:
        return f"exercise {self.exercise}: {self.text!r} shows before it, in {self.where}"


def _normalized(text: str) -> str:
    return " ".join(text.split())


def _pattern(text: str) -> re.Pattern[str]:
    # "256" must not match inside "2560"; a text ending in punctuation needs no boundary there
    start = r"(?<![\w.])" if re.match(r"\w", text) else ""
    end = r"(?![\w])" if re.search(r"\w$", text) else ""
    return re.compile(start + re.escape(_normalized(text)) + end)


def solution_statements(source: str) -> list[str]:
    """The statements of a solution cell's function bodies (no docstrings), each on one line."""
    tree = ast.parse(source)
    found = []
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        body = fn.body[1:] if ast.get_docstring(fn, clean=False) is not None else fn.body
        for node in ast.walk(ast.Module(body=body, type_ignores=[])):
            if isinstance(node, ast.stmt) and not isinstance(node, ast.FunctionDef | ast.If | ast.For | ast.While):
                text = _normalized(ast.unparse(node).splitlines()[0])
                if len(text) >= MIN_STATEMENT_CHARS:
                    found.append(text)
    return found


def _output_text(cell: nbformat.NotebookNode) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output.get("text", ""))
        for mime in ("text/plain", "text/markdown", "text/html"):
            parts.append(str(output.get("data", {}).get(mime, "")))
    return _normalized("\n".join(parts))


def _solution_cells(nb: nbformat.NotebookNode) -> list[tuple[int, str, nbformat.NotebookNode]]:
    rows = []
    for i, cell in enumerate(nb.cells):
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "code" and "solution" in tags:
            ids = [f"{m.group(1)}.{m.group(2)}" for t in tags if (m := EXERCISE_TAG.match(t))]
            rows.append((i, ids[0], cell))
    return rows


def answer_leaks(lesson: Lesson, full: nbformat.NotebookNode | None = None) -> list[Leak]:
    """Every answer text that shows before its exercise in `lesson`'s student edition (empty: none)."""
    full = full if full is not None else nbformat.read(lesson.notebook, as_version=4)
    edition = student_notebook(full, lesson)
    outputs = {cell.get("id"): _output_text(cell) for cell in full.cells if cell.cell_type == "code"}
    leaks = []
    for _, exercise_id, solution in _solution_cells(full):
        texts = [*exercise_reveals(exercise_id), *solution_statements(solution.source)]
        position = next(i for i, c in enumerate(edition.cells) if c.get("id") == solution.get("id"))
        for i, cell in enumerate(edition.cells[:position]):
            if after_you_try(cell) is not None:
                continue  # a collapsed "after you try" cell of an earlier exercise
            shown = {"source": _normalized(cell.source), "output": outputs.get(cell.get("id"), "")}
            for text in texts:
                for part, content in shown.items():
                    if content and _pattern(text).search(content):
                        leaks.append(Leak(exercise_id, text, f"{cell.cell_type} cell {i} ({part})"))
    return leaks


def unshown_reveals(lesson: Lesson, full: nbformat.NotebookNode | None = None) -> list[str]:
    """Declared reveal texts that appear nowhere in the full edition (a stale or mistyped declaration)."""
    full = full if full is not None else nbformat.read(lesson.notebook, as_version=4)
    everything = _normalized(" ".join(c.source + " " + _output_text(c) for c in full.cells))
    return [
        f"exercise {exercise_id}: {text!r}"
        for _, exercise_id, _ in _solution_cells(full)
        for text in exercise_reveals(exercise_id)
        if not _pattern(text).search(everything)
    ]
