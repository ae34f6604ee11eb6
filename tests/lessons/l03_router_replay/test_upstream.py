"""Lesson 03 runs verl's own functions on the toy model: the loaders, the wrappers, and the guard predicates."""

from __future__ import annotations

import gc
import inspect
import sys
from types import SimpleNamespace

import pytest
import torch

from verlstudy.common.dist import RankOutcome
from verlstudy.kit import upstream
from verlstudy.lessons.l03_router_replay import guards
from verlstudy.lessons.l03_router_replay import upstream as verl_fns
from verlstudy.lessons.l03_router_replay.controller import (
    PositionalReplayController,
    ReplayController,
    ToyTransformerConfig,
    record_routes,
)
from verlstudy.lessons.l03_router_replay.moe import ReplayAction, TinyMoE
from verlstudy.lessons.l03_router_replay.routes import (
    local_stage_routes,
    model_routers,
    recorded_routes,
    rerouted_tokens,
    routes_used,
    set_replay_targets,
    stack_routes,
)
from verlstudy.lessons.l03_router_replay.text_config import ComposedConfig, ToyConfig

needs_verl = pytest.mark.skipif(not upstream.verl_available(), reason="verl is not installed (make setup)")
needs_090 = pytest.mark.skipif(
    not (upstream.verl_available() and upstream.verl_available("0.9.0")), reason="verl 0.9.0 was not fetched"
)
SIZES = {"hidden": 8, "num_experts": 4, "topk": 2}


def _tokens(n: int = 12) -> torch.Tensor:
    return torch.randint(0, 16, (n,), generator=torch.Generator().manual_seed(3))


def _recorded(model: TinyMoE, tokens: torch.Tensor) -> torch.Tensor:
    return record_routes(ReplayController("R2"), model, tokens)


# --- stand-ins ------------------------------------------------------------------------------------------


def test_fake_parallel_state_and_config() -> None:
    mpu = verl_fns.FakeParallelState(pp=2, pp_rank=1)
    assert (mpu.get_pipeline_model_parallel_rank(), mpu.get_pipeline_model_parallel_world_size()) == (1, 2)
    assert mpu.get_tensor_model_parallel_world_size() == mpu.get_context_parallel_world_size() == 1
    with pytest.raises(ValueError, match="pp_rank must be an int in"):
        verl_fns.FakeParallelState(pp=2, pp_rank=2)
    config = verl_fns.megatron_config(3, 2, moe_layer_freq=(1, 0, 1))
    assert config.moe_layer_freq == [1, 0, 1] and config.fp8 is None and config.moe_router_topk == 2
    assert verl_fns.megatron_config(3, 2, moe_layer_freq=None).moe_layer_freq is None
    assert verl_fns.FakePackedSeqParams(cu_seqlens_q=1).cu_seqlens_q == 1


def test_warm_jagged_loads_the_jagged_stack_and_leaves_the_collector_as_it_was() -> None:
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            verl_fns.warm_jagged()
            assert gc.isenabled() is enabled
        assert "torch.distributed.tensor" in sys.modules and gc.get_freeze_count() > 0
    finally:
        gc.enable()
        gc.unfreeze()


def test_load_router_utils_sets_the_layout_on_one_loaded_copy() -> None:
    if not upstream.verl_available():
        pytest.skip("verl is not installed (make setup)")
    first = verl_fns.load_router_utils(pp=3, pp_rank=2)
    assert verl_fns.load_router_utils() is first  # loaded from source once per process
    mpu = first["pp_gather"].__globals__["mpu"]
    assert (mpu.get_pipeline_model_parallel_world_size(), mpu.get_pipeline_model_parallel_rank()) == (1, 0)
    verl_fns.load_router_utils(pp=3, pp_rank=2)
    assert (mpu.get_pipeline_model_parallel_world_size(), mpu.get_pipeline_model_parallel_rank()) == (3, 2)
    with pytest.raises(ValueError, match="pp_rank must be an int in"):
        verl_fns.load_router_utils(pp=2, pp_rank=2)
    assert mpu.get_pipeline_model_parallel_world_size() == 3  # a rejected layout changes nothing
    verl_fns.load_router_utils()


