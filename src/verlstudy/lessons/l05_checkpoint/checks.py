"""Lesson 05's exercise checkers: 5.1 matches a module pattern, 5.2 audits a strict=False load.

Both judge by property (`verlstudy.kit.properties`): the learner's function against the reference on
named edge cases (GLM-5's MTP layer `model.layers.78` next to layer 7, `mtp` next to `mtp_norm`, a nested
`blocks.mtp`, unexpected checkpoint keys ...) and then on generated inputs. A notebook reaches them only
as check_exercise("N.M", answer); the mechanism's own matcher and audit are refused as answers.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from hypothesis import strategies as st
from torch import nn

from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.kit.properties import Case, compare_on_inputs
from verlstudy.lessons.l05_checkpoint.checkpoint import audit_state_dict, load_state_dict_audited, matches_prefix

# ---------------------------------------------------------------- 5.1: whole module names


def _reference_matcher(key: str, pattern: str) -> bool:
    module = pattern[:-1] if pattern.endswith(".") else pattern
    return key == module or key.startswith(module + ".")


# pieces of real and toy state-dict names: GLM-5 keeps its MTP layer at model.layers.{num_hidden_layers}
_PIECES = ("model", "layers", "7", "78", "1", "10", "mtp", "mtp_norm", "norm", "eh_proj", "blocks", "weight", "bias")


@st.composite
def _key_and_pattern(draw: Any) -> tuple[str, str]:
    key = draw(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=5))
    kind = draw(st.sampled_from(("prefix", "letters", "elsewhere", "other")))
    if kind == "prefix":  # a whole-module prefix of the key, or the key itself
        pattern = key[: draw(st.integers(1, len(key)))]
    elif kind == "letters":  # a prefix whose last piece is cut short: "7" of "78", "mtp" of "mtp_norm"
        cut = draw(st.integers(1, len(key)))
        last = key[cut - 1]
        pattern = [*key[: cut - 1], last[: draw(st.integers(1, len(last)))]]
    elif kind == "elsewhere":  # pieces of the key that do not start it
        start = draw(st.integers(0, len(key) - 1))
        pattern = key[start : start + draw(st.integers(1, 2))]
    else:
        pattern = draw(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=3))
    dot = draw(st.booleans())
    return ".".join(key), ".".join(pattern) + ("." if dot else "")


_MATCH_CASES = [
    Case(("mtp.eh_proj.weight", "mtp."), "a key inside the module"),
    Case(("mtp.eh_proj.weight", "mtp"), "the pattern written without its trailing dot"),
    Case(("mtp", "mtp"), "the pattern naming the key itself"),
    Case(("mtp", "mtp."), "the key is the module's own name, the pattern has its dot"),
    Case(("mtp_norm.weight", "mtp"), "another module that starts with the same letters"),
    Case(("model.layers.78.eh_proj.weight", "model.layers.78."), "GLM-5's MTP layer: model.layers.78"),
    Case(("model.layers.78.eh_proj.weight", "model.layers.7"), "layer 78 (GLM-5's MTP layer) is not inside layer 7"),
    Case(("layers.10.weight", "layers.1"), "layers.10 is not inside layers.1"),
    Case(("model.mtp.eh_proj.weight", "mtp."), "'mtp' is not the first module of this key"),
    Case(("head.weight", "mtp."), "an unrelated key"),
    Case(("model.layers.7.weight", "model.layers.7"), "a numbered layer, pattern without its dot"),
    Case(("mtp_norm.weight", "mtp.norm"), "a dot in the pattern is a dot: mtp_norm is not the module mtp.norm"),
    Case(("modelXlayers.78.weight", "model.layers.78."), "a dot in the pattern is a dot, not any character"),
]


def _matcher_mistake(fn: Callable[[str, str], object]) -> Callable[[tuple[Any, ...], Any, Any], str | None]:
    def name(args: tuple[Any, ...], got: object, want: object) -> str | None:
        key, pattern = args
        module = pattern.rstrip(".")
        if not isinstance(got, bool):
            return "return True or False"
        try:
            probes = ("mtp.eh_proj.weight", "model.layers.1.weight", "head.weight")
            patterns = ("mtp", "mtp.", "model.layers.1.", "head.", "zz_unrelated")
            same = all(len({fn(k, p) for p in patterns}) == 1 for k in probes)
        except Exception:
            same = False
        if same:
            return "your answer is the same whatever the pattern: is the pattern read?"
        wildcard = re.match(re.escape(module).replace(r"\.", "."), key)
        if got and wildcard and not key.startswith(module):
            return (
                f"the dots of {module!r} match any character in your test ({key!r} is not inside it): "
                "a dot in a module name is a dot"
            )
        if got and key.startswith(module) and not key.startswith(module + ".") and key != module:
            return f"your test matches the letters of {module!r}, not the whole module name"
        if got and module not in key:
            return f"your test matches {key!r}, which does not mention {module!r} at all: is the pattern read?"
        if got:
            return f"{module!r} is not the first module of {key!r}: your test finds it further in"
        if key == module:
            return "a key that is the module's own name lies in it too"
        if not pattern.endswith("."):
            try:
                if fn(key, pattern + ".") is True:
                    return "your matcher works only when the pattern ends with a dot"
            except Exception:
                pass
        return "your matcher misses a key inside the module"

    return name


@checker(
    "5.1",
    library_answers=[matches_prefix],
    where=(
        "the section 'Root cause': Megatron-Bridge matches its ignored prefixes letter by letter, and the trailing "
        "dot is all that keeps `mtp.` from covering `mtp_extra`; GLM-5's MTP layer is layer 78, right after layer 77"
    ),
    method=(
        "First turn the pattern into a module name: drop one trailing dot if it has one. Then a key belongs to "
        "that module in exactly two situations: the key is the module name itself, or the key begins with the "
        "module name and the very next character is a dot. Never compare letters past the end of the name, and "
        "only look at the start of the key."
    ),
    reveals=['module names, so `"mtp"` and `"mtp."` both mean the module `mtp`', 'starts with `name + "."`'],
)
def check_prefix_matcher(fn: Callable[[str, str], bool]) -> str:
    """Exercise 5.1: `fn(key, pattern)` must match a whole module name, not a string prefix."""
    return compare_on_inputs(
        fn,
        _reference_matcher,
        inputs=_key_and_pattern(),
        edge_cases=_MATCH_CASES,
        mistakes=_matcher_mistake(fn),
        name="matches_module",
    )


# ---------------------------------------------------------------- 5.2: the audit of a strict=False load

# leaf modules a checker model may have; names chosen so whole-name matching matters
_LEAVES = (
    "embed",
    "head",
    "mtp.proj",
    "mtp.head",
    "mtp_extra",
    "mtp_norm",
    "layers.1",
    "layers.10",
    "layers.2",
    "blocks.0",
    "blocks.mtp",
)
_BIASED = {"mtp.proj", "layers.1", "layers.10", "blocks.mtp", "blocks.0"}
_SAVED_BUFFER = {"mtp_norm", "layers.2", "mtp.head"}  # a persistent buffer `scale`: in the state dict, can be missing
_CACHE_BUFFER = {"embed", "blocks.0", "layers.2"}  # a non-persistent buffer `cache`: never in a state dict
_PATTERNS = ("mtp", "mtp.", "layers.1", "layers.1.", "blocks", "mtp_extra", "layers.")
_STRAYS = ("old_head.weight", "mtp.extra_scale")  # checkpoint keys the model does not have (unexpected)


def _build(leaves: Sequence[str]) -> nn.Module:
    """A nested ModuleDict with one Linear(2, 2) per leaf path, initialised to zeros; some leaves carry a saved
    buffer `scale` (part of the state dict) or a non-persistent buffer `cache` (never saved)."""
    root = nn.ModuleDict()
    for path in leaves:
        *parents, last = path.split(".")
        node = root
        for part in parents:
            if part not in node:
                node[part] = nn.ModuleDict()
            node = node[part]
        leaf = nn.Linear(2, 2, bias=path in _BIASED)
        if path in _SAVED_BUFFER:
            leaf.register_buffer("scale", torch.zeros(2))
        if path in _CACHE_BUFFER:
            leaf.register_buffer("cache", torch.zeros(2), persistent=False)
        node[last] = leaf
    with torch.no_grad():
        for p in root.parameters():
            p.zero_()
    return root


def _checkpoint(leaves: Sequence[str], lost: Sequence[str], strays: Sequence[str]) -> dict[str, torch.Tensor]:
    """The model's state dict with distinct non-zero values, less the lost leaves, plus stray keys."""
    full = _build(leaves).state_dict()
    state = {k: torch.full_like(v, float(i + 1)) for i, (k, v) in enumerate(full.items())}
    kept = {k: v for k, v in state.items() if not any(k.startswith(leaf + ".") for leaf in lost)}
    return {**kept, **{s: torch.ones(2) for s in strays}}


