"""parallel: the #7788 recipe's layout, layout strings and batch arithmetic, and their errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from verlstudy.lessons.l07_grpo_recipe.parallel import (
    BatchPlan,
    ParallelLayout,
    RolloutLayout,
    StageSpec,
    estimate_train_memory_per_device,
    load_recipe,
    parse_pipeline_layout,
    pipeline_bubble_fraction,
)

RECIPE_LAYOUT = "Et*10|t*12|t*8|t*8|t*12|t*12|t*12|t*4L"


def recipe() -> ParallelLayout:
    return ParallelLayout(nodes=32, devices_per_node=16, tp=8, pp=8, cp=1, ep=64, etp=1)


class TestParallelLayout:
    def test_the_recipe_derives_dp_8_and_edp_1(self):
        layout = recipe()
        assert layout.world_size == 512
        assert (layout.dp, layout.edp, layout.ranks_per_stage) == (8, 1, 64)
        assert layout.tp_within_node

    def test_summary_lists_every_size_in_a_fixed_order(self):
        assert list(recipe().summary()) == ["world_size", "tp", "pp", "cp", "dp", "ep", "etp", "edp", "ranks_per_stage"]

    def test_etp_defaults_to_tp_as_in_megatron(self):
        layout = ParallelLayout(nodes=1, devices_per_node=16, tp=2, pp=2, ep=2)
        assert layout.etp == 2
        assert layout.edp == 16 // (2 * 2 * 2)

    def test_cp_divides_dense_dp_but_not_expert_dp(self):
        layout = ParallelLayout(nodes=1, devices_per_node=512, tp=8, pp=4, cp=2, ep=8, etp=1)
        assert (layout.dp, layout.edp) == (8, 16)

    def test_tp_across_nodes_is_flagged(self):
        assert not ParallelLayout(nodes=2, devices_per_node=8, tp=16).tp_within_node

    @pytest.mark.parametrize(
        ("kwargs", "words"),
        [
            ({"tp": 8, "pp": 6}, "tp*cp*pp = 8*1*6 = 48"),
            ({"tp": 8, "pp": 8, "ep": 128, "etp": 1}, "etp*ep*pp = 1*128*8 = 1024"),
            ({"tp": 3}, "not divisible by tp*cp*pp"),
        ],
    )
    def test_a_layout_that_does_not_divide_names_the_product(self, kwargs, words):
        with pytest.raises(ValueError, match=r"not divisible") as info:
            ParallelLayout(nodes=32, devices_per_node=16, **kwargs)
        assert words in str(info.value)

    @pytest.mark.parametrize("bad", [0, -8])
    def test_non_positive_sizes_are_value_errors(self, bad):
        with pytest.raises(ValueError, match="tp must be a positive integer"):
            ParallelLayout(nodes=1, devices_per_node=8, tp=bad)

    @pytest.mark.parametrize("bad", [2.0, "8", True, None])
    def test_non_integers_are_type_errors(self, bad):
        with pytest.raises(TypeError, match="pp must be a positive integer"):
            ParallelLayout(nodes=1, devices_per_node=8, pp=bad)

    @given(
        tp=st.sampled_from([1, 2, 4, 8]),
        pp=st.sampled_from([1, 2, 4, 8]),
        cp=st.sampled_from([1, 2]),
        ep=st.sampled_from([1, 2, 8, 64]),
        etp=st.sampled_from([1, 2]),
        nodes=st.sampled_from([1, 4, 32]),
    )
    def test_every_accepted_layout_multiplies_back_to_the_world(self, tp, pp, cp, ep, etp, nodes):
        world = nodes * 16
        try:
            layout = ParallelLayout(nodes=nodes, devices_per_node=16, tp=tp, pp=pp, cp=cp, ep=ep, etp=etp)
        except ValueError:
            assert world % (tp * cp * pp) or world % (etp * ep * pp)
            return
        assert layout.tp * layout.cp * layout.dp * layout.pp == world
        assert etp * ep * layout.edp * pp == world
        assert layout.ranks_per_stage * pp == world


class TestRolloutLayout:
    def test_the_recipe_has_8_replicas_of_64_devices(self):
        rollout = RolloutLayout(world_size=512, tp=8, dp=8, ep=64)
        assert (rollout.devices_per_replica, rollout.replicas) == (64, 8)

    def test_ep_must_equal_tp_times_dp(self):
        with pytest.raises(ValueError, match=r"ep=32 must equal tp\*dp = 8\*8 = 64"):
            RolloutLayout(world_size=512, tp=8, dp=8, ep=32)

    def test_replicas_must_be_whole(self):
        with pytest.raises(ValueError, match="replicas would not be whole"):
            RolloutLayout(world_size=100, tp=8, dp=1)


class TestPipelineLayoutString:
    def test_the_recipe_string_is_8_stages_and_78_layers(self):
        layout = parse_pipeline_layout(RECIPE_LAYOUT)
        assert layout.num_stages == 8 and layout.num_layers == 78
        assert layout.layers_per_stage == (10, 12, 8, 8, 12, 12, 12, 4)
        assert layout.stages[0] == StageSpec(layers=10, embedding=True)
        assert layout.stages[-1] == StageSpec(layers=4, loss=True)
        assert layout.imbalance == pytest.approx(12 / (78 / 8))
        layout.check(pp=8, num_layers=78)

    def test_mtp_layers_and_repeats_of_one(self):
        layout = parse_pipeline_layout("Ett|t*2m|tmL")
        assert layout.layers_per_stage == (2, 2, 1)
        assert [s.mtp_layers for s in layout.stages] == [0, 1, 1]

    def test_check_names_the_disagreement(self):
        layout = parse_pipeline_layout(RECIPE_LAYOUT)
        with pytest.raises(ValueError, match="8 stages but pp=4"):
            layout.check(pp=4, num_layers=78)
        with pytest.raises(ValueError, match="places 78 layers but the model has 80"):
            layout.check(pp=8, num_layers=80)

    @pytest.mark.parametrize(
        ("text", "words"),
        [
            ("Et*10|t*x|t*4L", "bad token '*x' in stage 1"),
            ("Et*10|q*2|t*4L", "bad token 'q*2' in stage 1"),
            ("Et*10|(tt)*2|t*4L", "parenthesised groups are not supported"),
            ("Et*10||t*4L", "stage 1 of layout 'Et*10||t*4L' is empty"),
            ("Et*10|t*4L|", "stage 2"),
            ("t*10|Et*4L", "'E' must open stage 0"),
            ("Et*4L|t*10", "'L' must close the last stage"),
            ("Et*10|t*4", "has no 'L'"),
            ("t*10|t*4L", "has no 'E'"),
            ("Et*0|t*4L", "repeat count must be >= 1"),
            ("", "layout is empty"),
        ],
    )
    def test_malformed_strings_name_the_bad_token(self, text, words):
        with pytest.raises(ValueError) as info:
            parse_pipeline_layout(text)
        assert words in str(info.value)

    def test_a_non_string_is_a_type_error(self):
        with pytest.raises(TypeError, match="layout must be a string"):
            parse_pipeline_layout(["E", "t"])


class TestBatchPlan:
    def test_the_recipe_runs_16_micro_batches_per_rank_per_mini_batch(self):
        plan = BatchPlan(train_batch_size=64, n=8, ppo_mini_batch_size=16, micro_batch_size=1, dp=8)
        assert plan.sequences_per_step == 512
        assert plan.sequences_per_mini_batch == 128
        assert plan.mini_batches_per_step == 4
        assert plan.sequences_per_rank == 16
        assert plan.micro_batches_per_mini_batch == 16

    @pytest.mark.parametrize(
        ("kwargs", "words"),
        [
            ({"ppo_mini_batch_size": 24}, "train_batch_size=64 is not divisible by ppo_mini_batch_size=24"),
            ({"dp": 3}, "does not split over dp=3"),
            ({"micro_batch_size": 3}, "not divisible by micro_batch_size=3"),
        ],
    )
    def test_sizes_that_do_not_divide_are_named(self, kwargs, words):
        args = {"train_batch_size": 64, "n": 8, "ppo_mini_batch_size": 16, "micro_batch_size": 1, "dp": 8} | kwargs
        with pytest.raises(ValueError) as info:
            BatchPlan(**args)
        assert words in str(info.value)

    def test_bubble_fraction_by_hand(self):
        assert pipeline_bubble_fraction(8, 16) == pytest.approx(7 / 23)
        assert pipeline_bubble_fraction(1, 4) == 0.0
        with pytest.raises(ValueError, match="micro_batches must be a positive integer"):
            pipeline_bubble_fraction(8, 0)


class TestMemoryEstimate:
    def test_hand_computed_case(self):
        layout = ParallelLayout(nodes=1, devices_per_node=16, tp=2, pp=2, ep=4, etp=1)  # dp 4, edp 2
        est = estimate_train_memory_per_device(layout, dense_params=400, expert_params=800)
        assert est["dense_params_per_device"] == 100  # 400 / (2*2)
        assert est["expert_params_per_device"] == 100  # 800 / (1*4*2)
        assert est["weights_and_grads_bytes"] == 200 * 6
        assert est["optimizer_bytes"] == 100 * 12 / 4 + 100 * 12 / 2
        assert est["total_bytes"] == 1200 + 300 + 600

    def test_without_a_distributed_optimizer_every_replica_holds_the_full_state(self):
        layout = ParallelLayout(nodes=1, devices_per_node=16, tp=2, pp=2, ep=4, etp=1)
        est = estimate_train_memory_per_device(layout, 400, 800, distributed_optimizer=False)
        assert est["optimizer_bytes"] == 200 * 12

    def test_context_parallel_ranks_share_the_dense_optimizer_state(self):
        # cp ranks hold the same dense weights, so Megatron shards the dense optimizer state over
        # dp * cp (its data-and-context-parallel group); experts are sharded over edp, cp aside
        layout = ParallelLayout(nodes=1, devices_per_node=16, tp=2, pp=2, cp=2, ep=4, etp=1)  # dp 2, edp 2
        est = estimate_train_memory_per_device(layout, dense_params=400, expert_params=800)
        assert est["dense_params_per_device"] == 100  # 400 / (2*2): cp does not split weights
        assert est["optimizer_bytes"] == 100 * 12 / (2 * 2) + 100 * 12 / 2
        no_cp = ParallelLayout(nodes=1, devices_per_node=8, tp=2, pp=2, cp=1, ep=4, etp=1)  # dp 2, edp 1
        assert estimate_train_memory_per_device(no_cp, 400, 0)["optimizer_bytes"] == 100 * 12 / 2

    @pytest.mark.parametrize(
        ("args", "kwargs", "exc", "words"),
        [
            ((None, 1, 1), {"distributed_optimizer": 1}, TypeError, "distributed_optimizer must be True or False"),
            (("layout", 1, 1), {}, TypeError, "layout must be a ParallelLayout"),
            ((None, -1, 1), {}, ValueError, "dense_params must be a non-negative"),
            ((None, 1, 1), {"param_bytes": 1.5}, ValueError, "param_bytes must be a non-negative integer"),
        ],
    )
    def test_bad_input(self, args, kwargs, exc, words):
        args = (recipe() if args[0] is None else args[0], *args[1:])
        with pytest.raises(exc, match=words):
            estimate_train_memory_per_device(*args, **kwargs)


class TestLoadRecipe:
    def test_the_stored_recipe_loads_and_builds_its_layouts(self):
        from verlstudy.course.registry import project_root

        data = load_recipe(project_root() / "data" / "recipes" / "glm52_grpo_7788.yaml")
        train = data["train"]
        layout = ParallelLayout(**data["cluster"], **{k: train[k] for k in ("tp", "pp", "cp", "ep", "etp")})
        assert (layout.dp, layout.edp) == (8, 1)
        parse_pipeline_layout(train["pipeline_layout"]).check(pp=train["pp"], num_layers=train["num_layers"])
        assert data["algorithm"]["clip_ratio_high"] == 0.28

    def test_a_missing_key_is_named(self, tmp_path):
        path = tmp_path / "r.yaml"
        path.write_text(
            "cluster: {nodes: 1, devices_per_node: 8}\ntrain: {tp: 1}\nrollout: {}\nbatch: {}\nalgorithm: {}\n"
        )
        with pytest.raises(ValueError, match="section 'train' lacks pp, cp, ep, etp, num_layers, pipeline_layout"):
            load_recipe(path)

    def test_missing_section_and_file(self, tmp_path):
        path = tmp_path / "r.yaml"
        path.write_text("cluster: {nodes: 1, devices_per_node: 8}\n")
        with pytest.raises(ValueError, match="has no section 'train'"):
            load_recipe(path)
        with pytest.raises(ValueError, match="does not exist"):
            load_recipe(tmp_path / "absent.yaml")
        (tmp_path / "list.yaml").write_text("- 1\n")
        with pytest.raises(ValueError, match="must be a mapping"):
            load_recipe(tmp_path / "list.yaml")


def test_a_corrupt_recipe_file_is_named_with_its_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("cluster:\n  nodes: 32\n  devices: [16\n")
    with pytest.raises(ValueError, match=r"recipe .*broken.yaml, line \d+: not valid YAML"):
        load_recipe(path)


@pytest.mark.parametrize("value", [None, 7, [1], {"a": 1}, float("nan")])
def test_load_recipe_names_a_path_of_the_wrong_type(value):
    # issue 43 item 8: load_recipe(None) ended in pathlib's raw "expected str, bytes or os.PathLike object"
    from verlstudy.lessons.l07_grpo_recipe.parallel import load_recipe

    with pytest.raises(TypeError, match=r"argument path must be a recipe YAML file's path \(str or Path\)"):
        load_recipe(value)
