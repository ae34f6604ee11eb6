"""A miniature config system (dataclasses <-> YAML), and the tools that make removing a key safe.

Lesson 09 (verl PR #7544, sibling #7466): `grad_offload` was copied into a private attribute of the
Megatron engine and never read. Removing it touches three things that must change together: the
dataclass field, the YAML key and the generated flat config that CI compares with a fresh
regeneration. This module holds:

- YAML loading that remembers where every key came from (file and line), and rejects duplicate keys;
- composition of a root YAML with a `defaults` list, strict overrides, and `generate_flat_config`;
- `build`: a strict YAML -> dataclass step (checks `_target_`, types, unknown and removed keys);
- `check_generated`: the `git diff --exit-code` habit, failing with a unified diff;
- `dead_fields`: an AST search for config fields that are copied somewhere and never read;
- the removal table, whose entries turn an old user override into a message with a way forward.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import difflib
import importlib
import shutil
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from verlstudy.kit.exercises import ExerciseFailure

TARGET_KEY = "_target_"
DEFAULTS_KEY = "defaults"
SELF_ENTRY = "_self_"

KeyPath = tuple[str, ...]


# ---------------------------------------------------------------------------------------------
# errors and the removal table


class ConfigError(ValueError):
    """A config could not be loaded or does not fit its dataclass; the message says where and why."""


class UnknownKeyError(ConfigError):
    """A key that the config schema does not have (the message suggests the closest valid names)."""


class RemovedKeyError(UnknownKeyError):
    """A key that existed once and was removed; the message names the release and the replacement."""


class StaleGeneratedConfigError(ConfigError):
    """The generated flat config differs from a fresh regeneration; `.diff` holds the unified diff."""

    def __init__(self, message: str, diff: str) -> None:
        super().__init__(message)
        self.diff = diff


@dataclass(frozen=True)
class Removal:
    """One removed config key: where it went and what to use instead."""

    key: str
    removed_in: str
    use_instead: str
    why: str
    pr: int

    def message(self) -> str:
        return (
            f"{self.key!r} was removed in {self.removed_in} (PR #{self.pr}): {self.why}. "
            f"Use {self.use_instead!r} instead and delete {self.key!r} from your config."
        )


# verl 0.9.0 still ships grad_offload; 0.9.1 does not (checked in both wheels).
REMOVED_KEYS: dict[str, Removal] = {
    "grad_offload": Removal(
        key="grad_offload",
        removed_in="verl 0.9.1",
        use_instead="param_offload",
        why="it was never read; gradient buffers are offloaded together with the parameters when param_offload=True",
        pr=7544,
    ),
}


@dataclass(frozen=True)
class Location:
    """Where a key was written: a file (or override) name and a 1-based line, when known."""

    source: str
    line: int | None = None

    def __str__(self) -> str:
        return self.source if self.line is None else f"{self.source}:{self.line}"


@dataclass
class ConfigTree:
    """Plain YAML data plus the location of every mapping key, by key path."""

    data: dict[str, Any]
    locations: dict[KeyPath, Location] = field(default_factory=dict)

    def where(self, path: KeyPath) -> str:
        """The location of `path` (or its nearest located parent) as text, e.g. 'trainer.yaml:12'."""
        for n in range(len(path), 0, -1):
            if path[:n] in self.locations:
                return str(self.locations[path[:n]])
        return "<config>"

    def get(self, path: KeyPath) -> Any:
        """The value at a key path; KeyError naming the path when absent."""
        node: Any = self.data
        for i, key in enumerate(path):
            if not isinstance(node, Mapping) or key not in node:
                raise KeyError(f"no key {'.'.join(path[: i + 1])!r} in the config")
            node = node[key]
        return node


def _dotted(path: KeyPath) -> str:
    return ".".join(path) if path else "<root>"


def unknown_key_error(
    key: str,
    valid: Sequence[str],
    *,
    where: str,
    owner: str,
    removals: Mapping[str, Removal] = REMOVED_KEYS,
) -> UnknownKeyError:
    """The error for a key that `owner` does not have: a migration message if the key was removed,
    else the closest valid names (difflib) or, failing that, the full list."""
    if key in removals:
        return RemovedKeyError(f"{where}: {owner} has no key {key!r}: {removals[key].message()}")
    # a removed key is never a useful suggestion
    candidates = [v for v in valid if v not in removals]
    close = difflib.get_close_matches(key, candidates, n=3, cutoff=0.6)
    if close:
        hint = f"did you mean {close[0]!r}?"
        if len(close) > 1:
            hint += " (also close: " + ", ".join(repr(c) for c in close[1:]) + ")"
    else:
        hint = "valid keys: " + ", ".join(sorted(valid))
    return UnknownKeyError(f"{where}: {owner} has no key {key!r}; {hint}")


# ---------------------------------------------------------------------------------------------
# YAML with locations


def _yaml_error(err: yaml.YAMLError, source: str) -> ConfigError:
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    context = getattr(err, "context", None)
    text = f"{problem} ({context})" if context else problem
    if mark is None:
        return ConfigError(f"{source}: invalid YAML: {text}")
    return ConfigError(f"{source}:{mark.line + 1}:{mark.column + 1}: invalid YAML: {text}")


def _collect_locations(node: yaml.Node, path: KeyPath, source: str, out: dict[KeyPath, Location]) -> None:
    if not isinstance(node, yaml.MappingNode):
        return
    seen: dict[str, int] = {}
    for key_node, value_node in node.value:
        line = key_node.start_mark.line + 1
        if key_node.tag == "tag:yaml.org,2002:merge":
            raise ConfigError(f"{source}:{line}: YAML merge keys ('<<') are not supported in configs")
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
            raise ConfigError(f"{source}:{line}: config keys must be plain strings, got {key_node.value!r}")
        key = key_node.value
        if key in seen:
            raise ConfigError(f"{source}:{line}: duplicate key {key!r} (first written on line {seen[key]})")
        seen[key] = line
        out[(*path, key)] = Location(source, line)
        _collect_locations(value_node, (*path, key), source, out)


def parse_yaml(text: str, source: str = "<string>") -> ConfigTree:
    """Parse YAML text whose top level is a mapping (empty text gives {}), keeping key locations.

    Errors are ConfigError with `source:line:column` taken from PyYAML's marks; duplicate keys,
    which PyYAML would silently resolve to the last one, are errors naming both lines.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str of YAML, got {type(text).__name__}")
    if not isinstance(source, str) or not source:
        raise TypeError(f"source must be a non-empty display name, got {source!r}")
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise _yaml_error(err, source) from None
    if data is None:
        return ConfigTree({}, {})
    if not isinstance(data, dict):
        raise ConfigError(f"{source}:1: the top level of a config must be a mapping, got {type(data).__name__}")
    locations: dict[KeyPath, Location] = {}
    _collect_locations(node, (), source, locations)
    return ConfigTree(data, locations)


