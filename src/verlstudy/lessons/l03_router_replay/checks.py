"""Lesson 03's exercise checkers: 3.1 stacks routes by layer number, 3.2 is pp_gather's wire format,
3.3 reads a config's text branch.

A notebook reaches them only as check_exercise("N.M", answer); the mechanism's own `stack_routes`,
`to_wire`/`from_wire` and config walks are refused as answers. A wrong answer's message names the mistake
it shows; how to get there is each checker's `method`, shown after repeated tries or by `exercise_hint`.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import torch

from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.lessons.l03_router_replay.moe import ROUTE_DTYPE
from verlstudy.lessons.l03_router_replay.pipeline import from_wire, to_wire
from verlstudy.lessons.l03_router_replay.routes import stack_routes
from verlstudy.lessons.l03_router_replay.text_config import (
    ComposedConfig,
    ToyConfig,
    bfs_config_attr,
    get_text_config_attr,
)


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    if not callable(fn):
        raise ExerciseFailure(f"pass your function itself, got {type(fn).__name__}")
    return fn(*args)


def _raises(expected: type[Exception], fn: Callable[..., Any], *args: Any) -> Exception | None:
    """The `expected` exception `fn(*args)` raised, None if it returned; any other exception is a failure."""
    try:
        _call(fn, *args)
    except expected as e:
        return e
    except RecursionError:
        raise
    except Exception as e:
        raise ExerciseFailure(f"raise {expected.__name__}, not {type(e).__name__} ({e})") from e
    return None


@checker(
    "3.1",
    library_answers=[stack_routes],
    method=(
        "collect the layer numbers first and raise ValueError if one repeats (len(set(numbers)) != len(numbers)); "
        "then sort the (layer_number, routes) pairs by their layer number alone (key=lambda p: p[0]: tensors do "
        "not compare), convert each routes tensor with .to(torch.int16) and torch.stack them along dim=1"
    ),
    reveals=["sort routers by layer_number before stacking", "sort by layer number, reject duplicates"],
)
def check_stack_by_layer(stack_by_layer: Callable[[list[tuple[int, torch.Tensor]]], torch.Tensor]) -> str:
    """Exercise 3.1: stack (layer_number, routes) pairs met in walk order, by layer number."""
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
                f"{tuple(expected.shape)}: your layers are not the middle dim"
            )
        if got.dtype != ROUTE_DTYPE:
            raise ExerciseFailure(f"dtype is {got.dtype}, but routes are stored as torch.int16")
        if not torch.equal(got, expected):
            raise ExerciseFailure(
                f"for walk order {walk} the columns follow the order the pairs came in, not the layer numbers: "
                "replay would hand layer 1's routes to another layer"
            )
    duplicates = [(1, per_layer[1]), (2, per_layer[2]), (1, per_layer[3])]
    if _raises(ValueError, stack_by_layer, duplicates) is None:
        raise ExerciseFailure("two routers claimed layer 1 and your function raised nothing: a duplicate went through")
    return "columns follow layer numbers for 3 walk orders, duplicates rejected"


@checker(
    "3.2",
    library_answers=[to_wire, from_wire],
    method=(
        "to_wire: payload = routes.contiguous().view(torch.uint8) (a bit reinterpretation: the last dim doubles, "
        "nothing is lost above 255); allocate payload.new_zeros(B, S, max_layers, 2k) and copy the payload into "
        "its first L layers. from_wire: keep payload[:, :, :layer_count] (the count you are given, never guessed "
        "from the bytes) and .contiguous().view(torch.int16) it back"
    ),
    reveals=["uint8 view", "bit view"],
)
def check_wire_roundtrip(
    to_wire_fn: Callable[[torch.Tensor, int], torch.Tensor], from_wire_fn: Callable[[torch.Tensor, int], torch.Tensor]
) -> str:
    """Exercise 3.2: int16 routes -> uint8 payload zero-padded on the layer dim -> the same int16 routes."""
    gen = torch.Generator().manual_seed(32)
    routes = torch.randint(0, 384, (2, 3, 3, 4), generator=gen).to(ROUTE_DTYPE)
    routes[0, 0, 0, 0] = 300  # an expert id above 255: a value cast to uint8 would turn it into 44
    routes[:, :, 2] = 0  # every token on expert 0 in layer 3: a real layer whose bytes are all zero
    for layer_count, max_layers in ((3, 3), (3, 5), (1, 4)):
        local = routes[:, :, :layer_count].clone()
        payload = _call(to_wire_fn, local.clone(), max_layers)
        if not isinstance(payload, torch.Tensor) or payload.dtype != torch.uint8:
            raise ExerciseFailure("to_wire must return a torch.uint8 tensor (the bytes gloo/NCCL can send)")
        if payload.shape != (2, 3, max_layers, 8):
            raise ExerciseFailure(
                f"to_wire(routes, {max_layers}) has shape {tuple(payload.shape)}, expected (2, 3, {max_layers}, 8): "
                + _payload_mistake(tuple(payload.shape), layer_count, max_layers)
            )
        if int(payload[:, :, layer_count:].count_nonzero()):
            raise ExerciseFailure(
                f"to_wire(routes, {max_layers}): the padding layers hold nonzero bytes, so the padding carries "
                "routes that do not exist"
            )
        back = _call(from_wire_fn, payload, layer_count)
        if not isinstance(back, torch.Tensor) or back.dtype != ROUTE_DTYPE:
            raise ExerciseFailure("from_wire must return torch.int16 routes")
        if back.dim() != 4 or back.shape[2] != layer_count:
            got = back.shape[2] if back.dim() == 4 else "?"
            mistake = (
                "your from_wire kept padding layers"
                if isinstance(got, int) and got > layer_count
                else "your from_wire lost real layers (a layer whose bytes are all zero, every token on expert 0, "
                "is a real layer)"
            )
            raise ExerciseFailure(
                f"from_wire(payload, {layer_count}) has {got} layers, expected {layer_count}: {mistake}"
            )
        if back.shape != local.shape:
            raise ExerciseFailure(
                f"from_wire(payload, {layer_count}) has shape {tuple(back.shape)}, expected {tuple(local.shape)}: "
                "your from_wire made one route of each byte, but a route is two bytes on the wire"
            )
        if not torch.equal(back, local):
            bad = int((back != local).sum())
            raise ExerciseFailure(
                f"{bad} routes changed on the round trip (e.g. expert 300 came back as {int(back[0, 0, 0, 0])}): "
                "a value cast to uint8 keeps only the low byte of an expert id"
            )
    return "bit-exact for 3 layer counts and paddings, expert ids above 255 and an all-zero layer included"


def _payload_mistake(shape: tuple[int, ...], layer_count: int, max_layers: int) -> str:
    """What a to_wire payload of the wrong shape shows, named without the recipe."""
    if len(shape) != 4:
        return "the payload is not 4-dimensional"
    if shape[2] == layer_count and layer_count != max_layers:
        return "the layer dim is not padded to max_layers"
    if shape[2] != max_layers:
        return f"the layer dim holds {shape[2]} layers, not max_layers={max_layers}"
    return "the last dim is not the routes' bytes: the padding went onto another dim, or bytes are missing"


def _text_attr_cases() -> list[tuple[str, object, str, Any, str]]:
    """(label, config, name, expected, the hint when it goes wrong) for exercise 3.3; upstream agrees on each."""
    text = ToyConfig("Text", hidden_size=4096, tie_word_embeddings=False, num_experts=0)
    root = ToyConfig("Omni", hidden_size=1024, text_config=text, audio_config=ToyConfig("Audio", vocab_size=7))
    thinker = SimpleNamespace(
        hidden_size=1024, thinker_config=SimpleNamespace(text_config=SimpleNamespace(hidden_size=3584))
    )
    composed = ComposedConfig(
        "Composite",
        ToyConfig("Decoder", hidden_size=8192),
        hidden_size=1024,
        decoder_config=ToyConfig("Dec", hidden_size=2048),
    )
    return [
        (
            "root 1024 beside text_config 4096",
            root,
            "hidden_size",
            4096,
            "your walk reads the root before its text branch",
        ),
        (
            "False is a value, not a miss",
            root,
            "tie_word_embeddings",
            False,
            "your walk takes a falsy value for a missing one",
        ),
        ("0 is a value, not a miss", root, "num_experts", 0, "your walk takes a falsy value for a missing one"),
        (
            "language_config branch",
            ToyConfig("VL", language_config=ToyConfig("LM", rope_theta=1e6)),
            "rope_theta",
            1e6,
            "your walk misses a text branch that is not named text_config",
        ),
        (
            "thinker_config -> text_config",
            thinker,
            "hidden_size",
            3584,
            "your walk misses the text config nested inside thinker_config",
        ),
        (
            "the root when its branch lacks it",
            ToyConfig("VL", vocab_size=151936, text_config=ToyConfig("Text", hidden_size=8)),
            "vocab_size",
            151936,
            "your walk never reads the config itself",
        ),
        (
            "get_text_config() 8192 beside root 1024 and decoder_config 2048",
            composed,
            "hidden_size",
            8192,
            "your walk ignores what the config's get_text_config() returns, or reads a sibling sub-config",
        ),
    ]


@checker(
    "3.3",
    library_answers=[get_text_config_attr, bfs_config_attr],
    method=(
        "write a generator walk(node) that returns at once on None or on an id(node) already in a `seen` set; "
        "adds id(node); yields from walk(node.get_text_config()) if the node has that method, else from "
        "walk(node.text_config); then yields from walk(getattr(node, b, None)) for b in text_config, "
        "language_config, thinker_config, model_config; and yields node itself last. Return the first "
        "getattr(node, name, None) that is not None over walk(config); if none, raise AttributeError"
    ),
    reveals=["each node after its branches", "deepest first"],
)
def check_text_config_attr(find_attr: Callable[[object, str], Any]) -> str:
    """Exercise 3.3: your text-branch lookup must agree with the cases of the lesson."""
    cases = _text_attr_cases()
    for label, config, name, expected, hint in cases:
        try:
            got = _call(find_attr, config, name)
        except AttributeError as e:
            raise ExerciseFailure(f"{label}: raised AttributeError, expected {expected!r} ({hint})") from e
        if got != expected or type(got) is not type(expected):
            raise ExerciseFailure(f"{label}: got {got!r}, expected {expected!r} ({hint})")
    root = cases[0][1]
    if _raises(AttributeError, find_attr, root, "vocab_size") is None:
        raise ExerciseFailure("only the audio sibling has vocab_size, and your walk returned it: it read audio_config")
    loop = ToyConfig("Loop", hidden_size=None)
    loop.model_config = loop
    try:
        missing = _raises(AttributeError, find_attr, loop, "hidden_size")
    except RecursionError as e:
        raise ExerciseFailure("a config that contains itself recursed forever: your walk revisits configs") from e
    if missing is None:
        raise ExerciseFailure("hidden_size is None everywhere in the cyclic config, and your walk returned a value")
    return f"{len(cases)} lookups right, audio sibling refused, cycle safe"
