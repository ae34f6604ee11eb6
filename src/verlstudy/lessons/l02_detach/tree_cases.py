"""Exercise 2.1's cases, reference and mistake names: serves `checks.py` only (nothing else imports it).

Tensors with a `grad_fn` cannot be deep-copied, so an input is drawn as a *description* (a tree of tensor
kinds and plain values); `_TreeRun` builds fresh tensors from it for every call and summarises what a
detach_tree made of them (which leaf came back detached, the same object, a copy ...), which the checker
compares with the reference's summary, as a whole (`_show_summaries`). `_tree_mistake` names what a wrong summary
shows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from verlstudy.common.trees import grad_attached_paths
from verlstudy.kit import i18n
from verlstudy.kit.properties import Case, a_kind


def _show_summaries(got: Any, want: Any) -> tuple[str, str]:
    """A summary is shown whole, as it reads ("returned X; expected Y there"): the kit's why in brackets would
    describe the summary's own bookkeeping ("at key 'pair': a str where a list is asked"), not what came back."""
    return repr(got), repr(want)


@dataclass(frozen=True)
class _T:
    """A tensor in a drawn tree, one of `_KINDS`: live (a grad_fn), leaves requiring grad, parameters, plain ..."""

    kind: str

    def __repr__(self) -> str:
        return f"<{_KINDS[self.kind]}>"


# What engines hand detach_tree: live outputs of every dtype and layout, leaves, a model's own parameters
# (trainable, and frozen as PEFT freezes the embedding), grad-free masks and ids
_KINDS = {
    "live": "live tensor",
    "leaf": "leaf tensor requiring grad",
    "plain": "plain tensor",
    "ints": "ints tensor",
    "param": "nn.Parameter requiring grad",
    "frozen": "frozen nn.Parameter",
    "view": "live non-contiguous view",
    "bf16": "live bfloat16 tensor",
    "scalar": "live 0-dim tensor",
    "f64leaf": "float64 leaf requiring grad",
    "empty": "live empty tensor",
    "trained": "nn.Parameter holding a .grad",
    "slice": "live slice at an offset",
    "plainview": "plain non-contiguous view",
    "mask": "bool mask tensor",
}


def _build(spec: Any, counter: list[int]) -> Any:
    if isinstance(spec, _T):
        counter[0] += 1
        k = float(counter[0])
        return _BUILDERS[spec.kind](k)
    if isinstance(spec, _H):
        return _Handle()
    if isinstance(spec, dict):
        return {key: _build(v, counter) for key, v in spec.items()}
    if isinstance(spec, list | tuple):
        return type(spec)(_build(v, counter) for v in spec)
    return spec


_BUILDERS: dict[str, Callable[[float], torch.Tensor]] = {
    "live": lambda k: torch.ones(2, requires_grad=True) * k,
    "leaf": lambda k: torch.full((2,), k, requires_grad=True),
    "plain": lambda k: torch.full((2,), k),
    "ints": lambda k: torch.arange(2) + int(k),
    "param": lambda k: torch.nn.Parameter(torch.full((2,), k)),
    "frozen": lambda k: torch.nn.Parameter(torch.full((2,), k), requires_grad=False),
    "view": lambda k: (torch.ones(2, 3, requires_grad=True) * k).t(),
    "bf16": lambda k: torch.ones(3, dtype=torch.bfloat16, requires_grad=True) * k,
    "scalar": lambda k: torch.tensor(k, requires_grad=True) * 2,
    "f64leaf": lambda k: torch.full((2,), k, dtype=torch.float64, requires_grad=True),
    "empty": lambda k: torch.ones(0, 2, requires_grad=True) * k,
    "trained": lambda k: _with_grad(torch.nn.Parameter(torch.full((2,), k)), k),
    "slice": lambda k: (torch.ones(4, requires_grad=True) * k)[1:3],
    "plainview": lambda k: torch.full((2, 3), k).t(),
    "mask": lambda k: torch.tensor([True, int(k) % 2 == 0]),
}


def _with_grad(param: torch.nn.Parameter, k: float) -> torch.nn.Parameter:
    param.grad = torch.full_like(param, -k)  # a parameter after backward: detaching must not touch its .grad
    return param


class _Handle:
    """A non-tensor leaf that is neither a number nor a string (a tokenizer, a config object): it comes back as is."""

    def __repr__(self) -> str:
        return "<a handle object>"


