"""Lesson 09's dataclasses <-> YAML: strict building, instantiation, and the field checks a removal needs.

`build` checks `_target_`, types (list elements too), unknown and removed keys (errors carry file:line);
`instantiate_like_hydra` is upstream's path without a schema check (`hydra.utils.instantiate`'s shape);
`to_dict`/`dump_yaml` write what `build` reads back, also for verl's `BaseConfig`-shaped classes;
`assert_field_removed` is verl #7466's kind of guard test; `yaml_field_mismatches` compares a YAML
block with its dataclass.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

import yaml

from verlstudy.kit.params import check_instance
from verlstudy.lessons.l09_dead_config.errors import REMOVED_KEYS, ConfigError, Removal, unknown_key_error
from verlstudy.lessons.l09_dead_config.loading import TARGET_KEY, ConfigTree, KeyPath, dotted


def class_path(cls: type) -> str:
    """The `_target_` string of a class: 'module.QualName'."""
    if not isinstance(cls, type):
        raise TypeError(f"class_path takes a class, got {type(cls).__name__}")
    return f"{cls.__module__}.{cls.__qualname__}"


def resolve_target(target: str, *, where: str = "<config>") -> type:
    """Import the class a `_target_` names; ConfigError saying which part could not be found."""
    if not isinstance(target, str) or "." not in target:
        raise ConfigError(f"{where}: _target_ must be a dotted 'module.Class' path, got {target!r}")
    module_name, _, name = target.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigError(f"{where}: cannot import module {module_name!r} for _target_ {target!r}: {err}") from None
    cls = getattr(module, name, None)
    if not isinstance(cls, type):
        raise ConfigError(f"{where}: module {module_name!r} has no class {name!r} (from _target_ {target!r})")
    return cls


def _type_name(annotation: Any) -> str:
    if typing.get_origin(annotation) is None and isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


_SCALAR_CHECKS: dict[Any, Callable[[Any], bool]] = {
    bool: lambda v: isinstance(v, bool),
    int: lambda v: isinstance(v, int) and not isinstance(v, bool),
    float: lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    str: lambda v: isinstance(v, str),
    list: lambda v: isinstance(v, list),
    dict: lambda v: isinstance(v, dict),
}


def _convert(value: Any, annotation: Any, path: KeyPath, tree: ConfigTree, removals: Mapping[str, Removal]) -> Any:
    where = tree.where(path)
    origin = typing.get_origin(annotation)
    if annotation is Any:
        return copy.deepcopy(value)
    if origin in (typing.Union, types.UnionType):
        arms = typing.get_args(annotation)
        if value is None and type(None) in arms:
            return None
        for arm in arms:
            if arm is type(None):
                continue
            try:
                return _convert(value, arm, path, tree, removals)
            except ConfigError:
                continue
        raise ConfigError(f"{where}: {dotted(path)!r} must be {_type_name(annotation)}, got {value!r}")
    if origin is typing.Literal:
        if value not in typing.get_args(annotation):
            raise ConfigError(f"{where}: {dotted(path)!r} must be one of {typing.get_args(annotation)}, got {value!r}")
        return value
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return build(annotation, value, path=path, tree=tree, removals=removals)
    if value is None:
        raise ConfigError(f"{where}: {dotted(path)!r} must be {_type_name(annotation)}, got null")
    check = _SCALAR_CHECKS.get(origin or annotation)
    if check is not None and not check(value):
        raise ConfigError(
            f"{where}: {dotted(path)!r} must be {_type_name(annotation)}, got {type(value).__name__} {value!r}"
        )
    args = typing.get_args(annotation)
    # list[float]: every element is checked (stricter than upstream's `_target_` path, where hydra passes the
    # values unchecked; its `dataclass_type=` path, through OmegaConf, checks them too)
    if origin is list and args:
        return [_convert(v, args[0], (*path, f"[{i}]"), tree, removals) for i, v in enumerate(value)]
    if origin is dict and len(args) == 2:
        return {k: _convert(v, args[1], (*path, str(k)), tree, removals) for k, v in value.items()}
    if annotation is float:
        return float(value)
    return copy.deepcopy(value)


def _none_default(f: dataclasses.Field) -> bool:
    """verl writes `strategy: str = None`: a field whose default is None accepts null (a course rule)."""
    return f.default is None


def build(
    cls: type,
    data: Mapping[str, Any] | ConfigTree,
    *,
    path: KeyPath = (),
    tree: ConfigTree | None = None,
    removals: Mapping[str, Removal] = REMOVED_KEYS,
) -> Any:
    """Build dataclass `cls` from YAML data, strictly: `_target_` (when present) must name `cls`,
    every key must be a field (a removed key gets its migration message, a typo the closest names),
    scalar types must match and nested dataclasses are built too. Errors carry file:line.

    `data` is a ConfigTree (locations known) or a plain mapping; `path` is where it sits in `tree`.
    """
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"cls must be a dataclass type, got {cls!r}")
    if isinstance(data, ConfigTree):
        tree, data = data, (data.get(path) if path else data.data)
    tree = tree or ConfigTree({}, {})
    where = tree.where(path)
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: {dotted(path)!r} must be a mapping for {cls.__name__}, got {data!r}")
    target = data.get(TARGET_KEY)
    if TARGET_KEY in data:
        # the block's _target_ line says which file defined it
        where = tree.where((*path, TARGET_KEY))
    # '' is verl's BaseConfig default for `_target_`: no target written, the field's type decides
    if target not in (None, "") and target != class_path(cls):
        raise ConfigError(f"{where}: _target_ is {target!r} but this block builds {class_path(cls)!r}")
    # `_target_` is the dispatch key: on verl's `_target_` path hydra consumes it and the built object's
    # `_target_` stays '' (as here); verl's `dataclass_type=` path keeps it in BaseConfig's field (not copied here)
    init_fields = [f for f in dataclasses.fields(cls) if f.init and f.name != TARGET_KEY]
    names = [f.name for f in init_fields]
    for key in data:
        if key != TARGET_KEY and key not in names:
            raise unknown_key_error(key, names, where=tree.where((*path, key)), owner=cls.__name__, removals=removals)
    hints = typing.get_type_hints(cls)
    kwargs = {
        f.name: None
        if data[f.name] is None and _none_default(f)
        else _convert(data[f.name], hints[f.name], (*path, f.name), tree, removals)
        for f in init_fields
        if f.name in data
    }
    try:
        return cls(**kwargs)
    except (ValueError, TypeError, AssertionError) as err:
        raise ConfigError(f"{where}: {cls.__name__} rejected {dotted(path)!r}: {err}") from err


def instantiate(tree: ConfigTree, *, removals: Mapping[str, Removal] = REMOVED_KEYS) -> dict[str, Any]:
    """Walk a composed config and build every block that has a `_target_` (strictly, with `build`);
    other mappings stay plain dicts."""
    check_instance("tree", tree, ConfigTree, what="a ConfigTree (from parse_yaml, load_yaml or compose)")

    def walk(node: Any, path: KeyPath) -> Any:
        if isinstance(node, Mapping):
            if TARGET_KEY in node:
                cls = resolve_target(node[TARGET_KEY], where=tree.where((*path, TARGET_KEY)))
                return build(cls, node, path=path, tree=tree, removals=removals)
            return {k: walk(v, (*path, k)) for k, v in node.items()}
        return copy.deepcopy(node)

    return walk(tree.data, ())


class InstantiationError(Exception):
    """The error shape of upstream's path, `hydra.utils.instantiate` (called by verl/utils/config.py::
    omega_conf_to_dataclass): 'Error in call to target ...' naming the class, then Python's own error."""


