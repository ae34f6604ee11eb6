"""Lesson 03's mechanism: replay actions, the toy MoE, the opt-in lifecycle, stacking, pp_gather, config walk."""

from __future__ import annotations

import multiprocessing as mp
import time
from types import SimpleNamespace

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from verlstudy.common.dist import DistributedRunError, RankOutcome, run_local
from verlstudy.lessons.l03_router_replay.controller import (
    PositionalReplayController,
    ReplayController,
    ToyTransformerConfig,
    check_mode,
    layer_is_moe,
    positional_action_is,
    positional_router_list,
    recompute_off_record,
    record_routes,
    replay_off_record,
    stage_layer_range,
)
from verlstudy.lessons.l03_router_replay.moe import (
    ReplayAction,
    RouterReplay,
    TinyMoE,
    sgd_step,
)
from verlstudy.lessons.l03_router_replay.pipeline import (
    GLOO_TIMEOUT_TEXT,
    failed_outcomes,
    from_wire,
    outcome_lines,
    pp_gather,
    pp_gather_worker,
    raise_instead_of_joining,
    stage_layer_numbers,
    to_wire,
    toy_global_routes,
)
from verlstudy.lessons.l03_router_replay.routes import (
    MissingRoutes,
    local_stage_routes,
    model_routers,
    recorded_routes,
    replay_columns,
    rerouted_per_layer,
    rerouted_tokens,
    routers_by_layer,
    routes_used,
    set_replay_targets,
    stack_routes,
)
from verlstudy.lessons.l03_router_replay.text_config import (
    ToyConfig,
    bfs_config_attr,
    get_text_config_attr,
)

SHAPE = (2, 3, 2, 384)  # batch, seq, topk, num_experts (ids above 255: a uint8 cast would corrupt them)


def _tokens(n: int = 24, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, 16, (n,), generator=torch.Generator().manual_seed(seed))


def _model(seed: int = 0, **kwargs: object) -> TinyMoE:
    torch.manual_seed(seed)
    kwargs.setdefault("registry", [])
    return TinyMoE(**kwargs)  # type: ignore[arg-type]


def _record(model: TinyMoE, tokens: torch.Tensor) -> torch.Tensor:
    controller = ReplayController("R2")
    assert controller.begin(model, forward_only=True) == "record"
    with torch.no_grad():
        model(tokens)
    routes = controller.end(model)
    assert routes is not None
    return routes


# --- modes --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["disabled", "R2", "R3"])
def test_check_mode_accepts_the_three_modes(mode: str) -> None:
    assert check_mode(mode) == mode


def test_check_mode_rejects_others_naming_the_allowed_modes() -> None:
    with pytest.raises(ValueError, match=r"'disabled', 'R2', 'R3'"):
        check_mode("r2")
    with pytest.raises(TypeError, match="must be a string"):
        check_mode(None)


# --- one router's replay state --------------------------------------------------------------------


def test_router_replay_registers_itself_in_the_given_registry() -> None:
    registry: list[RouterReplay] = []
    a, b = RouterReplay(1, registry), RouterReplay(2, registry)
    assert registry == [a, b]
    with pytest.raises(ValueError, match="layer_number"):
        RouterReplay(0, registry)


def test_record_keeps_native_topk_as_int16() -> None:
    r = RouterReplay(1, [])
    scores = torch.tensor([[0.1, 0.5, 0.4], [0.7, 0.2, 0.1]])
    r.set_action(ReplayAction.RECORD)
    chosen = r.select(scores, 2)
    assert chosen.tolist() == [[1, 2], [0, 1]]
    assert r.recorded is not None and r.recorded.dtype == torch.int16
    assert r.recorded.tolist() == chosen.tolist()


def test_no_action_is_native_and_replay_forward_uses_targets() -> None:
    r = RouterReplay(1, [])
    scores = torch.tensor([[0.1, 0.5, 0.4], [0.7, 0.2, 0.1]])
    assert r.select(scores, 1).tolist() == [[1], [0]]
    r.set_target(torch.tensor([[2], [2]], dtype=torch.int16))
    r.set_action(ReplayAction.REPLAY_FORWARD)
    assert r.select(scores, 1).tolist() == [[2], [2]]


def test_replay_mask_replays_where_set_and_keeps_native_elsewhere() -> None:
    r = RouterReplay(1, [])
    scores = torch.tensor([[0.1, 0.5, 0.4], [0.7, 0.2, 0.1]])
    r.set_target(torch.tensor([[2], [2]]), torch.tensor([True, False]))
    r.set_action(ReplayAction.REPLAY_FORWARD)
    assert r.select(scores, 1).tolist() == [[2], [0]]


def test_replay_backward_pops_targets_first_in_first_out() -> None:
    r = RouterReplay(1, [])
    scores = torch.zeros(1, 4)
    for expert in (3, 1, 2):
        r.set_target(torch.tensor([[expert]]))
    r.set_action(ReplayAction.REPLAY_BACKWARD)
    assert [int(r.select(scores, 1)) for _ in range(3)] == [3, 1, 2]
    with pytest.raises(RuntimeError, match="FIFO is empty"):
        r.select(scores, 1)