def test_load_router_utils_rejects_a_registry_that_is_not_a_list() -> None:
    if not upstream.verl_available():
        pytest.skip("verl is not installed (make setup)")
    with pytest.raises(TypeError, match="registry must be a list"):
        verl_fns.load_router_utils(registry=(1, 2))  # type: ignore[arg-type]


# --- verl's own functions on the toy model --------------------------------------------------------------


@needs_verl
def test_upstream_merge_matches_ours_and_sorts_a_shuffled_decoder() -> None:
    model = TinyMoE(**SIZES, layer_numbers=(2, 3, 1), registry=[])
    tokens = _tokens()
    ours = _recorded(model, tokens)
    theirs = verl_fns.upstream_record_map(model, 2, 6, verl_fns.megatron_config(3, 2))
    assert theirs.dtype == torch.int16 and torch.equal(theirs, ours.reshape(2, 6, 3, 2))
    assert verl_fns.compare_merge(cases=5).status == "agree"


@needs_verl
def test_upstream_stage_outcomes_are_the_three_stage_kinds() -> None:
    kinds = {
        "none": TinyMoE(**SIZES, enable_replay=False, registry=[]),
        "missing": TinyMoE(**SIZES, registry=[]),
    }
    outcome, value = verl_fns.upstream_stage_outcome(kinds["none"], 1, 4, 2)
    assert outcome == "map" and torch.equal(value, local_stage_routes(kinds["none"], 1, 4, 2))
    assert verl_fns.upstream_stage_outcome(kinds["missing"], 1, 4, 2) == (
        "raises",
        "RuntimeError: router replay RECORD did not capture all local routers",
    )


@needs_verl
def test_upstream_walks_the_decoder_only_and_replays_a_mixed_decoder_by_absolute_layer() -> None:
    assert verl_fns.upstream_decoder_layers(TinyMoE(**SIZES, mtp_layers=2, registry=[])) == [1, 2, 3]
    mixed = TinyMoE(**SIZES, dense_layers=(2,), registry=[])
    tokens = _tokens()
    recorded = _recorded(mixed, tokens)
    every_layer = torch.zeros(tokens.numel(), 3, 2, dtype=torch.int16)
    every_layer[:, [0, 2]] = recorded
    verl_fns.upstream_replay_targets(mixed, every_layer, verl_fns.megatron_config(3, 2, moe_layer_freq=[1, 0, 1]))
    for _, router in model_routers(mixed):
        router.set_action(ReplayAction.REPLAY_FORWARD)
    with torch.no_grad():
        mixed(tokens)
    assert rerouted_tokens(recorded, routes_used(mixed)) == 0
    with pytest.raises(TypeError, match="tokens, layers, topk"):
        verl_fns.upstream_replay_targets(mixed, every_layer[0], verl_fns.megatron_config(3, 2))


@needs_verl
def test_upstream_empty_registry_short_circuits_and_is_moe_layer_rejects_a_dense_config() -> None:
    verl = verl_fns.load_router_utils(registry=[])
    dense = verl_fns.megatron_config(3, 2, moe_layer_freq=None)
    assert verl["RouterReplayHelper"].get_micro_batch_router_list(dense) == []
    with pytest.raises(ValueError, match="Unsupported moe_layer_freq"):
        verl["is_moe_layer"](dense, 0)


# --- verl 0.9.0's lifecycle on a registry holding a discarded decoder (#7340 is in 0.9.0) ----------------


def _stale_registry() -> tuple[list, TinyMoE, TinyMoE]:
    registry: list = []
    torch.manual_seed(5)
    orphans = TinyMoE(**SIZES, registry=registry)  # built, registered, discarded
    live = TinyMoE(**SIZES, registry=registry)
    return registry, orphans, live


def test_load_router_utils_knows_only_the_releases_it_runs() -> None:
    with pytest.raises(ValueError, match="release must be one of"):
        verl_fns.load_router_utils(release="0.8.0")


