"""MoE routing replay made opt-in and model-scoped (verl PR #7805, the redo of #7106 that #7786 reverted).

Routing replay records which experts every token went to during one forward and forces the same
experts in a later forward. In verl, R2 records during the old-logprob pass (forward_only) and
replays in the policy update; R3 records at rollout in the inference engine. Facts were checked
against verl 0.9.1 (`verl/utils/megatron/router_replay_patch.py`, `router_replay_utils.py`,
`verl/utils/megatron_utils.py::get_hf_config_attr`, `verl/utils/config.py`); the code here is
written for this course, over a toy top-k router that runs on a CPU:

- `RouterReplay`: one router's replay state and the actions RECORD, REPLAY_FORWARD and
  REPLAY_BACKWARD (a FIFO, so activation-recompute re-forwards pop their own micro-batch's routes),
  with an optional replay mask (replayed where set, native elsewhere);
- `TopKRouter`, `MoELayer`, `TinyMoE`: linear -> softmax -> top-k, experts, a stack of layers;
- `ReplayController`: the lifecycle gated by the mode (`"disabled" | "R2" | "R3"`) and scoped to the
  forwarded model; `RevertedReplayController`: #7106's shape, kept to show how it failed;
- `stack_routes` / `recorded_routes` / `set_replay_targets`: routes stacked by layer number;
- `pp_gather`: the pipeline-rank gather (layer counts first, padding on the layer dim only, int16
  sent as a bit-exact uint8 view), where a stage that owns no MoE layer joins with a 0-layer map and
  a stage that has routers but captured nothing makes every rank raise together;
- `get_text_config_attr`: reading a model attribute from the text branch of a nested config.
"""

from __future__ import annotations

import multiprocessing.synchronize
import numbers
import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.checkpoint import checkpoint

from verlstudy.kit.exercises import ExerciseFailure

__all__ = [
    "MODES",
    "ROUTER_REGISTRY",
    "TEXT_BRANCHES",
    "MissingRoutes",
    "MoELayer",
    "ReplayAction",
    "ReplayController",
    "RevertedReplayController",
    "RouterReplay",
    "TinyMoE",
    "TopKRouter",
    "ToyConfig",
    "bfs_config_attr",
    "check_mode",
    "check_stack_by_layer",
    "check_text_config_attr",
    "check_wire_roundtrip",
    "failed_outcomes",
    "from_wire",
    "get_text_config_attr",
    "local_stage_routes",
    "model_routers",
    "outcome_lines",
    "pp_gather",
    "pp_gather_worker",
    "raise_instead_of_joining",
    "recompute_off_record",
    "record_routes",
    "recorded_routes",
    "replay_off_record",
    "rerouted_per_layer",
    "rerouted_tokens",
    "routes_used",
    "set_replay_targets",
    "sgd_step",
    "stack_routes",
    "stage_layer_numbers",
    "to_wire",
    "toy_global_routes",
]

MODES: tuple[str, ...] = ("disabled", "R2", "R3")
ROUTE_DTYPE = torch.int16  # verl stores routes as int16: expert ids fit, and the map stays small


class ReplayAction(Enum):
    """What a router does with its top-k choice on the next forward."""

    RECORD = "record"
    REPLAY_FORWARD = "replay_forward"
    REPLAY_BACKWARD = "replay_backward"


def check_mode(mode: object) -> str:
    """Return `mode` if it is a router replay mode ('disabled', 'R2', 'R3'), else a clear error."""
    if not isinstance(mode, str):
        raise TypeError(f"router_replay mode must be a string, one of {MODES}; got {type(mode).__name__} {mode!r}")
    if mode not in MODES:
        raise ValueError(f"invalid router_replay mode {mode!r}; must be one of {', '.join(repr(m) for m in MODES)}")
    return mode


def _check_positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive int, got {type(value).__name__} {value!r}")
    if int(value) < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return int(value)


# ---------------------------------------------------------------------------------------------
# One router's replay state
# ---------------------------------------------------------------------------------------------

# Process-global, like upstream's `RouterReplay.router_instances`: every replay-enabled router built
# in this process appends itself here, whichever model it belongs to, and nothing ever removes it.
ROUTER_REGISTRY: list[RouterReplay] = []


