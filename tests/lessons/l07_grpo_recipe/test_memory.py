"""memory: device vs host bytes per rank with and without the #7788 offload settings."""

import pytest

from verlstudy.kit.resources import data_dir
from verlstudy.lessons.l07_grpo_recipe.memory import (
    NO_OFFLOAD,
    OffloadSettings,
    memory_by_phase,
    memory_by_phase_without_grad_copy,
    totals,
)
from verlstudy.lessons.l07_grpo_recipe.parallel import ParallelLayout, load_recipe

LAYOUT = ParallelLayout(nodes=32, devices_per_node=16, tp=8, pp=8, cp=1, ep=64, etp=1)
RECIPE = load_recipe(data_dir() / "recipes" / "glm52_grpo_7788.yaml")
SHARE = 512.0  # expert params on one rank: 1 / (etp * ep * pp)


def test_the_recipe_file_carries_the_scripts_offload_settings():
    off = RECIPE["offload"]
    assert off["param_offload"] and off["optimizer_offload"] and off["optimizer_cpu_offload"]
    assert off["optimizer_offload_fraction"] == 1.0 and off["use_precision_aware_optimizer"]
    assert off["ref_param_offload"] and off["use_distributed_optimizer"]
    assert RECIPE["upstream_commit"] == "89dad2d7a82dbd0e6740788fd755ecb09613c72f"


def test_without_offload_everything_stays_on_the_device_in_both_phases():
    t = totals(memory_by_phase(LAYOUT, 0, 512e6, NO_OFFLOAD))
    per_param = 512e6 / SHARE
    assert t == {
        "train device": 18 * per_param,
        "train host": 0.0,
        "rollout device": 18 * per_param,
        "rollout host": 0.0,
    }


def test_the_recipes_offload_moves_the_optimizer_to_the_host_and_empties_the_device_in_rollout():
    by = memory_by_phase(LAYOUT, 0, 512e6, OffloadSettings.from_recipe(RECIPE["offload"]))
    per_param = 512e6 / SHARE
    assert totals(by) == {
        "train device": 6 * per_param,
        "train host": 16 * per_param,  # optimizer state 12 + the CPU optimizer's pinned fp32 grad copy 4
        "rollout device": 0.0,
        "rollout host": 18 * per_param,  # weights copied out, device grads freed, optimizer and grad copy stay
    }
    assert by["rollout"]["host"]["grads"] == by["train"]["host"]["grads"] == 4 * per_param


def test_the_estimate_before_the_fix_misses_the_pinned_grad_copy():
    recipe = OffloadSettings.from_recipe(RECIPE["offload"])
    before = totals(memory_by_phase_without_grad_copy(LAYOUT, 0, 512e6, recipe))
    after = totals(memory_by_phase(LAYOUT, 0, 512e6, recipe))
    per_param = 512e6 / SHARE
    assert {k: after[k] - before[k] for k in after} == {
        "train device": 0.0,
        "train host": 4 * per_param,
        "rollout device": 0.0,
        "rollout host": 4 * per_param,
    }
    # without a CPU optimizer there is no copy, so the two estimates agree
    assert totals(memory_by_phase_without_grad_copy(LAYOUT, 64e6, 512e6, NO_OFFLOAD)) == totals(
        memory_by_phase(LAYOUT, 64e6, 512e6, NO_OFFLOAD)
    )


def test_half_the_optimizer_on_the_cpu_and_no_idle_offload():
    s = OffloadSettings(optimizer_cpu_offload=True, optimizer_offload_fraction=0.5)
    t = totals(memory_by_phase(LAYOUT, 0, 512e6, s))
    per_param = 512e6 / SHARE
    assert t["train device"] == 12 * per_param and t["train host"] == (6 + 2) * per_param  # half the state + copy
    assert t["rollout device"] == 12 * per_param  # weights, grads and half the optimizer stay resident


def test_dense_optimizer_state_is_sharded_over_dp():
    t = totals(memory_by_phase(LAYOUT, 64e6, 0, NO_OFFLOAD))
    assert t["train device"] == pytest.approx(1e6 * (6 + 12 / 8))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"optimizer_offload_fraction": 1.5}, ValueError, "optimizer_offload_fraction"),
        ({"optimizer_offload_fraction": True}, ValueError, "optimizer_offload_fraction"),
        ({"param_offload": "yes"}, TypeError, "param_offload"),
    ],
)
def test_bad_settings_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        OffloadSettings(**kwargs)


def test_bad_inputs_name_the_argument():
    with pytest.raises(TypeError, match="offload must be an OffloadSettings"):
        memory_by_phase(LAYOUT, 0, 1, {"param_offload": True})
    with pytest.raises(ValueError, match="lacks optimizer_offload"):
        OffloadSettings.from_recipe({"param_offload": True})
    with pytest.raises(TypeError, match="offload mapping"):
        OffloadSettings.from_recipe([1])


@pytest.mark.parametrize("value", [None, 7, "x", [1], {"train": 1}, float("nan")])
def test_totals_names_an_argument_of_the_wrong_type(value):
    # issue 43 item 8: totals(None) ended in "'NoneType' object is not subscriptable"
    from verlstudy.lessons.l07_grpo_recipe.memory import totals

    with pytest.raises(TypeError, match=r"argument by_phase must be memory_by_phase's \{phase: \{place:"):
        totals(value)
