"""Routes collected from the forwarded model and stacked by layer number (lesson 03, verl PR #7805).

As upstream's `verl/utils/megatron/router_replay_utils.py` (verl 0.9.1): `iter_model_routers` walks
the forwarded model's decoder only (`getattr(chunk, "decoder", chunk)`: MTP layers restart their
numbering at 1), `merge_router_topk_indices` sorts routers by `layer_number`, rejects duplicates and
stores int16 routes, and `set_router_replay_data` indexes by absolute layer (`layer_number - 1`) when
the routes cover every decoder layer (`tf_config.num_layers`), else by MoE-layer ordinal. Here:
`model_routers` / `routers_by_layer`, `stack_routes` / `recorded_routes` / `set_replay_targets`,
`local_stage_routes` (what a pipeline stage hands to `pp_gather`, `MissingRoutes` when it captured
nothing), and the counts the lesson's claims use (`routes_used`, `rerouted_tokens`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from verlstudy.kit.params import got, positive_int
from verlstudy.lessons.l03_router_replay.moe import ROUTE_DTYPE, RouterReplay, TopKRouter, sgd_step

__all__ = [
    "MissingRoutes",
    "local_stage_routes",
    "model_routers",
    "recorded_routes",
    "replay_columns",
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


SCOPES = ("decoder", "model")


def _walked(model: nn.Module, scope: str) -> nn.Module:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")
    return getattr(model, "decoder", model) if scope == "decoder" else model


def model_routers(model: nn.Module, *, scope: str = "decoder") -> list[tuple[int, RouterReplay]]:
    """(layer_number, RouterReplay) for every replay-enabled router *of this model*, in walk order.

    scope="decoder" walks `model.decoder` when there is one (upstream's scope: an MTP sibling's
    layers restart at 1 and would alias decoder layers); scope="model" walks every module, the
    walk that meets each MTP router as a second layer 1.
    """
    root = _walked(model, scope)
    return [(m.layer_number, m.replay) for m in root.modules() if isinstance(m, TopKRouter) and m.replay is not None]


def _sorted_by_layer(pairs: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
    layer_numbers = [n for n, _ in pairs]
    if len(set(layer_numbers)) != len(layer_numbers):
        raise ValueError(f"duplicate layer numbers {sorted(layer_numbers)}: routes would overwrite each other")
    return sorted(pairs, key=lambda pair: pair[0])


def routers_by_layer(model: nn.Module, *, scope: str = "decoder") -> list[tuple[int, RouterReplay]]:
    """`model_routers(model, scope=scope)` sorted by layer number; ValueError when two routers claim one layer."""
    return _sorted_by_layer(model_routers(model, scope=scope))


def stack_routes(pairs: Sequence[tuple[int, torch.Tensor]], *, order: str = "layer") -> torch.Tensor:
    """Stack per-layer routes (tokens, topk) into one int16 map (tokens, layers, topk).

    order="layer" sorts by layer number (the fix); order="walk" keeps the given order, which is the
    silent bug the review caught: replay indexes layers by number, so walk-ordered rows land on the
    wrong layers whenever the walk meets routers out of order. Duplicate layer numbers: ValueError.
    """
    if order not in ("layer", "walk"):
        raise ValueError(f"order must be 'layer' or 'walk', got {order!r}")
    if isinstance(pairs, str | torch.Tensor) or not isinstance(pairs, Iterable):
        raise TypeError(f"argument pairs must be a list of (layer number, routes) pairs, got {got(pairs)}")
    pairs = list(pairs)
    if not pairs:
        raise ValueError("no routes to stack: pairs is empty")
    for i, pair in enumerate(pairs):
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise TypeError(f"argument pairs[{i}] must be a (layer number, routes) pair, got {got(pair)}")
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
    """The routes the decoder's routers used in the latest forward, (tokens, MoE layers, topk) by layer number."""
    pairs = [(m.layer_number, m.last_indices) for m in _walked(model, "decoder").modules() if isinstance(m, TopKRouter)]
    if not pairs or any(indices is None for _, indices in pairs):
        raise RuntimeError("run a forward first: some routers have not routed anything yet")
    return stack_routes(pairs)  # type: ignore[arg-type]