@dataclass(frozen=True)
class _H:
    """A `_Handle` in a drawn tree: built fresh for every call."""

    def __repr__(self) -> str:
        return "<a handle object>"


def _snapshot(obj: Any, out: list[Any] | None = None) -> list[Any]:
    """Every container and tensor of a tree, in order: identity, contents and (a tensor) requires_grad, values and
    .grad; compared before and after the learner's call."""
    out = [] if out is None else out
    if isinstance(obj, torch.Tensor):
        grad = obj.grad if obj.is_leaf else None  # .grad of a non-leaf warns and is always None
        values = obj.detach().tolist()
        out.append(("tensor", id(obj), obj.requires_grad, values, id(grad), None if grad is None else grad.tolist()))
    elif isinstance(obj, dict):
        out.append(("dict", id(obj), list(obj), [id(v) for v in obj.values()]))
        for v in obj.values():
            _snapshot(v, out)
    elif isinstance(obj, list | tuple):
        out.append((type(obj).__name__, id(obj), [id(v) for v in obj]))
        for v in obj:
            _snapshot(v, out)
    else:
        out.append(("leaf", id(obj)))
    return out


def _input_change(before: list[Any], after: list[Any]) -> str | None:
    """How the learner's call changed its input, or None: the containers, a tensor's values or .grad, or only some
    tensor's requires_grad (detached in place)."""
    if before == after:
        return None
    if len(before) != len(after):
        return _CHANGED_INPUT
    pairs = list(zip(before, after, strict=True))
    if any(b[:2] != a[:2] or (b[0] != "tensor" and b != a) for b, a in pairs):
        return _CHANGED_INPUT
    if any(b[3:] != a[3:] for b, a in pairs):
        return _CHANGED_TENSOR
    return _DETACHED_INPUT


_CHANGED_INPUT = "your function changed its input"
_DETACHED_INPUT = "your function detached a tensor of its input in place"
_CHANGED_TENSOR = "your function changed the values or the .grad of a tensor of its input"
_STILL_ATTACHED = "same object, still requires grad"
_LEAF_ATTACHED = "same object, still requires grad (a leaf tensor: no grad_fn)"
_PARAMETER_ATTACHED = "same object, still requires grad (an nn.Parameter)"


def _requires_grad_inside(obj: Any) -> bool:
    return bool(grad_attached_paths(obj))