Spec = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]  # leaves, lost, strays, allowed


def _run_audit(fn: Callable[..., Any]) -> Callable[[Spec], Any]:
    """Build the model and checkpoint a spec describes, call `fn`, and check that the weights were loaded."""

    def run(leaves: tuple[str, ...], lost: tuple[str, ...], strays: tuple[str, ...], allowed: tuple[str, ...]) -> Any:
        model, state = _build(leaves), _checkpoint(leaves, lost, strays)
        kept = copy.deepcopy(state)
        got = fn(model, state, allowed)
        if set(state) != set(kept) or not all(torch.equal(state[k], kept[k]) for k in kept):
            raise ExerciseFailure(
                f"{_describe(leaves, lost, strays, allowed)}: your function changed the checkpoint it was given "
                "(leave the state dict as it was)"
            )
        held = model.state_dict()
        if not all(torch.equal(held[k], v) for k, v in state.items() if k in held):
            raise ExerciseFailure(
                f"{_describe(leaves, lost, strays, allowed)}: the model does not hold the checkpoint's weights "
                "afterwards: your function worked out the keys but did not load the weights into the model"
            )
        return got

    return run


def _reference_audit(model: nn.Module, state_dict: Mapping[str, torch.Tensor], allowed: tuple[str, ...]) -> list[str]:
    result = model.load_state_dict(dict(state_dict), strict=False)
    return sorted(k for k in result.missing_keys if not any(_reference_matcher(k, p) for p in allowed))


