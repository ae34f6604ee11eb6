"""Each lesson's set-up cell (the one after `parameters`): short, and importing torch no cheaper than the floor
notebook does, so a ratio to the floor compares like with like."""

import re

import pytest

from verlstudy.course import registry
from verlstudy.course.twins import FLOOR_SOURCE
from verlstudy.kit.resources import notebooks_dir


def set_up_cell(twin: str) -> str:
    """The first code cell after the one tagged `parameters` (where a lesson imports torch and the kit)."""
    cells = re.split(r"^# %%.*$", twin, flags=re.M)
    markers = re.findall(r"^# %%.*$", twin, flags=re.M)
    after = [i for i, m in enumerate(markers) if "parameters" in m]
    assert after, "no parameters cell"
    code = [cells[i + 1] for i in range(after[0] + 1, len(markers)) if "[markdown]" not in markers[i]]
    return code[0]


@pytest.mark.parametrize("lesson", registry.LESSONS, ids=lambda lesson: lesson.stem)
def test_a_lesson_imports_torch_no_cheaper_than_the_floor(lesson):
    setup = set_up_cell((notebooks_dir() / "py" / f"{lesson.stem}.py").read_text(encoding="utf-8"))
    assert "import" in setup
    if "gc.disable()" in setup:
        assert FLOOR_SOURCE.index("gc.disable()") < FLOOR_SOURCE.index("import torch"), lesson.stem
    if "gc.freeze()" in setup:
        assert "gc.freeze()" in FLOOR_SOURCE, lesson.stem


@pytest.mark.parametrize("lesson", registry.LESSONS, ids=lambda lesson: lesson.stem)
def test_a_set_up_cell_is_at_most_20_lines(lesson):
    setup = set_up_cell((notebooks_dir() / "py" / f"{lesson.stem}.py").read_text(encoding="utf-8"))
    lines = [line for line in setup.splitlines() if line.strip()]
    assert len(lines) <= 20, f"{lesson.stem}: {len(lines)} lines; validation belongs in one lesson helper"


def test_the_floor_gives_the_collector_back():
    assert "gc.disable()" not in FLOOR_SOURCE or FLOOR_SOURCE.rstrip().endswith("gc.enable()")