def _stable_repr(err: Exception) -> str:
    """`repr(err)` without the "Did you mean ...?" suggestion Python 3.13 appends to a wrong keyword argument,
    so the lesson prints the same line on every supported Python."""
    text = re.sub(r"\. Did you mean '[^']*'\?$", "", str(err))
    return f"{type(err).__name__}({text!r})"


def instantiate_like_hydra(data: Mapping[str, Any], full_key: str = "") -> Any:
    """Build a `_target_` block the way `hydra.utils.instantiate` does (the course's reconstruction):
    nested `_target_` blocks first, then `cls(**keys)` with no schema check, so an unknown key is
    Python's "unexpected keyword argument", wrapped as hydra wraps it: the target class and the
    key path are named, but not the file, the line or a way forward."""

    def walk(node: Any, key: str) -> Any:
        if not isinstance(node, Mapping):
            return node
        items = {k: walk(v, f"{key}.{k}" if key else k) for k, v in node.items() if k != TARGET_KEY}
        if TARGET_KEY not in node:
            return items
        target = node[TARGET_KEY]
        try:
            return resolve_target(target)(**items)
        except Exception as err:
            message = f"Error in call to target {target!r}:\n{_stable_repr(err)}" + (
                f"\nfull_key: {key}" if key else ""
            )
            raise InstantiationError(message) from err

    if not isinstance(data, Mapping) or TARGET_KEY not in data:
        raise ConfigError("instantiate_like_hydra needs a mapping with a _target_")
    return walk(data, full_key)


