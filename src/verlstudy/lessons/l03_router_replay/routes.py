"""Routes collected from the forwarded model and stacked by layer number (lesson 03, verl PR #7805).

As upstream's `verl/utils/megatron/router_replay_utils.py` (verl 0.9.1): `iter_model_routers` walks
the forwarded model, `merge_router_topk_indices` sorts routers by `layer_number`, rejects duplicates
and stores int16 routes, and `set_router_replay_data` indexes by `layer_number - 1`. Here:
`model_routers` / `routers_by_layer`, `stack_routes` / `recorded_routes` / `set_replay_targets`,
`local_stage_routes` (what a pipeline stage hands to `pp_gather`, `MissingRoutes` when it captured
nothing), and the counts the lesson's claims use (`routes_used`, `rerouted_tokens`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from verlstudy.kit.params import positive_int
from verlstudy.lessons.l03_router_replay.moe import ROUTE_DTYPE, RouterReplay, TopKRouter

__all__ = [
    "MissingRoutes",
    "local_stage_routes",
    "model_routers",
    "recorded_routes",
    "rerouted_per_layer",
    "rerouted_tokens",
    "routers_by_layer",
    "routes_used",
    "set_replay_targets",
    "stack_routes",
]


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


def routers_by_layer(model: nn.Module) -> list[tuple[int, RouterReplay]]:
    """`model_routers(model)` sorted by layer number; ValueError when two routers claim one layer."""
    return _sorted_by_layer(model_routers(model))


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
        positive_int(name, v)
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
    routers = routers_by_layer(model)
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