def load_yaml(path: str | Path, *, display: str | None = None) -> ConfigTree:
    """Read and parse a YAML file; errors name `display` (default: the file name, never a full path)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no YAML file {display or path.name!r}")
    return parse_yaml(path.read_text(encoding="utf-8"), display or path.name)


# ---------------------------------------------------------------------------------------------
# composition, merging, overrides


def _prefixed(tree: ConfigTree, prefix: KeyPath) -> dict[KeyPath, Location]:
    return {(*prefix, *p): loc for p, loc in tree.locations.items()}


def _deep_merge(base: dict[str, Any], update: Mapping[str, Any]) -> None:
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _deep_merge(base[key], value)
        else:
            base[key] = copy.deepcopy(value)


def _set_at(data: dict[str, Any], path: KeyPath, value: Any) -> None:
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise ConfigError(f"cannot mount a config at {_dotted(path)!r}: {key!r} is not a mapping")
    if isinstance(node.get(path[-1]), dict) and isinstance(value, Mapping):
        _deep_merge(node[path[-1]], value)
    else:
        node[path[-1]] = copy.deepcopy(value)


def _parse_default(entry: object, where: str) -> tuple[str, KeyPath, str] | None:
    """`{'group@place.path': 'name'}` -> (group, place path, name); `'_self_'` -> None."""
    if entry == SELF_ENTRY:
        return None
    if not (isinstance(entry, Mapping) and len(entry) == 1):
        raise ConfigError(f"{where}: each defaults entry must be '_self_' or 'group@place: name', got {entry!r}")
    ((spec, name),) = entry.items()
    group, at, place = str(spec).partition("@")
    if not (at and group and place and isinstance(name, str) and name):
        raise ConfigError(f"{where}: defaults entry {entry!r} must look like 'group@place.path: name'")
    return group, tuple(place.split(".")), name


def compose(root: str | Path) -> ConfigTree:
    """Compose a root YAML: mount each `defaults` entry `group@place: name` (the file
    `<root dir>/group/name.yaml`) at `place`, then merge the root's own keys where `_self_` stands
    (last when absent). Locations name files relative to the root's folder."""
    root = Path(root)
    top = load_yaml(root)
    entries = top.data.get(DEFAULTS_KEY, [])
    where = top.where((DEFAULTS_KEY,))
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: 'defaults' must be a list, got {type(entries).__name__}")
    if SELF_ENTRY not in entries:
        entries = [*entries, SELF_ENTRY]
    own = {k: v for k, v in top.data.items() if k != DEFAULTS_KEY}
    own_locations = {p: loc for p, loc in top.locations.items() if p[0] != DEFAULTS_KEY}
    result = ConfigTree({}, {})
    for entry in entries:
        parsed = _parse_default(entry, where)
        if parsed is None:
            _deep_merge(result.data, own)
            result.locations.update(own_locations)
            continue
        group, place, name = parsed
        part_file = root.parent / group / f"{name}.yaml"
        if not part_file.is_file():
            raise ConfigError(f"{where}: defaults entry names {group}/{name}.yaml, which does not exist")
        part = load_yaml(part_file, display=f"{group}/{name}.yaml")
        _set_at(result.data, place, part.data)
        result.locations.update(_prefixed(part, place))
        result.locations.setdefault(place, Location(f"{group}/{name}.yaml"))
    return result


