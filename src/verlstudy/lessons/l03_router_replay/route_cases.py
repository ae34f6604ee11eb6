"""Exercises 3.1 and 3.2's cases, references and mistake names: serves `checks.py` only (nothing else imports it).

3.1 draws (layer number, routes) pairs met in walk order; 3.2 draws int16 route maps (an expert id above 255
in each, a last layer whose bytes are all zero) and how many layers the wire pads to.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from hypothesis import strategies as st

from verlstudy.kit.exercises import ExerciseFailure
from verlstudy.kit.properties import Case
from verlstudy.lessons.l03_router_replay.moe import ROUTE_DTYPE

# ---------------------------------------------------------------- 3.1 stack routes by layer number


def _routes(seed: int, tokens: int, topk: int, high: int = 8) -> torch.Tensor:
    return torch.randint(0, high, (tokens, topk), generator=torch.Generator().manual_seed(seed))


def _pairs(numbers: list[int], tokens: int = 3, topk: int = 2, seed: int = 0) -> list[tuple[int, torch.Tensor]]:
    return [(n, _routes(seed * 1000 + n, tokens, topk)) for n in numbers]


def _stack_reference(pairs: list[tuple[int, torch.Tensor]]) -> torch.Tensor:
    ordered = sorted(pairs, key=lambda pair: pair[0])
    return torch.stack([routes.to(ROUTE_DTYPE) for _, routes in ordered], dim=1)


def _stack_mistake(args: tuple[Any, ...], got: Any, want: torch.Tensor) -> str | None:
    (pairs,) = args
    if not isinstance(got, torch.Tensor):
        return "return one tensor (tokens, layers, topk)"
    if got.dtype != ROUTE_DTYPE and got.shape == want.shape:
        return "routes are stored as torch.int16"
    if got.shape != want.shape:
        if got.dim() == 3 and got.shape[0] == want.shape[1] and got.shape[1] == want.shape[0]:
            return "your layers are not the middle dim"
        return "the map must be (tokens, layers, topk): one column per router"

    def stacked(order: list[tuple[int, torch.Tensor]]) -> torch.Tensor:
        return torch.stack([r.to(ROUTE_DTYPE) for _, r in order], dim=1)

    if torch.equal(got, stacked(pairs)):
        return "the columns follow the order the pairs came in, not the layer numbers"
    if torch.equal(got, stacked(sorted(pairs, key=lambda p: str(p[0])))):
        return "the layer numbers were sorted as text (10 before 2), not as numbers"
    if torch.equal(got, stacked(sorted(pairs, key=lambda p: -p[0]))):
        return "the columns are in descending layer order"
    return "some column holds another layer's routes: replay would hand them to the wrong layer"


@st.composite
def _stack_inputs(draw: Any) -> tuple[list[tuple[int, torch.Tensor]]]:
    count = draw(st.integers(1, 5))
    numbers = draw(st.lists(st.integers(1, 40), min_size=count, max_size=count, unique=True))
    tokens, topk, seed = draw(st.integers(1, 4)), draw(st.integers(1, 3)), draw(st.integers(0, 50))
    return (_pairs(numbers, tokens, topk, seed),)


def _duplicate_verdict(stack_by_layer: Callable[..., Any]) -> None:
    """A duplicate layer number must raise ValueError (two routers claiming one layer)."""
    for numbers in ([1, 2, 1], [5, 3, 3]):
        try:
            stack_by_layer(_pairs(numbers))
        except ValueError:
            continue
        except (ExerciseFailure, NotImplementedError):
            raise
        except Exception as e:
            raise ExerciseFailure(
                f"layers {numbers}: two routers claimed one layer and your function raised {type(e).__name__} "
                f"({e}); raise ValueError for a duplicate"
            ) from None
        raise ExerciseFailure(
            f"layers {numbers}: two routers claimed one layer and your function raised nothing: "
            "a duplicate went through"
        )


def _stack_cases() -> list[Case]:
    """3.1's named edge cases: walk orders, gaps, numbers past 9, one router."""
    return [
        Case((_pairs([3, 1, 4, 2]),), "walk order 3, 1, 4, 2"),
        Case((_pairs([1, 3]),), "layer numbers with a gap (a dense layer between)"),
        Case((_pairs([2, 10, 9]),), "layer numbers past 9: 10 sorts before 2 as text"),
        Case((_pairs([4, 3, 2, 1]),), "walk order reversed"),
        Case((_pairs([7], tokens=1, topk=1),), "one router, one token, top-1"),
        Case((_pairs([2, 1], tokens=5, topk=3, seed=7),), "another token count and topk"),
    ]


# ---------------------------------------------------------------- 3.2 the dense branch's wire format


def _to_wire_reference(routes: torch.Tensor, max_layers: int) -> torch.Tensor:
    payload = routes.contiguous().view(torch.uint8)
    padded = torch.zeros((*payload.shape[:2], max_layers, payload.shape[3]), dtype=torch.uint8)
    padded[:, :, : payload.shape[2]] = payload
    return padded


