"""Lesson 03's exercise checkers: 3.1 stacks routes by layer number, 3.2 is the dense (VPP with BSHD inputs) branch's
wire format of `pp_gather`, 3.3 reads a config's text branch.

Each checker compares the learner's function with a reference on named edge cases, then on inputs drawn
from the exercise's own domain (`verlstudy.kit.properties`). A wrong answer's message names the mistake
it shows; `where` and `method` are the later rungs of the hint ladder, in words. The mechanism's own
`stack_routes`, `to_wire`/`from_wire` and config walks are refused as answers.
The cases, references and mistake names are in `route_cases.py` (3.1, 3.2) and `config_cases.py` (3.3).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

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
from verlstudy.lessons.l03_router_replay.route_cases import (
    _duplicate_verdict,
    _from_wire_mistake,
    _from_wire_reference,
    _stack_cases,
    _stack_inputs,
    _stack_mistake,
    _stack_reference,
    _to_wire_mistake,
    _to_wire_reference,
    _wire_cases,
    _wire_inputs,
)
from verlstudy.lessons.l03_router_replay.routes import stack_routes
from verlstudy.lessons.l03_router_replay.text_config import bfs_config_attr, get_text_config_attr

# ---------------------------------------------------------------- 3.1 stack routes by layer number


@checker(
    "3.1",
    library_answers=[stack_routes],
    where=(
        "Section 3, the review catch: the walk meets routers in the order the model holds them, and replay "
        "indexes layers by their number. Look at what the shuffled registration did to the stacked map."
    ),
    method=(
        "First collect the layer numbers and refuse the input when one of them appears twice. Then order the "
        "pairs by their layer number alone, compared as numbers (the tensors cannot be compared). Convert each "
        "routes tensor to the 16-bit integer type and stack them so that the layer is the middle dimension. "
        "Build a new list; leave the one you were given as it was."
    ),
    reveals=["sort routers by layer_number before stacking", "sort by layer number, reject duplicates"],
)
def check_stack_by_layer(stack_by_layer: Callable[[list[tuple[int, torch.Tensor]]], torch.Tensor]) -> str:
    """Exercise 3.1: stack (layer_number, routes) pairs met in walk order, by layer number."""
    if not callable(stack_by_layer):
        raise ExerciseFailure(f"pass your function itself, got {type(stack_by_layer).__name__}")
    summary = compare_on_inputs(
        stack_by_layer,
        _stack_reference,
        name="stack_by_layer",
        edge_cases=_stack_cases(),
        inputs=_stack_inputs(),
        mistakes=_stack_mistake,
    )
    _duplicate_verdict(stack_by_layer)
    return f"{summary}; duplicates rejected"


# ---------------------------------------------------------------- 3.2 the dense branch's wire format


@checker(
    "3.2",
    library_answers=[to_wire, from_wire],
    where=(
        "Section 4, the dense branch of pp_gather: what a collective needs (the same shape on every rank, a "
        "dtype the backend can send) and which dim differs between stages."
    ),
    method=(
        "to_wire: reinterpret the int16 tensor's memory as bytes (a view, not a conversion of values), which "
        "doubles the last dim; make a zero-filled byte tensor whose layer dim is max_layers and copy the bytes "
        "into its first layers. from_wire: keep only the first layer_count layers (the count you are given, "
        "never guessed from the bytes) and reinterpret those bytes as int16 again."
    ),
    reveals=["uint8 view", "bit view"],
)
def check_wire_roundtrip(
    to_wire_fn: Callable[[torch.Tensor, int], torch.Tensor], from_wire_fn: Callable[[torch.Tensor, int], torch.Tensor]
) -> str:
    """Exercise 3.2: int16 routes -> uint8 payload zero-padded on the layer dim -> the same int16 routes."""
    for fn in (to_wire_fn, from_wire_fn):
        if not callable(fn):
            raise ExerciseFailure(f"pass your two functions themselves, got {type(fn).__name__}")
    named = _wire_cases()
    to_summary = compare_on_inputs(
        to_wire_fn,
        _to_wire_reference,
        name="to_wire",
        edge_cases=named,
        inputs=_wire_inputs(),
        mistakes=_to_wire_mistake,
        max_examples=40,
    )

    def payload_cases(strategy: Any) -> Any:
        return strategy.map(lambda a: (_to_wire_reference(*a), a[0].shape[2]))

    from_summary = compare_on_inputs(
        from_wire_fn,
        _from_wire_reference,
        name="from_wire",
        edge_cases=[Case((_to_wire_reference(*c.args), c.args[0].shape[2]), c.name) for c in named],
        inputs=payload_cases(_wire_inputs()),
        mistakes=_from_wire_mistake,
        max_examples=40,
    )
    return f"to_wire {to_summary}; from_wire {from_summary}"


# ---------------------------------------------------------------- 3.3 the text-branch config walk


@checker(
    "3.3",
    library_answers=[get_text_config_attr, bfs_config_attr],
    where=(
        "Section 5, the config walk: which sub-configs are on the text branch, in which order they are read, "
        "and what counts as 'absent'."
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
    """Exercise 3.3: your text-branch lookup must answer as the reference (verl's get_hf_config_attr) does."""
    if not callable(find_attr):
        raise ExerciseFailure(f"pass your function itself, got {type(find_attr).__name__}")
    return compare_on_inputs(
        _outcome(find_attr),
        _outcome(get_text_config_attr),
        name="find_text_attr",
        edge_cases=[Case((spec, name), label) for label, spec, name, _ in _text_attr_cases()],
        inputs=_config_inputs(),
        mistakes=_text_attr_mistake_for(find_attr),
        show=_show_lookup,
        max_examples=60,
    )