def merge(base: ConfigTree, update: ConfigTree, *, removals: Mapping[str, Removal] = REMOVED_KEYS) -> ConfigTree:
    """Merge a user's config onto `base`, strictly: every key the user writes must exist in `base`
    (as a Hydra struct config requires), so a typo or a removed key fails with its line number."""
    if not isinstance(base, ConfigTree) or not isinstance(update, ConfigTree):
        raise TypeError("merge(base, update) takes two ConfigTree objects (from parse_yaml/load_yaml/compose)")
    out = ConfigTree(copy.deepcopy(base.data), dict(base.locations))

    def walk(node: dict[str, Any], upd: Mapping[str, Any], path: KeyPath) -> None:
        for key, value in upd.items():
            if key not in node:
                raise unknown_key_error(
                    key, list(node), where=update.where((*path, key)), owner=repr(_dotted(path)), removals=removals
                )
            if isinstance(value, Mapping) and isinstance(node[key], dict):
                walk(node[key], value, (*path, key))
            else:
                node[key] = copy.deepcopy(value)
            out.locations[(*path, key)] = update.locations.get((*path, key), Location("<update>"))

    walk(out.data, update.data, ())
    return out


def apply_overrides(
    tree: ConfigTree, overrides: Sequence[str], *, removals: Mapping[str, Removal] = REMOVED_KEYS
) -> ConfigTree:
    """Apply command-line style overrides `a.b.c=value` (value parsed as YAML). The key must exist,
    like Hydra's; `+a.b.c=value` adds a new key."""
    if isinstance(overrides, str) or not isinstance(overrides, Sequence):
        raise TypeError("overrides must be a list of strings like 'actor.megatron.param_offload=true'")
    out = ConfigTree(copy.deepcopy(tree.data), dict(tree.locations))
    for i, text in enumerate(overrides, start=1):
        if not isinstance(text, str) or "=" not in text:
            raise ConfigError(f"override {i} {text!r} must look like 'a.b.c=value'")
        spec, _, raw = text.partition("=")
        add = spec.startswith("+")
        path = tuple(spec.removeprefix("+").split("."))
        where = f"override {i} {text!r}"
        if not all(path):
            raise ConfigError(f"{where}: empty key name in {spec!r}")
        try:
            value = yaml.safe_load(raw) if raw else None
        except yaml.YAMLError as err:
            raise _yaml_error(err, where) from None
        node: Any = out.data
        for depth, key in enumerate(path):
            last = depth == len(path) - 1
            if not isinstance(node, dict):
                raise ConfigError(f"{where}: {_dotted(path[:depth])!r} is not a mapping")
            if key not in node and not (last and add):
                raise unknown_key_error(
                    key, list(node), where=where, owner=repr(_dotted(path[:depth])), removals=removals
                )
            if last:
                node[key] = value
            else:
                node = node[key]
        out.locations[path] = Location(where)
    return out