class RouterReplay:
    """Replay state of one router: what it recorded, what it must replay, and its current action.

    `select(scores, topk)` returns the expert indices the router uses:
    RECORD -> native top-k, remembered in `recorded`; REPLAY_FORWARD -> the target routes;
    REPLAY_BACKWARD -> the oldest queued target (FIFO: every `set_target` also queues its routes, so
    each activation-recompute re-forward, run later in backward, pops its own micro-batch's routes);
    no action -> native top-k. With a replay mask, replayed rows are taken where the mask is True and
    native ones elsewhere. Replaying without routes is an error, never a silent native fallback.
    """

    def __init__(self, layer_number: int, registry: list[RouterReplay] | None = None) -> None:
        self.layer_number = _check_positive_int("layer_number", layer_number)
        self.action: ReplayAction | None = None
        self.recorded: torch.Tensor | None = None
        self.target: torch.Tensor | None = None
        self.target_mask: torch.Tensor | None = None
        self.backward_queue: deque[tuple[torch.Tensor, torch.Tensor | None]] = deque()
        (ROUTER_REGISTRY if registry is None else registry).append(self)

    def __repr__(self) -> str:
        action = self.action.value if self.action else None
        return f"RouterReplay(layer_number={self.layer_number}, action={action})"

    def set_action(self, action: ReplayAction | None) -> None:
        if action is not None and not isinstance(action, ReplayAction):
            raise TypeError(f"action must be a ReplayAction or None, got {type(action).__name__} {action!r}")
        self.action = action

    def set_target(self, indices: torch.Tensor, mask: torch.Tensor | None = None) -> None:
        """Routes to replay: `indices` (tokens, topk) integer; `mask` (tokens,) bool, True = replay."""
        if not isinstance(indices, torch.Tensor) or indices.dim() != 2 or indices.is_floating_point():
            raise TypeError(f"layer {self.layer_number}: target routes must be an integer tensor (tokens, topk)")
        if mask is not None and (
            not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.shape != indices.shape[:1]
        ):
            raise TypeError(
                f"layer {self.layer_number}: replay mask must be a bool tensor of shape ({indices.shape[0]},)"
            )
        self.target = indices.to(torch.int64)
        self.target_mask = mask
        self.backward_queue.append((self.target, mask))

    def clear(self) -> None:
        """Forget recorded and target routes and the action (verl calls this after each step)."""
        self.action = None
        self.recorded = None
        self.target = None
        self.target_mask = None
        self.backward_queue.clear()

    def select(self, scores: torch.Tensor, topk: int) -> torch.Tensor:
        """Expert indices (tokens, topk) for `scores` (tokens, experts) under the current action."""
        native = torch.topk(scores, k=topk, dim=1).indices
        if self.action is None:
            return native
        if self.action is ReplayAction.RECORD:
            self.recorded = native.detach().to(ROUTE_DTYPE)
            return native
        if self.action is ReplayAction.REPLAY_FORWARD:
            if self.target is None:
                raise RuntimeError(f"layer {self.layer_number}: REPLAY_FORWARD but no target routes were set")
            wanted, mask = self.target, self.target_mask
        else:
            if not self.backward_queue:
                raise RuntimeError(
                    f"layer {self.layer_number}: REPLAY_BACKWARD but the FIFO is empty "
                    "(more recompute re-forwards than replayed forwards)"
                )
            wanted, mask = self.backward_queue.popleft()
        if wanted.shape != native.shape:
            raise RuntimeError(
                f"layer {self.layer_number}: replay routes are not aligned with this forward: "
                f"targets {tuple(wanted.shape)}, scores {tuple(scores.shape)} with topk={topk}"
            )
        if mask is None:
            return wanted
        return torch.where(mask.unsqueeze(-1), wanted, native)


# ---------------------------------------------------------------------------------------------
# A toy MoE: linear -> softmax -> top-k router, dense experts, layers numbered from 1
# ---------------------------------------------------------------------------------------------


class TopKRouter(nn.Module):
    """linear -> softmax -> top-k over `num_experts`; with `replay`, a RouterReplay picks the indices."""

    def __init__(
        self, hidden: int, num_experts: int, topk: int, layer_number: int, replay: RouterReplay | None = None
    ) -> None:
        super().__init__()
        self.topk = _check_positive_int("topk", topk)
        num_experts = _check_positive_int("num_experts", num_experts)
        if self.topk > num_experts:
            raise ValueError(f"topk={topk} must not exceed num_experts={num_experts}")
        self.layer_number = _check_positive_int("layer_number", layer_number)
        self.linear = nn.Linear(_check_positive_int("hidden", hidden), num_experts, bias=False)
        self.replay = replay
        self.last_indices: torch.Tensor | None = None  # what the latest forward used, for inspection

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        scores = torch.softmax(self.linear(x), dim=-1)
        if self.replay is None:
            indices = torch.topk(scores.detach(), k=self.topk, dim=1).indices
        else:
            indices = self.replay.select(scores.detach(), self.topk)
        self.last_indices = indices.detach()
        return scores.gather(1, indices), indices


class MoELayer(nn.Module):
    """x + sum over the chosen experts of gate * (x @ W_expert); every expert is a (hidden, hidden) map."""

    def __init__(
        self, hidden: int, num_experts: int, topk: int, layer_number: int, replay: RouterReplay | None = None
    ) -> None:
        super().__init__()
        self.router = TopKRouter(hidden, num_experts, topk, layer_number, replay)
        self.experts = nn.Parameter(torch.randn(num_experts, hidden, hidden) / hidden**0.5)

    @property
    def layer_number(self) -> int:
        return self.router.layer_number

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gates, indices = self.router(x)
        every_expert = torch.einsum("th,ehg->teg", x, self.experts)  # tiny sizes: compute all, gather k
        chosen = every_expert.gather(1, indices.unsqueeze(-1).expand(-1, -1, x.shape[-1]))
        return x + (gates.unsqueeze(-1) * chosen).sum(dim=1)