def test_replay_without_routes_or_with_misaligned_routes_is_an_error() -> None:
    r = RouterReplay(4, [])
    r.set_action(ReplayAction.REPLAY_FORWARD)
    with pytest.raises(RuntimeError, match="layer 4: REPLAY_FORWARD but no target"):
        r.select(torch.zeros(2, 3), 1)
    r.set_target(torch.zeros(5, 1, dtype=torch.int64))
    with pytest.raises(RuntimeError, match="not aligned"):
        r.select(torch.zeros(2, 3), 1)


def test_set_target_and_set_action_reject_bad_input() -> None:
    r = RouterReplay(1, [])
    with pytest.raises(TypeError, match="integer tensor"):
        r.set_target(torch.zeros(2, 1))
    with pytest.raises(TypeError, match="bool tensor of shape"):
        r.set_target(torch.zeros(2, 1, dtype=torch.int64), torch.ones(3, dtype=torch.bool))
    with pytest.raises(TypeError, match="ReplayAction"):
        r.set_action("record")  # type: ignore[arg-type]


def test_clear_forgets_everything() -> None:
    r = RouterReplay(1, [])
    r.set_target(torch.zeros(1, 1, dtype=torch.int64))
    r.set_action(ReplayAction.RECORD)
    r.select(torch.zeros(1, 2), 1)
    r.clear()
    assert (r.action, r.recorded, r.target, len(r.backward_queue)) == (None, None, None, 0)


# --- the toy model --------------------------------------------------------------------------------


def test_tiny_moe_shapes_registration_and_bad_input() -> None:
    registry: list[RouterReplay] = []
    model = _model(registry=registry, layer_numbers=(2, 3, 1))
    assert [r.layer_number for r in registry] == [2, 3, 1]
    assert [n for n, _ in model_routers(model)] == [2, 3, 1]  # walk order = registration order
    assert model(_tokens()).shape == (24, 16)
    assert routes_used(model).shape == (24, 3, 2)
    with pytest.raises(TypeError, match="1-D integer"):
        model(torch.zeros(3))
    with pytest.raises(ValueError, match="distinct"):
        TinyMoE(layer_numbers=(1, 1), registry=[])
    with pytest.raises(ValueError, match="topk=5 must not exceed"):
        TinyMoE(topk=5, num_experts=4, registry=[])
    plain: list[RouterReplay] = []
    assert model_routers(TinyMoE(enable_replay=False, registry=plain)) == [] and plain == []
    with pytest.raises(RuntimeError, match="run a forward first"):
        routes_used(TinyMoE(registry=[]))


# --- the lifecycle --------------------------------------------------------------------------------


def test_replay_reproduces_recorded_experts_after_an_update_while_native_routing_moves() -> None:
    model, tokens = _model(), _tokens()
    routes = _record(model, tokens)
    loss = torch.nn.functional.cross_entropy(model(tokens), _tokens(seed=1))
    loss.backward()
    sgd_step(model, lr=1.0)
    with torch.no_grad():
        model(tokens)
    assert rerouted_tokens(routes, routes_used(model)) > 0
    controller = ReplayController("R2")
    assert controller.begin(model, forward_only=False, routes=routes) == "replay"
    model(tokens)
    assert rerouted_tokens(routes, routes_used(model)) == 0
    controller.end(model)
    assert all(r.action is ReplayAction.REPLAY_BACKWARD for _, r in model_routers(model))


def test_disabled_is_a_no_op_with_an_empty_or_stale_registry() -> None:
    controller = ReplayController("disabled")
    plain = _model(enable_replay=False)
    assert controller.begin(plain, forward_only=True) == "none"
    assert controller.end(plain) is None
    stale: list[RouterReplay] = []
    _model(registry=stale)  # another model's routers, never cleaned up
    model = _model(registry=stale)
    assert controller.begin(model, forward_only=False) == "none"
    assert controller.end(model) is None
    assert all(r.action is None and r.target is None for r in stale)


DENSE_JOB = ToyTransformerConfig(num_layers=3, moe_layer_freq=None)  # the course's ordinary dense job
MOE_JOB = ToyTransformerConfig(num_layers=3)


def test_positional_controller_fails_on_an_ordinary_job_in_the_layer_info_code() -> None:
    for hook in ("begin", "end"):
        positional = PositionalReplayController("disabled", tf_config=DENSE_JOB, registry=[])
        call = getattr(positional, hook)
        with pytest.raises(ValueError, match="unsupported moe_layer_freq NoneType"):
            call(_model(enable_replay=False), forward_only=True) if hook == "begin" else call(_model())
    # the guard `routers and ...` does work once the layer-info code gets through: an empty list is False
    assert positional_router_list(MOE_JOB, []) == []
    assert not positional_action_is(MOE_JOB, [], ReplayAction.RECORD)
    assert (
        PositionalReplayController("disabled", tf_config=MOE_JOB, registry=[]).begin(_model(), forward_only=True)
        == "none"
    )
    with pytest.raises(TypeError, match="ToyTransformerConfig"):
        PositionalReplayController("R2", tf_config=SimpleNamespace(num_layers=3))  # type: ignore[arg-type]