def _summary(got: Any, orig: Any) -> Any:
    """What `got` is, leaf by leaf, relative to the input `orig` it was made from."""
    if isinstance(orig, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"{a_kind(got)}, not a tensor"
        if got is orig:
            if not orig.requires_grad:
                return "same object"
            if isinstance(orig, torch.nn.Parameter):
                return _PARAMETER_ATTACHED
            return _LEAF_ATTACHED if orig.grad_fn is None else _STILL_ATTACHED
        if got.dtype != orig.dtype:
            return f"a tensor of dtype {got.dtype}, not {orig.dtype}"
        if got.shape != orig.shape or not torch.equal(got.detach(), orig.detach()):
            return "a tensor with other values"
        if got.requires_grad:
            return "a new tensor that still requires grad"
        if got.data_ptr() != orig.data_ptr() or got.stride() != orig.stride():
            return "a copy (new storage)"
        return "detached" if orig.requires_grad else "a new tensor object"
    if isinstance(orig, dict):
        if got is orig:
            return "the input dict itself"
        if not isinstance(got, Mapping):
            return a_kind(got)
        return {k: (_summary(v, orig[k]) if k in orig else "an unexpected key") for k, v in got.items()}
    if isinstance(orig, list | tuple):
        if got is orig and (isinstance(orig, list) or _requires_grad_inside(orig)):
            return f"the input {type(orig).__name__} itself"
        if not isinstance(got, list | tuple):
            return a_kind(got)
        return type(got)(_summary(g, o) for g, o in zip(got, orig, strict=False)) + type(got)(
            ["an extra item"] * (len(got) - len(orig))
        )
    if got is orig and isinstance(orig, _Handle):
        return "the same object"
    if type(got) is type(orig) and got == orig and not isinstance(orig, _Handle):
        return orig
    shown = repr(got)
    return f"changed to {shown if ' at 0x' not in shown else a_kind(got)}"


class _TreeRun:
    """Builds the drawn tree, hands it to `fn` and summarises the result (what compare_on_inputs compares)."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def __call__(self, spec: Any) -> Any:
        tree = _build(spec, [0])
        before = _snapshot(tree)
        try:
            got = self.fn(tree)
        except RuntimeError as e:
            if "deepcopy" not in str(e):
                raise
            raise RuntimeError(
                i18n.pick(
                    "{error} (a deep copy of the whole tree fails on tensors that are part of a graph, and would "
                    "allocate every tensor again anyway: build new containers around the same tensors)",
                    error=str(e).split(".")[0],
                )
            ) from None
        changed = _input_change(before, _snapshot(tree))
        return changed if changed is not None else _summary(got, tree)


def _reference_detach_tree(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: _reference_detach_tree(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_reference_detach_tree(v) for v in obj)
    return obj


def _tree_inputs() -> Any:
    from hypothesis import strategies as st

    leaves = st.one_of(
        st.sampled_from([_T("live"), _T("live"), _T("leaf"), _T("plain"), _T("ints"), *map(_T, list(_KINDS)[4:])]),
        st.sampled_from(["text", 3, None, 2.5, True, _H()]),
    )
    # engines key outputs by name, but a dict may be keyed by anything hashable (a layer index, a (name, rank) pair)
    keys = st.sampled_from(["log_probs", "entropy", "mask", "meta", "a", "_b", 0, 3, ("experts", 1)])
    trees = st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.lists(inner, max_size=3).map(tuple),
            st.dictionaries(keys, inner, max_size=3),
        ),
        max_leaves=8,
    )
    return st.tuples(trees)


def _show_tree(args: tuple[Any, ...], kwargs: Any) -> str:
    return f"my_detach_tree({args[0]!r})"


def _deep(levels: int) -> Any:
    """A tree `levels` containers deep (dict, list, tuple in turn) with a live tensor and a plain one at the bottom."""
    tree: Any = {"log_probs": _T("live"), 0: _T("plain")}
    for level in range(levels - 1):
        tree = [(tree, level)] if level % 3 == 0 else ({("layer", level): tree},) if level % 3 == 1 else {level: tree}
    return tree


_TREE_CASES = (
    Case(({"log_probs": _T("live"), "mask": _T("plain"), "meta": ("step", 3)},), "an engine-like output dict"),
    Case(({"log_probs": [_T("live"), _T("plain")]},), "a tensor that requires grad inside a list"),
    Case(({"pair": (_T("live"), "text", 3)},), "a tuple holding a live tensor"),
    Case(({"leaf": _T("leaf")},), "a leaf that requires grad: it has no grad_fn"),
    Case(({"a": {"b": [(_T("live"),)]}},), "depth 4: dict, dict, list, tuple"),
    Case(({"mask": _T("plain"), "ids": _T("ints")},), "already detached: the same objects must come back"),
    Case(({"meta": None, "step": 3, "name": "text"},), "no tensors at all"),
    Case(([_T("plain"), [_T("plain")]],), "a list of detached tensors: still a new list"),
    Case((_T("live"),), "a bare tensor, no container"),
    Case(({"weight": _T("param"), "embedding": _T("frozen")},), "a model's parameters: one trainable, one frozen"),
    Case(({"log_probs": _T("view"), "entropy": _T("bf16")},), "a non-contiguous view and a bfloat16 output"),
    Case(({"loss": _T("scalar"), "empty": _T("empty"), "old": _T("f64leaf")},), "0-dim, empty and float64"),
    Case(({"outputs": [], "extra": {}, "pair": ()},), "empty containers: new ones come back"),
    Case(({"w": _T("trained"), "h": _T("slice")},), "a parameter holding its .grad, a live slice at an offset"),
    Case(([_T("plainview"), _T("mask"), _H()],), "a plain view, a bool mask and a handle object: all as they are"),
    Case((_deep(12),), "twelve levels deep: dicts, lists and tuples in turn, keyed by ints and tuples too"),
)


def _first_difference(got: Any, want: Any, trail: tuple[str, ...] = ()) -> tuple[tuple[str, ...], Any, Any] | None:
    """The first place where two summaries differ: (the container types above it, got there, want there)."""
    if isinstance(want, Mapping) and isinstance(got, Mapping):
        if set(got) != set(want):
            return trail, got, want
        for key in want:
            found = _first_difference(got[key], want[key], (*trail, "dict"))
            if found:
                return found
        return None
    if isinstance(want, list | tuple) and isinstance(got, list | tuple):
        if type(got) is not type(want) or len(got) != len(want):
            return trail, got, want
        for g, w in zip(got, want, strict=True):
            found = _first_difference(g, w, (*trail, type(want).__name__))
            if found:
                return found
        return None
    return None if (type(got) is type(want) and got == want) else (trail, got, want)


def _tree_mistake(args: tuple[Any, ...], got: Any, want: Any) -> str | None:
    if got == _CHANGED_INPUT:
        return i18n._("the input was mutated: your function assigned into the caller's containers; build new ones")
    if got == _CHANGED_TENSOR:
        return i18n._(
            "a tensor of the caller's input has other values or another .grad after your call: leave every tensor "
            "you are handed as it was (its values, its .grad) and return new objects instead"
        )
    if got == _DETACHED_INPUT:
        return i18n._(
            "a tensor of the caller's input no longer requires grad: detaching in place (detach_(), or setting "
            "requires_grad) changes the caller's tensor; leave the input as it was and return new values"
        )
    found = _first_difference(got, want)
    if found is None:
        return None
    trail, g, w = found
    nested = len(trail) >= 2
    if isinstance(w, Mapping) and isinstance(g, Mapping):
        return i18n._("every key must come back, and no other: a dict comes back as a new dict with the same keys")
    if isinstance(w, list | tuple) and isinstance(g, list | tuple):
        if type(g) is not type(w):
            return i18n.pick(
                "{want} came back as {got}: lists must stay lists and tuples tuples", want=a_kind(w), got=a_kind(g)
            )
        return i18n._("a container came back with another number of elements: every element must come back")
    if g == "the input dict itself":
        if nested:
            return i18n._(
                "a dict deep in the tree came back as the input's own dict: your function does not reach deep "
                "enough; every container, at every depth, comes back new"
            )
        return i18n._("you handed back the input dict itself: a new dict must come back")
    if g == "the input list itself":
        if trail:
            return i18n._(
                "a nested list came back as the input's own list: build a new list, and reach into nested containers"
            )
        return i18n._("the list came back as the input's own list: build a new list, and reach into nested containers")
    if g == "the input tuple itself" and len(trail) >= 3:
        return i18n._("a tuple deep in the tree came back untouched: your function does not reach deep enough")
    if g == "the input tuple itself":
        return i18n._("a tuple came back untouched though a tensor inside it requires grad: tuples must be walked too")
    if g == _PARAMETER_ATTACHED:
        return i18n._(
            "an nn.Parameter that requires grad came back still attached: a parameter is a tensor too (a subclass "
            "of torch.Tensor), and it must come back detached"
        )
    if g == _LEAF_ATTACHED:
        return i18n._(
            "a leaf tensor that requires grad (it has no grad_fn) came back still attached: it must be detached too"
        )
    if g == _STILL_ATTACHED:
        if trail and trail[-1] == "tuple":
            return i18n._("a tensor inside a tuple still requires grad: tuples must be walked like lists")
        if nested:
            return i18n._(
                "a tensor in a nested container still requires grad: your function does not reach deep enough"
            )
        return i18n._("a tensor with a grad_fn came back still requiring grad: it must come back detached")
    if g == "a new tensor that still requires grad":
        return i18n._("a new tensor came back that still requires grad: it must come back detached")
    if g == "a copy (new storage)":
        return i18n._("the detached tensor does not share storage with the original: a copy allocates the bytes again")
    if g == "a new tensor object":
        return i18n._(
            "an already-detached tensor came back as a new tensor object: it must come back as the same object"
        )
    if isinstance(g, str) and g.startswith("a tensor of dtype"):
        return i18n._("a tensor came back with another dtype: detaching keeps the dtype (integer tensors stay integer)")
    if g == "a tensor with other values":
        return i18n._("a tensor came back with other values: detaching must keep the values")
    if isinstance(g, str) and g.startswith("changed to"):
        return i18n._("non-tensor leaves (strings, numbers, None) must come back unchanged")
    if isinstance(g, str) and g.endswith("not a tensor"):
        return i18n._("a tensor came back as something else: a tensor must come back as a tensor")
    return None
