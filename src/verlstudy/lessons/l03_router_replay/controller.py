"""The replay lifecycle: opt-in and model-scoped (#7805) versus registry-first (#7106, reverted by #7786).

As upstream's `verl/workers/engine/megatron/transformer_impl.py` (`enable_routing_replay = mode !=
"disabled"` gates every hook) and `verl/utils/config.py::_validate_router_replay_config` (R2 rejected
with `bypass_mode=True`), verl 0.9.1:

- `check_mode`: the three modes `"disabled" | "R2" | "R3"`;
- `ReplayController`: the lifecycle gated by the mode and scoped to the forwarded model;
  `RevertedReplayController`: #7106's shape, kept to show how it failed;
- `record_routes`, `replay_off_record`, `recompute_off_record`: one forward (or a 1F1B recompute)
  under a controller, each a few calls of the notebook's experiments.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from verlstudy.kit.params import positive_int
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
    "ReplayController",
    "RevertedReplayController",
    "check_mode",
    "recompute_off_record",
    "record_routes",
    "replay_off_record",
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
# The lifecycle: opt-in and model-scoped (#7805) versus registry-first (#7106, reverted)
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


class RevertedReplayController(ReplayController):
    """#7106's shape, reconstructed for the lesson (reverted by #7786; not upstream code).

    Before looking at the mode, every hook asks the process-global registry for "the local routers"
    by position (the first `num_layers` entries) and reads the first one's action unguarded. An
    ordinary job (replay disabled, so no router ever registered) fails with IndexError; a registry
    holding a stale model's routers hands those back instead of this model's. (verl 0.9.1's
    positional helper now guards emptiness with `bool(router_instances_list) and ...`.)
    """

    def __init__(self, mode: str = "disabled", *, num_layers: int, registry: list[RouterReplay] | None = None):
        super().__init__(mode)
        self.num_layers = positive_int("num_layers", num_layers)
        self.registry = ROUTER_REGISTRY if registry is None else registry

    def _routers(self, model: nn.Module) -> list[RouterReplay]:
        return self.registry[: self.num_layers]  # positional: whichever routers registered first

    def begin(
        self,
        model: nn.Module,
        *,
        forward_only: bool,
        routes: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
    ) -> str:
        routers = self._routers(model)
        _ = routers[0].action is ReplayAction.RECORD  # the unguarded registry query, before the mode check
        if not self.enabled:
            return "none"
        if self.mode == "R2" and forward_only and routes is None:
            for router in routers:
                router.clear()
                router.set_action(ReplayAction.RECORD)
            self._recording = True
            return "record"
        if routes is None:
            raise RuntimeError(f"router_replay.mode={self.mode!r}: no routes for this forward")
        for column, router in enumerate(routers):  # positional: column i goes to the i-th registered router
            router.set_target(routes[:, column], mask)
            router.set_action(ReplayAction.REPLAY_FORWARD)
        self._recording = False
        return "replay"

    def end(self, model: nn.Module) -> torch.Tensor | None:
        routers = self._routers(model)
        if not self.enabled:
            return None
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
