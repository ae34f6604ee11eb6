"""Each lesson's set-up cell (the one after `parameters`): short, the Colab install its first lines; no speed-only code
anywhere (a learner's first code is the lesson)."""

import re

import pytest

from verlstudy.course import registry
from verlstudy.kit import colab
from verlstudy.kit.resources import notebooks_dir


def set_up_cell(twin: str) -> str:
    """The first code cell after the one tagged `parameters` (where a lesson imports torch and the kit)."""
    cells = re.split(r"^# %%.*$", twin, flags=re.M)
    markers = re.findall(r"^# %%.*$", twin, flags=re.M)
    after = [i for i, m in enumerate(markers) if "parameters" in m]
    assert after, "no parameters cell"
    code = [cells[i + 1] for i in range(after[0] + 1, len(markers)) if "[markdown]" not in markers[i]]
    return code[0]


SPEED_ONLY = re.compile(r"\bgc\.(?:disable|enable|freeze|unfreeze|set_threshold)\(")


@pytest.mark.parametrize("lesson", registry.LESSONS, ids=lambda lesson: lesson.stem)
def test_no_cell_holds_speed_only_code(lesson):
    twin = (notebooks_dir() / "py" / f"{lesson.stem}.py").read_text(encoding="utf-8")
    found = [line for line in twin.splitlines() if SPEED_ONLY.search(line) and not line.lstrip().startswith("#")]
    assert not found, f"{lesson.stem}: the collector's tuning belongs in kit.lesson_start, not on screen: {found}"


@pytest.mark.parametrize("lesson", registry.LESSONS, ids=lambda lesson: lesson.stem)
def test_the_first_code_is_the_lesson_and_the_set_up_installs_on_colab(lesson):
    twin = (notebooks_dir() / "py" / f"{lesson.stem}.py").read_text(encoding="utf-8")
    first_code = re.search(r"^# %%(?! \[markdown\]).*$", twin, flags=re.M)
    assert first_code and "parameters" in first_code.group(0), f"{lesson.stem}: the first code cell is not `parameters`"
    assert set_up_cell(twin).lstrip("\n").startswith(colab.SETUP_LINES), f"{lesson.stem}: the Colab lines changed"
    assert twin.count("google.colab") == 1, f"{lesson.stem}: the Colab step is in the set-up cell only"


@pytest.mark.parametrize("lesson", registry.LESSONS, ids=lambda lesson: lesson.stem)
def test_a_set_up_cell_is_at_most_20_lines(lesson):
    setup = set_up_cell((notebooks_dir() / "py" / f"{lesson.stem}.py").read_text(encoding="utf-8"))
    lines = [line for line in setup.splitlines() if line.strip()]
    assert len(lines) <= 20, f"{lesson.stem}: {len(lines)} lines; validation belongs in one lesson helper"