def _describe(leaves: Sequence[str], lost: Sequence[str], strays: Sequence[str], allowed: Sequence[str]) -> str:
    extra = f" plus unexpected {list(strays)}" if strays else ""
    return f"model with modules {list(leaves)}, checkpoint lacking {list(lost)}{extra}, allowed={tuple(allowed)}"


@st.composite
def _audit_spec(draw: Any) -> Spec:
    leaves = tuple(draw(st.lists(st.sampled_from(_LEAVES), min_size=1, max_size=6, unique=True)))
    lost = tuple(draw(st.lists(st.sampled_from(leaves), max_size=len(leaves), unique=True)))
    strays = tuple(draw(st.lists(st.sampled_from(_STRAYS), max_size=2, unique=True)))
    allowed = tuple(draw(st.lists(st.sampled_from(_PATTERNS), max_size=3, unique=True)))
    return leaves, lost, strays, allowed


_FULL = ("embed", "blocks.0", "blocks.mtp", "mtp.proj", "mtp.head", "mtp_extra", "head")
_AUDIT_CASES = [
    Case((_FULL, ("mtp.proj", "mtp.head"), (), ("mtp.",)), "the export without MTP: nothing hidden"),
    Case((_FULL, ("mtp.proj", "mtp.head", "blocks.0"), (), ("mtp.",)), "an export that also lost blocks.0"),
    Case((_FULL, ("mtp.proj", "mtp.head", "mtp_extra"), (), ("mtp.",)), "mtp_extra is not inside mtp"),
    Case((_FULL, ("mtp.proj", "mtp.head", "mtp_extra"), (), ("mtp",)), "the same, the module written 'mtp'"),
    Case((_FULL, ("mtp.proj", "blocks.mtp"), (), ("mtp.",)), "the nested blocks.mtp is not the module mtp"),
    Case((_FULL, (), (), ("mtp.",)), "a complete checkpoint"),
    Case((_FULL, ("mtp.proj", "mtp.head"), (), ()), "no module allowed at all"),
    Case((_FULL, ("mtp.proj", "mtp.head"), ("old_head.weight",), ("mtp.",)), "a checkpoint with an unexpected key"),
    Case((("layers.1", "layers.10", "head"), ("layers.10",), (), ("layers.1",)), "layers.10 is not inside layers.1"),
    Case((("embed", "layers.2", "head"), ("layers.2",), (), ("mtp.",)), "layers.2 lost, its saved buffer with it"),
    Case((("embed", "blocks.0", "head"), (), (), ()), "non-persistent buffers: never saved, so never missing"),
    Case((_FULL, ("mtp.proj", "mtp.head", "blocks.0"), (), ("blocks.0", "mtp.")), "two allowed modules, each counts"),
]


