"""What an executed notebook recorded: its claims and exercise verdicts, read as data (kit.records)."""

from __future__ import annotations

import nbformat

from verlstudy.kit.records import records_in_outputs


def notebook_records(nb: nbformat.NotebookNode, kind: str | None = None) -> list[dict[str, object]]:
    """Every record of `kind` ("claim", "exercise", or None for both) the notebook's cells hold, in order.

    Each record gains "cell": the index of the code cell that recorded it.
    """
    found = []
    code_index = -1
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        code_index += 1
        for record in records_in_outputs(cell.get("outputs", [])):
            if kind is None or record["kind"] == kind:
                found.append({**record, "cell": code_index})
    return found


def count_claims(nb: nbformat.NotebookNode) -> tuple[int, int]:
    """(reproduced, total) over the claims the notebook recorded."""
    claims = notebook_records(nb, "claim")
    return sum(bool(c["reproduced"]) for c in claims), len(claims)


def exercise_verdicts(nb: nbformat.NotebookNode) -> dict[str, dict[str, object]]:
    """Exercise id -> its last recorded verdict and message."""
    return {str(r["id"]): r for r in notebook_records(nb, "exercise")}
