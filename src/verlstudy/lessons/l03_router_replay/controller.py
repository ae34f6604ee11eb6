"""The replay lifecycle: opt-in and model-scoped (#7805) versus positional and ungated (verl 0.8.0, before #7340).

As upstream's `verl/workers/engine/megatron/transformer_impl.py` (every hook gated by the mode: the engine's
`enable_routing_replay`, set from `router_replay.mode`, gates `forward_step`'s REPLAY hooks; the batch's
`enable_routing_replay` flag and `record_r2_routes` gate the rest) and
`verl/utils/config.py::_validate_router_replay_config` (R2 rejected with `bypass_mode=True`), verl 0.9.1:

- `check_mode`: the three modes `"disabled" | "R2" | "R3"`;
- `ReplayController`: the lifecycle gated by the mode and scoped to the forwarded model;
  `PositionalReplayController` with `ToyTransformerConfig`, `positional_router_list`, `positional_action_is`:
  a positional, ungated lifecycle, verl 0.8.0's shape (before #7340, commit c3747cbd7, first released in
  0.9.0); not 0.9.0's (#7340 already replays there through the model's own routers) and not a
  reproduction of #7106's failure, which the course has not reproduced;
- `record_routes`, `replay_off_record`, `recompute_off_record`: one forward (or a 1F1B recompute)
  under a controller, each a few calls of the notebook's experiments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from verlstudy.kit.params import check_instance, check_int, got, positive_int
from verlstudy.lessons.l03_router_replay.moe import ROUTER_REGISTRY, ReplayAction, RouterReplay
from verlstudy.lessons.l03_router_replay.routes import (
    MissingRoutes,
    recorded_routes,
    rerouted_tokens,
    routers_by_layer,
    routes_used,
    set_replay_targets,
    stack_routes,
)

__all__ = [
    "MODES",
    "PositionalReplayController",
    "ReplayController",
    "ToyTransformerConfig",
    "check_mode",
    "layer_is_moe",
    "positional_action_is",
    "positional_router_list",
    "recompute_off_record",
    "record_routes",
    "replay_off_record",
    "stage_layer_range",
]

MODES: tuple[str, ...] = ("disabled", "R2", "R3")


def check_mode(mode: object) -> str:
    """Return `mode` if it is a router replay mode ('disabled', 'R2', 'R3'), else a clear error."""
    if not isinstance(mode, str):
        raise TypeError(f"router_replay mode must be a string, one of {MODES}; got {type(mode).__name__} {mode!r}")
    if mode not in MODES:
        raise ValueError(f"invalid router_replay mode {mode!r}; must be one of {', '.join(repr(m) for m in MODES)}")
    return mode


# ---------------------------------------------------------------------------------------------
# The lifecycle: opt-in and model-scoped (#7805) versus positional and ungated (verl 0.8.0)
# ---------------------------------------------------------------------------------------------


class ReplayController:
    """The replay lifecycle of one training engine, guarded by the configured mode.

    `begin(model, forward_only=..., routes=...)` before a forward, `end(model)` after it.
    mode "disabled": both are no-ops that never look at any router (an empty or stale registry is
    irrelevant). R2: a forward_only pass without routes RECORDs and `end` returns the stacked map; the
    update forward must be given those routes (missing: RuntimeError). R3: routes come from rollout
    and are always required. Routers are always those of the model being forwarded. R2 with
    `bypass_mode=True` is rejected: bypass skips the old-logprob forward that R2 records in.
    """

    def __init__(self, mode: str = "disabled", *, bypass_mode: bool = False) -> None:
        self.mode = check_mode(mode)
        if self.mode == "R2" and bypass_mode:
            raise ValueError(
                "router_replay.mode='R2' requires rollout_correction.bypass_mode=False: "
                "R2 records routes in the old-logprob forward, which bypass mode skips"
            )
        self._recording = False

    @property
    def enabled(self) -> bool:
        return self.mode != "disabled"

    def _routers(self, model: nn.Module) -> list[RouterReplay]:
        routers = [r for _, r in routers_by_layer(model)]
        if not routers:
            raise RuntimeError(
                f"router_replay.mode={self.mode!r} but the forwarded model has no replay-enabled routers"
            )
        return routers

    def begin(
        self,
        model: nn.Module,
        *,
        forward_only: bool,
        routes: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
    ) -> str:
        """Arm the model's routers for the next forward; returns 'none', 'record' or 'replay'."""
        if not self.enabled:
            return "none"
        routers = self._routers(model)
        if self.mode == "R2" and forward_only and routes is None:
            for router in routers:
                router.clear()
                router.set_action(ReplayAction.RECORD)
            self._recording = True
            return "record"
        if routes is None:
            where = "the old-logprob forward must record them" if self.mode == "R2" else "rollout must provide them"
            raise RuntimeError(f"router_replay.mode={self.mode!r}: no routes for this forward ({where})")
        set_replay_targets(model, routes, mask)
        for router in routers:
            router.set_action(ReplayAction.REPLAY_FORWARD)
        self._recording = False
        return "replay"

    def end(self, model: nn.Module) -> torch.Tensor | None:
        """After the forward: the recorded map (R2 RECORD), else None; replaying routers switch to the FIFO."""
        if not self.enabled:
            return None
        routers = self._routers(model)
        if self._recording:
            self._recording = False
            routes = recorded_routes(model)
            for router in routers:
                router.set_action(None)
            return routes
        for router in routers:
            router.set_action(ReplayAction.REPLAY_BACKWARD)  # a recompute in backward pops its own routes
        return None


