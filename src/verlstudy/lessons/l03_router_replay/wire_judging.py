"""Exercise 3.2's domain, references and mistake names (serves checks.py only).

The inputs are one pipeline stage's route map as the dense (VPP, BSHD) branch of pp_gather sends it: the MoE layers
of a real model (Mixtral's 32, DeepSeek-V2-Lite's 26, Qwen3-30B's 48, DeepSeek-V3's 58 of 61, Kimi-K2's 60 of 61,
Qwen3-235B's 94) cut over 1 to 16 stages, the first stage possibly without MoE layers; max_layers is the largest
stage's count. Expert ids come from 8 to 512 experts (ids of 256 and above, 256 itself whose low byte is 0, and a
layer whose bytes are all zero), top-1 to top-8. A map may be a view: a stage's slice of the whole model's layers,
a transposed copy, a batch expanded from one row. from_wire's payload may be a rank's slice of a gathered buffer.
A wrong answer is named by probing the learner's function on small inputs (`wire_mistake`), not by guessing from
the failing output alone.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import cache
from typing import Any

import torch
from hypothesis import strategies as st

from verlstudy.kit import i18n
from verlstudy.kit.properties import Case
from verlstudy.lessons.l03_router_replay.moe import ROUTE_DTYPE

MOE_LAYERS = (32, 26, 48, 58, 60, 94)
EXPERT_COUNTS = (8, 64, 160, 256, 384, 512)


def to_wire_reference(routes: torch.Tensor, max_layers: int) -> torch.Tensor:
    payload = routes.contiguous().view(torch.uint8)
    padded = torch.zeros((*payload.shape[:2], max_layers, payload.shape[3]), dtype=torch.uint8)
    padded[:, :, : payload.shape[2]] = payload
    return padded


def from_wire_reference(payload: torch.Tensor, layer_count: int) -> torch.Tensor:
    return payload[:, :, :layer_count].contiguous().view(ROUTE_DTYPE)


def _stage_counts(rng: random.Random) -> list[int]:
    """MoE layers per stage of a real model cut over pp stages (the first one may hold only dense layers)."""
    layers, pp = rng.choice(MOE_LAYERS), rng.choice((1, 2, 4, 8, 16))
    counts = [layers // pp + (s < layers % pp) for s in range(pp)]
    if pp > 1 and rng.random() < 0.3:
        counts[1] += counts[0]
        counts[0] = 0  # the dense layers fill the first stage
    return counts


def drawn_map(seed: int) -> tuple[torch.Tensor, int]:
    """(routes of one stage, max_layers) from `seed`."""
    rng = random.Random(seed)
    counts = _stage_counts(rng)
    layers = counts[rng.randrange(len(counts))]
    batch, seq, topk = rng.randint(1, 2), rng.randint(1, 3), rng.choice((1, 2, 4, 8))
    experts = rng.choice(EXPERT_COUNTS)
    view = rng.choice(("plain", "plain", "slice", "transposed", "expanded"))
    extra = 2 if view == "slice" else 0
    gen = torch.Generator().manual_seed(seed)
    routes = torch.randint(0, experts, (batch, seq, layers + extra, topk), generator=gen).to(ROUTE_DTYPE)
    if layers and experts > 256:
        routes[0, 0, rng.randrange(layers + extra), 0] = 256  # high byte 1, low byte 0
        routes[-1, -1, rng.randrange(layers + extra), -1] = experts - 1
    if layers >= 2 and rng.random() < 0.5:
        routes[:, :, rng.randrange(layers + extra)] = 0  # every token on expert 0: a real layer of zero bytes
    if view == "slice":
        routes = routes[:, :, 1 : 1 + layers]  # this stage's layers of a bigger map: an offset, strided view
    elif view == "transposed":
        routes = routes.transpose(2, 3).contiguous().transpose(2, 3)
    elif view == "expanded":
        routes = routes[:1].expand(batch, -1, -1, -1)
    return routes, max(counts)


@st.composite
def wire_inputs(draw: Any) -> tuple[torch.Tensor, int]:
    return drawn_map(draw(st.integers(0, 10**6)))


@st.composite
def payload_inputs(draw: Any) -> tuple[torch.Tensor, int]:
    """What a rank reads back: a reference payload, sometimes its slice of a buffer gathered from several ranks."""
    routes, max_layers = drawn_map(draw(st.integers(0, 10**6)))
    payload = to_wire_reference(routes, max_layers)
    ranks = draw(st.integers(1, 3))
    if ranks > 1:
        gathered = torch.cat([torch.zeros_like(payload)] * (ranks - 1) + [payload], dim=0)
        payload = gathered[-payload.shape[0] :]
    return payload, routes.shape[2]


def _map(values: list[list[int]]) -> torch.Tensor:
    """One token's map (1, 1, layers, topk) of these expert ids."""
    return torch.tensor(values, dtype=ROUTE_DTYPE)[None, None]


def wire_cases() -> list[Case]:
    """Named cases that illustrate the contract (the generated stages are the check)."""
    first, _ = drawn_map(1)
    return [
        Case((_map([[258, 300], [17, 383]]), 2), "2 layers of 384 experts, no padding needed"),
        Case((_map([[258, 300], [17, 383]]), 5), "2 layers padded to 5"),
        Case((_map([[256, 0]]), 3), "expert 256 (its low byte is 0) padded to 3"),
        Case((torch.zeros((1, 2, 0, 2), dtype=ROUTE_DTYPE), 3), "a stage with 0 MoE layers joins with only padding"),
        Case((_map([[511]]), 1), "top-1, one token, 512 experts"),
        Case(
            (_map([[3, 400, 7], [260, 1, 9]]).transpose(2, 3).contiguous().transpose(2, 3), 4),
            "a routes map that is not contiguous in memory (its last dim is strided, as after a reordering)",
        ),
        Case((first, first.shape[2] + 1), "a drawn stage"),
    ]


