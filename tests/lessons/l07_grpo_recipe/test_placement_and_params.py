"""Lesson 07's device placement (Megatron-core's default rank order on the recipe's 512 devices) and its
one-call parameter check."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from verlstudy.lessons.l07_grpo_recipe.parallel import ParallelLayout
from verlstudy.lessons.l07_grpo_recipe.params import lesson_params
from verlstudy.lessons.l07_grpo_recipe.placement import (
    draw_placement,
    group_nodes,
    placement,
    placement_table,
    rank_place,
    stage_nodes,
)

RECIPE = ParallelLayout(nodes=32, devices_per_node=16, tp=8, pp=8, cp=1, ep=64, etp=1)


def test_every_rank_is_placed_once_and_round_trips_through_megatrons_formula():
    for layout in (RECIPE, ParallelLayout(nodes=2, devices_per_node=8, tp=2, pp=2, cp=2, ep=2, etp=1)):
        places = placement(layout)
        assert [p.rank for p in places] == list(range(layout.world_size))
        for p in places:
            dense = p.tp + layout.tp * (p.cp + layout.cp * (p.dp + layout.dp * p.pp))
            etp = int(layout.etp or 1)
            expert = p.etp + etp * (p.ep + layout.ep * (p.edp + layout.edp * p.pp))
            assert dense == expert == p.rank == p.node * layout.devices_per_node + p.device


def test_the_recipe_layout_stages_on_four_nodes_tp_inside_a_node_ep_across_a_stage():
    assert stage_nodes(RECIPE) == {s: tuple(range(4 * s, 4 * s + 4)) for s in range(8)}
    assert all(len(nodes) == 1 for nodes in group_nodes(RECIPE, "tp"))  # TP inside one node
    assert sorted(map(len, group_nodes(RECIPE, "ep"))) == [4] * 8  # one EP group per stage, 4 nodes each
    assert sorted(map(len, group_nodes(RECIPE, "dp"))) == [4] * 64  # a dp group: one tp rank of each replica
    assert rank_place(RECIPE, 72).dp == 1 and rank_place(RECIPE, 72).pp == 1


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="rank"):
        rank_place(RECIPE, 512)
    with pytest.raises(TypeError, match="ParallelLayout"):
        placement({"tp": 8})
    with pytest.raises(ValueError, match="vary"):
        group_nodes(RECIPE, "vpp")


def test_the_picture_prints_what_it_draws(capsys):
    fig = draw_placement(RECIPE, show=False)
    out = capsys.readouterr().out
    assert out.startswith(placement_table(RECIPE))
    assert "  4 |  64-79  |     1 | dp0 [64-71], dp1 [72-79]" in out and "nodes 28-31" in out
    assert len(out.splitlines()) == 33
    plt.close(fig)


def test_lesson_params_validates_and_reports(capsys):
    p = lesson_params("cpu", 0, 40, 64, 1)
    assert (p.seed, p.bandit_steps, p.bandit_prompts, p.robustness_seeds) == (0, 40, 64, 1)
    assert "running on cpu" in capsys.readouterr().out
    for bad in ((-1, 40, 64, 1), (0, 39, 64, 1), (0, 40, 513, 1), (0, 40, 64, 9)):
        with pytest.raises(ValueError):
            lesson_params("cpu", *bad)
    with pytest.raises(TypeError):
        lesson_params("cpu", 0, 40.0, 64, 1)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("cpu", -1, 39, 64, 1), "bandit_steps"),  # the seed is checked last, after every size
        (("cpu", -1, 40, 64, 9), "robustness_seeds"),
        (("tpu", -1, 39, 64, 1), "device"),  # the device first
    ],
)
def test_a_bad_size_beside_a_bad_seed_is_named_and_nothing_is_said(args, named, capsys):
    with pytest.raises(ValueError, match=f"^(parameter )?{named}\\b"):
        lesson_params(*args)
    assert capsys.readouterr() == ("", "")  # not even "running on cpu"
