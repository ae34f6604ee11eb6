"""The student edition and the verdicts, shown on lesson 00's own exercises.

`exercise_cells` reads which cells the student edition turns into stubs (tagged `solution` and
`exercise-N.M`) and the checker cell after each. `demo_verdict` runs `check_exercise` on an answer the
way a checker cell does, but keeps its printed line and its record out of the notebook, so a
demonstration of a wrong answer is not counted as the learner's verdict in the course's report.
`demo_tries` shows the hints escalating: the same answer checked several times, each try's printed
lines returned. Neither counts against the learner: the wrong tries they make are restored after it,
so a learner's own first wrong try still gets the nudge, not the method.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from IPython.utils.capture import capture_output

from verlstudy.kit import i18n
from verlstudy.kit.exercises import VERDICT_JOINER, attempts_held, check_exercise, exercise_results
from verlstudy.kit.params import got

EXERCISE_TAG = re.compile(r"^exercise-(\d+\.\d+)$")


def _tags(cell: Mapping[str, object]) -> list[str]:
    metadata = cell.get("metadata", {})
    tags = metadata.get("tags", []) if isinstance(metadata, Mapping) else []
    return [str(t) for t in tags]


def exercise_cells(cells: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    """One row per solution cell: exercise id, its tags, and the tags of the next code cell (its checker)."""
    if isinstance(cells, str | bytes) or not isinstance(cells, Sequence):
        raise TypeError(f"cells must be a list of notebook cells, got {type(cells).__name__}")
    for i, cell in enumerate(cells):
        if not isinstance(cell, Mapping):
            raise TypeError(f"argument cells[{i}] must be a notebook cell (a dict), got {got(cell)}")
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


def _check_id(exercise_id: object) -> None:
    if not isinstance(exercise_id, str):
        raise TypeError(f"exercise_id must be a string like '0.1', got {exercise_id!r}")


def demo_verdict(exercise_id: str, answer: object) -> tuple[str, str]:
    """(verdict, message) that `check_exercise(exercise_id, answer)` gives, with its output and record held back.

    The verdict is read back through `exercise_results()`, the same place a learner's verdicts are.
    """
    _check_id(exercise_id)
    with attempts_held(exercise_id), capture_output(stdout=True, stderr=False, display=True) as captured:
        check_exercise(exercise_id, answer)
    verdict = exercise_results()[exercise_id]
    line = captured.stdout.strip().splitlines()[0]
    prefix = i18n.pick("exercise {id}: {verdict}", id=exercise_id, verdict=i18n._(verdict))  # as it was printed
    message = line[len(prefix) :].removeprefix(i18n._(VERDICT_JOINER)) if line.startswith(prefix) else line
    return verdict, message


# the hint ladder's rungs, each by the line check_exercise prints for it (kit.exercises), in English
RUNGS = {
    "where to look": "  where to look (try {tries}): {where}",
    "a question": "  a question (try {tries}): {question}",
    "method": "  method (try {tries}): {method}",
}


def rung_of(line: object) -> str | None:
    """Which rung of the hint ladder a printed line is ("where to look", "a question", "method"), or None.

    Read in the learner's language: the line is matched against the rung's template as `check_exercise` prints
    it in that language, so the same cell finds the rungs in every edition."""
    if not isinstance(line, str):
        raise TypeError(f"line must be a printed line (a str), got {type(line).__name__}")
    for rung, template in RUNGS.items():
        if line.startswith(i18n._(template).split("{tries}")[0]):
            return rung
    return None


def demo_tries(exercise_id: str, answer: object, tries: int = 3) -> list[list[str]]:
    """The lines `check_exercise(exercise_id, answer)` prints on each of `tries` tries in a row.

    Shows the escalation: a wrong answer's first tries print the nudge, the later ones the method too.
    Output and records are held back as in `demo_verdict`, and the learner's own count of wrong tries
    and verdict are restored afterwards. The lines are in the learner's language; `rung_of` names each rung.
    """
    _check_id(exercise_id)
    if isinstance(tries, bool) or not isinstance(tries, int) or tries < 1:
        raise ValueError(f"tries must be a positive int, got {tries!r}")
    printed = []
    with attempts_held(exercise_id, verdict=True, from_first_try=True):
        for _ in range(tries):
            with capture_output(stdout=True, stderr=False, display=True) as captured:
                check_exercise(exercise_id, answer)
            printed.append(captured.stdout.rstrip("\n").splitlines())
    return printed