def test_the_layer_info_code() -> None:
    assert [layer_is_moe(ToyTransformerConfig(4, 2), i) for i in range(4)] == [True, False, True, False]
    assert [layer_is_moe(ToyTransformerConfig(3, (1, 0, 1)), i) for i in range(3)] == [True, False, True]
    assert stage_layer_range(ToyTransformerConfig(4, 1, 2, 1)) == (2, 4)
    with pytest.raises(ValueError, match="must divide into 2 stages"):
        stage_layer_range(ToyTransformerConfig(3, 1, 2, 0))
    routers = [RouterReplay(n, []) for n in (1, 2, 3, 4)]
    second_stage = ToyTransformerConfig(4, 1, 2, 1)
    assert positional_router_list(second_stage, routers) == routers[2:]  # the whole model's registry
    assert positional_router_list(second_stage, routers[2:]) == routers[2:]  # only this rank's routers
    routers[2].set_action(ReplayAction.RECORD)
    assert positional_action_is(second_stage, routers, ReplayAction.RECORD)


def test_positional_controller_leaks_a_stale_model() -> None:
    registry: list[RouterReplay] = []
    old, new = _model(seed=1, registry=registry), _model(seed=2, registry=registry)
    tokens = _tokens()
    old_routes = _record(old, tokens)
    own_routes = _record(new, tokens)
    positional = PositionalReplayController("R2", tf_config=MOE_JOB, registry=registry)
    positional.begin(new, forward_only=True)  # arms the old model's routers: clears them, records nothing
    with torch.no_grad():
        new(tokens)
    with pytest.raises(RuntimeError, match=r"captured nothing for layers \[1, 2, 3\]"):
        positional.end(new)
    for _, r in model_routers(old):  # the old model's stale record is still sitting there
        r.recorded = old_routes[:, r.layer_number - 1]
    positional._recording = True
    leaked = positional.end(new)
    assert leaked is not None and torch.equal(leaked, old_routes)
    assert rerouted_tokens(own_routes, leaked) > 0


def test_r2_needs_routes_for_the_update_and_r3_always() -> None:
    model = _model()
    with pytest.raises(RuntimeError, match="old-logprob forward must record"):
        ReplayController("R2").begin(model, forward_only=False)
    with pytest.raises(RuntimeError, match="rollout must provide"):
        ReplayController("R3").begin(model, forward_only=True)
    routes = _record(model, _tokens())
    assert ReplayController("R3").begin(model, forward_only=True, routes=routes) == "replay"


def test_r2_is_rejected_with_bypass_mode_and_needs_routers() -> None:
    with pytest.raises(ValueError, match="bypass_mode=False"):
        ReplayController("R2", bypass_mode=True)
    assert ReplayController("R3", bypass_mode=True).mode == "R3"
    with pytest.raises(RuntimeError, match="no replay-enabled routers"):
        ReplayController("R2").begin(_model(enable_replay=False), forward_only=True)
    with pytest.raises(ValueError, match="invalid router_replay mode"):
        ReplayController("R4")


def test_record_that_captured_nothing_names_the_layers() -> None:
    model = _model(layer_numbers=(1, 2))
    controller = ReplayController("R2")
    controller.begin(model, forward_only=True)
    with pytest.raises(RuntimeError, match=r"captured nothing for layers \[1, 2\]"):
        controller.end(model)  # no forward ran


def test_recompute_pops_its_own_micro_batch_routes_and_a_stuck_action_gives_wrong_grads() -> None:
    def grads(checkpointed: bool, stuck: bool) -> torch.Tensor:
        model = _model(seed=3, checkpoint_layers=checkpointed)
        batches = [_tokens(12, seed=s) for s in (4, 5)]
        recorded = [_record(model, b) for b in batches]
        controller = ReplayController("R2")
        losses = []
        for tokens, routes in zip(batches, recorded, strict=True):
            controller.begin(model, forward_only=False, routes=routes)
            losses.append(model(tokens).logsumexp(-1).mean())
            if not stuck:
                controller.end(model)
        for loss in losses:  # 1F1B-like: both forwards first, then the backwards in order
            loss.backward()
        return torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])

    reference = grads(checkpointed=False, stuck=False)
    assert torch.allclose(grads(checkpointed=True, stuck=False), reference, atol=1e-6)
    assert not torch.allclose(grads(checkpointed=True, stuck=True), reference, atol=1e-3)


def test_record_routes_is_the_r2_old_logprob_pass() -> None:
    model, tokens = _model(), _tokens()
    routes = record_routes(ReplayController("R2"), model, tokens)
    assert routes.shape == (24, 3, 2) and routes.dtype == torch.int16
    assert torch.equal(routes, routes_used(model).to(torch.int16))  # what the forward routed natively
    assert all(r.action is None for _, r in model_routers(model))  # end() disarmed RECORD
    with pytest.raises(ValueError, match="needs an 'R2' controller"):
        record_routes(ReplayController("R3"), model, tokens)
    with pytest.raises(TypeError, match="ReplayController"):
        record_routes("R2", model, tokens)  # type: ignore[arg-type]