class TinyMoE(nn.Module):
    """Embedding -> MoE layers in layer-number order -> vocabulary head, small enough for a CPU.

    `layer_numbers` is the order the layers are *registered* (built) in, which is the order a module
    walk meets their routers; forward always runs them by layer number. The default is 1..num_layers;
    a shuffled order reproduces routers met out of order. `enable_replay=False` is an ordinary job
    (no RouterReplay anywhere, as verl without the replay patch); `registry` defaults to the
    process-global ROUTER_REGISTRY. `checkpoint_layers` recomputes each layer in backward.
    """

    def __init__(
        self,
        *,
        vocab: int = 16,
        hidden: int = 8,
        num_experts: int = 4,
        topk: int = 2,
        layer_numbers: Sequence[int] = (1, 2, 3),
        enable_replay: bool = True,
        registry: list[RouterReplay] | None = None,
        checkpoint_layers: bool = False,
    ) -> None:
        super().__init__()
        numbers_ = list(layer_numbers)
        if not numbers_ or len(set(numbers_)) != len(numbers_):
            raise ValueError(f"layer_numbers must be distinct and non-empty, got {list(layer_numbers)}")
        self.embed = nn.Embedding(_check_positive_int("vocab", vocab), hidden)
        self.layers = nn.ModuleList(
            MoELayer(hidden, num_experts, topk, n, RouterReplay(n, registry) if enable_replay else None)
            for n in numbers_
        )
        self.head = nn.Linear(hidden, vocab)
        self.checkpoint_layers = bool(checkpoint_layers)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if not isinstance(tokens, torch.Tensor) or tokens.dim() != 1 or tokens.is_floating_point():
            raise TypeError("tokens must be a 1-D integer tensor of token ids")
        x = self.embed(tokens)
        for layer in sorted(self.layers, key=lambda m: m.layer_number):
            x = checkpoint(layer, x, use_reentrant=False) if self.checkpoint_layers else layer(x)
        return self.head(x)


def sgd_step(model: nn.Module, lr: float) -> None:
    """One plain SGD update `p -= lr * p.grad` on every parameter that has a gradient, then zero them.

    (Written out rather than torch.optim.SGD: its first construction imports torch._dynamo, seconds
    of a notebook's budget for one line of arithmetic.)
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if isinstance(lr, bool) or not isinstance(lr, numbers.Real) or not lr > 0:
        raise ValueError(f"lr must be a positive number, got {lr!r}")
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p -= float(lr) * p.grad
                p.grad = None


# ---------------------------------------------------------------------------------------------
# Model-scoped collection and stacking by layer number
# ---------------------------------------------------------------------------------------------


def model_routers(model: nn.Module) -> list[tuple[int, RouterReplay]]:
    """(layer_number, RouterReplay) for every replay-enabled router *of this model*, in walk order."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    return [(m.layer_number, m.replay) for m in model.modules() if isinstance(m, TopKRouter) and m.replay is not None]