@needs_090
def test_bshd_packers_of_090_are_091s_so_091s_serve_both() -> None:
    from verlstudy.kit.show import symbol_lines

    new, old = (upstream.upstream_file("models/mcore/util.py", release)[0] for release in (None, "0.9.0"))
    for name in ("preprocess_packed_seqs", "postprocess_packed_seqs"):
        assert symbol_lines(new, name)[1] == symbol_lines(old, name)[1]


@needs_090
def test_090_replays_through_the_model_so_a_stale_registry_does_not_miss() -> None:
    registry, orphans, live = _stale_registry()
    tokens = _tokens()
    routes = _recorded(live, tokens)
    old = verl_fns.load_router_utils(registry, release="0.9.0")
    assert "model" not in inspect.signature(old["merge_router_topk_indices"]).parameters  # 0.9.0's, not 0.9.1's
    with torch.no_grad():  # native routing now picks the other experts of every token: a miss would show
        for layer in live.decoder:
            layer.router.linear.weight.neg_()
    config = verl_fns.megatron_config(3, 2)
    assert verl_fns.replay_off_record_090(live, tokens, routes, registry, config) == 0
    assert all(r.target is None for _, r in model_routers(orphans))  # the targets went to the live routers only
    with pytest.raises(TypeError, match="1-D"):
        verl_fns.replay_off_record_090(live, tokens.unsqueeze(0), routes, registry, config)


@needs_090
def test_090_positional_replay_would_have_missed_the_live_routers() -> None:
    # the planted difference: 0.9.0's same function without model= (its pre-#7340 path) arms the orphans
    registry, orphans, live = _stale_registry()
    tokens = _tokens()
    routes = _recorded(live, tokens)
    old = verl_fns.load_router_utils(registry, release="0.9.0")
    old["set_router_replay_data"](
        routes.unsqueeze(0), torch.ones(1, tokens.numel(), dtype=torch.bool), verl_fns.megatron_config(3, 2)
    )
    assert all(r.target is not None for _, r in model_routers(orphans))
    assert all(r.target is None for _, r in model_routers(live))


@needs_090
def test_090_record_fails_loudly_on_a_stale_registry_and_merges_a_clean_one() -> None:
    registry, _, live = _stale_registry()
    tokens = _tokens()
    config = verl_fns.megatron_config(3, 2)
    with pytest.raises(AttributeError, match="NoneType"):
        verl_fns.record_090(live, tokens, registry, config)
    clean: list = []
    model = TinyMoE(**SIZES, registry=clean)
    merged = verl_fns.record_090(model, tokens, clean, config)
    assert len(merged) == 1 and merged[0].dtype == torch.uint8  # 0.9.0's value cast
    assert torch.equal(merged[0][0].to(torch.int16), recorded_routes(model))
    assert verl_fns.record_090(model, tokens, [], config) == []  # no routers: the positional query says no


@needs_verl
def test_091_positional_helper_refuses_a_stale_registry() -> None:
    registry, _, _ = _stale_registry()
    helper = verl_fns.load_router_utils(registry=registry)["RouterReplayHelper"]
    with pytest.raises(RuntimeError, match="does not cover a complete"):
        helper.get_micro_batch_router_list(verl_fns.megatron_config(3, 2))
    verl_fns.load_router_utils()  # leave the shared copy's registry empty


@needs_verl
def test_upstream_config_walk_on_the_lesson_cases() -> None:
    get_hf_config_attr = verl_fns.load_hf_config_attr()
    composite = ComposedConfig(
        "C", ToyConfig("D", hidden_size=8192), hidden_size=1024, decoder_config=ToyConfig("E", hidden_size=2048)
    )
    assert get_hf_config_attr(composite, "hidden_size") == 8192
    thinker = SimpleNamespace(thinker_config=SimpleNamespace(text_config=SimpleNamespace(hidden_size=4096)))
    thinker.model_config = thinker  # upstream's own test case: nested thinker text config and a cycle
    assert get_hf_config_attr(thinker, "hidden_size") == 4096
    assert verl_fns.compare_config_attr(cases=30).status == "agree"


# --- the guard predicates: each fails on the bug and passes on the fix ----------------------------------


