"""The arc every lesson follows, read from the course's own notebooks rather than typed into lesson 00.

A lesson's sections are its level-2 Markdown headings (`## ...`). The course's own rule, used only
here: a heading belongs to an arc stage when its label (the part before any colon) names the stage
(see `STAGE_WORDS`), so "Reproduce: the recipe's fix" is a reproduction, not the fix; the last stage,
the claims table, is the notebook's last code cell calling `claims_table()`. Lesson 00 reads this
from the `.ipynb` files, so a lesson that renames or drops a section changes the table.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from verlstudy.kit.params import check_items, check_path, check_str, got
from verlstudy.kit.tables import Table

# The stages in arc order, each with the words a heading uses to name it (lower case, whole words).
STAGE_WORDS: dict[str, tuple[str, ...]] = {
    "symptom": ("symptom",),
    "reproduce": ("reproduce",),
    "cause": ("root cause", "cause"),
    "fix": ("fix",),
    "guard": ("guard",),
    "exercises": ("exercises",),
    "upstream": ("checked against upstream",),
    "takeaways": ("takeaways",),
}
CLAIMS_TABLE = "claims table"
ARC: tuple[str, ...] = (*STAGE_WORDS, CLAIMS_TABLE)
NOTEBOOK_NAME = re.compile(r"^(\d\d)_\w+\.ipynb$")


@dataclass(frozen=True)
class LessonArc:
    """Where one lesson's sections meet the arc: stage -> first section index naming it (None: none does)."""

    code: str
    headings: tuple[str, ...]
    stages: Mapping[str, int | None]

    @property
    def missing(self) -> list[str]:
        """The arc stages no section of the lesson names."""
        return [s for s in ARC if self.stages[s] is None]

    @property
    def in_order(self) -> bool:
        """Whether the stages the lesson does name come in arc order (two stages may share a section)."""
        found = [self.stages[s] for s in ARC if self.stages[s] is not None]
        return all(a <= b for a, b in itertools.pairwise(found))


def _source(cell: Mapping[str, object]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def read_cells(path: Path) -> list[dict[str, object]]:
    """The cells of the notebook at `path` (plain JSON: no kernel, no nbformat)."""
    path = check_path("path", path, what="a .ipynb notebook's path (str or Path)")
    if path.suffix != ".ipynb" or not path.is_file():
        raise ValueError(f"path must be an existing .ipynb notebook, got {str(path)!r}")
    cells = json.loads(path.read_text(encoding="utf-8")).get("cells")
    if not isinstance(cells, list):
        raise ValueError(f"{path.name} has no list of cells: not a notebook")
    return cells


def _check_cells(cells: object) -> None:
    """A list of notebook cells (dicts), as read_cells returns: a one-line TypeError naming the first that is not."""
    if isinstance(cells, str | bytes | Mapping) or not isinstance(cells, Sequence):
        raise TypeError(f"argument cells must be a list of notebook cells (from read_cells), got {got(cells)}")
    for i, cell in enumerate(cells):
        if not isinstance(cell, Mapping):
            raise TypeError(f"argument cells[{i}] must be a notebook cell (a dict), got {got(cell)}")


def section_headings(cells: Sequence[Mapping[str, object]]) -> list[str]:
    """The level-2 headings (`## ...`) of the notebook's Markdown cells, in order, without the `## `."""
    if isinstance(cells, str | bytes) or not isinstance(cells, Sequence):
        raise TypeError(f"cells must be a list of notebook cells, got {type(cells).__name__}")
    _check_cells(cells)
    return [
        line[3:].strip()
        for cell in cells
        if cell.get("cell_type") == "markdown"
        for line in _source(cell).splitlines()
        if line.startswith("## ")
    ]


def stage_of(heading: str) -> list[str]:
    """The arc stages `heading`'s label names (none, one, or several: "Root cause and fix" is both)."""
    if not isinstance(heading, str):
        raise TypeError(f"heading must be a string, got {type(heading).__name__}")
    text = heading.split(":", 1)[0].lower()  # the label; what follows the colon describes it
    return [s for s, words in STAGE_WORDS.items() if any(re.search(rf"\b{re.escape(w)}\b", text) for w in words)]


def ends_with_claims_table(cells: Sequence[Mapping[str, object]]) -> bool:
    """Whether the notebook's last code cell is the call `claims_table()`."""
    _check_cells(cells)
    code = [_source(c).strip() for c in cells if c.get("cell_type") == "code"]
    return bool(code) and code[-1] == "claims_table()"


def lesson_arc(code: str, cells: Sequence[Mapping[str, object]]) -> LessonArc:
    """Map one lesson's sections onto the arc."""
    check_str("code", code, what="a lesson code like '03' (a str)")
    headings = section_headings(cells)
    stages: dict[str, int | None] = dict.fromkeys(ARC)
    for index, heading in enumerate(headings):
        for stage in stage_of(heading):
            stages[stage] = index if stages[stage] is None else stages[stage]
    stages[CLAIMS_TABLE] = len(headings) if ends_with_claims_table(cells) else None
    return LessonArc(code=code, headings=tuple(headings), stages=stages)


def course_arcs(notebooks: Path) -> list[LessonArc]:
    """Every lesson notebook `NN_*.ipynb` in the folder `notebooks`, mapped onto the arc, by lesson code."""
    notebooks = check_path("notebooks", notebooks, what="a folder of lesson notebooks (str or Path)")
    if not notebooks.is_dir():
        raise ValueError(f"notebooks must be a folder of lesson notebooks, got {str(notebooks)!r}")
    paths = sorted(p for p in notebooks.iterdir() if NOTEBOOK_NAME.match(p.name))
    return [lesson_arc(NOTEBOOK_NAME.match(p.name).group(1), read_cells(p)) for p in paths]


def arc_table(arcs: Iterable[LessonArc]) -> Table:
    """A table (shown with `show_table`): one row per lesson, a column per stage (y: a section names it, -: none)."""
    arcs = check_items("arcs", arcs, LessonArc, what="a LessonArc (from course_arcs or lesson_arc)")
    header = ["lesson", *ARC, "in order"]
    rows = [
        [a.code, *("y" if a.stages[s] is not None else "-" for s in ARC), "yes" if a.in_order else "NO"] for a in arcs
    ]
    return Table.of(header, rows)


TIME_LINE = re.compile(r"\*\*Time:\*\*\D{0,20}?(\d+)\s*min")


def lesson_minutes(notebooks: Path) -> dict[str, int]:
    """Lesson code -> the minutes its title cell states (`**Time:** N minutes`), for every notebook in the folder."""
    notebooks = check_path("notebooks", notebooks, what="a folder of lesson notebooks (str or Path)")
    if not notebooks.is_dir():
        raise ValueError(f"notebooks must be a folder of lesson notebooks, got {str(notebooks)!r}")
    found: dict[str, int] = {}
    for path in sorted(p for p in notebooks.iterdir() if NOTEBOOK_NAME.match(p.name)):
        cells = read_cells(path)
        title = _source(cells[0]) if cells else ""
        match = TIME_LINE.search(title)
        if match is None:
            raise ValueError(f"{path.name}: the title cell states no '**Time:** N minutes'")
        found[NOTEBOOK_NAME.match(path.name).group(1)] = int(match.group(1))
    return found
