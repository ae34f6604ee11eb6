"""Lesson 09's exercise checkers: 9.1 writes attribute_reads (the heart of the dead-field search),
9.2 writes yaml_only_keys (the check that catches a half-done removal before a job starts).

A notebook reaches them only as check_exercise("9.N", answer). The library's own search
(`field_reads.attribute_read` and the read index behind `dead_fields`) is refused as an answer to 9.1,
and `schema.yaml_field_mismatches` as an answer to 9.2, also when wrapped in a learner's function.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.lessons.l09_dead_config.field_reads import _index_reads, attribute_read
from verlstudy.lessons.l09_dead_config.loading import TARGET_KEY
from verlstudy.lessons.l09_dead_config.schema import yaml_field_mismatches

# ---------------------------------------------------------------------------------------------
# 9.1 attribute_reads


def _reference_attribute_reads(source: str) -> set[str]:
    return {n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}


def _assigned_attributes(source: str) -> set[str]:
    return {
        n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load)
    }


ATTRIBUTE_READ_CASES: tuple[tuple[str, str], ...] = (
    ("a copy", "self._is_offload_grad = config.grad_offload\n"),
    ("a condition", "if self._is_offload_param:\n    move(self.module)\n"),
    ("a chain", "mode = engine.config.router_replay.mode\n"),
    ("stores only", "self.a = 1\nself.b = self.c = 2\n"),
    ("a call argument", "to(device, model=self._is_offload_param, grad=self._is_offload_param)\n"),
)


@checker("9.1", library_answers=[attribute_read, _index_reads])
def check_attribute_reads(attribute_reads: Callable[[str], set[str]]) -> str:
    """Exercise 9.1: `attribute_reads(source)` -> the attribute names read (ast.Load)."""
    for label, source in ATTRIBUTE_READ_CASES:
        want = _reference_attribute_reads(source)
        got = attribute_reads(source)
        if not isinstance(got, set):
            raise ExerciseFailure(f"return a set of names, got {type(got).__name__}")
        extra, missing = sorted(got - want), sorted(want - got)
        not_attributes = sorted(set(extra) - _assigned_attributes(source))
        if not_attributes:
            raise ExerciseFailure(
                f"on {label} ({source.strip()!r}) you listed {not_attributes}, which are not attributes: "
                "keep ast.Attribute nodes (the 'name' of x.name), not plain variable names"
            )
        if extra:
            raise ExerciseFailure(
                f"on {label} ({source.strip()!r}) you listed {extra}, which are only assigned: "
                "check node.ctx and keep ast.Load only"
            )
        if missing:
            raise ExerciseFailure(
                f"on {label} ({source.strip()!r}) you missed {missing}: walk the whole tree (ast.walk), "
                "an attribute can sit inside another attribute or a call"
            )
    return f"{len(ATTRIBUTE_READ_CASES)} sources"


# ---------------------------------------------------------------------------------------------
# 9.2 yaml_only_keys


@dataclass
class _ExReplay:
    mode: str = "disabled"
    record_file: str | None = None


@dataclass
class _ExEngine:
    param_offload: bool = False
    optimizer_offload: bool = False
    router_replay: _ExReplay = field(default_factory=_ExReplay)


YAML_ONLY_CASES: tuple[tuple[str, dict[str, Any], list[str]], ...] = (
    ("a matching block", {TARGET_KEY: "x.Engine", "param_offload": False, "router_replay": {"mode": "R2"}}, []),
    ("a removed key", {TARGET_KEY: "x.Engine", "param_offload": True, "grad_offload": False}, ["grad_offload"]),
    (
        "a nested typo",
        {"optimizer_offload": True, "router_replay": {TARGET_KEY: "x.Replay", "mode": "R3", "replay_file": "r.pt"}},
        ["router_replay.replay_file"],
    ),
    ("two extras", {"zeta": 1, "alpha": 2}, ["alpha", "zeta"]),
)


@checker("9.2", library_answers=[yaml_field_mismatches])
def check_yaml_only_keys(yaml_only_keys: Callable[[type, Mapping[str, Any]], list[str]]) -> str:
    """Exercise 9.2: `yaml_only_keys(cls, data)` -> sorted dotted keys that are not fields."""
    for label, data, want in YAML_ONLY_CASES:
        got = yaml_only_keys(_ExEngine, copy.deepcopy(data))
        if not isinstance(got, list):
            raise ExerciseFailure(f"return a sorted list of dotted keys, got {type(got).__name__}")
        if TARGET_KEY in got or any(k.endswith("." + TARGET_KEY) for k in got):
            raise ExerciseFailure(f"on {label} you reported '_target_': it is not a field, but every block may have it")
        if sorted(got) == sorted(want) and got != want:
            raise ExerciseFailure(f"on {label} you returned {got}: sort the keys")
        if got != want:
            hint = (
                "recurse into fields whose type is a dataclass (typing.get_type_hints(cls) gives the classes), "
                "with a dotted prefix"
                if any("." in k for k in want)
                else "compare the keys with the names in dataclasses.fields(cls)"
            )
            raise ExerciseFailure(f"on {label} you returned {got}, expected {want}: {hint}")
    return f"{len(YAML_ONLY_CASES)} blocks"
