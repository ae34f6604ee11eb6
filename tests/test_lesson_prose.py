"""Issue 41: prose between code cells stays short (median <= 60 words a lesson) and each lesson ends with open
questions after its takeaways. Measured on the stored notebooks, every lesson."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
MEASURED = ("00", "01", "02", "03", "04", "05", "06", "07", "08", "09")
MEDIAN_WORDS = 60


def prose_runs(cells: list[dict]) -> list[int]:
    """Words in each run of markdown cells between two code cells (a run spanning several cells counts once)."""
    code = [i for i, c in enumerate(cells) if c["cell_type"] == "code"]
    if not code:
        return []
    runs, current = [], None
    for cell in cells[code[0] : code[-1] + 1]:
        if cell["cell_type"] == "markdown":
            current = (current or 0) + len(re.findall(r"\S+", "".join(cell["source"])))
        elif current is not None:
            runs.append(current)
            current = None
    return runs


def test_prose_runs_merge_markdown_between_code_cells():
    md = lambda s: {"cell_type": "markdown", "source": s}  # noqa: E731
    code = {"cell_type": "code", "source": "x = 1"}
    cells = [md("title words here"), code, md("a b"), md("c"), code, code, md("d e f"), code, md("after")]
    assert prose_runs(cells) == [3, 3]
    assert prose_runs([md("only prose")]) == []


def _notebook(number: str) -> dict:
    (path,) = NOTEBOOKS.glob(f"{number}_*.ipynb")
    return json.loads(path.read_text())


@pytest.mark.parametrize("number", MEASURED)
def test_prose_between_code_cells_is_short(number: str):
    runs = prose_runs(_notebook(number)["cells"])
    assert statistics.median(runs) <= MEDIAN_WORDS, f"lesson {number}: median {statistics.median(runs)} words"


@pytest.mark.parametrize("number", MEASURED)
def test_open_questions_follow_the_takeaways(number: str):
    text = "\n".join("".join(c["source"]) for c in _notebook(number)["cells"] if c["cell_type"] == "markdown")
    takeaways, questions = text.find("## Takeaways"), text.find("## Open questions")
    assert 0 <= takeaways < questions, f"lesson {number}: no '## Open questions' after '## Takeaways'"
    block = text[questions:].split("\n## ", 1)[0]
    asked = [q for q in re.split(r"\n- ", "\n" + block.split("\n", 1)[1]) if q.strip()]  # one bullet each
    assert 2 <= len(asked) <= 4 and all("?" in q for q in asked), f"lesson {number}: {len(asked)} questions"
