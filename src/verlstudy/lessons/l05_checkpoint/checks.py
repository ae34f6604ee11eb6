"""Lesson 05's exercise checkers: 5.1 matches a module pattern, 5.2 audits a strict=False load.

A notebook reaches them only as check_exercise("N.M", answer); the mechanism's own matcher and
audit are refused as answers. A wrong answer's message names the mistake it shows; how to get there is
each checker's `method`, shown after repeated tries or by `exercise_hint`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch
from torch import nn

from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.lessons.l05_checkpoint.checkpoint import (
    MTP_PREFIX,
    audit_state_dict,
    load_state_dict_audited,
    matches_prefix,
)


def _matcher_mistake(fn: Callable[[str, str], bool], key: str, pattern: str, got: bool) -> str:
    """The mistake a wrong match shows, named without the rule."""
    module = pattern.rstrip(".")
    if got and key.startswith(module) and not key.startswith(module + "."):
        return f"your test matches the letters of {module!r}, not the whole module name"
    if got and module not in key:
        return f"your test matches {key!r}, which does not mention {module!r} at all"
    if got:
        return f"{module!r} is not the first module of {key!r}: your test finds it further in"
    if key == module:
        return "a key that is the module's own name lies in it too"
    if not pattern.endswith(".") and fn(key, pattern + ".") is True:
        return "your matcher works only when the pattern ends with a dot"
    return "your matcher misses a key inside the module"


@checker(
    "5.1",
    library_answers=[matches_prefix],
    method=(
        "strip the pattern's trailing dot to get the module name; then the key is in it exactly when "
        "key == module or key.startswith(module + '.')"
    ),
    reveals=['module names, so `"mtp"` and `"mtp."` both mean the module `mtp`', 'starts with `name + "."`'],
)
def check_prefix_matcher(fn: Callable[[str, str], bool]) -> str:
    """Exercise 5.1: `fn(key, pattern)` must match a whole module name, not a string prefix."""
    if not callable(fn):
        raise ExerciseFailure(f"pass your function itself, not {type(fn).__name__}")
    cases = [
        ("mtp.proj.weight", "mtp.", True, "a key inside the module"),
        ("mtp.proj.weight", "mtp", True, "the pattern written without its trailing dot"),
        ("mtp", "mtp", True, "the pattern naming the key itself"),
        ("mtp_norm.weight", "mtp", False, "a different module that starts with the same letters"),
        ("layers.1.weight", "layers.1", True, "a numbered submodule"),
        ("layers.10.weight", "layers.1", False, "layers.10 is not inside layers.1"),
        ("head.weight", "mtp.", False, "an unrelated key"),
        ("model.mtp.proj.weight", "mtp.", False, "a key where 'mtp' is not the first module"),
    ]
    for key, pattern, want, why in cases:
        got = fn(key, pattern)
        if not isinstance(got, bool):
            raise ExerciseFailure(f"return a bool; for ({key!r}, {pattern!r}) you returned {type(got).__name__}")
        if got != want:
            mistake = _matcher_mistake(fn, key, pattern, got)
            raise ExerciseFailure(f"({key!r}, {pattern!r}) -> {got}, expected {want} ({why}): {mistake}")
    return f"{len(cases)} cases"


def _audit_model() -> nn.Module:
    """A checker-only model whose module names test whole-name matching: mtp, mtp_extra, and a nested blocks.mtp."""
    return nn.ModuleDict(
        {
            "embed": nn.Embedding(8, 4),
            "blocks": nn.ModuleDict({"0": nn.Linear(4, 4), "mtp": nn.Linear(4, 4)}),
            "mtp": nn.ModuleDict({"head": nn.Linear(4, 8)}),
            "mtp_extra": nn.Linear(4, 4, bias=False),
            "head": nn.Linear(4, 8, bias=False),
        }
    )


def _without(state: Mapping[str, torch.Tensor], *modules: str) -> dict[str, torch.Tensor]:
    return {k: v for k, v in state.items() if not any(k.startswith(m + ".") for m in modules)}


def _audit_mistake(got: list[str], want: list[str], allowed: tuple[str, ...]) -> str:
    """The mistake a wrong list of keys shows, named without the rule."""
    if set(got) == set(want):
        return "the right keys, but not sorted"
    hidden = sorted(set(want) - set(got))
    if hidden and allowed and any(any(p.rstrip(".") in k for p in allowed) for k in hidden):
        return (
            f"you left out {', '.join(hidden)}, which no allowed module covers: your test of the allowed "
            "modules covers more than the modules themselves"
        )
    if set(got) - set(want) and allowed:
        return "you also returned keys that an allowed module covers: those may be missing"
    if hidden:
        return f"you left out {', '.join(hidden)}: missing, and no allowed module covers them"
    return "you returned keys that are not missing"


@checker(
    "5.2",
    library_answers=[audit_state_dict, load_state_dict_audited],
    method=(
        "result = model.load_state_dict(state_dict, strict=False) loads the weights and lists "
        "result.missing_keys; keep the missing keys k for which no p in allowed gives matches_module(k, p) "
        "(your 5.1), and return them sorted"
    ),
    reveals=["any other missing source tensor", "missing key(s) not allowed"],
)
def check_missing_audit(fn: Callable[[nn.Module, Mapping[str, torch.Tensor], tuple[str, ...]], list[str]]) -> str:
    """Exercise 5.2: `fn(model, state_dict, allowed)` loads, then returns the sorted missing keys no module allows."""
    if not callable(fn):
        raise ExerciseFailure(f"pass your function itself, not {type(fn).__name__}")
    torch.manual_seed(0)
    full = {k: v.clone() for k, v in _audit_model().state_dict().items()}
    mtp = sorted(k for k in full if k.startswith(MTP_PREFIX))
    cases = [
        ("the export without MTP", _without(full, "mtp"), (MTP_PREFIX,), []),
        (
            "an export that also lost blocks.0",
            _without(full, "mtp", "blocks.0"),
            (MTP_PREFIX,),
            ["blocks.0.bias", "blocks.0.weight"],
        ),
        ("an export that also lost mtp_extra", _without(full, "mtp", "mtp_extra"), (MTP_PREFIX,), ["mtp_extra.weight"]),
        ("the same with the module written 'mtp'", _without(full, "mtp", "mtp_extra"), ("mtp",), ["mtp_extra.weight"]),
        (
            "an export that lost the nested blocks.mtp",
            _without(full, "mtp", "blocks.mtp"),
            (MTP_PREFIX,),
            ["blocks.mtp.bias", "blocks.mtp.weight"],
        ),
        ("a complete checkpoint", full, (MTP_PREFIX,), []),
        ("no module allowed at all", _without(full, "mtp"), (), mtp),
    ]
    for label, state, allowed, want in cases:
        torch.manual_seed(1)  # a fresh model whose initial values differ from the checkpoint's
        target = _audit_model()
        got = fn(target, dict(state), allowed)
        if not isinstance(got, list):
            raise ExerciseFailure(f"return a list of key names; for {label} you returned {type(got).__name__}")
        held = target.state_dict()
        if not all(torch.equal(held[k], v) for k, v in state.items()):
            raise ExerciseFailure(
                f"for {label} the model does not hold the checkpoint's weights afterwards: your function "
                "worked out the keys but did not load the weights into the model"
            )
        if got != want:
            mistake = _audit_mistake(got, want, allowed)
            raise ExerciseFailure(f"for {label} (allowed: {allowed}) you returned {got}, expected {want}: {mistake}")
    return f"{len(cases)} cases"
