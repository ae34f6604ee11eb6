"""store.graph_leaves on any torch: a node's Python wrapper lives only while something holds it.

torch 2.4-2.11 free a grad_fn wrapper once nothing references it and reuse its address for the next wrapper they
make; the fake graph below behaves the same way (each C++-side node keeps only a weak reference to its wrapper),
so a walk that remembers visited nodes by a freed wrapper's id() skips nodes it never saw, whatever torch runs here.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch

from verlstudy.lessons.l01_memory_leak.store import graph_leaves


class _CppNode:
    """The node torch keeps on the C++ side: its inputs, an AccumulateGrad's leaf, a weak link to its wrapper."""

    def __init__(self, inputs: list[_CppNode] | None = None, variable: torch.Tensor | None = None) -> None:
        self.inputs = inputs or []
        self.variable = variable
        self.wrapper: weakref.ref[_NodeWrapper] | None = None


class _NodeWrapper:
    """The Python object `grad_fn` and `next_functions` hand out: made afresh whenever the last one was freed."""

    __slots__ = ("__weakref__", "_cpp")

    def __init__(self, cpp: _CppNode) -> None:
        self._cpp = cpp

    @property
    def variable(self) -> torch.Tensor | None:
        return self._cpp.variable

    @property
    def next_functions(self) -> tuple[tuple[_NodeWrapper, int], ...]:
        return tuple((_wrapper_of(node), 0) for node in self._cpp.inputs)


def _wrapper_of(node: _CppNode) -> _NodeWrapper:
    alive = node.wrapper() if node.wrapper is not None else None
    if alive is not None:
        return alive
    fresh = _NodeWrapper(node)
    node.wrapper = weakref.ref(fresh)
    return fresh


class _ChurningOutput(torch.Tensor):
    """A tensor whose grad_fn is the fake graph's root (a new wrapper each time nothing holds the last one)."""

    root: _CppNode

    @property
    def grad_fn(self) -> Any:  # type: ignore[override]
        return _wrapper_of(type(self).root)


def _leaves_of(root: _CppNode) -> list[torch.Tensor]:
    _ChurningOutput.root = root
    return graph_leaves(torch.zeros(2).as_subclass(_ChurningOutput))


def _chain(depth: int, leaf: torch.Tensor) -> _CppNode:
    node = _CppNode(variable=leaf)
    for _ in range(depth):
        node = _CppNode([node])
    return node


def test_every_leaf_is_found_when_wrappers_are_freed_and_their_addresses_reused() -> None:
    leaves = [torch.zeros(1, requires_grad=True) for _ in range(3)]
    root = _CppNode([_chain(3, leaves[0]), _chain(2, leaves[1]), _chain(0, leaves[2])])
    found = _leaves_of(root)
    assert len(found) == 3 and all(any(f is leaf for f in found) for leaf in leaves)


def test_a_node_two_paths_reach_is_walked_once() -> None:
    shared_leaf = torch.zeros(1, requires_grad=True)
    shared = _chain(2, shared_leaf)
    found = _leaves_of(_CppNode([_CppNode([shared]), _CppNode([_CppNode([shared])]), shared]))
    assert len(found) == 1 and found[0] is shared_leaf


def test_a_real_graph_reports_each_leaf_once() -> None:
    weights = [torch.randn(3, requires_grad=True) for _ in range(4)]
    hidden = weights[0] * 2
    out = sum(((hidden * w).sum() for w in weights[1:]), start=(hidden * 3).sum())
    found = graph_leaves(out)
    assert len(found) == len(weights) and all(any(f is w for f in found) for w in weights)
