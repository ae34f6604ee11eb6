"""Answers a learner would see on screen, read from the student edition as a live kernel printed it.

`answers.answer_leaks` reads the full edition's *stored* outputs; cells tagged `upstream-source` store none (verl's
code is read at run time), so a cell that prints verl's own answer to an exercise slips past it. Here the student
edition is executed (by the caller, e.g. `runner.execute_with_papermill`) and every output a learner would see before
an exercise's checker has run, the checker's own first run on the stub included, is scanned for that exercise's
answer texts: the texts its checker declares (`reveals=`) and the statements of the full edition's solution.
"""

from __future__ import annotations

import nbformat

from verlstudy.course.answers import Leak, _pattern, exercise_reveals, solution_statements
from verlstudy.course.student import EXERCISE_TAG


def _text(output: nbformat.NotebookNode) -> str:
    parts = [str(output.get("text", ""))] if output.get("output_type") == "stream" else []
    data = output.get("data", {})
    parts += [str(data.get(mime, "")) for mime in ("text/plain", "text/markdown", "text/html")]
    if output.get("output_type") == "error":
        parts.append(f"{output.get('ename', '')}: {output.get('evalue', '')}")
    return " ".join(" ".join(parts).split())


def _exercise_ids(cell: nbformat.NotebookNode) -> list[str]:
    tags = cell.get("metadata", {}).get("tags", [])
    return [f"{m.group(1)}.{m.group(2)}" for t in tags if (m := EXERCISE_TAG.match(t))]


def answer_texts(full: nbformat.NotebookNode) -> dict[str, list[str]]:
    """Exercise id -> the texts that state its answer: declared reveals, then the solution cell's statements."""
    if not isinstance(full, nbformat.NotebookNode):
        raise TypeError(f"full must be the full edition as a notebook, got {type(full).__name__}")
    texts: dict[str, list[str]] = {}
    for cell in full.cells:
        if cell.cell_type == "code" and "solution" in cell.get("metadata", {}).get("tags", []):
            for exercise_id in _exercise_ids(cell):
                texts[exercise_id] = [*exercise_reveals(exercise_id), *solution_statements(cell.source)]
    return texts


def live_leaks(executed: nbformat.NotebookNode, full: nbformat.NotebookNode) -> list[Leak]:
    """Every answer text of an exercise printed, in the executed student edition `executed`, by a cell up to and
    including that exercise's checker cell (tagged `checker` and `exercise-N.M`). Empty: nothing gives one away.

    Raises ValueError when an exercise of `full` has no checker cell in `executed` (not a student edition of it)."""
    if not isinstance(executed, nbformat.NotebookNode):
        raise TypeError(f"executed must be the executed student edition, got {type(executed).__name__}")
    leaks: list[Leak] = []
    for exercise_id, texts in answer_texts(full).items():
        checker = next(
            (
                i
                for i, c in enumerate(executed.cells)
                if c.cell_type == "code"
                and "checker" in c.get("metadata", {}).get("tags", [])
                and exercise_id in _exercise_ids(c)
            ),
            None,
        )
        if checker is None:
            raise ValueError(f"exercise {exercise_id} has no checker cell in the executed notebook")
        for i, cell in enumerate(executed.cells[: checker + 1]):
            if cell.cell_type != "code":
                continue
            shown = " ".join(_text(o) for o in cell.get("outputs", []))
            for text in texts:
                if shown.strip() and _pattern(text).search(shown):
                    leaks.append(Leak(exercise_id, text, f"code cell {i} (live output)"))
    return leaks