# ---------------------------------------------------------------------------------------------
# dataclasses <-> YAML


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


def _convert(value: Any, annotation: Any, path: KeyPath, tree: ConfigTree, removals: Mapping[str, Removal]) -> Any:
    where = tree.where(path)
    origin = typing.get_origin(annotation)
    if annotation is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        arms = typing.get_args(annotation)
        if value is None and type(None) in arms:
            return None
        errors = []
        for arm in arms:
            if arm is type(None):
                continue
            try:
                return _convert(value, arm, path, tree, removals)
            except ConfigError as err:
                errors.append(str(err))
        raise ConfigError(f"{where}: {_dotted(path)!r} must be {_type_name(annotation)}, got {value!r}")
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return build(annotation, value, path=path, tree=tree, removals=removals)
    if value is None:
        raise ConfigError(f"{where}: {_dotted(path)!r} must be {_type_name(annotation)}, got null")
    checks: dict[Any, Callable[[Any], bool]] = {
        bool: lambda v: isinstance(v, bool),
        int: lambda v: isinstance(v, int) and not isinstance(v, bool),
        float: lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        str: lambda v: isinstance(v, str),
        list: lambda v: isinstance(v, list),
        dict: lambda v: isinstance(v, dict),
    }
    check = checks.get(origin or annotation)
    if check is not None and not check(value):
        raise ConfigError(
            f"{where}: {_dotted(path)!r} must be {_type_name(annotation)}, got {type(value).__name__} {value!r}"
        )
    if annotation is float:
        return float(value)
    return copy.deepcopy(value)


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
        raise ConfigError(f"{where}: {_dotted(path)!r} must be a mapping for {cls.__name__}, got {data!r}")
    target = data.get(TARGET_KEY)
    if TARGET_KEY in data:
        # the block's _target_ line says which file defined it
        where = tree.where((*path, TARGET_KEY))
    if target is not None and target != class_path(cls):
        raise ConfigError(f"{where}: _target_ is {target!r} but this block builds {class_path(cls)!r}")
    init_fields = [f for f in dataclasses.fields(cls) if f.init]
    names = [f.name for f in init_fields]
    for key in data:
        if key != TARGET_KEY and key not in names:
            raise unknown_key_error(key, names, where=tree.where((*path, key)), owner=cls.__name__, removals=removals)
    hints = typing.get_type_hints(cls)
    kwargs = {
        f.name: _convert(data[f.name], hints[f.name], (*path, f.name), tree, removals)
        for f in init_fields
        if f.name in data
    }
    try:
        return cls(**kwargs)
    except (ValueError, TypeError, AssertionError) as err:
        raise ConfigError(f"{where}: {cls.__name__} rejected {_dotted(path)!r}: {err}") from err


def instantiate(tree: ConfigTree, *, removals: Mapping[str, Removal] = REMOVED_KEYS) -> dict[str, Any]:
    """Walk a composed config and build every block that has a `_target_` (strictly, with `build`);
    other mappings stay plain dicts."""

    def walk(node: Any, path: KeyPath) -> Any:
        if isinstance(node, Mapping):
            if TARGET_KEY in node:
                cls = resolve_target(node[TARGET_KEY], where=tree.where((*path, TARGET_KEY)))
                return build(cls, node, path=path, tree=tree, removals=removals)
            return {k: walk(v, (*path, k)) for k, v in node.items()}
        return copy.deepcopy(node)

    return walk(tree.data, ())


def instantiate_unchecked(data: Mapping[str, Any]) -> Any:
    """What a plain `cls(**yaml_block)` does (upstream's path without a schema check): nested
    `_target_` blocks are built the same way, and an unknown key surfaces as Python's own
    "unexpected keyword argument" TypeError, with no file, line or way forward."""

    def walk(node: Any) -> Any:
        if isinstance(node, Mapping):
            items = {k: walk(v) for k, v in node.items() if k != TARGET_KEY}
            return resolve_target(node[TARGET_KEY])(**items) if TARGET_KEY in node else items
        return node

    if not isinstance(data, Mapping) or TARGET_KEY not in data:
        raise ConfigError("instantiate_unchecked needs a mapping with a _target_")
    return walk(data)


