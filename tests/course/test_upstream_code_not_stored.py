"""Upstream's code is shown at run time, never stored: no committed output carries more than 3 lines of it."""

import json
from functools import cache
from pathlib import Path

import nbformat
import pytest

from verlstudy.course.registry import LESSONS
from verlstudy.course.twins import normalise
from verlstudy.kit import upstream
from verlstudy.kit.show import UPSTREAM_TAG

MAX_UPSTREAM_LINES = 3
MIN_LINE = 20  # shorter lines (`else:`, `return x`) are everyone's code, not upstream's


@cache
def upstream_lines() -> frozenset[str]:
    lines: set[str] = set()
    roots = [upstream.verl_root()] + ([upstream.verl_root("0.9.0")] if upstream.verl_available("0.9.0") else [])
    for root in roots:
        for path in root.rglob("*.py"):
            lines.update(
                s for line in path.read_text(errors="replace").splitlines() if len(s := line.strip()) >= MIN_LINE
            )
    return frozenset(lines)


def output_texts(cell) -> list[str]:
    texts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            texts.append(out.get("text", ""))
        for value in out.get("data", {}).values():
            texts.append(
                value if isinstance(value, str) else "".join(value) if isinstance(value, list) else json.dumps(value)
            )
    return texts


def upstream_lines_in(text: str) -> list[str]:
    known = upstream_lines()
    return [s for line in text.splitlines() if (s := line.strip().lstrip("+- ").strip()) and s in known]


@pytest.mark.skipif(not upstream.verl_available(), reason="verl not installed")
@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.code)
def test_no_stored_output_holds_more_than_three_lines_of_upstream_code(lesson):
    nb = nbformat.read(lesson.notebook, as_version=4)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if UPSTREAM_TAG in cell.metadata.get("tags", []):
            assert cell.outputs == [], f"{lesson.notebook.name} cell {i}: an upstream-source cell stores its output"
            assert "nbval-ignore-output" in cell.metadata["tags"], f"{lesson.notebook.name} cell {i}: nbval compares it"
        for text in output_texts(cell):
            found = upstream_lines_in(text)
            assert len(found) <= MAX_UPSTREAM_LINES, f"{lesson.notebook.name} cell {i} stores verl's code: {found[:5]}"


@pytest.mark.skipif(not upstream.verl_available(), reason="verl not installed")
def test_the_detector_finds_upstream_code_in_an_output():
    text = (upstream.verl_root() / "workers/engine/utils.py").read_text()
    assert len(upstream_lines_in(text)) > MAX_UPSTREAM_LINES


def test_normalising_clears_an_upstream_source_cells_outputs_and_keeps_nbval_off_it():
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("upstream_source('workers/engine/utils.py', 'detach_tree')")
    cell.metadata["tags"] = [UPSTREAM_TAG]
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="def detach_tree(obj):\n")]
    nb.cells = [cell]
    normalise(nb)
    assert nb.cells[0].outputs == [] and nb.cells[0].metadata["tags"] == [UPSTREAM_TAG, "nbval-ignore-output"]


def test_the_registry_notebooks_exist():
    assert all(Path(lesson.notebook).is_file() for lesson in LESSONS)