def _from_wire_reference(payload: torch.Tensor, layer_count: int) -> torch.Tensor:
    return payload[:, :, :layer_count].contiguous().view(ROUTE_DTYPE)


def _route_map(batch: int, seq: int, layers: int, topk: int, seed: int, zero_layer: bool = True) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    routes = torch.randint(0, 384, (batch, seq, layers, topk), generator=gen).to(ROUTE_DTYPE)
    if layers:
        routes[0, 0, 0, 0] = 300  # an expert id above 255: a value cast to uint8 would turn it into 44
    if zero_layer and layers >= 2:
        routes[:, :, -1] = 0  # every token on expert 0 in the last layer: a real layer whose bytes are all zero
    return routes


def _byte_swapped(payload: torch.Tensor) -> torch.Tensor:
    return payload.unflatten(-1, (-1, 2)).flip(-1).flatten(-2)


def _to_wire_mistake(args: tuple[Any, ...], got: Any, want: torch.Tensor) -> str | None:
    routes, max_layers = args
    if not isinstance(got, torch.Tensor) or got.dtype != torch.uint8:
        return "to_wire must return a torch.uint8 tensor (the bytes gloo/NCCL can send)"
    if got.shape != want.shape:
        if got.dim() != 4:
            return "the payload is not 4-dimensional"
        if got.shape[2] == routes.shape[2] and routes.shape[2] != max_layers:
            return "the layer dim is not padded to max_layers"
        if got.shape[3] == routes.shape[3]:
            return "each route became one byte: a value cast to uint8 keeps only the low byte of an expert id"
        return "the padding went onto another dim than the layers, or bytes are missing"
    layers = routes.shape[2]
    real, expected = got[:, :, :layers], want[:, :, :layers]
    front = got[:, :, : max_layers - layers]
    if (
        layers
        and max_layers > layers
        and torch.equal(got[:, :, max_layers - layers :], expected)
        and not int(front.count_nonzero())
    ):
        return "the real layers sit at the end of the layer dim, after the padding: they must come first"
    if int(got[:, :, layers:].count_nonzero()):
        return "the padding layers hold nonzero bytes, so the padding carries routes that do not exist"
    if layers and torch.equal(real, _byte_swapped(expected)):
        return (
            "the two bytes of each route are in the other order: high byte first, where the receiver reads the "
            "low byte first (int16 is little-endian on x86-64 and ARM, the machines verl runs on)"
        )
    if layers and torch.equal(real[..., 0::2], expected[..., 0::2]) and not int(real[..., 1::2].count_nonzero()):
        return "each route kept only its low byte: a value cast to uint8 keeps only the low byte of an expert id"
    return None  # no mistake recognised: the plain "returned X; expected Y there" line


def _from_wire_mistake(args: tuple[Any, ...], got: Any, want: torch.Tensor) -> str | None:
    _, layer_count = args
    if not isinstance(got, torch.Tensor) or got.dtype != ROUTE_DTYPE:
        return "from_wire must return torch.int16 routes"
    if got.dim() == 4 and got.shape[2] > layer_count:
        return "your from_wire kept padding layers"
    if got.dim() == 4 and got.shape[2] < layer_count:
        return (
            "your from_wire lost real layers (a layer whose bytes are all zero, every token on expert 0, "
            "is a real layer): use the count you are given"
        )
    if got.shape != want.shape:
        return "your from_wire made one route of each byte, but a route is two bytes on the wire"
    if got.dim() == 4 and torch.equal(got, _from_wire_reference(_byte_swapped(args[0]), layer_count)):
        return "your from_wire reads the two bytes of each route in the other order (high byte first)"
    return None  # no mistake recognised: the plain "returned X; expected Y there" line


@st.composite
def _wire_inputs(draw: Any) -> tuple[torch.Tensor, int]:
    batch, seq, layers, topk = (
        draw(st.integers(1, 2)),
        draw(st.integers(1, 3)),
        draw(st.integers(0, 4)),
        draw(st.integers(1, 3)),
    )
    extra, seed = draw(st.integers(0, 3)), draw(st.integers(0, 50))
    return _route_map(batch, seq, layers, topk, seed), layers + extra


def _wire_cases() -> list[Case]:
    """3.2's named edge cases: padding or none, a stage without MoE layers, top-1, a non-contiguous map."""
    return [
        Case((_route_map(2, 3, 3, 4, 32), 3), "3 layers, no padding needed"),
        Case((_route_map(2, 3, 3, 4, 32), 5), "3 layers padded to 5"),
        Case((_route_map(2, 3, 1, 4, 33), 4), "1 layer padded to 4"),
        Case((_route_map(1, 2, 0, 2, 34), 3), "a stage with 0 MoE layers joins with only padding"),
        Case((_route_map(1, 1, 2, 1, 35), 2), "top-1, one token"),
        Case(
            (_route_map(2, 2, 3, 4, 36).transpose(2, 3).contiguous().transpose(2, 3), 4),
            "a routes map that is not contiguous in memory (its last dim is strided, as after a reordering)",
        ),
    ]