INDEXING = ("auto", "position")


def replay_columns(
    model: nn.Module, n_columns: int, *, num_layers: int | None = None, index: str = "auto"
) -> list[int]:
    """Which column of a (tokens, n_columns, topk) route map each decoder router (in layer order) replays.

    index="auto" is upstream's rule (`set_router_replay_data`): routes covering every decoder layer
    (`num_layers`, default `model.num_layers`, dense layers included, as R3's rollout reports them)
    are read by absolute layer, column `layer_number - 1`; otherwise they hold MoE layers only and
    router i reads column i (this toy replays a whole decoder, so the MoE ordinal is the position).
    RuntimeError when a router's column is not in the map, or (the course's stricter check) when an
    MoE-only map has more columns than routers. index="position" is the bug #5037 fixed for R3:
    column i to the i-th router whatever the map covers, which silently shifts every MoE layer after
    a dense one.
    """
    if index not in INDEXING:
        raise ValueError(f"index must be one of {INDEXING}, got {index!r}")
    routers = routers_by_layer(model)
    total = getattr(model, "num_layers", None) if num_layers is None else positive_int("num_layers", num_layers)
    if index == "position":
        columns = list(range(len(routers)))
    elif total is not None and n_columns == total:
        columns = [n - 1 for n, _ in routers]
    elif n_columns == len(routers):
        columns = list(range(len(routers)))
    else:
        raise RuntimeError(
            f"replay routes cover {n_columns} layers but the model has {len(routers)} replay-enabled routers "
            f"(layers {[n for n, _ in routers]}) in {total} decoder layers: give one column per MoE layer "
            "or one per decoder layer"
        )
    missing = [n for (n, _), c in zip(routers, columns, strict=True) if not 0 <= c < n_columns]
    if missing:
        raise RuntimeError(f"replay routes do not cover every forwarded MoE layer: missing layers {missing}")
    return columns


def set_replay_targets(
    model: nn.Module,
    routes: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    num_layers: int | None = None,
    index: str = "auto",
) -> None:
    """Give each of the model's decoder routers its column of `routes` (tokens, layers, topk), see `replay_columns`."""
    if not isinstance(routes, torch.Tensor) or routes.dim() != 3 or routes.is_floating_point():
        raise TypeError("routes must be an integer tensor (tokens, layers, topk)")
    columns = replay_columns(model, routes.shape[1], num_layers=num_layers, index=index)
    for column, (_, router) in zip(columns, routers_by_layer(model), strict=True):
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


MAX_UPDATES = 16  # the step doubles each time: 2**15 x lr moves every router the lesson's ranges allow


def update_until_rerouted(
    model: nn.Module, tokens: torch.Tensor, targets: torch.Tensor, recorded: torch.Tensor, lr: float
) -> tuple[int, int]:
    """Policy updates (cross-entropy on `targets`, an SGD step each) until the native forward routes some token
    elsewhere than `recorded`; (updates taken, tokens rerouted). The first step is `lr` and usually does it; at a
    rare seed (about 1 in 20 with hidden 2) it moves no route, and each further step doubles. Raises RuntimeError
    after MAX_UPDATES updates that moved nothing."""
    for updates in range(1, MAX_UPDATES + 1):
        torch.nn.functional.cross_entropy(model(tokens), targets).backward()
        sgd_step(model, lr * 2 ** (updates - 1))
        with torch.no_grad():
            model(tokens)
        moved = rerouted_tokens(recorded, routes_used(model))
        if moved:
            return updates, moved
    raise RuntimeError(f"{MAX_UPDATES} updates from lr {lr} up moved no token's route")