def test_replay_off_record_counts_tokens_off_the_reference() -> None:
    model, tokens = _model(layer_numbers=(2, 3, 1)), _tokens()
    controller = ReplayController("R2")
    by_layer = record_routes(controller, model, tokens)
    by_walk = recorded_routes(model, order="walk")
    assert replay_off_record(controller, model, tokens, by_layer) == 0
    off = replay_off_record(controller, model, tokens, by_walk, reference=by_layer)
    assert off == rerouted_tokens(by_layer, by_walk) > 0  # replay followed the (wrong) columns exactly
    assert all(r.action is ReplayAction.REPLAY_FORWARD for _, r in model_routers(model))
    with pytest.raises(ValueError, match="needs replay enabled"):
        replay_off_record(ReplayController("disabled"), model, tokens, by_layer)


def test_recompute_off_record_fifo_versus_stuck_in_replay_forward() -> None:
    model, controller = _model(seed=6), ReplayController("R2")
    micro = [_tokens(16, seed=s) for s in (8, 9)]
    assert recompute_off_record(controller, model, micro, switch_to_backward=True) == 0
    stuck = recompute_off_record(controller, model, micro, switch_to_backward=False)
    routes = [record_routes(controller, model, mb) for mb in micro]
    assert stuck == rerouted_tokens(routes[0], routes[1]) > 0  # it replayed micro-batch 1's targets
    with pytest.raises(ValueError, match="at least 2 micro-batches"):
        recompute_off_record(controller, model, micro[:1], switch_to_backward=True)
    with pytest.raises(ValueError, match="one length"):
        recompute_off_record(controller, model, [micro[0], micro[1][:8]], switch_to_backward=True)
    with pytest.raises(TypeError, match="token tensors"):
        recompute_off_record(controller, model, [[1, 2], [3, 4]], switch_to_backward=True)  # type: ignore[list-item]


# --- stacking ---------------------------------------------------------------------------------------


def test_stack_routes_sorts_by_layer_number_and_walk_order_keeps_the_bug() -> None:
    pairs = [(3, torch.full((2, 1), 3)), (1, torch.full((2, 1), 1)), (2, torch.full((2, 1), 2))]
    assert stack_routes(pairs)[0, :, 0].tolist() == [1, 2, 3]
    assert stack_routes(pairs, order="walk")[0, :, 0].tolist() == [3, 1, 2]
    assert stack_routes(pairs).dtype == torch.int16


@pytest.mark.parametrize("order", ["layer", "walk"])
def test_stack_routes_rejects_duplicates_in_both_orders(order: str) -> None:
    with pytest.raises(ValueError, match="duplicate layer numbers"):
        stack_routes(
            [(1, torch.zeros(2, 1, dtype=torch.int64)), (1, torch.zeros(2, 1, dtype=torch.int64))], order=order
        )


def test_stack_routes_bad_input() -> None:
    with pytest.raises(ValueError, match="empty"):
        stack_routes([])
    with pytest.raises(ValueError, match="'layer' or 'walk'"):
        stack_routes([(1, torch.zeros(2, 1, dtype=torch.int64))], order="random")
    with pytest.raises(TypeError, match="integer tensor"):
        stack_routes([(1, torch.zeros(2, 1))])


def test_walk_ordered_record_lands_on_the_wrong_layers_silently() -> None:
    model, tokens = _model(layer_numbers=(2, 3, 1)), _tokens()
    routes = _record(model, tokens)
    walk = recorded_routes(model, order="walk")
    controller = ReplayController("R2")
    controller.begin(model, forward_only=False, routes=walk)
    with torch.no_grad():
        model(tokens)  # no error
    assert rerouted_tokens(routes, routes_used(model)) > 0
    controller.begin(model, forward_only=False, routes=routes)
    with torch.no_grad():
        model(tokens)
    assert rerouted_tokens(routes, routes_used(model)) == 0


def test_routers_by_layer_sorts_the_walk_and_rejects_duplicates() -> None:
    model = _model(layer_numbers=(2, 3, 1))
    assert [n for n, _ in routers_by_layer(model)] == [1, 2, 3]
    assert [r for _, r in routers_by_layer(model)] == [r for _, r in sorted(model_routers(model), key=lambda p: p[0])]
    model.layers[1].router.layer_number = 2  # two routers now claim layer 2
    with pytest.raises(ValueError, match="duplicate layer numbers"):
        routers_by_layer(model)