@dataclass(frozen=True)
class ToyTransformerConfig:
    """The Megatron TransformerConfig fields the positional layer-info code reads (the course's stand-in).

    `moe_layer_freq`: 1 (every layer MoE, Megatron's default), k (every k-th), a per-layer 0/1 list, or None,
    which the layer-info code rejects (in verl 0.8.0 and 0.9.0 as on #7106's branch: not #7106's regression).
    """

    num_layers: int
    moe_layer_freq: int | tuple[int, ...] | None = 1
    pipeline_model_parallel_size: int = 1
    pipeline_rank: int = 0


_A_CONFIG = "a ToyTransformerConfig (the layer-info code's stand-in for Megatron's TransformerConfig)"


def layer_is_moe(config: ToyTransformerConfig, layer_idx: int) -> bool:
    """Whether 0-based decoder layer `layer_idx` is an MoE layer (the shape of verl's `is_moe_layer`)."""
    check_instance("config", config, ToyTransformerConfig, what=_A_CONFIG)
    check_int("layer_idx", layer_idx, minimum=0, kind="argument")
    freq = config.moe_layer_freq
    if isinstance(freq, int) and not isinstance(freq, bool):
        return layer_idx % freq == 0
    if isinstance(freq, tuple | list):
        return freq[layer_idx] == 1
    raise ValueError(f"unsupported moe_layer_freq {type(freq).__name__}: the layer-info code needs an int or a list")


def stage_layer_range(config: ToyTransformerConfig) -> tuple[int, int]:
    """[start, end) of the decoder layers this pipeline rank builds (even split; `get_current_rank_layer_info`)."""
    check_instance("config", config, ToyTransformerConfig, what=_A_CONFIG)
    per_stage, left = divmod(config.num_layers, positive_int("pipeline size", config.pipeline_model_parallel_size))
    if left:
        raise ValueError(
            f"num_layers={config.num_layers} must divide into {config.pipeline_model_parallel_size} stages"
        )
    return config.pipeline_rank * per_stage, (config.pipeline_rank + 1) * per_stage


