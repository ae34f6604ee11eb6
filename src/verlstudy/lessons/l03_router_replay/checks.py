"""Lesson 03's exercise checkers: 3.1 stacks routes by layer number, 3.2 is the dense (VPP with BSHD inputs) branch's
wire format of `pp_gather`, 3.3 reads a config's text branch.

Each checker compares the learner's function with a reference on named edge cases, then on inputs drawn
from the exercise's own domain (`verlstudy.kit.properties`). A wrong answer's message names the mistake
it shows; `where` and `method` are the later rungs of the hint ladder, in words. The mechanism's own
`stack_routes`, `to_wire`/`from_wire` and config walks are refused as answers.
The cases, references and mistake names are in `stack_judging.py` (3.1), `wire_judging.py` (3.2) and
`config_cases.py` (3.3).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from verlstudy.kit import i18n
from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.kit.properties import Case, compare_on_inputs
from verlstudy.lessons.l03_router_replay.config_cases import (
    _config_inputs,
    _outcome,
    _show_lookup,
    _text_attr_cases,
    _text_attr_mistake_for,
)
from verlstudy.lessons.l03_router_replay.pipeline import from_wire, to_wire
from verlstudy.lessons.l03_router_replay.routes import stack_routes
from verlstudy.lessons.l03_router_replay.stack_judging import (
    duplicate_verdict,
    stack_cases,
    stack_inputs,
    stack_mistake,
    stack_reference,
)
from verlstudy.lessons.l03_router_replay.text_config import bfs_config_attr, get_text_config_attr
from verlstudy.lessons.l03_router_replay.walk_judging import drawn_configs, naming_drawn, with_drawn
from verlstudy.lessons.l03_router_replay.wire_judging import (
    from_wire_mistake_for,
    from_wire_reference,
    payload_cases,
    payload_inputs,
    to_wire_aliases,
    to_wire_mistake_for,
    to_wire_reference,
    wire_cases,
    wire_inputs,
)

# ---------------------------------------------------------------- 3.1 stack routes by layer number


def _reference_stack(pairs: list[tuple[int, torch.Tensor]]) -> torch.Tensor:
    return stack_reference(pairs)


@checker(
    "3.1",
    library_answers=[stack_routes, stack_reference],
    where=(
        "Section 3, the review catch: the walk meets routers in the order the model holds them, and replay "
        "indexes layers by their number. Look at what the shuffled registration did to the stacked map."
    ),
    question=(
        "A pipeline stage of a 384-expert model meets its routers as layers 18, 40, 17: which column should "
        "layer 17's routes land in, what happens to an expert id of 300 on its way into the map, and what "
        "should happen if two routers both say they are layer 18?"
    ),
    method=(
        "First collect the layer numbers and refuse the input when any of them appears twice. Then order the "
        "pairs by their layer number alone, compared as numbers (the tensors cannot be compared). Convert each "
        "routes tensor to the integer type the lesson stores routes in, one wide enough for every expert id, "
        "and stack them so that the layer is the middle dimension. Build a new list; leave the one you were "
        "given as it was."
    ),
    reveals=["sort routers by layer_number before stacking", "sort by layer number, reject duplicates"],
)
def check_stack_by_layer(stack_by_layer: Callable[[list[tuple[int, torch.Tensor]]], torch.Tensor]) -> str:
    """Exercise 3.1: stack (layer_number, routes) pairs met in walk order, by layer number.

    Contract: for any list of pairs a walk over a real MoE model meets (1 to 61 routers; Megatron layer numbers
    from 1, with dense gaps, one pipeline stage's range or a VPP rank's two chunks, past 9 and past 60, in any
    order; routes (tokens, topk) of top-1 to top-8 over 8 to 512 experts, ids above 255 included, as int64,
    int32 or int16, contiguous or not), the answer returns one torch.int16 tensor (tokens, layers, topk) whose
    column j holds, value for value, the routes of the j-th smallest layer number (the type is taught: the
    lesson stores routes as int16). It leaves the list and its tensors as they were. Any list in which two
    pairs share a layer number, wherever they sit, raises ValueError.
    """
    if not callable(stack_by_layer):
        raise ExerciseFailure(i18n.pick("pass your function itself, got {kind}", kind=type(stack_by_layer).__name__))
    summary = compare_on_inputs(
        stack_by_layer,
        _reference_stack,
        name="stack_by_layer",
        edge_cases=stack_cases(),
        inputs=stack_inputs(),
        mistakes=stack_mistake,
        max_examples=40,
    )
    tried = duplicate_verdict(stack_by_layer)
    return i18n.pick("{summary}; duplicates rejected in {tried} walks", summary=summary, tried=tried)


# ---------------------------------------------------------------- 3.2 the dense branch's wire format


def _reference_to_wire(routes: torch.Tensor, max_layers: int) -> torch.Tensor:
    return to_wire_reference(routes, max_layers)


def _reference_from_wire(payload: torch.Tensor, layer_count: int) -> torch.Tensor:
    return from_wire_reference(payload, layer_count)


@checker(
    "3.2",
    library_answers=[to_wire, from_wire, to_wire_reference, from_wire_reference],
    where=(
        "Section 4, the dense branch of pp_gather: what a collective needs (the same shape on every rank, a "
        "dtype the backend can send) and which dim differs between stages."
    ),
    question=(
        "Expert 300 is stored as an int16. Which two bytes hold it in memory, and in which order does this "
        "machine keep them? If a stage has 2 MoE layers and the largest stage has 5, where do the 3 extra layers "
        "go, what do they hold, and how does the receiver know that only 2 are real when a real layer can be all "
        "zeros?"
    ),
    method=(
        "to_wire: take the bytes of the int16 routes exactly as they lie in memory (the tensor made contiguous "
        "first), so each route becomes two bytes and the last dim doubles; make a zero-filled byte tensor whose "
        "layer dim is max_layers and put those bytes into its first layers. from_wire: keep only the first "
        "layer_count layers (the count you are given, never guessed from the bytes) and read each pair of "
        "bytes back as one int16, in the same order."
    ),
    reveals=["uint8 view", "bit view", ".view(torch.uint8)"],
)
def check_wire_roundtrip(
    to_wire_fn: Callable[[torch.Tensor, int], torch.Tensor], from_wire_fn: Callable[[torch.Tensor, int], torch.Tensor]
) -> str:
    """Exercise 3.2: int16 routes -> uint8 payload zero-padded on the layer dim -> the same int16 routes.

    Contract: for one pipeline stage's routes (B, S, L, k) int16 of a real model cut over 1 to 16 stages (L from
    0 for a stage of dense layers only up to 94, k 1 to 8, expert ids of 8 to 512 experts: 256 and above, a
    layer of zeros) and max_layers, the largest stage's L, to_wire returns a new torch.uint8 tensor
    (B, S, max_layers, 2k): the routes' bytes in memory order (little-endian int16 on x86-64 and ARM) in the
    first L layers, zeros after. It accepts views (a slice of a bigger map, a transposed copy, an expanded
    batch) and leaves the routes as they were. from_wire(payload, layer_count) returns torch.int16 (B, S,
    layer_count, k) equal to the routes sent, for a payload that may be a slice of a gathered buffer, and leaves
    the payload as it was. Types are taught (uint8 on the wire, int16 routes).
    """
    for fn in (to_wire_fn, from_wire_fn):
        if not callable(fn):
            raise ExerciseFailure(i18n.pick("pass your two functions themselves, got {kind}", kind=type(fn).__name__))
    to_summary = compare_on_inputs(
        to_wire_fn,
        _reference_to_wire,
        name="to_wire",
        edge_cases=wire_cases(),
        inputs=wire_inputs(),
        mistakes=to_wire_mistake_for(to_wire_fn),
        max_examples=40,
    )
    from_summary = compare_on_inputs(
        from_wire_fn,
        _reference_from_wire,
        name="from_wire",
        edge_cases=payload_cases(),
        inputs=payload_inputs(),
        mistakes=from_wire_mistake_for(from_wire_fn),
        max_examples=40,
    )
    aliased = to_wire_aliases(to_wire_fn)
    if aliased is not None:
        raise ExerciseFailure(aliased)
    return f"to_wire {to_summary}; from_wire {from_summary}"


# ---------------------------------------------------------------- 3.3 the text-branch config walk


def _reference_text_attr(config: object, name: str) -> Any:
    return get_text_config_attr(config, name)


@checker(
    "3.3",
    library_answers=[get_text_config_attr, bfs_config_attr],
    where=(
        "Section 5, the config walk: which sub-configs are on the text branch, in which order they are read, "
        "and what counts as 'absent'."
    ),
    question=(
        "An Omni config has hidden_size 1024 on the root, 3584 on thinker_config's text config and 896 on its "
        "talker sibling; a vision-language config keeps its language model under language_config and its own "
        "get_text_config() returns itself. Which value does each lookup return, which configs did it read "
        "before answering, and what should it do when only the talker has the attribute?"
    ),
    method=(
        "Step 1: ask the config for its text config (its get_text_config method when it has one, else its "
        "text_config attribute) and return that config's own value if it is not None. Step 2: walk the branch "
        "recursively, remembering every config already visited: for a node, first walk its text config, then "
        "each of the four named sub-configs, and only then consider the node itself. Return the first value "
        "that is not None; if there is none, raise AttributeError. Never look at any other sub-config."
    ),
    reveals=["each node after its branches", "deepest first"],
)
def check_text_config_attr(find_attr: Callable[[object, str], Any]) -> str:
    """Exercise 3.3: your text-branch lookup must answer as verl 0.9.1's get_hf_config_attr does.

    Contract: for any config of the shapes the lesson names (a plain language model whose get_text_config()
    returns itself, a vision-language model with text_config or language_config, an Omni model with
    thinker_config.text_config and talker/token2wav siblings, a composite whose get_text_config(decoder=...,
    encoder=...) returns a config no attribute holds, namespaces without get_text_config; trees up to 3 levels;
    one sub-config under two names; a sub-config pointing back at the root; a value served through an
    attribute_map alias) and any attribute name a model has, find_attr returns the value get_hf_config_attr
    returns, as stored (the same value of any type; 0 and False are values, None is absent), or raises
    AttributeError where it does. Any traversal that returns those values is right. The config is not changed.
    """
    if not callable(find_attr):
        raise ExerciseFailure(i18n.pick("pass your function itself, got {kind}", kind=type(find_attr).__name__))
    mistakes, show = naming_drawn(_text_attr_mistake_for(find_attr), _show_lookup)
    options = {"name": "find_text_attr", "mistakes": mistakes, "show": show, "max_examples": 60}
    answer, reference = with_drawn(_outcome, find_attr), with_drawn(_outcome, _reference_text_attr)
    trees = compare_on_inputs(
        answer,
        reference,
        edge_cases=[Case((spec, name), label) for label, spec, name, _ in _text_attr_cases()],
        inputs=_config_inputs(),
        **options,
    )
    shaped = compare_on_inputs(answer, reference, inputs=drawn_configs(), **options)
    # the second summary reads on from the first ("right on ...; on N generated inputs shaped like ...")
    return i18n.pick(
        "{trees}; {shaped} shaped like Hugging Face's configs", trees=trees, shaped=shaped.removeprefix("right ")
    )