def test_set_replay_targets_checks_the_layer_count() -> None:
    with pytest.raises(RuntimeError, match="cover 2 layers but the model has 3 replay-enabled routers"):
        set_replay_targets(_model(), torch.zeros(4, 2, 2, dtype=torch.int16))
    with pytest.raises(RuntimeError, match="cover 4 layers"):
        set_replay_targets(_model(), torch.zeros(4, 4, 2, dtype=torch.int16))
    with pytest.raises(TypeError, match="integer tensor"):
        set_replay_targets(_model(), torch.zeros(4, 3, 2))
    with pytest.raises(ValueError, match="index must be one of"):
        replay_columns(_model(), 3, index="ordinal")
    with pytest.raises(RuntimeError, match=r"missing layers \[3\]"):
        replay_columns(_model(), 2, index="position")


def test_mixed_dense_moe_decoder_replays_by_absolute_layer() -> None:
    model = _model(dense_layers=(2,))
    assert model.num_layers == 3 and [n for n, _ in routers_by_layer(model)] == [1, 3]
    assert replay_columns(model, 3) == [0, 2]  # every decoder layer: by layer_number - 1
    assert replay_columns(model, 2) == [0, 1]  # MoE layers only: by ordinal
    assert replay_columns(model, 3, index="position") == [0, 1]  # #5037's bug: layer 3 reads the dense column
    assert replay_columns(_model(), 4, num_layers=4) == [0, 1, 2]  # a decoder of 4 layers given explicitly
    tokens = _tokens()
    recorded = _record(model, tokens)
    every_layer = torch.zeros(tokens.numel(), 3, 2, dtype=torch.int16)
    every_layer[:, [0, 2]] = recorded
    assert ReplayController("R3").begin(model, forward_only=False, routes=every_layer) == "replay"
    with torch.no_grad():
        model(tokens)
    assert rerouted_tokens(recorded, routes_used(model)) == 0
    set_replay_targets(model, every_layer, index="position")
    with torch.no_grad():
        model(tokens)
    assert rerouted_tokens(recorded, routes_used(model)) > 0
    with pytest.raises(ValueError, match="some, not all"):
        TinyMoE(dense_layers=(1, 2, 3), registry=[])
    with pytest.raises(ValueError, match="some, not all"):
        TinyMoE(dense_layers=(4,), registry=[])


def test_the_router_walk_is_scoped_to_the_decoder_and_mtp_routes_natively() -> None:
    model = _model(mtp_layers=1)
    assert [n for n, _ in model_routers(model)] == [1, 2, 3]
    assert [n for n, _ in model_routers(model, scope="model")] == [1, 2, 3, 1]  # MTP restarts at 1
    with pytest.raises(ValueError, match="duplicate layer numbers"):
        routers_by_layer(model, scope="model")
    tokens = _tokens()
    routes = _record(model, tokens)
    assert routes.shape == (tokens.numel(), 3, 2)
    mtp_router = model.mtp[0].router
    assert mtp_router.replay is not None and mtp_router.replay.action is None and mtp_router.replay.recorded is None
    ReplayController("R2").begin(model, forward_only=False, routes=routes)
    with torch.no_grad():
        model(tokens)
    assert rerouted_tokens(routes, routes_used(model)) == 0 and mtp_router.last_indices is not None
    with pytest.raises(ValueError, match="scope must be one of"):
        model_routers(model, scope="everything")
    with pytest.raises(ValueError, match="mtp_layers"):
        TinyMoE(mtp_layers=-1, registry=[])


def test_upstream_attribute_names_alias_the_toy_state() -> None:
    router = RouterReplay(1, [])
    router.set_router_replay_action(ReplayAction.RECORD)
    assert router.router_replay_action is ReplayAction.RECORD and router.recorded_topk_idx is None
    router.set_target_indices(torch.zeros(2, 1, dtype=torch.long), replay_mask=torch.tensor([True, False]))
    assert router.target is not None and router.target_mask is not None
    model = _model()
    assert model.layers[0].router.router_replay is model.layers[0].router.replay


def test_rerouted_tokens_ignores_order_within_k_and_checks_shapes() -> None:
    a = torch.tensor([[[0, 1]], [[2, 3]]])
    assert rerouted_tokens(a, a.flip(-1)) == 0
    assert rerouted_tokens(a, torch.tensor([[[0, 1]], [[2, 0]]])) == 1
    with pytest.raises(ValueError, match="shapes differ"):
        rerouted_tokens(a, a[:1])
    with pytest.raises(TypeError, match="reference"):
        rerouted_tokens(a.float(), a)


# --- the wire format ---------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(-(2**15), 2**15 - 1), min_size=12, max_size=12),
    st.integers(0, 3),
)
def test_wire_roundtrip_is_bit_exact_for_every_int16(values: list[int], extra_layers: int) -> None:
    routes = torch.tensor(values, dtype=torch.int16).reshape(1, 2, 3, 2)
    payload = to_wire(routes, 3 + extra_layers)
    assert payload.dtype == torch.uint8 and payload.shape == (1, 2, 3 + extra_layers, 4)
    assert int(payload[:, :, 3:].sum()) == 0  # padding is zeros, on the layer dim only
    assert torch.equal(from_wire(payload, 3), routes)


