"""Lesson 09's exercise checkers: 9.1 writes attribute_reads (the heart of the dead-field search),
9.2 writes yaml_only_keys (the check that catches a half-done removal before a job starts).

A notebook reaches them only as check_exercise("9.N", answer). The library's own search
(`read_index.attribute_read` and the read index behind `dead_fields`) is refused as an answer to 9.1,
and `schema.yaml_field_mismatches` as an answer to 9.2, also when wrapped in a learner's function.
A wrong answer's message names the mistake it shows; how to get there is each checker's `method`,
shown after repeated tries or by `exercise_hint`.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from verlstudy.kit.exercises import checker
from verlstudy.kit.properties import Case, compare_on_inputs
from verlstudy.lessons.l09_dead_config.loading import TARGET_KEY
from verlstudy.lessons.l09_dead_config.read_index import _index_reads, attribute_read
from verlstudy.lessons.l09_dead_config.schema import yaml_field_mismatches

# ---------------------------------------------------------------------------------------------
# 9.1 attribute_reads


def _reference_attribute_reads(source: str) -> set[str]:
    return {n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}


def _assigned_attributes(source: str) -> set[str]:
    return {
        n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load)
    }


def _deleted_attributes(source: str) -> set[str]:
    return {n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Del)}


def _read_to_store(source: str) -> set[str]:
    """Attributes read on the way to a store or a deletion: `cfg` in `self.cfg.x = 1`."""
    targets = [
        n.value for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load)
    ]
    return {n.attr for t in targets for n in ast.walk(t) if isinstance(n, ast.Attribute)}


def _called_attributes(source: str) -> set[str]:
    """Attributes that are called: `offload` in `self.engine.offload(x)`."""
    return {
        n.func.attr
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
    }


def _plain_names(source: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}


_ATTRS = ("grad_offload", "param_offload", "mode", "record_file", "router_replay", "config", "optimizer_offload")
# One statement each, {0} {1} {2} filled with attribute names: reads, stores, deletes, chains, calls, nesting
_STATEMENTS = (
    "self._x = config.{0}",
    "if self.{0}:\n    move(self.{1})",
    "mode = engine.{0}.{1}.{2}",
    "self.{0} = 1",
    "self.{0} = self.{1} = 2",
    "to(device, model=self.{0}, grad=other.{1})",
    "del cfg.{0}",
    "engine.{0}.{1} = value",
    "for item in cfg.{0}:\n    use(item)",
    "values = [y.{0} for y in items]",
    "def step(cfg):\n    if cfg.{0}:\n        return cfg.{1}.{2}\n    cfg.{1} = None",
    "class Box:\n    size = defaults.{0}",
    "with self.{0} as handle:\n    pass",
    "callback = lambda c: c.{0}",
    "self.{0}.{1}(x)",
    "if cfg.{0}():\n    pass",
)


def _source_inputs() -> Any:
    from hypothesis import strategies as st

    statement = st.tuples(st.sampled_from(_STATEMENTS), st.lists(st.sampled_from(_ATTRS), min_size=3, max_size=3))
    lines = st.lists(statement.map(lambda t: t[0].format(*t[1])), min_size=0, max_size=5)
    return lines.map(lambda ls: ("\n".join(ls) + "\n",))


ATTRIBUTE_READ_CASES = [
    Case(("self._is_offload_grad = config.grad_offload\n",), "a copy: the value read, the target stored"),
    Case(("if self._is_offload_param:\n    move(self.module)\n",), "a condition and its body"),
    Case(("mode = engine.config.router_replay.mode\n",), "a chain three attributes deep"),
    Case(("self.a = 1\nself.b = self.c = 2\n",), "stores only: nothing is read"),
    Case(("to(device, model=self._is_offload_param, grad=self._is_offload_grad)\n",), "attributes as call arguments"),
    Case(("del cfg.grad_offload\nx = cfg.mode\n",), "a `del` removes an attribute, it does not read it"),
    Case(("x = 1\n\ny = x.param_offload\n",), "the read is not in the first statement"),
    Case(("def f(cfg):\n    return cfg.use_mbridge\n",), "a read inside a function body"),
    Case(("",), "an empty module"),
    Case(("self.cfg.grad_offload = True\n",), "a store into an attribute of an attribute reads the outer one"),
    Case(("if cfg.mode:\n    use(cfg.mode)\n",), "the same attribute read twice: each name once"),
    Case(("self.engine.offload(cfg.mode)\n",), "a method called on an attribute"),
]


def _reads_mistake(args: tuple[Any, ...], got: object, want: set[str]) -> str | None:
    (source,) = args
    try:
        got = set(got)  # type: ignore[call-overload]
    except TypeError:
        return "return the names as a set of strings"
    extra, missing = sorted(got - want), sorted(want - got)
    stored, deleted, names = _assigned_attributes(source), _deleted_attributes(source), _plain_names(source)
    if extra and set(extra) <= deleted:
        return f"{extra} is only deleted (`del`): a deletion is not a read"
    if extra and set(extra) <= stored:
        return f"{extra} is only assigned (stored into), never read"
    if extra and set(extra) <= names:
        return f"{extra} are plain variables, not attributes: an attribute is the name after a dot"
    if extra:
        return f"{extra} is not an attribute read in this code"
    if missing and set(missing) <= _read_to_store(source):
        return (
            f"you missed {missing}: in a store such as `a.b.c = v` only the last name is assigned; the names before "
            "it are read to find the object that is stored into"
        )
    if missing and set(missing) <= _called_attributes(source):
        return (
            f"you missed {missing}, which the code calls: to call `x.{missing[0]}(...)` it reads `{missing[0]}` first"
        )
    if missing:
        return (
            f"you missed {missing}, which the code reads: an attribute can sit inside another attribute, a call, a "
            "later statement or a function body, not only at the top of the first statement"
        )
    return None


@checker(
    "9.1",
    library_answers=[attribute_read, _index_reads],
    where=(
        "the section 'Reproduce' and the fixture's engine.py: the one line that mentions grad_offload copies it "
        "into another attribute; Python's own parser tells a read from a store"
    ),
    method=(
        "Let Python's parser turn the source into a tree, then visit every node of it, at every depth, not only "
        "the top-level statements. Keep the nodes that are attribute accesses and whose context marks a read (the "
        "parser marks stores and deletions differently); collect the name after the dot of each into a set."
    ),
    reveals=["ast.Load", "ast.walk"],
)
def check_attribute_reads(attribute_reads: Callable[[str], set[str]]) -> str:
    """Exercise 9.1: `attribute_reads(source)` -> the attribute names read (a set; a frozenset or list passes)."""
    return compare_on_inputs(
        attribute_reads,
        _reference_attribute_reads,
        inputs=_source_inputs(),
        edge_cases=ATTRIBUTE_READ_CASES,
        mistakes=_reads_mistake,
        name="attribute_reads",
    )


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
    override_config: dict = field(default_factory=dict)  # a plain mapping: any key is allowed inside


@dataclass
class _ExActor:  # three levels: actor -> engine -> router_replay
    ppo_micro_batch_size: int = 1
    engine: _ExEngine = field(default_factory=_ExEngine)


@dataclass
class _ExBaseEngine:  # verl's engine configs share fields through a base class, as here
    param_offload: bool = False
    router_replay: _ExReplay = field(default_factory=_ExReplay)


@dataclass
class _ExFsdpEngine(_ExBaseEngine):  # its own annotations list only fsdp_size; the other fields are inherited
    fsdp_size: int = -1


# The same shape with each field's .type the class itself (as without `from __future__ import annotations`)
_ExResolvedEngine = dataclasses.make_dataclass(
    "_ExResolvedEngine",
    [("param_offload", bool, False), ("router_replay", _ExReplay, field(default_factory=_ExReplay))],
    namespace={"__module__": __name__},
)

_EXTRA_KEYS = ("grad_offload", "record_fle", "zeta", "alpha", "replay_file")


def _reference_yaml_only(cls: type, data: Mapping[str, Any], prefix: str = "") -> list[str]:
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out: list[str] = []
    for key, value in data.items():
        if key == TARGET_KEY:
            continue
        if key not in names:
            out.append(prefix + key)
        elif dataclasses.is_dataclass(hints[key]) and isinstance(value, Mapping):
            out += _reference_yaml_only(hints[key], value, prefix + key + ".")
    return sorted(out)


@functools.cache  # one strategy per class: flatmap asks for it on every draw, and a new one is validated anew
def _block(cls: type, depth: int = 0) -> Any:
    from hypothesis import strategies as st

    hints = typing.get_type_hints(cls)
    entries = []
    for f in dataclasses.fields(cls):
        kind = hints[f.name]
        if dataclasses.is_dataclass(kind) and depth < 3:
            value = st.one_of(_block(kind, depth + 1), st.none())
        elif kind is dict:
            value = st.dictionaries(st.sampled_from(_EXTRA_KEYS), st.integers(0, 3), max_size=2)
        else:
            value = st.sampled_from([True, 1, "R2"])
        entries.append(st.tuples(st.just(f.name), value))
    entries += [st.tuples(st.sampled_from((*_EXTRA_KEYS, TARGET_KEY)), st.sampled_from([0, "x.Cls"]))]
    return st.lists(st.one_of(*entries), max_size=5).map(dict)


def _yaml_inputs() -> Any:
    from hypothesis import strategies as st

    classes = (_ExEngine, _ExActor, _ExResolvedEngine, _ExReplay, _ExFsdpEngine)
    return st.sampled_from(classes).flatmap(lambda cls: st.tuples(st.just(cls), _block(cls)))


YAML_ONLY_CASES = [
    Case(
        (_ExEngine, {TARGET_KEY: "x.Engine", "param_offload": False, "router_replay": {"mode": "R2"}}),
        "a matching block",
    ),
    Case((_ExEngine, {TARGET_KEY: "x.Engine", "param_offload": True, "grad_offload": False}), "a removed key"),
    Case(
        (
            _ExResolvedEngine,
            {"param_offload": True, "router_replay": {TARGET_KEY: "x.R", "mode": "R2", "record_fle": "r"}},
        ),
        "a nested typo, the field's type a class",
    ),
    Case(
        (
            _ExEngine,
            {"optimizer_offload": True, "router_replay": {TARGET_KEY: "x.R", "mode": "R3", "replay_file": "r"}},
        ),
        "a nested typo under `from __future__ import annotations`",
    ),
    Case((_ExEngine, {"zeta": 1, "alpha": 2}), "two extras: sorted"),
    Case((_ExEngine, {"zeta": 1, "router_replay": {"record_fle": 1}}), "a top-level key that sorts after a nested one"),
    Case(
        (_ExActor, {"engine": {"router_replay": {"record_fle": "r", TARGET_KEY: "x.R"}, "grad_offload": True}}),
        "three levels deep",
    ),
    Case((_ExEngine, {"override_config": {"anything": 1}, "param_offload": True}), "a plain dict field holds any key"),
    Case((_ExEngine, {"router_replay": None}), "a dataclass field set to null"),
    Case((_ExEngine, {}), "an empty block"),
    Case(
        (_ExFsdpEngine, {"fsdp_size": 8, "param_offload": True, "router_replay": {"mode": "R2", "record_fle": "r"}}),
        "a class whose fields are partly inherited from its base class",
    ),
]


def _in_order(keys: list[str]) -> bool:
    return keys == sorted(keys)


def _yaml_only_mistake(args: tuple[Any, ...], got: object, want: list[str]) -> str | None:
    """The mistake a wrong list of YAML-only keys shows, named without the method."""
    cls, data = args
    if not isinstance(got, (list, tuple)):
        return "return a sorted list of dotted keys"
    if any(k == TARGET_KEY or k.endswith("." + TARGET_KEY) for k in got):
        return "you reported '_target_': it is not a field, but every block may have it"
    if sorted(got) == sorted(want):
        blocks = {k.rpartition(".")[0] for k in got}
        if all(_in_order([k for k in got if k.rpartition(".")[0] == b]) for b in blocks):
            return "the right keys, each block's keys in order, but the list as a whole is not sorted"
        return "sort the keys"
    missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
    leaves = {k.rpartition(".")[2] for k in missing if "." in k}
    if extra and all(k in leaves for k in extra):
        return f"you reported {extra} without the block it sits in: report the whole dotted path"
    if extra and any(k.startswith("override_config.") or ".override_config." in k for k in extra):
        return f"you reported {extra}: that field is a plain dict, not a dataclass, so any key may sit inside it"
    fields = {f.name for f in dataclasses.fields(cls)}
    own = set(inspect.get_annotations(cls))
    if extra and set(extra) <= (fields - own) & set(data):
        return (
            f"you reported {extra}, fields that {cls.__name__} inherits from its base class: the class's own "
            "annotations list only the fields it adds; its fields are all of them"
        )
    if extra and set(extra) <= fields - set(data):
        return (
            f"you reported {extra}, fields of the class that this YAML block leaves out (they keep their defaults): "
            "the exercise asks the reverse, the keys the YAML has that are not fields"
        )
    if extra and set(extra) <= fields:
        return f"you reported {extra}, which are fields of the class: the YAML may set them"
    if extra:
        return f"you reported {extra}, which are not keys of this YAML block that are missing from the class"
    nested = [k for k in missing if "." in k]
    if nested and all(k.count(".") >= 2 for k in nested) and cls is _ExActor:
        return f"you missed {missing}: the blocks nest more than one level; every level is compared with its class"
    if nested and cls is _ExEngine:
        return (
            f"you missed {missing}: in this module `from __future__ import annotations` makes a field's .type a "
            "string, so the nested field does not look like a dataclass to your code"
        )
    if nested:
        block = nested[0].rpartition(".")[0]
        return (
            f"you missed {missing}: the keys inside the nested block {block!r}, whose field is itself a dataclass, "
            "were never compared with that dataclass's fields"
        )
    return f"you missed {missing}, keys of this YAML block that are not fields of the class"


@checker(
    "9.2",
    library_answers=[yaml_field_mismatches],
    where=(
        "the section 'Half-done removal' and the fixture's config.py: its first line changes what a field's "
        "type looks like at run time; the YAML block nests router_replay inside the engine block"
    ),
    method=(
        "Take the names of the class's fields from the dataclasses module, and the fields' real types from the "
        "typing module's resolver (under postponed annotations a field only records its type's name as text). Go "
        "through the keys of the block: skip the '_target_' key; report a key that is not a field, written with "
        "the names of the blocks above it joined by dots; when a field's type is itself a dataclass and its "
        "value is a mapping, compare that value with that class the same way, one level down, as deep as it "
        "goes. Return everything found, sorted, and leave the input as it was."
    ),
    reveals=["typing.get_type_hints(cls)", "with the prefix `router_replay.`"],
)
def check_yaml_only_keys(yaml_only_keys: Callable[[type, Mapping[str, Any]], list[str]]) -> str:
    """Exercise 9.2: `yaml_only_keys(cls, data)` -> sorted dotted keys that are not fields (a list or tuple)."""
    return compare_on_inputs(
        yaml_only_keys,
        _reference_yaml_only,
        inputs=_yaml_inputs(),
        edge_cases=YAML_ONLY_CASES,
        mistakes=_yaml_only_mistake,
        name="yaml_only_keys",
    )
