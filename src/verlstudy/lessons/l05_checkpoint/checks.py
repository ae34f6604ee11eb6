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
    TinyLMWithMTP,
    audit_state_dict,
    export_without,
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


@checker("5.2", library_answers=[audit_state_dict, load_state_dict_audited])
def check_missing_audit(fn: Callable[[nn.Module, Mapping[str, torch.Tensor], tuple[str, ...]], list[str]]) -> str:
    """Exercise 5.2: `fn(model, state_dict, allowed)` returns the sorted missing keys no pattern allows."""
    if not callable(fn):
        raise ExerciseFailure(f"pass your function itself, not {type(fn).__name__}")
    torch.manual_seed(0)
    source = TinyLMWithMTP(vocab=8, hidden=4, n_layers=3)
    full = {k: v.clone() for k, v in source.state_dict().items()}
    cases = [
        ("the faithful export without MTP", export_without(source), (MTP_PREFIX,), []),
        (
            "an export that also lost layers.1",
            export_without(source, (MTP_PREFIX, "layers.1")),
            (MTP_PREFIX,),
            ["layers.1.bias", "layers.1.weight"],
        ),
        ("a complete checkpoint", full, (MTP_PREFIX,), []),
        (
            "no pattern allowed at all",
            export_without(source),
            (),
            sorted(k for k in full if k.startswith(MTP_PREFIX)),
        ),
    ]
    for label, state, allowed, want in cases:
        target = TinyLMWithMTP(vocab=8, hidden=4, n_layers=3)
        got = fn(target, dict(state), allowed)
        if not isinstance(got, list):
            raise ExerciseFailure(f"return a list of key names; for {label} you returned {type(got).__name__}")
        if got != want:
            if set(got) == set(want):
                hint = "sort the keys"
            elif any(k.startswith(MTP_PREFIX) for k in got) and allowed:
                hint = "leave out keys that an allowed pattern covers (they may be missing)"
            else:
                hint = "load with strict=False and look at the result's missing_keys"
            raise ExerciseFailure(f"for {label} you returned {got}, expected {want}; hint: {hint}")
    return f"{len(cases)} cases"