def test_a_value_cast_would_corrupt_expert_ids_above_255() -> None:
    routes = torch.tensor([300], dtype=torch.int16).reshape(1, 1, 1, 1)
    assert int(routes.to(torch.uint8)) == 44
    assert int(from_wire(to_wire(routes, 1), 1)) == 300


def test_wire_bad_input() -> None:
    with pytest.raises(TypeError, match="int16"):
        to_wire(torch.zeros(1, 1, 1, 1, dtype=torch.int64), 1)
    with pytest.raises(ValueError, match="max_layers"):
        to_wire(torch.zeros(1, 1, 2, 1, dtype=torch.int16), 1)
    with pytest.raises(TypeError, match="uint8"):
        from_wire(torch.zeros(1, 1, 1, 2, dtype=torch.int16), 1)
    with pytest.raises(ValueError, match="layer_count"):
        from_wire(torch.zeros(1, 1, 1, 2, dtype=torch.uint8), 2)
    with pytest.raises(ValueError, match="even"):
        from_wire(torch.zeros(1, 1, 1, 3, dtype=torch.uint8), 1)


# --- pp_gather over real gloo ranks ------------------------------------------------------------------


def test_pp_gather_outside_a_process_group_and_bad_input() -> None:
    with pytest.raises(TypeError, match="int16 tensor"):
        pp_gather(torch.zeros(1, 1, 1, 1))
    with pytest.raises(RuntimeError, match="initialised"):
        pp_gather(torch.zeros(1, 1, 1, 1, dtype=torch.int16))


def test_stage_layer_numbers() -> None:
    assert [stage_layer_numbers([2, 0, 1], s) for s in range(3)] == [[1, 2], [], [3]]
    with pytest.raises(ValueError, match="stage"):
        stage_layer_numbers([1], 1)
    with pytest.raises(ValueError, match="layer_counts"):
        stage_layer_numbers([1, -1], 0)


def test_toy_global_routes_distinct_experts_per_token() -> None:
    routes = toy_global_routes(2, 3, 4, 2, 384, seed=0)
    assert routes.shape == (2, 3, 4, 2) and routes.dtype == torch.int16
    assert bool((routes[..., 0] != routes[..., 1]).all()) and int(routes.max()) > 255
    with pytest.raises(ValueError, match="topk"):
        toy_global_routes(1, 1, 1, 3, 2, seed=0)


@pytest.mark.parametrize("layer_counts", [[2, 0, 1], [0, 3], [1, 1, 1, 0]])
def test_pp_gather_with_an_empty_stage_is_bit_exact(layer_counts: list[int]) -> None:
    results = run_local(pp_gather_worker, len(layer_counts), layer_counts, SHAPE, 7, timeout_s=30)
    batch, seq, topk, num_experts = SHAPE
    expected = toy_global_routes(batch, seq, sum(layer_counts), topk, num_experts, 7)
    for gathered in results:
        assert gathered.dtype == torch.int16
        assert torch.equal(gathered, expected)


def test_pp_gather_when_no_stage_has_moe_layers_returns_a_zero_layer_map() -> None:
    results = run_local(pp_gather_worker, 2, [0, 0], SHAPE, 7, timeout_s=30)
    assert [tuple(r.shape) for r in results] == [(2, 3, 0, 2)] * 2


def test_a_stage_that_captured_nothing_makes_every_rank_raise_together_fast() -> None:
    start = time.monotonic()
    with pytest.raises(DistributedRunError) as info:
        run_local(pp_gather_worker, 3, [2, 1, 1], SHAPE, 7, 1, timeout_s=30, collective_timeout_s=20)
    assert time.monotonic() - start < 10  # nobody waited out the 20 s collective timeout
    outcomes = info.value.outcomes
    assert [o.error_type for o in outcomes] == ["RuntimeError"] * 3
    assert all("stage(s) [1] have routers but captured no routes" in o.error_message for o in outcomes)


def test_a_rank_that_raises_instead_of_joining_strands_the_others_until_the_timeout() -> None:
    peers_gave_up = mp.get_context("fork").Event()
    start = time.monotonic()
    with pytest.raises(DistributedRunError) as info:
        run_local(
            raise_instead_of_joining, 2, [1, 1], SHAPE, 7, 1, peers_gave_up, timeout_s=30, collective_timeout_s=1.0
        )
    assert time.monotonic() - start >= 1.0  # rank 0 sat in the collective for the whole timeout
    lines = outcome_lines(info.value.outcomes)
    assert lines == [
        f"rank 0: RuntimeError: {GLOO_TIMEOUT_TEXT}",
        "rank 1: RuntimeError: router replay RECORD captured nothing for layers [2]",
    ]


def test_the_joining_rank_clocks_its_own_wait_while_this_process_works() -> None:
    fork = mp.get_context("fork")
    peers_gave_up, joined_for = fork.Event(), fork.Value("d", 0.0)
    with pytest.raises(DistributedRunError) as info:
        run_local(
            raise_instead_of_joining,
            2,
            [1, 1],
            SHAPE,
            7,
            1,
            peers_gave_up,
            joined_for,
            timeout_s=30,
            collective_timeout_s=0.5,
            while_waiting=lambda: time.sleep(3.0),
        )
    # the rank's own clock: this process's 3 s of work is not in it (a 0.5 s timeout read 1.5 s once under load)
    assert 0.5 <= joined_for.value < 3.0
    assert outcome_lines(info.value.outcomes)[0] == f"rank 0: RuntimeError: {GLOO_TIMEOUT_TEXT}"