def to_dict(instance: Any) -> dict[str, Any]:
    """A dataclass instance as YAML-ready data: `_target_` first, then fields in declaration order."""
    if not dataclasses.is_dataclass(instance) or isinstance(instance, type):
        raise TypeError(f"to_dict takes a dataclass instance, got {type(instance).__name__}")
    out: dict[str, Any] = {TARGET_KEY: class_path(type(instance))}
    for f in dataclasses.fields(instance):
        value = getattr(instance, f.name)
        out[f.name] = to_dict(value) if dataclasses.is_dataclass(value) else copy.deepcopy(value)
    return out


def dump_yaml(data: Mapping[str, Any]) -> str:
    """YAML text in the project's one style: block style, keys in insertion order."""
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


def yaml_field_mismatches(cls: type, data: Mapping[str, Any], path: KeyPath = ()) -> dict[str, list[str]]:
    """Compare a YAML block with its dataclass, recursing into dataclass-typed fields:
    'yaml_only' keys (instantiation will fail) and 'dataclass_only' fields (the YAML is incomplete)."""
    hints = typing.get_type_hints(cls)
    out: dict[str, list[str]] = {"yaml_only": [], "dataclass_only": []}
    names = field_names(cls)
    for key in data:
        if key != TARGET_KEY and key not in names:
            out["yaml_only"].append(_dotted((*path, key)))
    for name in names:
        if name not in data:
            out["dataclass_only"].append(_dotted((*path, name)))
            continue
        sub = hints[name]
        if isinstance(sub, type) and dataclasses.is_dataclass(sub) and isinstance(data[name], Mapping):
            nested = yaml_field_mismatches(sub, data[name], (*path, name))
            for kind in out:
                out[kind].extend(nested[kind])
    return out


# ---------------------------------------------------------------------------------------------
# the generated flat config and its golden check

GENERATED_HEADER = (
    "# This file is generated from {root} by verlstudy.lessons.l09_dead_config.configs.generate_flat_config\n"
    "# (the analogue of verl's scripts/generate_trainer_config.sh). Do not modify it directly:\n"
    "# edit the source YAML, regenerate, and commit both.\n"
)


def generate_flat_config(root: str | Path) -> str:
    """The composed config as one flat YAML text with a 'generated, do not edit' header.
    Deterministic: keys keep composition order, so the same sources always give the same bytes."""
    root = Path(root)
    return GENERATED_HEADER.format(root=root.name) + "\n" + dump_yaml(compose(root).data)


def write_generated(root: str | Path, out: str | Path) -> Path:
    """Regenerate the flat config and write it to `out` (what the generate script does)."""
    out = Path(out)
    out.write_text(generate_flat_config(root), encoding="utf-8")
    return out


def generated_diff(generated: str | Path, root: str | Path, *, context: int = 2) -> str:
    """The unified diff from the committed `generated` file to a fresh regeneration from `root`
    ('' when they agree); file labels are `a/<name>` and `b/<name>`, never full paths."""
    generated, root = Path(generated), Path(root)
    if isinstance(context, bool) or not isinstance(context, int) or context < 0:
        raise ValueError(f"context must be a non-negative int (lines around each change), got {context!r}")
    if not generated.is_file():
        raise ConfigError(f"generated config {generated.name!r} does not exist: run write_generated first")
    fresh = generate_flat_config(root).splitlines(keepends=True)
    stored = generated.read_text(encoding="utf-8").splitlines(keepends=True)
    diff = difflib.unified_diff(stored, fresh, f"a/{generated.name}", f"b/{generated.name}", n=context)
    return "".join(diff).rstrip("\n")


