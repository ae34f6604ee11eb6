"""What a stored micro-batch output holds, and the end of the mini-batch that finally frees it.

`store_output_as_is` (before #7874) and `store_output` (the fix) append one micro-batch's output to the store,
`store_for` picks the one a run uses; `graph_leaves` walks a stored tensor's autograd graph to the leaves it keeps
alive (parameters, the receive buffer); `consume_store` is the merge
`verl/workers/engine/utils.py::postprocess_batch_func` does once the whole mini-batch has run (the course's small
version: per-key concatenation).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from verlstudy.common.trees import detach_tree

Detach = Callable[[Any], Any]


def store_output_as_is(forward_data_store: list[Any], output: dict[str, Any], detach_fn: Detach = detach_tree) -> None:
    """Append one micro-batch's output dict as it is (verl 0.9.0's Megatron engine, before #7874): the leak.

    `detach_fn` is unused here; it keeps the signature of `store_output`, the fix.
    """
    forward_data_store.append(output)


def store_output(forward_data_store: list[Any], output: dict[str, Any], detach_fn: Detach = detach_tree) -> None:
    """Append one micro-batch's output dict, detached (#7874: verl's four engine store sites).

    `detach_fn` is the course's `detach_tree` unless a caller passes another (upstream's own).
    """
    forward_data_store.append(detach_fn(output))


def store_for(detach_outputs: bool) -> Callable[[list[Any], dict[str, Any], Detach], None]:
    """The store a run uses: `store_output` (the fix) when `detach_outputs`, else `store_output_as_is`."""
    return store_output if detach_outputs else store_output_as_is


def consume_store(forward_data_store: list[Any]) -> dict[str, torch.Tensor]:
    """The end of the mini-batch: merge each stored per-token output key in order, then empty the store.

    Like `postprocess_batch_func`, the merge keeps whatever autograd link the stored outputs have
    (a leaking store's graphs stay pinned by the merged tensors until they are dropped too).
    """
    if not isinstance(forward_data_store, list) or not forward_data_store:
        raise ValueError("forward_data_store must be a non-empty list of per-micro-batch output dicts")
    outputs: list[dict[str, torch.Tensor]] = []
    for i, item in enumerate(forward_data_store):
        value = item.get("model_output") if isinstance(item, dict) else None
        if not isinstance(value, dict) or not all(isinstance(t, torch.Tensor) for t in value.values()):
            raise TypeError(f"forward_data_store[{i}] must be a dict holding a 'model_output' dict of tensors")
        if outputs and value.keys() != outputs[0].keys():
            raise ValueError(f"forward_data_store[{i}] has model_output keys {sorted(value)}, not {sorted(outputs[0])}")
        outputs.append(value)
    merged = {key: torch.cat([out[key] for out in outputs]) for key in outputs[0]}
    forward_data_store.clear()
    return merged


def graph_leaves(tensor: torch.Tensor) -> list[torch.Tensor]:
    """The leaf tensors (parameters, receive buffers) that `tensor`'s autograd graph still reaches.

    Walks `grad_fn.next_functions` to the AccumulateGrad nodes; each holds its leaf tensor strongly,
    which is how a stored output with a `grad_fn` keeps a receive buffer (and its `.grad`) alive.
    """
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"tensor must be a torch.Tensor, got {type(tensor).__name__}")
    leaves: list[torch.Tensor] = []
    # id -> node keeps every visited wrapper alive: torch frees a node's Python wrapper once nothing holds it and
    # hands its address to the next wrapper it makes, so an id alone would skip unvisited nodes (torch 2.4-2.11)
    visited: dict[int, Any] = {}
    stack = [tensor.grad_fn] if tensor.grad_fn is not None else []
    while stack:
        node = stack.pop()
        if id(node) in visited:
            continue
        visited[id(node)] = node
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):
            leaves.append(variable)
        stack.extend(nxt for nxt, _ in node.next_functions if nxt is not None)
    return leaves