def test_pp_gather_worker_checks_its_arguments() -> None:
    with pytest.raises(DistributedRunError, match="layer_counts has 1 stages but world_size is 2"):
        run_local(pp_gather_worker, 2, [1], SHAPE, 7, timeout_s=30)


def test_outcome_lines_for_ok_ranks() -> None:
    lines = outcome_lines([RankOutcome(0, True, torch.zeros(2, 3, dtype=torch.int16)), RankOutcome(1, True, 5)])
    assert lines == ["rank 0: ok, returned tensor (2, 3) torch.int16", "rank 1: ok, returned 5"]


# --- the config walk -----------------------------------------------------------------------------------


def _omni() -> ToyConfig:
    text = ToyConfig("Text", hidden_size=4096, tie_word_embeddings=False, moe_layer_freq=0)
    audio = ToyConfig("Audio", hidden_size=1280, num_mel_bins=128)
    code2wav = ToyConfig("Code2Wav", hidden_size=512, num_mel_bins=80)
    return ToyConfig("Omni", hidden_size=1024, text_config=text, audio_config=audio, code2wav_config=code2wav)


def test_text_branch_wins_over_the_root_and_falsy_values_are_kept() -> None:
    config = _omni()
    assert get_text_config_attr(config, "hidden_size") == 4096
    assert get_text_config_attr(config, "tie_word_embeddings") is False
    assert get_text_config_attr(config, "moe_layer_freq") == 0


def test_naive_root_first_bfs_is_silently_wrong() -> None:
    config = _omni()
    assert bfs_config_attr(config, "hidden_size") == 1024
    assert bfs_config_attr(config, "num_mel_bins") == 128  # read from the audio sibling
    with pytest.raises(AttributeError, match="has no 'nope' anywhere"):
        bfs_config_attr(config, "nope")


def test_only_siblings_having_it_raises_naming_type_attribute_and_where() -> None:
    with pytest.raises(AttributeError) as info:
        get_text_config_attr(_omni(), "num_mel_bins")
    message = str(info.value)
    assert message.startswith("OmniConfig has no nested 'num_mel_bins' on its text branch")
    assert "audio_config, code2wav_config" in message


@pytest.mark.parametrize("branch", ["language_config", "thinker_config", "model_config"])
def test_wrapper_branches_are_walked(branch: str) -> None:
    config = ToyConfig(
        "Wrapper", **{branch: ToyConfig("LM", rope_theta=1e6)}, audio_config=ToyConfig("A", rope_theta=1)
    )
    assert get_text_config_attr(config, "rope_theta") == 1e6


def test_nested_thinker_text_config_deepest_first() -> None:
    thinker = ToyConfig("Thinker", hidden_size=2048, text_config=ToyConfig("Text", hidden_size=3584))
    config = ToyConfig("Omni", thinker_config=thinker, talker_config=ToyConfig("Talker", hidden_size=896))
    assert get_text_config_attr(config, "hidden_size") == 3584
    assert bfs_config_attr(config, "hidden_size") == 2048


def test_root_value_used_when_the_branch_lacks_it_and_none_counts_as_absent() -> None:
    config = ToyConfig("Root", vocab_size=151936, text_config=ToyConfig("Text", vocab_size=None, hidden_size=8))
    assert get_text_config_attr(config, "vocab_size") == 151936


def test_cycles_are_safe() -> None:
    root = ToyConfig("Root")
    text = ToyConfig("Text", model_config=root, language_config=None)
    root.text_config = text
    root.audio_config = ToyConfig("Audio", parent=root, hidden_size=3)
    with pytest.raises(AttributeError, match="only off-branch sub-configs have it"):
        get_text_config_attr(root, "hidden_size")
    selfish = ToyConfig("Self", hidden_size=None)
    selfish.text_config = selfish
    with pytest.raises(AttributeError, match="SelfConfig has no nested 'hidden_size'"):
        get_text_config_attr(selfish, "hidden_size")


def test_plain_objects_without_get_text_config() -> None:
    config = SimpleNamespace(text_config=SimpleNamespace(num_layers=4), num_layers=2)
    assert get_text_config_attr(config, "num_layers") == 4
    with pytest.raises(AttributeError, match="SimpleNamespace has no nested 'x'"):
        get_text_config_attr(config, "x")


def test_get_text_config_returning_none_falls_back_to_text_config() -> None:
    class Odd:
        def __init__(self) -> None:
            self.text_config = SimpleNamespace(hidden_size=7)

        def get_text_config(self) -> None:
            return None

    assert get_text_config_attr(Odd(), "hidden_size") == 7


