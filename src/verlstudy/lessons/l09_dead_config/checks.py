"""Lesson 09's exercise checkers: 9.1 writes attribute_reads (the heart of the dead-field search),
9.2 writes yaml_only_keys (the check that catches a half-done removal before a job starts).

A notebook reaches them only as check_exercise("9.N", answer). The library's own search
(`field_reads.attribute_read` and the read index behind `dead_fields`) is refused as an answer to 9.1,
and `schema.yaml_field_mismatches` as an answer to 9.2, also when wrapped in a learner's function.
A wrong answer's message names the mistake it shows; how to get there is each checker's `method`,
shown after repeated tries or by `exercise_hint`.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
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


@checker(
    "9.1",
    library_answers=[attribute_read, _index_reads],
    method=(
        "parse the source with ast.parse and visit every node with ast.walk (it reaches the attributes nested "
        "inside other attributes and inside calls); keep the nodes that are ast.Attribute and whose ctx is "
        "ast.Load (a read; ast.Store marks an assignment target), and collect their .attr into a set"
    ),
    reveals=["ast.Load", "ast.walk"],
)
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
                "an attribute is the name after a dot (the 'name' of x.name), not a plain variable"
            )
        if extra:
            raise ExerciseFailure(
                f"on {label} ({source.strip()!r}) you listed {extra}, which this code only assigns (stores into), "
                "never reads"
            )
        if missing:
            raise ExerciseFailure(
                f"on {label} ({source.strip()!r}) you missed {missing}, which the code reads: an attribute can sit "
                "inside another attribute or a call, not only at the top of a statement"
            )
    return f"{len(ATTRIBUTE_READ_CASES)} sources"


# ---------------------------------------------------------------------------------------------
# 9.2 yaml_only_keys


@dataclass
class _ExReplay:
    mode: str = "disabled"
    record_file: str | None = None


@dataclass
class _ExEngine:  # this module has `from __future__ import annotations`: each field's .type is a string
    param_offload: bool = False
    optimizer_offload: bool = False
    router_replay: _ExReplay = field(default_factory=_ExReplay)


# The same shape with each field's .type the class itself (as without `from __future__ import annotations`)
_ExResolvedEngine = dataclasses.make_dataclass(
    "_ExResolvedEngine",
    [("param_offload", bool, False), ("router_replay", _ExReplay, field(default_factory=_ExReplay))],
    namespace={"__module__": __name__},
)

YAML_ONLY_CASES: tuple[tuple[str, type, dict[str, Any], list[str]], ...] = (
    (
        "a matching block",
        _ExEngine,
        {TARGET_KEY: "x.Engine", "param_offload": False, "router_replay": {"mode": "R2"}},
        [],
    ),
    (
        "a removed key",
        _ExEngine,
        {TARGET_KEY: "x.Engine", "param_offload": True, "grad_offload": False},
        ["grad_offload"],
    ),
    (
        "a nested typo",
        _ExResolvedEngine,
        {"param_offload": True, "router_replay": {TARGET_KEY: "x.Replay", "mode": "R2", "record_fle": "r.pt"}},
        ["router_replay.record_fle"],
    ),
    (
        "another nested typo",
        _ExEngine,
        {"optimizer_offload": True, "router_replay": {TARGET_KEY: "x.Replay", "mode": "R3", "replay_file": "r.pt"}},
        ["router_replay.replay_file"],
    ),
    ("two extras", _ExEngine, {"zeta": 1, "alpha": 2}, ["alpha", "zeta"]),
)


def _yaml_only_mistake(cls: type, data: Mapping[str, Any], got: list[str], want: list[str], nested_ok: bool) -> str:
    """The mistake a wrong list of YAML-only keys shows, named without the method."""
    missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
    leaves = {k.rpartition(".")[2]: k for k in missing if "." in k}
    if extra and all(k in leaves for k in extra):
        return f"you reported {extra} without the block it sits in: report the whole dotted path"
    fields = {f.name for f in dataclasses.fields(cls)}
    if extra and set(extra) <= fields - set(data):
        return (
            f"you reported {extra}, fields of the class that this YAML block leaves out (they keep their defaults): "
            "the exercise asks the reverse, the keys the YAML has that are not fields"
        )
    if extra and set(extra) <= fields:
        return f"you reported {extra}, which are fields of the class: the YAML may set them"
    if extra:
        return f"you reported {extra}, which are not keys of this YAML block"
    if any("." in k for k in missing) and nested_ok:
        return (
            f"you missed {missing}, though you found such a key when the field's type was the class itself: "
            "in this module `from __future__ import annotations` makes a field's .type a string, so your code "
            "does not see that the field is a dataclass"
        )
    if any("." in k for k in missing):
        block = next(k for k in missing if "." in k).rpartition(".")[0]
        return (
            f"you missed {missing}: the keys inside the nested block {block!r}, whose field is itself a "
            "dataclass, were never compared with that dataclass's fields"
        )
    return f"you missed {missing}, keys of this YAML block that are not fields of the class"


@checker(
    "9.2",
    library_answers=[yaml_field_mismatches],
    method=(
        "take the field names from dataclasses.fields(cls) and the field types from typing.get_type_hints(cls) "
        "(under `from __future__ import annotations` a field's .type is only a string); for each key of data "
        "other than '_target_', report prefix + key if it is not a field, and if its field's type is a "
        "dataclass and its value a mapping, check that value the same way (recursively) with "
        "prefix + key + '.'; return the list sorted"
    ),
    reveals=["typing.get_type_hints(cls)", "with the prefix `router_replay.`"],
)
def check_yaml_only_keys(yaml_only_keys: Callable[[type, Mapping[str, Any]], list[str]]) -> str:
    """Exercise 9.2: `yaml_only_keys(cls, data)` -> sorted dotted keys that are not fields."""
    nested_ok = False  # the learner found a nested key when the field types were classes
    for label, cls, data, want in YAML_ONLY_CASES:
        got = yaml_only_keys(cls, copy.deepcopy(data))
        if not isinstance(got, list):
            raise ExerciseFailure(f"return a sorted list of dotted keys, got {type(got).__name__}")
        if TARGET_KEY in got or any(k.endswith("." + TARGET_KEY) for k in got):
            raise ExerciseFailure(f"on {label} you reported '_target_': it is not a field, but every block may have it")
        if sorted(got) == sorted(want) and got != want:
            raise ExerciseFailure(f"on {label} you returned {got}: sort the keys")
        if got != want:
            mistake = _yaml_only_mistake(cls, data, got, want, nested_ok)
            raise ExerciseFailure(f"on {label} you returned {got}, expected {want}: {mistake}")
        nested_ok = nested_ok or any("." in k for k in want)
    return f"{len(YAML_ONLY_CASES)} blocks"
