"""Lesson 09's config trees: YAML that remembers where every key came from, composed and overridden strictly.

- `parse_yaml` / `load_yaml`: a `ConfigTree` with the file and line of every key; duplicate keys are errors;
- `compose`: a root YAML with a `defaults` list mounting group files (as Hydra does);
- `merge` / `apply_overrides`: a user's file or `a.b.c=value` overrides, where every key must exist
  (a typo or a removed key fails with its line and a way forward, from `errors`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from verlstudy.kit.params import check_instance, check_path, got
from verlstudy.lessons.l09_dead_config.errors import REMOVED_KEYS, ConfigError, Removal, unknown_key_error

TARGET_KEY = "_target_"
DEFAULTS_KEY = "defaults"
SELF_ENTRY = "_self_"

KeyPath = tuple[str, ...]
_A_TREE = "a ConfigTree (from parse_yaml, load_yaml or compose)"


# ---------------------------------------------------------------------------------------------
# config trees: data plus where each key was written


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


def dotted(path: KeyPath) -> str:
    """A key path as text: 'actor.megatron', 'optim.betas[0]' (list items), or '<root>' for the empty path."""
    if isinstance(path, str) or not isinstance(path, tuple | list):
        raise TypeError(
            f"argument path must be a key path (a tuple of str, like ('actor', 'megatron')), got {got(path)}"
        )
    text = ""
    for key in path:
        if not isinstance(key, str):
            raise TypeError(f"argument path must hold str keys, got {got(key)} in {got(path)}")
        text += key if key.startswith("[") or not text else f".{key}"
    return text or "<root>"


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
    loader = yaml.SafeLoader(text)
    locations: dict[KeyPath, Location] = {}
    unfit: ConfigError | None = None  # raised after YAML's own errors, as if the locations were read last
    try:  # one parse: the node tree gives the locations, then the data (as safe_load builds it from the same tree)
        node = loader.get_single_node()
        try:  # before the data: building it merges '<<' keys away in the tree
            _collect_locations(node, (), source, locations)
        except ConfigError as err:
            unfit = err
        data = None if node is None else loader.construct_document(node)
    except yaml.YAMLError as err:
        raise _yaml_error(err, source) from None
    finally:
        loader.dispose()
    if data is None:
        return ConfigTree({}, {})
    if not isinstance(data, dict):
        raise ConfigError(f"{source}:1: the top level of a config must be a mapping, got {type(data).__name__}")
    if unfit is not None:
        raise unfit
    return ConfigTree(data, locations)


def load_yaml(path: str | Path, *, display: str | None = None) -> ConfigTree:
    """Read and parse a YAML file; errors name `display` (default: the file name, never a full path)."""
    path = check_path("path", path, what="a YAML file's path (str or Path)")
    if not path.is_file():
        raise FileNotFoundError(f"no YAML file {display or path.name!r}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:  # named like every other error here (the display name, never a full path)
        raise ConfigError(
            f"{display or path.name} is not UTF-8 text (byte {e.start}); save it as UTF-8 or restore it"
        ) from None
    return parse_yaml(text, display or path.name)


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
            raise ConfigError(f"cannot mount a config at {dotted(path)!r}: {key!r} is not a mapping")
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
    root = check_path("root", root, what="the root YAML file's path (str or Path)")
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
                    key, list(node), where=update.where((*path, key)), owner=repr(dotted(path)), removals=removals
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
    check_instance("tree", tree, ConfigTree, what=_A_TREE)
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
                raise ConfigError(f"{where}: {dotted(path[:depth])!r} is not a mapping")
            if key not in node and not (last and add):
                raise unknown_key_error(
                    key, list(node), where=where, owner=repr(dotted(path[:depth])), removals=removals
                )
            if last:
                node[key] = value
            else:
                node = node[key]
        out.locations[path] = Location(where)
    return out