def _audit_mistake(args: tuple[Any, ...], got: Any, want: Any) -> str | None:
    _leaves, _lost, strays, allowed = args
    if not isinstance(got, (list, tuple)):
        return "return a list of key names"
    got_keys, want_keys = [str(k) for k in got], list(want)
    caches = [k for k in got_keys if k.endswith(".cache") and k not in want_keys]
    if caches:
        return (
            f"you returned {caches[0]}, a buffer the model does not save (non-persistent): it is never in a "
            "checkpoint, so it is never missing"
        )
    buffers = [k for k in want_keys if k.endswith(".scale") and k not in got_keys]
    if buffers:
        return f"you left out {buffers[0]}, a buffer the model saves: a missing buffer is missing too"
    if set(got_keys) & set(strays):
        return "you also returned unexpected keys (in the checkpoint, not in the model): only missing keys count"
    if set(got_keys) == set(want_keys) and len(got_keys) == len(want_keys):
        return "the right keys, but not sorted"
    hidden = sorted(set(want_keys) - set(got_keys))
    if hidden and allowed and any(any(p.rstrip(".") in k for p in allowed) for k in hidden):
        return (
            f"you left out {', '.join(hidden)}, which no allowed module covers: your test of the allowed "
            "modules covers more than the modules themselves"
        )
    if set(got_keys) - set(want_keys) and allowed:
        return "you also returned keys that an allowed module covers: those may be missing"
    if hidden:
        return f"you left out {', '.join(hidden)}: missing, and no allowed module covers them"
    return "you returned keys that are not missing"


@checker(
    "5.2",
    library_answers=[audit_state_dict, load_state_dict_audited, matches_prefix],
    where=(
        "the section 'The danger': a plain strict=False load reports what it skipped and carries on; and your "
        "5.1, which says whether a key lies inside an allowed module"
    ),
    method=(
        "Load the checkpoint into the model with the check switched off, and keep what the load returns: it "
        "names the keys the model has that the checkpoint lacked (and, separately, the ones it did not expect). "
        "From the missing ones only, drop every key that lies inside one of the allowed modules, asking your "
        "5.1 matcher module by module. Return the keys left, in sorted order, without touching the checkpoint."
    ),
    reveals=["any other missing source tensor", "missing key(s) not allowed"],
)
def check_missing_audit(fn: Callable[[nn.Module, Mapping[str, torch.Tensor], tuple[str, ...]], list[str]]) -> str:
    """Exercise 5.2: `fn(model, state_dict, allowed)` loads, then returns the sorted missing keys no module allows."""
    if not callable(fn):
        raise ExerciseFailure(f"the answer should be a function, got {type(fn).__name__}")
    return compare_on_inputs(
        _run_audit(fn),
        _run_audit(_reference_audit),
        inputs=_audit_spec(),
        edge_cases=_AUDIT_CASES,
        mistakes=_audit_mistake,
        show=lambda args, kwargs: _describe(*args),
        name="silently_missing",
        max_examples=40,
    )