def check_generated(generated: str | Path, root: str | Path, *, context: int = 2) -> None:
    """Regenerate from `root` and compare with the committed `generated` file, like the pre-commit
    hook's `git diff --exit-code`: StaleGeneratedConfigError with a unified diff when they differ."""
    diff = generated_diff(generated, root, context=context)
    if diff:
        raise StaleGeneratedConfigError(
            f"{Path(generated).name} is stale: it differs from a fresh regeneration of {Path(root).name}; "
            f"regenerate it and commit the result.\n{diff}",
            diff,
        )


# ---------------------------------------------------------------------------------------------
# dead fields by AST


@dataclass(frozen=True)
class DeadField:
    """A config field that no code acts on: never read, or only copied into names never read."""

    name: str
    copied_into: tuple[str, ...]  # e.g. ('self._is_offload_grad',)
    sites: tuple[str, ...]  # 'engine.py:27' for every read of the field

    def __str__(self) -> str:
        if not self.copied_into:
            return f"{self.name}: never read"
        into = ", ".join(self.copied_into)
        return f"{self.name}: copied into {into} ({', '.join(self.sites)}), which is never read"


def _sources(source_files: Mapping[str, str] | Sequence[str | Path]) -> dict[str, str]:
    if isinstance(source_files, Mapping):
        return {str(k): v for k, v in source_files.items()}
    if isinstance(source_files, str | Path):
        raise TypeError("source_files must be a list of paths or a mapping of name -> source text")
    out = {}
    for p in source_files:
        p = Path(p)
        out[p.name] = p.read_text(encoding="utf-8")
    return out


def _attr_name(node: ast.AST) -> str | None:
    """The attribute a node reads: `x.name`, `getattr(x, "name")` or `x["name"]` in load context."""
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
        return node.attr
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[1].value
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.ctx, ast.Load)
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        return node.slice.value
    return None


@dataclass
class _Read:
    file: str
    node: ast.AST
    parent: ast.AST | None
    scope: ast.AST  # the enclosing function (or module), where a local copy would be read


def _index_reads(sources: dict[str, str]) -> tuple[dict[str, list[_Read]], dict[int, list[str]]]:
    reads: dict[str, list[_Read]] = {}
    local_loads: dict[int, list[str]] = {}  # id(scope) -> names loaded in it
    for name, text in sources.items():
        try:
            module = ast.parse(text, filename=name)
        except SyntaxError as err:
            raise ConfigError(f"{name}:{err.lineno}: cannot parse Python source: {err.msg}") from None

        def visit(node: ast.AST, parent: ast.AST | None, scope: ast.AST, file: str = name) -> None:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                scope = node
            attr = _attr_name(node)
            if attr is not None:
                reads.setdefault(attr, []).append(_Read(file, node, parent, scope))
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                local_loads.setdefault(id(scope), []).append(node.id)
            for child in ast.iter_child_nodes(node):
                visit(child, node, scope)

        visit(module, None, module)
    return reads, local_loads


def _copy_targets(read: _Read) -> list[tuple[str, str]] | None:
    """If the read is only copied (`target = <read>`), the targets as (kind, name); else None."""
    parent = read.parent
    if isinstance(parent, ast.Assign) and parent.value is read.node:
        targets = parent.targets
    elif isinstance(parent, ast.AnnAssign) and parent.value is read.node:
        targets = [parent.target]
    else:
        return None
    out = []
    for t in targets:
        if isinstance(t, ast.Attribute):
            out.append(("attr", t.attr))
        elif isinstance(t, ast.Name):
            out.append(("local", t.id))
        else:
            return None  # unpacking or subscripts: treat as a real use
    return out


def dead_fields(source_files: Mapping[str, str] | Sequence[str | Path], config_class: type) -> list[DeadField]:
    """Fields of `config_class` that no code in `source_files` acts on, in field order.

    A field is live when some read of it is used (in a condition, a call, arithmetic...). A read
    that is only copied (`self._x = cfg.field`, `x = cfg.field`) counts when the copy is itself
    live, followed through any chain of copies. Matching is by attribute name, whatever the object,
    so the search is conservative: it never calls a read field dead, and may miss a dead field whose
    name is also used for something else. `source_files`: paths, or a mapping name -> source text.
    """
    names = field_names(config_class)
    sources = _sources(source_files)
    reads, local_loads = _index_reads(sources)

    def live(attr: str, seen: frozenset[str]) -> tuple[bool, list[str], list[str]]:
        """(is live, copy targets seen, read sites) for reads of attribute `attr`."""
        into: list[str] = []
        sites: list[str] = []
        for read in reads.get(attr, []):
            sites.append(f"{read.file}:{read.node.lineno}")
            targets = _copy_targets(read)
            if targets is None:
                return True, into, sites
            for kind, target in targets:
                if kind == "local":
                    into.append(target)
                    if target in local_loads.get(id(read.scope), []):
                        return True, into, sites
                else:
                    into.append(f"self.{target}" if target.startswith("_") else f".{target}")
                    if target not in seen and live(target, seen | {target})[0]:
                        return True, into, sites
        return False, into, sites

    out = []
    for name in names:
        is_live, into, sites = live(name, frozenset({name}))
        if not is_live:
            out.append(DeadField(name, tuple(into), tuple(sites)))
    return out


