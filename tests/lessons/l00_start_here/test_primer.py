"""verl in brief: the RL step's phases and the mini/micro-batch arithmetic; the minutes read from title cells."""

import json

import pytest

from verlstudy.kit.resources import notebooks_dir
from verlstudy.lessons.l00_start_here.arc import lesson_minutes
from verlstudy.lessons.l00_start_here.primer import RL_STEP, batch_split


def test_only_the_update_builds_a_graph():
    assert [p.name for p in RL_STEP if p.grad] == ["update"]
    assert [p.name for p in RL_STEP][:3] == ["rollout", "reward", "old log-prob"]


def test_batch_split_counts_mini_and_micro_batches():
    split = batch_split(prompts=64, n=8, mini_batch_prompts=16, micro_batch=4, dp=8)
    assert (split.responses, split.mini_batches, split.micro_per_mini, split.per_micro) == (512, 4, 4, 4)
    assert batch_split(1, 1, 1, 1).mini_batches == 1


@pytest.mark.parametrize(
    ("args", "error"),
    [((64, 8, 24, 4, 8), "multiple"), ((64, 8, 16, 3, 8), "does not split"), ((0, 8, 16, 4, 8), "prompts")],
)
def test_batch_split_refuses_sizes_that_do_not_divide(args, error):
    with pytest.raises(ValueError, match=error):
        batch_split(*args)


def test_lesson_minutes_reads_each_title_cell(tmp_path):
    assert lesson_minutes(notebooks_dir())["00"] == 15
    cell = {"cell_type": "markdown", "source": "# 01 · x\n**Time:** about 25 minutes."}
    (tmp_path / "01_x.ipynb").write_text(json.dumps({"cells": [cell]}))
    assert lesson_minutes(tmp_path) == {"01": 25}
    (tmp_path / "02_y.ipynb").write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": "# 02"}]}))
    with pytest.raises(ValueError, match="states no"):
        lesson_minutes(tmp_path)


@pytest.mark.parametrize("value", [None, 7, {"mini_batches": 2}])
def test_draw_rl_step_names_a_split_of_the_wrong_type(value):
    # issue 43 item 8: draw_rl_step(None) ended in "'NoneType' object has no attribute 'mini_batches'"
    from verlstudy.lessons.l00_start_here.primer import draw_rl_step

    with pytest.raises(TypeError, match=r"argument split must be a BatchSplit \(from batch_split\)"):
        draw_rl_step(value)
