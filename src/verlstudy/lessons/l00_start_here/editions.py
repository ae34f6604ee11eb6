"""The student edition and the verdicts, shown on lesson 00's own exercises.

`exercise_cells` reads which cells the student edition turns into stubs (tagged `solution` and
`exercise-N.M`) and the checker cell after each. `demo_verdict` runs `check_exercise` on an answer the
way a checker cell does, but keeps its printed line and its record out of the notebook, so a
demonstration of a wrong answer is not counted as the learner's verdict in the course's report.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from IPython.utils.capture import capture_output

from verlstudy.kit.exercises import check_exercise, exercise_results

EXERCISE_TAG = re.compile(r"^exercise-(\d+\.\d+)$")


def _tags(cell: Mapping[str, object]) -> list[str]:
    metadata = cell.get("metadata", {})
    tags = metadata.get("tags", []) if isinstance(metadata, Mapping) else []
    return [str(t) for t in tags]


def exercise_cells(cells: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    """One row per solution cell: exercise id, its tags, and the tags of the next code cell (its checker)."""
    if isinstance(cells, str | bytes) or not isinstance(cells, Sequence):
        raise TypeError(f"cells must be a list of notebook cells, got {type(cells).__name__}")
    code = [c for c in cells if c.get("cell_type") == "code"]
    rows = []
    for i, cell in enumerate(code):
        tags = _tags(cell)
        if "solution" not in tags:
            continue
        ids = [m.group(1) for t in tags if (m := EXERCISE_TAG.match(t))]
        following = _tags(code[i + 1]) if i + 1 < len(code) else []
        rows.append({"exercise": ids[0] if len(ids) == 1 else None, "tags": tags, "next cell": following})
    return rows


def demo_verdict(exercise_id: str, answer: object) -> tuple[str, str]:
    """(verdict, message) that `check_exercise(exercise_id, answer)` gives, with its output and record held back.

    The verdict is read back through `exercise_results()`, the same place a learner's verdicts are.
    """
    if not isinstance(exercise_id, str):
        raise TypeError(f"exercise_id must be a string like '0.1', got {exercise_id!r}")
    with capture_output(stdout=True, stderr=False, display=True) as captured:
        check_exercise(exercise_id, answer)
    verdict = exercise_results()[exercise_id]
    line = captured.stdout.strip()
    prefix = f"exercise {exercise_id}: {verdict}"
    message = line[len(prefix) :].removeprefix(": ") if line.startswith(prefix) else line
    return verdict, message
