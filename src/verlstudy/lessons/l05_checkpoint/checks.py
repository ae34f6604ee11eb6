"""Lesson 05's exercise checkers: 5.1 matches a module pattern, 5.2 audits a strict=False load.

A notebook reaches them only as check_exercise("N.M", answer); the mechanism's own matcher and
audit are refused as answers.
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


@checker("5.1", library_answers=[matches_prefix])
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
            hint = (
                "compare whole module names: strip the trailing dot, then test key == module or "
                "key.startswith(module + '.')"
                if not want
                else "a pattern may be written with or without its trailing dot"
            )
            raise ExerciseFailure(f"({key!r}, {pattern!r}) -> {got}, expected {want} ({why}); hint: {hint}")
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


def _hint(got: list[str], want: list[str], allowed: tuple[str, ...]) -> str:
    if set(got) == set(want):
        return "sort the keys"
    if set(want) - set(got) and any(any(p.rstrip(".") in k for p in allowed) for k in set(want) - set(got)):
        return (
            "match whole module names: a key is covered only if it is the module or starts with module + '.'; "
            "a plain prefix or substring test also covers mtp_extra.* or blocks.mtp.*"
        )
    if set(got) - set(want) and allowed:
        return "leave out keys that an allowed module covers (they may be missing)"
    return "load with strict=False and look at the result's missing_keys"


@checker("5.2", library_answers=[audit_state_dict, load_state_dict_audited])
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
                f"for {label} the model does not hold the checkpoint's weights: load it with "
                "model.load_state_dict(state_dict, strict=False), do not only compare key sets"
            )
        if got != want:
            raise ExerciseFailure(f"for {label} you returned {got}, expected {want}; hint: {_hint(got, want, allowed)}")
    return f"{len(cases)} cases"