def to_dict(instance: Any) -> dict[str, Any]:
    """A dataclass instance as YAML-ready data: `_target_` first, then fields in declaration order."""
    if not dataclasses.is_dataclass(instance) or isinstance(instance, type):
        raise TypeError(f"to_dict takes a dataclass instance, got {type(instance).__name__}")
    out: dict[str, Any] = {TARGET_KEY: class_path(type(instance))}
    for f in dataclasses.fields(instance):
        if f.name == TARGET_KEY:  # verl's BaseConfig field (default ''): the class path above replaces it
            continue
        value = getattr(instance, f.name)
        out[f.name] = to_dict(value) if dataclasses.is_dataclass(value) else copy.deepcopy(value)
    return out


def dump_yaml(data: Mapping[str, Any]) -> str:
    """YAML text in the project's one style: block style, keys in insertion order."""
    check_instance("data", data, Mapping, what="a mapping (to_dict's output, or a dict)")
    return yaml.safe_dump(dict(data), sort_keys=False, default_flow_style=False, width=100)


def field_names(cls: type) -> list[str]:
    """The dataclass's field names, in order (what `dataclasses.fields` reports)."""
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"field_names takes a dataclass type, got {cls!r}")
    return [f.name for f in dataclasses.fields(cls)]


def assert_field_removed(cls: type, name: str, *, removals: Mapping[str, Removal] = REMOVED_KEYS) -> None:
    """The guard test of verl #7466's kind: fail if a removed field has come back to `cls`."""
    if name in field_names(cls):
        reason = removals[name].message() if name in removals else "it is meant to stay removed"
        raise AssertionError(f"{cls.__name__} has field {name!r} again: {reason}")


def nested_dataclass(annotation: Any) -> type | None:
    """The dataclass a field's YAML block is built as: the field's type itself, or the one dataclass of an
    `Optional[...]` / `X | None` (verl 0.9.1: `RolloutConfig.profiler: Optional[ProfilerConfig]`,
    `AlgoConfig.filter_groups: Optional[FilterGroupsConfig]`); None for any other type."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        arms = [arm for arm in typing.get_args(annotation) if arm is not type(None)]
        annotation = arms[0] if len(arms) == 1 else None
    return annotation if isinstance(annotation, type) and dataclasses.is_dataclass(annotation) else None


def yaml_field_mismatches(cls: type, data: Mapping[str, Any], path: KeyPath = ()) -> dict[str, list[str]]:
    """Compare a YAML block with its dataclass, recursing into dataclass-typed fields (`Optional[...]` ones too):
    'yaml_only' keys (instantiation will fail) and 'dataclass_only' fields (the YAML is incomplete)."""
    names = field_names(cls)
    check_instance("data", data, Mapping, what="a YAML block (a mapping)")
    hints = typing.get_type_hints(cls)
    out: dict[str, list[str]] = {"yaml_only": [], "dataclass_only": []}
    for key in data:
        if key != TARGET_KEY and key not in names:
            out["yaml_only"].append(dotted((*path, key)))
    for name in names:
        if name not in data:
            out["dataclass_only"].append(dotted((*path, name)))
            continue
        sub = nested_dataclass(hints[name])
        if sub is not None and isinstance(data[name], Mapping):
            nested = yaml_field_mismatches(sub, data[name], (*path, name))
            for kind in out:
                out[kind].extend(nested[kind])
    return out