def test_config_walk_bad_input() -> None:
    with pytest.raises(TypeError, match="attribute name"):
        get_text_config_attr(_omni(), 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="valid attribute name"):
        get_text_config_attr(_omni(), "hidden size")
    with pytest.raises(TypeError, match="got None"):
        get_text_config_attr(None, "hidden_size")
    with pytest.raises(TypeError, match="kind"):
        ToyConfig("")


def test_missing_routes_message() -> None:
    assert MissingRoutes((3, 4)).message() == "router replay RECORD captured nothing for layers [3, 4]"


def test_sgd_step_updates_and_clears_grads() -> None:
    model = torch.nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(1.0)
    model(torch.ones(1, 2)).sum().backward()
    sgd_step(model, lr=0.5)
    assert model.weight.tolist() == [[0.5, 0.5]] and model.weight.grad is None
    with pytest.raises(ValueError, match="lr must be a positive"):
        sgd_step(model, lr=0)
    with pytest.raises(TypeError, match=r"nn\.Module"):
        sgd_step("model", lr=1.0)  # type: ignore[arg-type]


def test_rerouted_per_layer_counts_each_column() -> None:
    a = torch.tensor([[[0, 1], [2, 3]], [[0, 1], [2, 3]]])
    b = torch.tensor([[[1, 0], [2, 0]], [[0, 2], [3, 2]]])
    assert rerouted_per_layer(a, b) == [1, 1]
    with pytest.raises(ValueError, match="shapes differ"):
        rerouted_per_layer(a, b[:1])


def test_failed_outcomes_returns_every_rank_or_asserts() -> None:
    from verlstudy.common import dist

    outcomes = failed_outcomes(dist.raise_on_rank, 2, 1, timeout_s=30)
    assert [o.ok for o in outcomes] == [True, False]
    with pytest.raises(AssertionError, match="all 2 ranks returned"):
        failed_outcomes(dist.raise_on_rank, 2, 5, timeout_s=30)


def test_local_stage_routes_three_cases() -> None:
    empty = local_stage_routes(_model(enable_replay=False), 2, 12, 2)
    assert isinstance(empty, torch.Tensor) and empty.shape == (2, 12, 0, 2) and empty.dtype == torch.int16
    model = _model(layer_numbers=(4, 3))
    assert local_stage_routes(model, 2, 12, 2) == MissingRoutes((3, 4))
    routes = _record(model, _tokens())
    local = local_stage_routes(model, 2, 12, 2)
    assert isinstance(local, torch.Tensor) and torch.equal(local, routes.reshape(2, 12, 2, 2))
    with pytest.raises(ValueError, match="do not fit"):
        local_stage_routes(model, 3, 12, 2)
    with pytest.raises(ValueError, match="batch"):
        local_stage_routes(model, 0, 12, 2)


@pytest.mark.parametrize("value", [None, 7, "x", float("nan")])
def test_lesson_03_helpers_name_an_argument_of_the_wrong_type(value):
    # issue 43 item 8: these ended in a raw AttributeError ('NoneType' object has no attribute 'moe_layer_freq')
    from verlstudy.lessons.l03_router_replay.routes import stack_routes

    config = ToyTransformerConfig(num_layers=2)
    model = TinyMoE(hidden=8, num_experts=4, topk=2, registry=[])
    tokens = torch.zeros(4, dtype=torch.long)
    calls = [
        (lambda v: layer_is_moe(v, 0), r"argument config must be a ToyTransformerConfig"),
        (lambda v: stage_layer_range(v), r"argument config must be a ToyTransformerConfig"),
        (lambda v: positional_router_list(v, []), r"argument config must be a ToyTransformerConfig"),
        (lambda v: positional_router_list(config, v), r"argument registry must be a list of RouterReplay"),
        (lambda v: recompute_off_record(v, model, [tokens, tokens], switch_to_backward=True), "argument controller"),
        (
            lambda v: recompute_off_record(ReplayController("R2"), v, [tokens], switch_to_backward=True),
            "argument model",
        ),
        (
            lambda v: recompute_off_record(ReplayController("R2"), model, v, switch_to_backward=True),
            r"argument micro_batches must be a list of 1-D token tensors",
        ),
        (lambda v: stack_routes(v), r"argument pairs must be a list of \(layer number, routes\) pairs"),
        (lambda v: stack_routes([v]), r"argument pairs\[0\] must be a \(layer number, routes\) pair"),
        (lambda v: outcome_lines(v), r"argument outcomes must be a list, each item a RankOutcome"),
        (lambda v: outcome_lines([v]), r"argument outcomes\[0\] must be a RankOutcome"),
        (lambda v: stage_layer_numbers([1, 1], v), r"argument stage must be an integer"),
    ]
    if value != 7:
        calls += [
            (lambda v: layer_is_moe(config, v), r"argument layer_idx must be an integer"),
            (lambda v: stage_layer_numbers(v, 0), r"argument layer_counts must be a list of ints >= 0"),
        ]
    for call, named in calls:
        if value == 7 and "stage must be" in named:
            continue
        with pytest.raises(TypeError, match=named) as info:
            call(value)
        assert "\n" not in str(info.value)