def test_guard_disabled_is_noop() -> None:
    dense = ToyTransformerConfig(num_layers=3, moe_layer_freq=None)
    assert not guards.guard_disabled_is_noop(
        lambda reg: PositionalReplayController("disabled", tf_config=dense, registry=reg), SIZES
    )
    assert guards.guard_disabled_is_noop(lambda reg: ReplayController("disabled"), SIZES)


def test_guard_decoder_scope() -> None:
    assert not guards.guard_decoder_scope(lambda m: model_routers(m, scope="model"), SIZES)
    assert guards.guard_decoder_scope(model_routers, SIZES)


def test_guard_layer_order() -> None:
    routes = _recorded(TinyMoE(**SIZES, registry=[]), _tokens())
    assert not guards.guard_layer_order(lambda pairs: stack_routes(pairs, order="walk"), routes)
    assert guards.guard_layer_order(stack_routes, routes)
    with pytest.raises(ValueError, match="layers >= 2"):
        guards.guard_layer_order(stack_routes, routes[:, :1])


def test_guard_absolute_replay() -> None:
    tokens = _tokens()
    assert not guards.guard_absolute_replay(lambda m, r: set_replay_targets(m, r, index="position"), SIZES, tokens)
    assert not guards.guard_absolute_replay(lambda m, r: set_replay_targets(m, r[:, :2], num_layers=2), SIZES, tokens)
    assert guards.guard_absolute_replay(set_replay_targets, SIZES, tokens)


def test_guard_no_rank_stranded() -> None:
    def failed(rank: int, message: str) -> RankOutcome:
        return RankOutcome(rank=rank, ok=False, value=None, error_type="RuntimeError", error_message=message)

    assert guards.guard_no_rank_stranded([torch.zeros(1), torch.zeros(1)])
    assert guards.guard_no_rank_stranded([failed(0, "stage 1 captured nothing"), failed(1, "stage 1 captured nothing")])
    assert not guards.guard_no_rank_stranded([failed(0, "Timed out"), failed(1, "stage 1 captured nothing")])
    assert not guards.guard_no_rank_stranded([torch.zeros(1), failed(1, "stage 1 captured nothing")])


@pytest.mark.parametrize("value", [None, 7, "x", float("nan")])
def test_guards_name_an_argument_of_the_wrong_type(value) -> None:
    # issue 43 item 8: these ended in "TinyMoE() argument after ** must be a mapping, not NoneType"
    tokens = _tokens()
    calls = [
        (lambda v: guards.guard_disabled_is_noop(v, SIZES), r"argument make_controller must be a function"),
        (lambda v: guards.guard_disabled_is_noop(lambda reg: None, v), r"argument sizes must be a dict of TinyMoE"),
        (lambda v: guards.guard_decoder_scope(v, SIZES), r"argument walk must be a function"),
        (lambda v: guards.guard_decoder_scope(lambda m: [], v), r"argument sizes must be a dict of TinyMoE sizes"),
        (lambda v: guards.guard_absolute_replay(v, SIZES, tokens), r"argument set_targets must be a function"),
        (lambda v: guards.guard_absolute_replay(set_replay_targets, SIZES, v), r"argument tokens must be a 1-D"),
        (lambda v: guards.guard_no_rank_stranded(v), r"argument results must be a list of each rank's tensor"),
        (lambda v: guards.guard_no_rank_stranded([v]), r"argument results\[0\] must be a rank's tensor or RankOutcome"),
    ]
    for call, named in calls:
        with pytest.raises(TypeError, match=named) as info:
            call(value)
        assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"cases": None}, r"argument cases must be a positive integer, got NoneType None"),
        ({"cases": "3"}, r"argument cases must be a positive integer"),
        ({"seed": [1]}, r"argument seed must be an integer, got list"),
        ({"ours": 7}, r"argument ours must be a function \(the code under comparison\) or None, got int 7"),
    ],
)
def test_compare_config_attr_names_an_argument_of_the_wrong_type(args, named):
    # issue 43 item 8: cases=None ended in "'NoneType' object cannot be interpreted as an integer"
    with pytest.raises(TypeError, match=named):
        verl_fns.compare_config_attr(**args)
    with pytest.raises(TypeError, match=r"argument cases must be a positive integer"):
        verl_fns.upstream_check(None)
