"""Detaching nested engine outputs, and walking their tensor leaves: lessons 01 and 02 both use these.

`detach_tree` follows upstream's `verl/workers/engine/utils.py::detach_tree` (verl PR #7874, checked
against verl 0.9.1); the code here is written for this course:

- a tensor is detached only if it requires grad; otherwise the *same object* comes back, so a tree of
  already-detached leaves costs no new tensor (no throwaway TensorImpl per key per micro-batch);
- dict -> a new plain ``dict`` (dict subclasses such as OrderedDict come back as ``dict``, as upstream);
- list / tuple -> the same type, rebuilt recursively;
- namedtuple -> the same namedtuple, rebuilt field by field. This is a deliberate difference from
  upstream, whose ``type(obj)(generator)`` raises TypeError for a namedtuple of two or more fields and
  silently stores the generator object in a one-field namedtuple;
- anything else (ints, strings, None, numpy arrays, ...) is returned unchanged;
- the input is never mutated; jagged nested tensors (``layout=torch.jagged``) are tensors and are
  detached whole, keeping their offsets.

Cyclic containers are not supported: upstream recurses until RecursionError; here a tree that contains itself
(or is nested deeper than Python's recursion limit) is a one-line ValueError saying so. The leaf walk
(`tensor_leaves`, `grad_attached_paths`) also looks inside sets and dataclasses, which `detach_tree`
returns unchanged, so a contract check still finds a grad tensor kept there.
"""

from __future__ import annotations

import dataclasses
from collections import UserList, deque
from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import TypeVar

import torch

from verlstudy.kit.params import a_kind

T = TypeVar("T")


def is_namedtuple(obj: object) -> bool:
    """True for instances of `collections.namedtuple` / `typing.NamedTuple` classes."""
    return isinstance(obj, tuple) and hasattr(type(obj), "_fields") and hasattr(type(obj), "_make")


def detach_tree(obj: T) -> T:
    """Return `obj` with every grad-requiring tensor detached; see the module docstring for the rules."""
    try:
        return _detach_tree(obj)
    except RecursionError:
        raise ValueError(_cycle_message("detach_tree", obj)) from None


def _detach_tree(obj: T) -> T:
    if isinstance(obj, torch.Tensor):
        # Already detached: hand back the same object, creating nothing.
        return obj.detach() if obj.requires_grad else obj  # type: ignore[return-value]
    if isinstance(obj, dict):
        return {k: _detach_tree(v) for k, v in obj.items()}  # type: ignore[return-value]
    if is_namedtuple(obj):
        return type(obj)._make(_detach_tree(v) for v in obj)  # type: ignore[attr-defined,no-any-return]
    if isinstance(obj, list | tuple):
        return type(obj)(_detach_tree(v) for v in obj)  # type: ignore[return-value]
    return obj


def detach_tree_always(obj: T) -> T:
    """The naive variant, for comparison only: detaches *every* tensor, even already-detached ones.

    Each call creates one new tensor object per leaf; the outputs are equal to `detach_tree`'s.
    """
    try:
        return _detach_tree_always(obj)
    except RecursionError:
        raise ValueError(_cycle_message("detach_tree_always", obj)) from None


def _detach_tree_always(obj: T) -> T:
    if isinstance(obj, torch.Tensor):
        return obj.detach()  # type: ignore[return-value]
    if isinstance(obj, dict):
        return {k: _detach_tree_always(v) for k, v in obj.items()}  # type: ignore[return-value]
    if is_namedtuple(obj):
        return type(obj)._make(_detach_tree_always(v) for v in obj)  # type: ignore[attr-defined,no-any-return]
    if isinstance(obj, list | tuple):
        return type(obj)(_detach_tree_always(v) for v in obj)  # type: ignore[return-value]
    return obj


def _cycle_message(function: str, obj: object) -> str:
    """One line for a tree the recursive walk could not finish: it contains itself, or it is deeper than Python's
    recursion limit."""
    import sys

    return (
        f"{function}: the {type(obj).__name__} passed contains itself (a container inside its own items) or is "
        f"nested deeper than Python's recursion limit ({sys.getrecursionlimit()}); pass a tree without cycles"
    )


def check_name(name: object) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string naming the object (e.g. 'model_output'), got {name!r}")
    return name


def _key_path(parent: str, key: object) -> str:
    # Identifier-like string keys read as attributes, like upstream's `model_output.log_probs`.
    if isinstance(key, str) and key.isidentifier():
        return f"{parent}.{key}"
    return f"{parent}[{key!r}]"


def _walk(obj: object, path: str) -> Iterator[tuple[str, object]]:
    # any mapping (UserDict, MappingProxyType, ...) and any sequence (UserList, deque, ...) is looked inside:
    # a grad tensor must not hide in a container type the walk does not know by name
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            yield from _walk(v, _key_path(path, k))
    elif is_namedtuple(obj):
        for field, v in zip(type(obj)._fields, obj, strict=True):  # type: ignore[attr-defined]
            yield from _walk(v, f"{path}.{field}")
    elif isinstance(obj, list | tuple | UserList | deque) or (
        isinstance(obj, Sequence) and not isinstance(obj, str | bytes | bytearray | range | memoryview)
    ):
        for i, v in enumerate(obj):
            yield from _walk(v, f"{path}[{i}]")
    elif isinstance(obj, set | frozenset | AbstractSet):
        # no order or keys to name: number the items (a grad tensor in a set must still be found)
        for i, v in enumerate(obj):
            yield from _walk(v, f"{path}{{item {i}}}")
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for field in dataclasses.fields(obj):
            yield from _walk(getattr(obj, field.name), f"{path}.{field.name}")
    elif isinstance(obj, Iterator):
        # a generator (or any iterator) cannot be checked without using it up: refuse it by name
        raise TypeError(
            f"{path} is {a_kind(obj)}, which cannot be checked without consuming it: pass a list (list(...))"
        )
    else:
        yield path, obj


def tensor_leaves(obj: object, name: str = "obj") -> list[tuple[str, torch.Tensor]]:
    """Every tensor leaf of `obj` with its path, in traversal order (dicts in insertion order)."""
    check_name(name)
    try:
        return [(p, v) for p, v in _walk(obj, name) if isinstance(v, torch.Tensor)]
    except RecursionError:
        raise ValueError(_cycle_message(f"the walk over {name}", obj)) from None


def grad_attached_paths(obj: object, name: str = "obj") -> list[str]:
    """Paths (like ``model_output.log_probs[2]``) of tensor leaves that still require grad."""
    return [p for p, t in tensor_leaves(obj, name) if t.requires_grad]


def count_new_tensors(before: object, after: object) -> int:
    """How many tensor leaves of `after` are new objects rather than the same leaf of `before`.

    The two trees must have the same shape (as `detach_tree` guarantees); a mismatch is a ValueError.
    """
    old, new = tensor_leaves(before), tensor_leaves(after)
    if [p for p, _ in old] != [p for p, _ in new]:
        raise ValueError("before and after must have the same tree structure (same tensor leaf paths)")
    return sum(a is not b for (_, a), (_, b) in zip(old, new, strict=True))