def payload_cases() -> list[Case]:
    return [Case((to_wire_reference(*c.args), c.args[0].shape[2]), c.name) for c in wire_cases()]


# ---------------------------------------------------------------- the returned tensor is new


def to_wire_aliases(fn: Callable[..., Any]) -> str | None:
    """Why `fn` (a to_wire) breaks "returns a new tensor", or None: its payload must not share memory with the
    routes on any drawn stage, padded or full height (the collective writes into the buffers it is handed)."""
    for seed in range(4):
        routes, layers = drawn_map(seed)
        for max_layers in (layers, routes.shape[2]):  # padded, and full height: nothing to pad
            mine = routes.clone()
            payload = _call(fn, mine, max_layers)
            shared = (
                isinstance(payload, torch.Tensor)
                and payload.numel() > 0
                and mine.numel() > 0  # an empty tensor's storage is no memory to share
                and payload.untyped_storage().data_ptr() == mine.untyped_storage().data_ptr()
            )
            if shared:
                return i18n.pick(
                    "to_wire's payload shares memory with the routes it was given (a stage of {layers} layers, "
                    "max_layers {max_layers}): return a new tensor, as the contract asks",
                    layers=routes.shape[2],
                    max_layers=max_layers,
                )
    return None


# ---------------------------------------------------------------- naming a mistake by probing the function


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as e:
        return e


def _bytes(t: Any) -> list[int] | None:
    return t.flatten().tolist() if isinstance(t, torch.Tensor) else None


@cache
def _probe_to_wire(fn: Callable[..., Any]) -> str | None:
    """What the learner's to_wire does wrong on two small maps (None: nothing found there)."""
    one = _call(fn, _map([[258, 300]]), 1)  # right bytes: 2 1 44 1
    if not isinstance(one, torch.Tensor):
        return None
    if one.dtype != torch.uint8:
        return i18n._("to_wire must return a torch.uint8 tensor (the bytes gloo/NCCL can send)")
    if one.shape[-1] == 2 and one.numel() == 2:
        return i18n._("each route became one byte: a value cast to uint8 keeps only the low byte of an expert id")
    got = _bytes(one)
    if got == [1, 2, 1, 44]:
        return i18n._(
            "the two bytes of each route are in the other order: high byte first, where the receiver reads the "
            "low byte first (int16 is little-endian on x86-64 and ARM, the machines verl runs on)"
        )
    if got == [2, 0, 44, 0]:
        return i18n._(
            "each route kept only its low byte: a value cast to uint8 keeps only the low byte of an expert id"
        )
    padded = _call(fn, _map([[258]]), 3)  # right: (1, 1, 3, 2) holding 2 1 0 0 0 0
    if not isinstance(padded, torch.Tensor):
        return None
    if tuple(padded.shape) == (1, 1, 1, 2):
        return i18n._("the layer dim is not padded to max_layers")
    if tuple(padded.shape) != (1, 1, 3, 2):
        return i18n._("the padding went onto another dim than the layers, or bytes are missing")
    layers = padded[0, 0].tolist()
    if layers[2] == [2, 1] and layers[0] == [0, 0]:
        return i18n._("the real layers sit at the end of the layer dim, after the padding: they must come first")
    if layers[0] == [2, 1] and (layers[1] != [0, 0] or layers[2] != [0, 0]):
        return i18n._("the padding layers hold nonzero bytes, so the padding carries routes that do not exist")
    return None


@cache
def _probe_from_wire(fn: Callable[..., Any]) -> str | None:
    """What the learner's from_wire does wrong on small payloads (None: nothing found there)."""
    payload = to_wire_reference(_map([[258, 300], [0, 0]]), 3)  # 2 real layers, the second all zero
    got = _call(fn, payload, 2)
    if not isinstance(got, torch.Tensor):
        return None
    if got.dtype != ROUTE_DTYPE:
        return i18n._("from_wire must return torch.int16 routes")
    if got.dim() == 4 and got.shape[2] > 2:
        return i18n._("your from_wire kept padding layers")
    if got.dim() == 4 and got.shape[2] < 2:
        return i18n._(
            "your from_wire lost real layers (a layer whose bytes are all zero, every token on expert 0, "
            "is a real layer): use the count you are given"
        )
    if got.dim() == 4 and got.shape[3] == 4:
        return i18n._("your from_wire made one route of each byte, but a route is two bytes on the wire")
    values = _bytes(got)
    if values and values[:2] == [513, 11265]:
        return i18n._("your from_wire reads the two bytes of each route in the other order (high byte first)")
    if values and values[:2] == [2, 44]:
        return i18n._("your from_wire kept only the low byte of each route, and expert ids go above 255")
    return None


def to_wire_mistake_for(fn: Callable[..., Any]) -> Callable[..., str | None]:
    def name(args: tuple[Any, ...], got: Any, want: torch.Tensor) -> str | None:
        routes, _ = args
        found = _probe_to_wire(fn)
        if found is not None:
            return found
        if not routes.is_contiguous() and isinstance(got, torch.Tensor):
            again = _call(fn, routes.contiguous(), args[1])
            if isinstance(again, torch.Tensor) and again.shape == want.shape and torch.equal(again, want):
                return i18n._("your to_wire is wrong only on a routes map that is not contiguous in memory (a view)")
        return None

    return name


def from_wire_mistake_for(fn: Callable[..., Any]) -> Callable[..., str | None]:
    def name(args: tuple[Any, ...], got: Any, want: torch.Tensor) -> str | None:
        return _probe_from_wire(fn)

    return name