# ---------------------------------------------------------------------------------------------
# working on a copy of a config package


def import_fresh(package_dir: str | Path) -> ModuleType:
    """Import the package in `package_dir` under its own name, dropping any cached copy first, so
    that `_target_` paths resolve to this copy's classes (e.g. after editing a temporary copy)."""
    package_dir = Path(package_dir)
    if not (package_dir / "__init__.py").is_file():
        raise ValueError(f"{package_dir.name!r} is not a package folder (no __init__.py)")
    name = package_dir.name
    for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[mod]
    importlib.invalidate_caches()
    sys.path.insert(0, str(package_dir.parent))
    # no __pycache__ in the fixture folders
    old_flag, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        return importlib.import_module(name)
    finally:
        sys.dont_write_bytecode = old_flag
        sys.path.remove(str(package_dir.parent))


def copy_package(package_dir: str | Path, dest_parent: str | Path) -> Path:
    """Copy a package folder into `dest_parent` (same folder name); return the copy's path."""
    package_dir, dest_parent = Path(package_dir), Path(dest_parent)
    if not package_dir.is_dir():
        raise ValueError(f"no package folder {package_dir.name!r}")
    dest = dest_parent / package_dir.name
    shutil.copytree(package_dir, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def replace_once(path: str | Path, old: str, new: str) -> None:
    """Edit a file by replacing text that must occur exactly once (an edit that cannot half-apply)."""
    path = Path(path)
    if not isinstance(old, str) or not old:
        raise ValueError("old must be a non-empty string")
    text = path.read_text(encoding="utf-8")
    count = text.count(old)
    if count != 1:
        raise ValueError(f"{path.name}: expected the text to replace exactly once, found it {count} times: {old!r}")
    path.write_text(text.replace(old, new), encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# exercises


def _reference_attribute_reads(source: str) -> set[str]:
    return {n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}


ATTRIBUTE_READ_CASES: tuple[tuple[str, str], ...] = (
    ("a copy", "self._is_offload_grad = config.grad_offload\n"),
    ("a condition", "if self._is_offload_param:\n    move(self.module)\n"),
    ("a chain", "mode = engine.config.router_replay.mode\n"),
    ("stores only", "self.a = 1\nself.b = self.c = 2\n"),
    ("a call argument", "to(device, model=self._is_offload_param, grad=self._is_offload_param)\n"),
)


def check_attribute_reads(attribute_reads: Callable[[str], set[str]]) -> str:
    """Checker for exercise 9.1: `attribute_reads(source)` -> the attribute names read (ast.Load)."""
    for label, source in ATTRIBUTE_READ_CASES:
        want = _reference_attribute_reads(source)
        got = attribute_reads(source)
        if not isinstance(got, set):
            raise ExerciseFailure(f"return a set of names, got {type(got).__name__}")
        extra, missing = sorted(got - want), sorted(want - got)
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


def check_yaml_only_keys(yaml_only_keys: Callable[[type, Mapping[str, Any]], list[str]]) -> str:
    """Checker for exercise 9.2: `yaml_only_keys(cls, data)` -> sorted dotted keys that are not fields."""
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
                "recurse into fields whose type is a dataclass, with a dotted prefix"
                if any("." in k for k in want)
                else "compare the keys with the names in dataclasses.fields(cls)"
            )
            raise ExerciseFailure(f"on {label} you returned {got}, expected {want}: {hint}")
    return f"{len(YAML_ONLY_CASES)} blocks"