def _sorted_by_layer(pairs: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
    layer_numbers = [n for n, _ in pairs]
    if len(set(layer_numbers)) != len(layer_numbers):
        raise ValueError(f"duplicate layer numbers {sorted(layer_numbers)}: routes would overwrite each other")
    return sorted(pairs, key=lambda pair: pair[0])


def stack_routes(pairs: Sequence[tuple[int, torch.Tensor]], *, order: str = "layer") -> torch.Tensor:
    """Stack per-layer routes (tokens, topk) into one int16 map (tokens, layers, topk).

    order="layer" sorts by layer number (the fix); order="walk" keeps the given order, which is the
    silent bug the review caught: replay indexes layers by number, so walk-ordered rows land on the
    wrong layers whenever the walk meets routers out of order. Duplicate layer numbers: ValueError.
    """
    if order not in ("layer", "walk"):
        raise ValueError(f"order must be 'layer' or 'walk', got {order!r}")
    pairs = list(pairs)
    if not pairs:
        raise ValueError("no routes to stack: pairs is empty")
    for n, routes in pairs:
        if not isinstance(routes, torch.Tensor) or routes.dim() != 2 or routes.is_floating_point():
            raise TypeError(f"layer {n}: routes must be an integer tensor (tokens, topk)")
    by_layer = _sorted_by_layer(pairs)  # rejects duplicate layer numbers in either order
    ordered = by_layer if order == "layer" else pairs
    return torch.stack([routes.to(ROUTE_DTYPE) for _, routes in ordered], dim=1)


@dataclass(frozen=True)
class MissingRoutes:
    """A stage that owns routers but captured nothing in RECORD: which layers came back empty."""

    layer_numbers: tuple[int, ...]

    def message(self) -> str:
        return f"router replay RECORD captured nothing for layers {list(self.layer_numbers)}"


def recorded_routes(model: nn.Module, *, order: str = "layer") -> torch.Tensor:
    """The model's recorded routes (tokens, layers, topk) int16; RuntimeError naming layers that captured none."""
    routers = model_routers(model)
    if not routers:
        raise RuntimeError("the model has no replay-enabled routers: nothing was recorded")
    missing = tuple(sorted(n for n, r in routers if r.recorded is None))
    if missing:
        raise RuntimeError(MissingRoutes(missing).message())
    return stack_routes([(n, r.recorded) for n, r in routers], order=order)  # type: ignore[misc]


def local_stage_routes(model: nn.Module, batch: int, seq: int, topk: int) -> torch.Tensor | MissingRoutes:
    """What a pipeline stage hands to `pp_gather` after RECORD, deciding between the three cases.

    No replay-enabled router on this stage: a (batch, seq, 0, topk) int16 map (it still joins).
    Routers, all recorded: their routes (batch, seq, layers, topk) in layer order.
    Routers, some with nothing recorded: `MissingRoutes` naming them, never a raise here, so the stage
    still joins the collective and every rank fails together inside `pp_gather`.
    """
    for name, v in (("batch", batch), ("seq", seq), ("topk", topk)):
        _check_positive_int(name, v)
    routers = model_routers(model)
    if not routers:
        return torch.empty((batch, seq, 0, topk), dtype=ROUTE_DTYPE)
    missing = tuple(sorted(n for n, r in routers if r.recorded is None))
    if missing:
        return MissingRoutes(missing)
    routes = recorded_routes(model)
    if routes.shape[0] != batch * seq or routes.shape[2] != topk:
        raise ValueError(
            f"recorded routes {tuple(routes.shape)} do not fit batch={batch} x seq={seq} tokens with topk={topk}"
        )
    return routes.reshape(batch, seq, routes.shape[1], topk)


def routes_used(model: nn.Module) -> torch.Tensor:
    """The routes the model's latest forward actually used, (tokens, layers, topk) by layer number."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    pairs = [(m.layer_number, m.last_indices) for m in model.modules() if isinstance(m, TopKRouter)]
    if not pairs or any(indices is None for _, indices in pairs):
        raise RuntimeError("run a forward first: some routers have not routed anything yet")
    return stack_routes(pairs)  # type: ignore[arg-type]


def set_replay_targets(model: nn.Module, routes: torch.Tensor, mask: torch.Tensor | None = None) -> None:
    """Give each of the model's routers its column of `routes` (tokens, layers, topk), by layer number."""
    if not isinstance(routes, torch.Tensor) or routes.dim() != 3 or routes.is_floating_point():
        raise TypeError("routes must be an integer tensor (tokens, layers, topk)")
    routers = _sorted_by_layer(model_routers(model))
    if routes.shape[1] != len(routers):
        raise RuntimeError(
            f"replay routes cover {routes.shape[1]} layers but the model has {len(routers)} replay-enabled "
            f"routers (layers {[n for n, _ in routers]})"
        )
    for column, (_, router) in enumerate(routers):
        router.set_target(routes[:, column], mask)


def rerouted_tokens(reference: torch.Tensor, other: torch.Tensor) -> int:
    """Tokens whose chosen expert set differs from `reference` in at least one layer.

    Both are (tokens, layers, topk); the order of the k experts within a token does not matter.
    """
    for name, t in (("reference", reference), ("other", other)):
        if not isinstance(t, torch.Tensor) or t.dim() != 3 or t.is_floating_point():
            raise TypeError(f"{name} must be an integer tensor (tokens, layers, topk)")
    if reference.shape != other.shape:
        raise ValueError(f"shapes differ: reference {tuple(reference.shape)} vs other {tuple(other.shape)}")
    ref = reference.long().sort(dim=-1).values
    oth = other.long().sort(dim=-1).values
    return int((ref != oth).any(dim=-1).any(dim=-1).sum())


def rerouted_per_layer(reference: torch.Tensor, other: torch.Tensor) -> list[int]:
    """For each layer (column), how many tokens' expert sets differ between the two route maps."""
    rerouted_tokens(reference, other)  # validates both
    changed = reference.long().sort(dim=-1).values != other.long().sort(dim=-1).values
    return [int(n) for n in changed.any(dim=-1).sum(dim=0)]


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
        routers = [r for _, r in _sorted_by_layer(model_routers(model))]
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
        self.num_layers = _check_positive_int("num_layers", num_layers)
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


# ---------------------------------------------------------------------------------------------
# pp_gather: the collective over pipeline ranks
# ---------------------------------------------------------------------------------------------

_HEADER = 5  # layer count, missing flag, batch, seq, topk


def to_wire(routes: torch.Tensor, max_layers: int) -> torch.Tensor:
    """int16 routes (B, S, L, k) -> uint8 payload (B, S, max_layers, 2k): a bit view, zero-padded on layers."""
    if not isinstance(routes, torch.Tensor) or routes.dtype != ROUTE_DTYPE or routes.dim() != 4:
        raise TypeError("routes must be an int16 tensor (batch, seq, layers, topk)")
    if isinstance(max_layers, bool) or not isinstance(max_layers, int) or max_layers < routes.shape[2]:
        raise ValueError(f"max_layers must be an int >= the local layer count {routes.shape[2]}, got {max_layers!r}")
    payload = routes.contiguous().view(torch.uint8)  # reinterpret the bytes: no value is cast
    if payload.shape[2] == max_layers:
        return payload
    padded = payload.new_zeros((payload.shape[0], payload.shape[1], max_layers, payload.shape[3]))
    padded[:, :, : payload.shape[2]] = payload
    return padded


def from_wire(payload: torch.Tensor, layer_count: int) -> torch.Tensor:
    """uint8 payload (B, S, L_padded, 2k) -> int16 routes (B, S, layer_count, k), padding stripped."""
    if not isinstance(payload, torch.Tensor) or payload.dtype != torch.uint8 or payload.dim() != 4:
        raise TypeError("payload must be a uint8 tensor (batch, seq, padded layers, 2*topk)")
    if isinstance(layer_count, bool) or not isinstance(layer_count, int) or not 0 <= layer_count <= payload.shape[2]:
        raise ValueError(f"layer_count must be an int in [0, {payload.shape[2]}], got {layer_count!r}")
    if payload.shape[3] % 2:
        raise ValueError(f"payload's last dim must be even (2 bytes per int16 route), got {payload.shape[3]}")
    return payload[:, :, :layer_count].contiguous().view(ROUTE_DTYPE)


def pp_gather(local: torch.Tensor | MissingRoutes, group: dist.ProcessGroup | None = None) -> torch.Tensor:
    """Gather every pipeline stage's routes (B, S, L_stage, k) into (B, S, sum of L_stage, k), stage order.

    Every rank of `group` must call it (it is a collective). A stage with no MoE layer passes a
    (B, S, 0, k) int16 map and still joins. A stage that has routers but captured nothing passes
    `MissingRoutes` instead of raising: the first exchange carries a header (layer count, a missing
    flag, B, S, k) from every rank, so after it *every* rank knows and every rank raises the same
    RuntimeError; nobody is left waiting in the payload gather. Mismatched B/S/k also raise on every
    rank. Routes travel as a uint8 view of the int16 bytes (NCCL has no int16), padded only on the
    layer dim to the largest stage, and come back bit-exact.
    """
    missing = isinstance(local, MissingRoutes)
    if not missing and (not isinstance(local, torch.Tensor) or local.dtype != ROUTE_DTYPE or local.dim() != 4):
        raise TypeError("local must be an int16 tensor (batch, seq, layers, topk) or MissingRoutes")
    if not (dist.is_available() and dist.is_initialized()):
        raise RuntimeError("pp_gather needs an initialised torch.distributed process group (see verlstudy.common.dist)")
    world = dist.get_world_size(group)
    if missing:
        header = torch.tensor([len(local.layer_numbers), 1, -1, -1, -1], dtype=torch.int64)  # type: ignore[union-attr]
    else:
        b, s, n_layers, k = local.shape  # type: ignore[union-attr]
        header = torch.tensor([n_layers, 0, b, s, k], dtype=torch.int64)
    headers = [torch.empty(_HEADER, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(headers, header, group=group)  # every rank joins this, whatever it captured
    table = [h.tolist() for h in headers]
    empty_stages = [stage for stage, row in enumerate(table) if row[1] == 1]
    if empty_stages:
        raise RuntimeError(
            f"pp_gather: stage(s) {empty_stages} have routers but captured no routes; "
            "every stage raises together after the header exchange, so no stage waits in the gather"
        )
    shapes = {tuple(row[2:]) for row in table}
    if len(shapes) != 1:
        raise ValueError(f"pp_gather: stages disagree on (batch, seq, topk): {[tuple(r[2:]) for r in table]}")
    counts = [row[0] for row in table]
    if max(counts) == 0:
        return local.clone()  # type: ignore[union-attr]
    payload = to_wire(local, max(counts))  # type: ignore[arg-type]
    gathered = [torch.empty_like(payload) for _ in range(world)]
    dist.all_gather(gathered, payload, group=group)
    return torch.cat([from_wire(p, c) for p, c in zip(gathered, counts, strict=True)], dim=2)


def toy_global_routes(batch: int, seq: int, layers: int, topk: int, num_experts: int, seed: int) -> torch.Tensor:
    """A seeded full route map (B, S, layers, k) int16 with distinct experts per token (for gather demos)."""
    for name, v in (("batch", batch), ("seq", seq), ("layers", layers), ("topk", topk), ("num_experts", num_experts)):
        _check_positive_int(name, v)
    if topk > num_experts:
        raise ValueError(f"topk={topk} must not exceed num_experts={num_experts}")
    gen = torch.Generator().manual_seed(seed)
    scores = torch.rand(batch, seq, layers, num_experts, generator=gen)
    return scores.topk(topk, dim=-1).indices.to(ROUTE_DTYPE)


def stage_layer_numbers(layer_counts: Sequence[int], stage: int) -> list[int]:
    """Global layer numbers (from 1) owned by `stage` when stages own `layer_counts` layers in order."""
    counts = list(layer_counts)
    if not counts or any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in counts):
        raise ValueError(f"layer_counts must be a non-empty list of ints >= 0, got {counts}")
    if not 0 <= stage < len(counts):
        raise ValueError(f"stage must be in [0, {len(counts)}), got {stage}")
    start = sum(counts[:stage])
    return list(range(start + 1, start + counts[stage] + 1))


def _stage_input(
    rank: int, layer_counts: Sequence[int], shape: tuple[int, int, int, int], seed: int, missing_rank: int
) -> torch.Tensor | MissingRoutes:
    batch, seq, topk, num_experts = shape
    owned = stage_layer_numbers(layer_counts, rank)
    if rank == missing_rank:
        return MissingRoutes(tuple(owned))
    full = toy_global_routes(batch, seq, max(sum(layer_counts), 1), topk, num_experts, seed)
    return full[:, :, owned[0] - 1 : owned[-1]] if owned else full[:, :, :0]


def pp_gather_worker(
    rank: int,
    world_size: int,
    layer_counts: Sequence[int],
    shape: tuple[int, int, int, int],
    seed: int,
    missing_rank: int = -1,
) -> torch.Tensor:
    """A run_local worker: stage `rank` owns `layer_counts[rank]` layers of a seeded route map
    (shape = batch, seq, topk, num_experts) and calls pp_gather; `missing_rank` captured nothing."""
    if len(layer_counts) != world_size:
        raise ValueError(f"layer_counts has {len(layer_counts)} stages but world_size is {world_size}")
    return pp_gather(_stage_input(rank, layer_counts, shape, seed, missing_rank))


def raise_instead_of_joining(
    rank: int,
    world_size: int,
    layer_counts: Sequence[int],
    shape: tuple[int, int, int, int],
    seed: int,
    failing_rank: int,
    peers_gave_up: multiprocessing.synchronize.Event,
    hold_s: float = 10.0,
) -> torch.Tensor:
    """A run_local worker for the review's hang: `failing_rank` raises instead of joining pp_gather.

    Its process stays alive (as a Ray worker does after an exception) until the peers give up, so the
    peers sit in the collective until the process group's timeout. `hold_s` bounds that wait.
    """
    if rank == failing_rank:
        peers_gave_up.wait(hold_s)
        raise RuntimeError(MissingRoutes(tuple(stage_layer_numbers(layer_counts, rank))).message())
    try:
        return pp_gather(_stage_input(rank, layer_counts, shape, seed, -1))
    finally:
        peers_gave_up.set()


def failed_outcomes(fn: Callable[..., Any], world_size: int, *args: Any, **kwargs: Any) -> list[Any]:
    """Run `fn` on gloo ranks (verlstudy.common.dist.run_local) when some rank must fail; return every RankOutcome.

    AssertionError if every rank succeeded (the failure the caller wanted to show did not happen).
    """
    from verlstudy.common.dist import DistributedRunError, run_local

    try:
        results = run_local(fn, world_size, *args, **kwargs)
    except DistributedRunError as e:
        return e.outcomes
    raise AssertionError(f"expected a rank to fail, but all {len(results)} ranks returned")


GLOO_TIMEOUT_TEXT = "Timed out waiting for a peer in the collective (the process group timeout)"
_GLOO_TIMEOUT = re.compile(r"Timed out waiting \d+ms for (?:send|recv) operation to complete")


def outcome_lines(outcomes: Sequence[Any]) -> list[str]:
    """One stable line per rank outcome: ok and what it returned, or the error type and message.

    gloo's timeout text ("Timed out waiting 1000ms for send operation ...", send or recv depending on
    which side of the ring gave up first) becomes one fixed sentence.
    """
    lines = []
    for o in outcomes:
        if o.ok:
            value = o.value
            what = f"tensor {tuple(value.shape)} {value.dtype}" if isinstance(value, torch.Tensor) else repr(value)
            lines.append(f"rank {o.rank}: ok, returned {what}")
        else:
            lines.append(f"rank {o.rank}: {o.error_type}: {_GLOO_TIMEOUT.sub(GLOO_TIMEOUT_TEXT, o.error_message)}")
    return lines


# ---------------------------------------------------------------------------------------------
# The config walk
# ---------------------------------------------------------------------------------------------

TEXT_BRANCHES: tuple[str, ...] = ("text_config", "language_config", "thinker_config", "model_config")


class ToyConfig:
    """A stand-in for a Hugging Face config: attributes plus nested sub-configs.

    `get_text_config()` returns `text_config` when there is one, else the config itself (the shape of
    `transformers.PretrainedConfig.get_text_config` for the cases here).
    """

    def __init__(self, kind: str, **attributes: object) -> None:
        if not isinstance(kind, str) or not kind:
            raise TypeError("kind must be a non-empty string naming the config type")
        self.kind = kind
        for key, value in attributes.items():
            setattr(self, key, value)

    def __repr__(self) -> str:
        return f"{self.kind}Config"

    def get_text_config(self) -> object:
        text = getattr(self, "text_config", None)
        return self if text is None else text


def _config_name(config: object) -> str:
    return repr(config) if isinstance(config, ToyConfig) else type(config).__name__


def _text_config(config: object) -> object | None:
    get_text_config = getattr(config, "get_text_config", None)
    if callable(get_text_config):
        text = get_text_config()
        if text is not None:
            return text
    return getattr(config, "text_config", None)


def _text_branch(config: object) -> Iterator[object]:
    """Configs on the text branch, deepest first: the text config and named LM wrappers, then the node.

    Never arbitrary sub-configs (audio, vision, code2wav): they can carry conflicting attributes.
    Cycle-safe: a config already visited is skipped.
    """
    seen: set[int] = set()

    def visit(node: object) -> Iterator[object]:
        if id(node) in seen:
            return
        seen.add(id(node))
        text = _text_config(node)
        if text is not None and text is not node:
            yield from visit(text)
        for branch in TEXT_BRANCHES:
            child = getattr(node, branch, None)
            if child is not None and child is not text:
                yield from visit(child)
        yield node

    yield from visit(config)


def _check_attr_name(name: object) -> str:
    if not isinstance(name, str):
        raise TypeError(f"name must be an attribute name (str), got {type(name).__name__} {name!r}")
    if not name.isidentifier():
        raise ValueError(f"name must be a valid attribute name, got {name!r}")
    return name


def _sub_configs(config: object) -> Iterator[tuple[str, object]]:
    for key, value in vars(config).items() if hasattr(config, "__dict__") else ():
        if hasattr(value, "__dict__") and (isinstance(value, ToyConfig) or type(value).__name__.endswith("Config")):
            yield key, value


def get_text_config_attr(config: object, name: str) -> Any:
    """Read `name` from the text branch of a (possibly nested, multimodal) model config.

    As upstream's `verl/utils/megatron_utils.py::get_hf_config_attr` (verl 0.9.1): first the text
    config (`get_text_config()`, else `text_config`), then the text branch walked deepest first
    (`text_config`, `language_config`, `thinker_config`, `model_config`, then the node itself).
    A value that is None counts as absent; falsy values (0, False) are returned. Audio/code2wav
    siblings are never read: if only they have it, AttributeError names the config type, the
    attribute and where it was seen.
    """
    name = _check_attr_name(name)
    if config is None:
        raise TypeError("config must be a model config object, got None")
    text = _text_config(config)
    if text is not None:
        value = getattr(text, name, None)
        if value is not None:
            return value
    on_branch: set[int] = set()
    for node in _text_branch(config):
        on_branch.add(id(node))
        value = getattr(node, name, None)
        if value is not None:
            return value
    seen_on = [path for path, node in _walk_all(config) if id(node) not in on_branch and hasattr(node, name)]
    hint = f"; only off-branch sub-configs have it ({', '.join(seen_on)}), which are never read" if seen_on else ""
    raise AttributeError(f"{_config_name(config)} has no nested {name!r} on its text branch{hint}")


def _walk_all(config: object) -> Iterator[tuple[str, object]]:
    """Every config reachable through sub-config attributes, breadth first, root first (cycle-safe)."""
    seen = {id(config)}
    queue: deque[tuple[str, object]] = deque([("<root>", config)])
    while queue:
        path, node = queue.popleft()
        yield path, node
        for key, child in _sub_configs(node):
            if id(child) not in seen:
                seen.add(id(child))
                queue.append((key if path == "<root>" else f"{path}.{key}", child))


def bfs_config_attr(config: object, name: str) -> Any:
    """The naive walk the review rejected: breadth first from the root over *every* sub-config.

    The root answers first (1024 where the language model says 4096), and an audio sibling answers
    when the text branch has nothing: both silently wrong.
    """
    name = _check_attr_name(name)
    for _, node in _walk_all(config):
        value = getattr(node, name, None)
        if value is not None:
            return value
    raise AttributeError(f"{_config_name(config)} has no {name!r} anywhere")


# ---------------------------------------------------------------------------------------------
# Exercise checkers
# ---------------------------------------------------------------------------------------------


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    if not callable(fn):
        raise TypeError(f"pass your function itself, got {type(fn).__name__}")
    return fn(*args)


def check_stack_by_layer(stack_by_layer: Callable[[list[tuple[int, torch.Tensor]]], torch.Tensor]) -> str:
    """Checker for exercise 3.1: stack (layer_number, routes) pairs met in walk order, by layer number."""
    gen = torch.Generator().manual_seed(31)
    per_layer = {n: torch.randint(0, 8, (5, 2), generator=gen) for n in (1, 2, 3, 4)}
    expected = torch.stack([per_layer[n].to(ROUTE_DTYPE) for n in (1, 2, 3, 4)], dim=1)
    for walk in ([1, 2, 3, 4], [3, 1, 4, 2], [4, 3, 2, 1]):
        got = _call(stack_by_layer, [(n, per_layer[n]) for n in walk])
        if not isinstance(got, torch.Tensor):
            raise ExerciseFailure(f"return a tensor, got {type(got).__name__}")
        if got.shape != expected.shape:
            raise ExerciseFailure(
                f"for walk order {walk} the shape is {tuple(got.shape)}, expected (tokens, layers, topk) = "
                f"{tuple(expected.shape)}: stack the per-layer (tokens, topk) routes along dim=1"
            )
        if got.dtype != ROUTE_DTYPE:
            raise ExerciseFailure(f"dtype is {got.dtype}; routes are stored as torch.int16 (`.to(torch.int16)`)")
        if not torch.equal(got, expected):
            raise ExerciseFailure(
                f"for walk order {walk} the columns are not in layer order: sort the pairs by layer number "
                "before stacking, or replay will hand layer 1's routes to another layer"
            )
    try:
        _call(stack_by_layer, [(1, per_layer[1]), (2, per_layer[2]), (1, per_layer[3])])
    except ValueError:
        pass
    else:
        raise ExerciseFailure("two routers claimed layer 1 and nothing was raised: reject duplicates with ValueError")
    return "columns follow layer numbers for 3 walk orders, duplicates rejected"


def check_wire_roundtrip(
    to_wire_fn: Callable[[torch.Tensor, int], torch.Tensor], from_wire_fn: Callable[[torch.Tensor, int], torch.Tensor]
) -> str:
    """Checker for exercise 3.2: int16 routes -> padded uint8 payload -> the same int16 routes."""
    gen = torch.Generator().manual_seed(32)
    routes = torch.randint(0, 384, (2, 3, 2, 4), generator=gen).to(ROUTE_DTYPE)
    routes[0, 0, 0, 0] = 300  # an expert id above 255: a value cast to uint8 would turn it into 44
    for max_layers in (2, 5):
        payload = _call(to_wire_fn, routes, max_layers)
        if not isinstance(payload, torch.Tensor) or payload.dtype != torch.uint8:
            raise ExerciseFailure("to_wire must return a torch.uint8 tensor (the bytes gloo/NCCL can send)")
        if payload.shape != (2, 3, max_layers, 8):
            raise ExerciseFailure(
                f"to_wire(routes, {max_layers}) has shape {tuple(payload.shape)}, expected (2, 3, {max_layers}, 8): "
                "view the int16 bytes as uint8 (last dim doubles), then zero-pad only the layer dim (dim 2)"
            )
        back = _call(from_wire_fn, payload, 2)
        if not isinstance(back, torch.Tensor) or back.dtype != ROUTE_DTYPE:
            raise ExerciseFailure("from_wire must return torch.int16 routes")
        if back.shape != routes.shape:
            raise ExerciseFailure(
                f"from_wire(payload, 2) has shape {tuple(back.shape)}, expected {tuple(routes.shape)}: "
                "strip the layer padding first, then view the bytes as int16"
            )
        if not torch.equal(back, routes):
            bad = int((back != routes).sum())
            raise ExerciseFailure(
                f"{bad} routes changed on the round trip (e.g. expert 300 came back as {int(back[0, 0, 0, 0])}): "
                "use .view(torch.uint8), a bit reinterpretation, not .to(torch.uint8), a value cast"
            )
    return "bit-exact for 2 paddings, expert ids above 255 included"


def check_text_config_attr(find_attr: Callable[[object, str], Any]) -> str:
    """Checker for exercise 3.3: your text-branch lookup must agree with the cases of the lesson."""
    text = ToyConfig("Text", hidden_size=4096, tie_word_embeddings=False, num_experts=0)
    root = ToyConfig("Omni", hidden_size=1024, text_config=text, audio_config=ToyConfig("Audio", vocab_size=7))
    cases: list[tuple[str, object, str, Any]] = [
        ("root 1024 beside text_config 4096", root, "hidden_size", 4096),
        ("False is a value, not a miss", root, "tie_word_embeddings", False),
        ("0 is a value, not a miss", root, "num_experts", 0),
        ("language_config branch", ToyConfig("VL", language_config=ToyConfig("LM", rope_theta=1e6)), "rope_theta", 1e6),
    ]
    for label, config, name, expected in cases:
        try:
            got = _call(find_attr, config, name)
        except AttributeError as e:
            raise ExerciseFailure(
                f"{label}: raised AttributeError, expected {expected!r} (test `is not None`, not truthiness)"
            ) from e
        if got != expected or type(got) is not type(expected):
            raise ExerciseFailure(f"{label}: got {got!r}, expected {expected!r}")
    try:
        _call(find_attr, root, "vocab_size")
    except AttributeError:
        pass
    else:
        raise ExerciseFailure("only the audio sibling has vocab_size: raise AttributeError, never read audio_config")
    loop = ToyConfig("Loop", hidden_size=None)
    loop.model_config = loop
    try:
        _call(find_attr, loop, "hidden_size")
    except AttributeError:
        pass
    except RecursionError as e:
        raise ExerciseFailure("a config that contains itself recursed forever: remember the ids you visited") from e
    else:
        raise ExerciseFailure("hidden_size is None everywhere in the cyclic config: raise AttributeError")
    return "4 lookups right, audio sibling refused, cycle safe"