def positional_router_list(config: ToyTransformerConfig, registry: list[RouterReplay]) -> list[RouterReplay]:
    """A positional `get_micro_batch_router_list`: layer-info code first, then a slice of the registry.

    The rank's layer range and `layer_is_moe` of every layer before and inside it are computed on
    every call, before anything looks at the registry (which may be empty), as on #7106's branch (verl 0.8.0
    and 0.9.0 compute the layer info of the rank's own layers only, without VPP). The slice is #7106's (head
    33a1928c1): from the MoE layers before this rank's, or from 0 when the registry holds only this rank's
    routers; 0.8.0 and 0.9.0 slice from the front without VPP, the same slice at PP = 1.
    """
    start, end = stage_layer_range(config)
    check_instance("registry", registry, list, what="a list of RouterReplay (ROUTER_REGISTRY's shape)")
    offset = sum(layer_is_moe(config, i) for i in range(start))
    count = sum(layer_is_moe(config, i) for i in range(start, end))
    if len(registry) == count:  # a registry holding only this rank's routers
        offset = 0
    return registry[offset : offset + count]


def positional_action_is(config: ToyTransformerConfig, registry: list[RouterReplay], action: ReplayAction) -> bool:
    """`is_r2_record_action` & co. of 0.8.0, 0.9.0 and #7106: `routers and routers[0].action is ...` after the list."""
    routers = positional_router_list(config, registry)
    return bool(routers) and routers[0].action is action


class PositionalReplayController(ReplayController):
    """A positional, ungated lifecycle: verl 0.8.0's shape, before #7340 (commit c3747cbd7, first in 0.9.0).

    Every hook calls `positional_action_is` first, then looks at the mode: `forward_backward_batch` and
    `forward_step` ask `RouterReplayHelper.is_*_action` on every forward whatever the mode in 0.8.0, as in
    0.9.0 and on #7106's branch (head 33a1928c1), and each asks `get_micro_batch_router_list`, which runs
    layer-info code before slicing the registry. So a config the layer-info code rejects fails even with
    replay off. Then targets, action switches and RECORD go to routers taken by position from the
    registry, as in 0.8.0: a registry holding a discarded decoder's routers in front hands those the
    targets, and the live model routes natively with no error (#7340's description). RECORD from such a
    registry fails (here a RuntimeError naming the layers; 0.8.0's and 0.9.0's merge raise AttributeError on
    the orphans' `recorded_topk_idx` of None). Not 0.9.0's lifecycle: #7340 already gives targets and
    switches to the forwarded model's routers there. Not a reproduction of #7106's failure either (the
    course has not reproduced it).
    """

    def __init__(
        self, mode: str = "disabled", *, tf_config: ToyTransformerConfig, registry: list[RouterReplay] | None = None
    ) -> None:
        super().__init__(mode)
        if not isinstance(tf_config, ToyTransformerConfig):
            raise TypeError(f"tf_config must be a ToyTransformerConfig, got {type(tf_config).__name__}")
        self.tf_config = tf_config
        self.registry = ROUTER_REGISTRY if registry is None else registry

    def _routers(self, model: nn.Module) -> list[RouterReplay]:
        return positional_router_list(self.tf_config, self.registry)  # positional: whichever registered first

    def begin(
        self,
        model: nn.Module,
        *,
        forward_only: bool,
        routes: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
    ) -> str:
        """Ask the positional helper first, whatever the mode; then arm the registry's routers by position."""
        for action in (ReplayAction.REPLAY_BACKWARD, ReplayAction.REPLAY_FORWARD):  # forward_step's queries
            positional_action_is(self.tf_config, self.registry, action)
        if not self.enabled:
            return "none"
        routers = self._routers(model)
        if self.mode == "R2" and forward_only and routes is None:
            for router in routers:
                router.clear()
                router.set_action(ReplayAction.RECORD)
            self._recording = True
            return "record"
        if routes is None:
            where = "the old-logprob forward must record them" if self.mode == "R2" else "rollout must provide them"
            raise RuntimeError(f"router_replay.mode={self.mode!r}: no routes for this forward ({where})")
        for column, router in enumerate(routers):  # column i to the i-th router of the slice (0.8.0, all-MoE)
            router.set_target(routes[:, column], mask)
            router.set_action(ReplayAction.REPLAY_FORWARD)
        self._recording = False
        return "replay"

    def end(self, model: nn.Module) -> torch.Tensor | None:
        positional_action_is(self.tf_config, self.registry, ReplayAction.RECORD)  # forward_backward_batch's query
        if not self.enabled:
            return None
        routers = self._routers(model)
        if self._recording:
            self._recording = False
            missing = tuple(r.layer_number for r in routers if r.recorded is None)
            if missing:
                raise RuntimeError(MissingRoutes(missing).message())
            return stack_routes([(r.layer_number, r.recorded) for r in routers])  # type: ignore[misc]
        for router in routers:
            router.set_action(ReplayAction.REPLAY_BACKWARD)
        return None


