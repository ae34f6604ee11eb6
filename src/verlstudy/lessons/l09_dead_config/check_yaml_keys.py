"""Exercise 9.2's checker and reference: `yaml_only_keys(cls, data)`, the comparison that catches a half-done
removal (the YAML keeps a key its dataclass lost) before a job starts. Registered by `checks` (import that).

Contract. `yaml_only_keys(cls, data)` returns the dotted names of the keys of the YAML block `data` that are not
fields of the dataclass `cls`, sorted as one list (a `list`, or a sorted `tuple`; the order is taught, so a set
fails). A key counts whatever its value (`grad_offload: null`, false, 0, an empty string or list) and is
compared exactly as written: `Param_offload`, `param-offload` and `_private` are not `param_offload`; only the
key `_target_` itself is skipped, in every block. The fields are `dataclasses.fields(cls)`: inherited ones
included; a `ClassVar`, a method (verl's `BaseConfig.get`) and an attribute `__post_init__` sets are not fields;
a field with a `default_factory` or with no default is one. Where a key is a field whose type, resolved (under
`from __future__ import annotations` a field's `.type` is text), is a dataclass or an `Optional[...]`/`X | None`
of one (verl 0.9.1's `RolloutConfig.profiler`, `AlgoConfig.filter_groups`), and its value is a mapping, that
block is compared with that class the same way, at every depth, its keys written below the names of the blocks
above (`engine.router_replay.record_fle`); a null value there is no block. A plain `dict` field holds any key.
`data` is left as it was, and a second call answers the same.

The checker tries named blocks, then blocks drawn for the classes of `exercise_configs` (the shapes of verl's
configs) with keys drawn from real fields, fields of other blocks, odd spellings, class attributes that are not
fields and near-`_target_` names, and values drawn from null and other falsy values, blocks and lists.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any

from verlstudy.kit import i18n
from verlstudy.kit.exercises import checker
from verlstudy.kit.properties import Case, compare_on_inputs
from verlstudy.lessons.l09_dead_config import exercise_configs as ex
from verlstudy.lessons.l09_dead_config.loading import TARGET_KEY
from verlstudy.lessons.l09_dead_config.schema import nested_dataclass, yaml_field_mismatches


def _reference_yaml_only(cls: type, data: Mapping[str, Any], prefix: str = "") -> list[str]:
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out: list[str] = []
    for key, value in data.items():
        if key == TARGET_KEY:
            continue
        if key not in names:
            out.append(prefix + key)
        elif (inner := nested_dataclass(hints[key])) is not None and isinstance(value, Mapping):
            out += _reference_yaml_only(inner, value, prefix + key + ".")
    return sorted(out)


@functools.cache  # one strategy per class: flatmap asks for it on every draw, and a new one is validated anew
def _block(cls: type, depth: int = 0) -> Any:
    from hypothesis import strategies as st

    values = st.sampled_from(ex.VALUES)
    entries = []
    for name, kind in ex.field_types(cls).items():
        inner = nested_dataclass(kind)
        if inner is not None and depth < 3:
            value = st.one_of(_block(inner, depth + 1), values)
        elif kind is dict:
            value = st.dictionaries(st.sampled_from(ex.EXTRA_KEYS), values, max_size=2)
        else:
            value = values
        entries.append(st.tuples(st.just(name), value))
    # some of the class's fields, and at most one odd key of each kind (each kind in most blocks; shrinking drops
    # the kinds a failure does not need); `_target_` in about half of them
    odd = [st.one_of(st.none(), st.tuples(st.sampled_from(kind), values)) for kind in ex.odd_keys(cls)]
    odd.append(st.one_of(st.none(), st.tuples(st.just(TARGET_KEY), values)))
    fields = st.lists(st.one_of(*entries), max_size=4)
    return st.tuples(fields, st.tuples(*odd)).map(lambda t: dict(t[0] + [kv for kv in t[1] if kv is not None]))


def _yaml_inputs() -> Any:
    from hypothesis import strategies as st

    return st.sampled_from(ex.CLASSES).flatmap(lambda cls: st.tuples(st.just(cls), _block(cls)))


YAML_ONLY_CASES = [
    Case((ex.Engine, {TARGET_KEY: "x.Engine", "param_offload": False, "router_replay": {"mode": "R2"}}), "a match"),
    Case((ex.Engine, {TARGET_KEY: "x.Engine", "param_offload": True, "grad_offload": None}), "a removed key, null"),
    Case((ex.Engine, {"profiler": {"tool": "nsys", "enabled": True}}), "a block under an Optional field"),
    Case((ex.ResolvedEngine, {"router_replay": {TARGET_KEY: "x.R", "record_fle": "r"}}), "types not written as text"),
    Case((ex.Actor, {"engine": {"router_replay": {"Mode": "R2"}, "param-offload": 1}}), "three levels, odd spellings"),
    Case((ex.Engine, {"zeta": 1, "router_replay": {"record_fle": 1}}), "a top-level key that sorts after a nested one"),
    Case((ex.Engine, {"override_config": {"anything": 1}, "_private": 2}), "a plain dict field; a `_` key"),
    Case((ex.Engine, {"router_replay": None, "checkpoint": None, "profiler": None}), "null blocks"),
    Case((ex.ResolvedEngine, {"checkpoint": {"mode": "R2", "Mode": "R3"}}), "a Union with None written first"),
    Case((ex.Engine, {}), "an empty block"),
    Case((ex.Engine, {"_mutable_fields": [], "get": 1, "dtype_resolved": "x"}), "class attributes, not fields"),
]


def _path(cls: type, data: Mapping[str, Any], key: str) -> tuple[list[tuple[type, str, Any]], type | None, Any]:
    """The steps (owner class, field, its resolved type) down to the block a dotted key sits in; that block's
    class (None where a step is no dataclass block) and its mapping (None where the data has no such block)."""
    steps: list[tuple[type, str, Any]] = []
    block: Any = data
    for name in key.split(".")[:-1]:
        kind = ex.field_types(cls).get(name) if cls is not None else None
        steps.append((cls, name, kind))  # type: ignore[arg-type]
        block = block.get(name) if isinstance(block, Mapping) else None
        cls = nested_dataclass(kind)  # type: ignore[assignment]
    return steps, cls, block


def _reaches(
    fn: Callable[..., object], cls: type, data: Mapping[str, Any], key: str, name: str = "", value: Any = 1
) -> bool:
    """Whether the answer reports `name: value` put into the block `key` sits in (of a copy of the data); by
    default a plain unknown key: whether it compares that block at all."""
    probe = copy.deepcopy(dict(data))
    block = probe
    for step in key.split(".")[:-1]:
        block[step] = dict(block[step])
        block = block[step]
    name = name or _PROBE
    block[name] = value
    try:
        got = fn(cls, probe)
        return isinstance(got, (list, tuple)) and key.rpartition(".")[0] + ("." if "." in key else "") + name in got
    except Exception:
        return False


_PROBE = "zz_not_a_field"
# a plain dataclass field, its type an object and its type written as text: does the answer descend at all?
_PLAIN_NESTING = (ex.ResolvedEngine, ex.Engine)


def _missed(fn: Callable[..., object], cls: type, data: Mapping[str, Any], key: str) -> str:
    """Why a key the answer left out should be there: what is special about its name or value where the answer
    does compare its block, else what is special about the way down to that block."""
    steps, block, mapping = _path(cls, data, key)
    name, value = key.rpartition(".")[2], mapping.get(key.rpartition(".")[2]) if mapping else None
    shown = repr(key)
    if steps and not _reaches(fn, cls, data, key):
        owner, field_name, kind = steps[-1]
        resolved, postponed = (_reaches(fn, c, {"router_replay": {}}, "router_replay.x") for c in _PLAIN_NESTING)
        if not (resolved or postponed):
            return i18n.pick(
                "you missed {key}: the keys inside a nested block whose field is a dataclass were never compared",
                key=shown,
            )
        if not postponed and isinstance({f.name: f.type for f in dataclasses.fields(owner)}[field_name], str):
            return i18n.pick(
                "you missed {key}: this module's `from __future__ import annotations` makes a field's .type a string, "
                "and the nested field does not look like a dataclass to your code",
                key=shown,
            )
        if typing.get_origin(kind) is not None:
            return i18n.pick(
                "you missed {key}: its block sits under a field typed {kind}, an optional dataclass; a block set there "
                "is compared with that dataclass like any other",
                key=shown,
                kind=kind,
            )
        if len(steps) >= 2:
            return i18n.pick(
                "you missed {key}: the blocks nest more than one level; every level is compared with its class",
                key=shown,
            )
        return i18n.pick(
            "you missed {key}: the keys inside this nested block were never compared with its dataclass", key=shown
        )
    attributes = (*typing.get_type_hints(block), *block.__dataclass_fields__, *ex.NOT_FIELDS)
    if name in attributes or hasattr(block, name):
        return i18n.pick(
            "you missed {key}: {cls} has an attribute or annotation of that name, but it is not one of the "
            "dataclass's fields (a ClassVar, a method or an attribute set in __post_init__ is not)",
            key=shown,
            cls=block.__name__,
        )
    if name.startswith("_") or "target" in name:
        return i18n.pick(
            "you missed {key}: only the key '_target_' itself may sit in every block; other `_` keys are keys",
            key=shown,
        )
    fields = {f.name for f in dataclasses.fields(block)}
    if name.lower() in fields or name.replace("-", "_") in fields:
        return i18n.pick(
            "you missed {key}: keys are compared exactly as written (case, dashes); the YAML's key is no field",
            key=shown,
        )
    if not value and _reaches(fn, cls, data, key, name, 1):
        return i18n.pick(
            "you missed {key}, whose value is {value}: a key is in the block whatever its value, null too",
            key=shown,
            value=repr(value),
        )
    other = [c.__name__ for c in ex.CLASSES if name in {f.name for f in dataclasses.fields(c)}]
    if other:
        return i18n.pick(
            "you missed {key}: {name} is a field of {cls}, not of the class of the block it is in",
            key=shown,
            name=repr(name),
            cls=other[0],
        )
    return i18n.pick("you missed {key}, a key of this YAML block that is not a field of the class", key=shown)


def _reports_own_field(fn: Callable[..., object], cls: type) -> bool:
    """Whether the answer reports a field `cls` declares itself, with a plain value: then no special kind of
    field (inherited, without a class attribute) is the reason it reports fields."""
    own = [f.name for f in dataclasses.fields(cls) if f.name in inspect.get_annotations(cls) and hasattr(cls, f.name)]
    try:
        return bool(own) and own[0] in fn(cls, {own[0]: 1})  # type: ignore[operator]
    except Exception:
        return False


def _reported(
    fn: Callable[..., object], cls: type, data: Mapping[str, Any], key: str, missing: list[str], extra: list[str]
) -> str:
    """Why a key the answer reported should not be there."""
    name = key.rpartition(".")[2]
    shown = repr(key)
    one_of_the_fields = "you reported {key}, one of the fields of the class: the YAML may set them"
    if name == TARGET_KEY:
        return i18n._("you reported '_target_': it is not a field, but every block may have it")
    if key in {m.rpartition(".")[2] for m in missing if "." in m}:
        return i18n.pick("you reported {key} without the block it sits in: report the whole dotted path", key=shown)
    _, block, mapping = _path(cls, data, key)
    fields = {f.name for f in dataclasses.fields(block)} if block is not None else set()
    if isinstance(mapping, Mapping) and name not in mapping and name in fields:
        return i18n.pick(
            "you reported {key}, a field of the class that this YAML block leaves out (it keeps its default): the "
            "exercise asks the reverse, the keys the YAML has that are not fields",
            key=shown,
        )
    if not isinstance(mapping, Mapping) or name not in mapping:
        return i18n.pick("you reported {key}, which is not a key of this YAML block", key=shown)
    if block is None:
        return i18n.pick(
            "you reported {key}: its field is a plain dict, not a dataclass, so any key may sit inside it", key=shown
        )
    if "." not in key and _reports_own_field(fn, cls):
        return i18n.pick(one_of_the_fields, key=shown)
    reported = [k.rpartition(".")[2] for k in extra if k.rpartition(".")[0] == key.rpartition(".")[0]]
    own = inspect.get_annotations(block)
    if all(k in fields and not hasattr(block, k) for k in reported):
        return i18n.pick(
            "you reported {key}, a field with no class attribute behind it (a default_factory or no default): it is "
            "still a field",
            key=shown,
        )
    if all(k in fields and k not in own for k in reported):
        return i18n.pick(
            "you reported {key}, a field that {cls} inherits from its base class: the class's own annotations list "
            "only the fields it adds; its fields are all of them",
            key=shown,
            cls=block.__name__,
        )
    return i18n.pick(one_of_the_fields, key=shown)


def _yaml_only_mistake(fn: Callable[..., object]) -> Callable[[tuple[Any, ...], Any, Any], str | None]:
    """The mistake a wrong list of YAML-only keys shows, named without the method."""
    return lambda args, got, want: _named(fn, *args, got, want)


def _sorted_within(keys: list[str], block: str) -> bool:
    own = [k for k in keys if k.rpartition(".")[0] == block]
    return own == sorted(own)


def _named(fn: Callable[..., object], cls: type, data: Mapping[str, Any], got: object, want: list[str]) -> str | None:
    if not isinstance(got, (list, tuple)) or not all(isinstance(k, str) for k in got):
        return i18n._("return a sorted list of dotted keys (strings)")
    if sorted(got) == sorted(want):
        if len(set(got)) != len(got):
            return i18n._("each key once")
        blocks = {k.rpartition(".")[0] for k in got}
        in_block_order = all(_sorted_within(list(got), b) for b in blocks)
        nested_last = list(got) == sorted(got, key=lambda k: (k.count("."), k))
        if in_block_order and (len(blocks) < len(got) or nested_last):
            return i18n._("the right keys, each block's keys in order, but the list as a whole is not sorted")
        return i18n._("sort the keys")
    missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
    try:
        if extra:
            return _reported(fn, cls, data, extra[0], missing, extra)
        return _missed(fn, cls, data, missing[0])
    except (KeyError, AttributeError, TypeError, IndexError):  # a key the walk cannot place: say it plainly
        if missing:
            return i18n.pick("you missed {keys}", keys=missing)
        return i18n.pick("you reported {keys}, which the block does not hold", keys=extra)


@checker(
    "9.2",
    library_answers=[yaml_field_mismatches, nested_dataclass],
    where=(
        "the section 'Half-done removal' and the fixture's config.py: its first line changes what a field's "
        "type looks like at run time; the YAML block nests router_replay inside the engine block; and verl "
        "0.9.1's rollout config types its profiler block Optional"
    ),
    question=(
        "Take `@dataclass class C(B)` with `B` giving it the field `a`, a `ClassVar` `k`, and `p: Optional[D] = "
        "None` where `D` has the one field `x`. For the block {'a': None, 'A': 1, 'k': 2, '_target_': 'm.C', 'p': "
        "{'x': 1, 'y': None}}: which keys does Python call C's fields, which key is a field only when spelled "
        "exactly, and what does `p`'s type look like to your code before and after resolving it?"
    ),
    method=(
        "Take the names of the class's fields from the dataclasses module (the fields it inherits too, no "
        "class variables), and the fields' real types from the typing module's resolver. Go through every key of "
        "the block, whatever its value: skip the '_target_' key only; report a key that is not a field, as "
        "written, with the names of the blocks above it joined by dots. When a field's type is a dataclass, or "
        "an optional one (a union with None: take the arm that is not None), and its value is a mapping, compare "
        "that value with that class the same way, one level down, as deep as it goes. Return everything found, "
        "sorted, and leave the input as it was."
    ),
    reveals=["typing.get_type_hints(cls)", "with the prefix `router_replay.`"],
)
def check_yaml_only_keys(yaml_only_keys: Callable[[type, Mapping[str, Any]], list[str]]) -> str:
    """Exercise 9.2: `yaml_only_keys(cls, data)`: the contract is this module's docstring."""
    return compare_on_inputs(
        yaml_only_keys,
        _reference_yaml_only,
        inputs=_yaml_inputs(),
        edge_cases=YAML_ONLY_CASES,
        mistakes=_yaml_only_mistake(yaml_only_keys),
        name="yaml_only_keys",
        max_examples=100,
    )
