"""The lesson's guard tests, each a predicate over the implementation it guards (lesson 03, verl PR #7805).

Each guard builds its own small case and returns True when the implementation passes, so the
notebook can run it on the bug and on the fix and show that it fails on one and passes on the other:

- `guard_disabled_is_noop`: replay disabled and an empty registry: begin/end touch nothing (#7786's revert);
- `guard_decoder_scope`: the router walk of a model with an MTP sibling meets layers 1..num_layers once;
- `guard_layer_order`: routes met in walk order are stacked by layer number (#7805's review);
- `guard_absolute_replay`: routes covering every layer of a mixed dense/MoE decoder replay by absolute layer;
- `guard_no_rank_stranded`: after `pp_gather` every rank returned, or every rank raised the same error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from verlstudy.common.dist import RankOutcome
from verlstudy.kit.params import check_instance, got
from verlstudy.lessons.l03_router_replay.controller import ReplayController, record_routes
from verlstudy.lessons.l03_router_replay.moe import ROUTE_DTYPE, ReplayAction, TinyMoE
from verlstudy.lessons.l03_router_replay.routes import model_routers, rerouted_tokens, routes_used

__all__ = [
    "guard_absolute_replay",
    "guard_decoder_scope",
    "guard_disabled_is_noop",
    "guard_layer_order",
    "guard_no_rank_stranded",
]


def _check_guard_args(*, sizes: object, **functions: object) -> None:
    """The guards' doors: each function argument callable (the learner's code under test), `sizes` TinyMoE's."""
    for name, fn in functions.items():
        if not callable(fn):
            raise TypeError(f"argument {name} must be a function (the code under test), got {got(fn)}")
    check_instance("sizes", sizes, dict, what="a dict of TinyMoE sizes, like {'hidden': 8, 'num_experts': 4}")


def guard_disabled_is_noop(make_controller: Callable[[list], ReplayController], sizes: dict[str, int]) -> bool:
    """`make_controller(registry)` builds a 'disabled' controller; an ordinary job's begin/end must be no-ops."""
    _check_guard_args(make_controller=make_controller, sizes=sizes)
    registry: list = []
    model = TinyMoE(**sizes, enable_replay=False, registry=registry)
    try:
        controller = make_controller(registry)
        return controller.begin(model, forward_only=True) == "none" and controller.end(model) is None
    except (IndexError, ValueError, RuntimeError):
        return False


def guard_decoder_scope(walk: Callable[[nn.Module], Sequence[tuple[int, Any]]], sizes: dict[str, int]) -> bool:
    """`walk(model)` -> (layer_number, router) pairs; with an MTP sibling it must meet each decoder layer once."""
    _check_guard_args(walk=walk, sizes=sizes)
    model = TinyMoE(**sizes, mtp_layers=1, registry=[])
    return sorted(n for n, _ in walk(model)) == list(range(1, model.num_layers + 1))


def guard_layer_order(stack: Callable[[list[tuple[int, torch.Tensor]]], torch.Tensor], routes: torch.Tensor) -> bool:
    """`stack(pairs)` of (tokens, layers, topk) `routes` met in the walk order 2, 3, 1, ... must give them back."""
    if not isinstance(routes, torch.Tensor) or routes.dim() != 3 or routes.shape[1] < 2:
        raise ValueError("routes must be a (tokens, layers >= 2, topk) route map")
    layers = list(range(1, routes.shape[1] + 1))
    walk = layers[1:] + layers[:1]  # the first layer's router met last
    return torch.equal(stack([(n, routes[:, n - 1]) for n in walk]), routes.to(ROUTE_DTYPE))


def guard_absolute_replay(
    set_targets: Callable[[nn.Module, torch.Tensor], None], sizes: dict[str, int], tokens: torch.Tensor
) -> bool:
    """Layers 1 and 3 MoE, layer 2 dense; routes cover all three layers (R3 reports dense layers too).

    `set_targets(model, routes)` arms the routers' targets; replay must then follow the record exactly.
    """
    _check_guard_args(set_targets=set_targets, sizes=sizes)
    check_instance("tokens", tokens, torch.Tensor, what="a 1-D token tensor")
    model = TinyMoE(**sizes, dense_layers=(2,), registry=[])
    recorded = record_routes(ReplayController("R2"), model, tokens)  # (tokens, 2 MoE layers, topk)
    every_layer = torch.zeros(recorded.shape[0], 3, recorded.shape[2], dtype=ROUTE_DTYPE)
    every_layer[:, [0, 2]] = recorded  # the dense layer's column carries no routes
    try:
        set_targets(model, every_layer)
    except RuntimeError:
        return False
    for _, router in model_routers(model):
        router.set_action(ReplayAction.REPLAY_FORWARD)
    with torch.no_grad():
        model(tokens)
    return rerouted_tokens(recorded, routes_used(model)) == 0


def guard_no_rank_stranded(results: Sequence[Any]) -> bool:
    """`results`: what each rank of a `pp_gather` run returned (tensors) or its RankOutcome.

    Passes when every rank returned, or when every rank raised the same error (nobody waited out the
    collective timeout for a peer that never joined).
    """
    if isinstance(results, str) or not isinstance(results, Sequence):
        raise TypeError(f"argument results must be a list of each rank's tensor or RankOutcome, got {got(results)}")
    for i, r in enumerate(results):
        if not isinstance(r, torch.Tensor | RankOutcome):
            raise TypeError(f"argument results[{i}] must be a rank's tensor or RankOutcome, got {got(r)}")
    errors = [(r.error_type, r.error_message) for r in results if not isinstance(r, torch.Tensor) and not r.ok]
    return not errors or (len(errors) == len(results) and len(set(errors)) == 1)