# ---------------------------------------------------------------------------------------------
# Driving one forward under a controller (the notebook's experiments, each a few calls)
# ---------------------------------------------------------------------------------------------


def _check_controller(controller: object) -> ReplayController:
    if not isinstance(controller, ReplayController):
        raise TypeError(f"controller must be a ReplayController, got {type(controller).__name__}")
    return controller


def record_routes(controller: ReplayController, model: nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    """R2's old-logprob pass: arm RECORD, forward `tokens` without grad, return the routes (tokens, layers, topk)."""
    if _check_controller(controller).mode != "R2":
        raise ValueError(
            f"record_routes needs an 'R2' controller (R2 records in its old-logprob forward), got {controller.mode!r}"
        )
    if controller.begin(model, forward_only=True) != "record":
        raise RuntimeError("the controller did not arm RECORD for the old-logprob forward")
    with torch.no_grad():
        model(tokens)
    routes = controller.end(model)
    if routes is None:
        raise RuntimeError("the controller returned no recorded routes after the RECORD forward")
    return routes


def replay_off_record(
    controller: ReplayController,
    model: nn.Module,
    tokens: torch.Tensor,
    routes: torch.Tensor,
    *,
    reference: torch.Tensor | None = None,
) -> int:
    """One update forward (no grad) replaying `routes` through `controller`; tokens whose experts differ
    from `reference` (default: `routes`) in the forward `model` actually ran, by `rerouted_tokens`."""
    if not _check_controller(controller).enabled:
        raise ValueError("replay_off_record needs replay enabled ('R2' or 'R3'), got mode 'disabled'")
    controller.begin(model, forward_only=False, routes=routes)
    with torch.no_grad():
        model(tokens)
    return rerouted_tokens(routes if reference is None else reference, routes_used(model))


def recompute_off_record(
    controller: ReplayController, model: nn.Module, micro_batches: Sequence[torch.Tensor], *, switch_to_backward: bool
) -> int:
    """1F1B with activation recompute, in small: tokens of micro-batch 0 that leave its record on recompute.

    Records every micro-batch, runs their update forwards in order (calling `controller.end` after
    each, which switches the routers to the REPLAY_BACKWARD FIFO, only if `switch_to_backward`), then
    re-forwards micro-batch 0 as its recompute in backward would. With the FIFO it pops its own routes
    (0 tokens off); left in REPLAY_FORWARD it silently reads the last micro-batch's targets.
    """
    check_instance("controller", controller, ReplayController, what="a ReplayController (e.g. ReplayController('R2'))")
    check_instance("model", model, nn.Module, what="a TinyMoE (an nn.Module)")
    if isinstance(micro_batches, str | torch.Tensor) or not isinstance(micro_batches, Sequence):
        raise TypeError(f"argument micro_batches must be a list of 1-D token tensors, got {got(micro_batches)}")
    batches = list(micro_batches)
    if len(batches) < 2:
        raise ValueError("micro_batches needs at least 2 micro-batches: the hazard is a later one's targets")
    if not all(isinstance(mb, torch.Tensor) for mb in batches):
        raise TypeError("micro_batches must be 1-D token tensors")
    if len({mb.numel() for mb in batches}) != 1:
        raise ValueError("micro_batches must be token tensors of one length (routes are replayed row for row)")
    routes = [record_routes(controller, model, mb) for mb in batches]
    for mb, mb_routes in zip(batches, routes, strict=True):
        controller.begin(model, forward_only=False, routes=mb_routes)
        with torch.no_grad():
            model(mb)
        if switch_to_backward:
            controller.end(model)
    with torch.no_grad():
        model(batches[0])  # the recompute of micro-batch 0
    return rerouted_tokens(routes[0], routes_used(model))
