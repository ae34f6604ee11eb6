"""Lesson 09 on verl's own source: a config class's fields read with `ast`, and the dead-field search
run over a whole verl release (the installed 0.9.1, and 0.9.0 that `make setup` fetches).

Nothing here imports verl: its files are read as text (`verlstudy.kit.upstream.verl_root`), so the
search runs without verl's dependencies.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from verlstudy.kit.upstream import UpstreamMoved, verl_root, verl_version
from verlstudy.lessons.l09_dead_config.errors import ConfigError
from verlstudy.lessons.l09_dead_config.field_reads import DeadField, dead_fields

ENGINE_CONFIG = "workers/config/engine.py"  # EngineConfig, McoreEngineConfig
BASE_CONFIG = "base_config.py"  # BaseConfig, with its `_target_: str = ""` field


def _classes(sources: Mapping[str, str]) -> dict[str, ast.ClassDef]:
    found: dict[str, ast.ClassDef] = {}
    for file, text in sources.items():
        try:
            module = ast.parse(text, filename=file)
        except SyntaxError as err:
            raise ConfigError(f"{file}:{err.lineno}: cannot parse Python source: {err.msg}") from None
        for node in module.body:
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, node)
    return found


def _base_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_classvar(annotation: ast.expr) -> bool:
    target = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    return _base_name(target) == "ClassVar"


def dataclass_fields(sources: Mapping[str, str], class_name: str) -> list[str]:
    """The field names of dataclass `class_name`, in `dataclasses.fields` order, read from source with
    `ast` (without importing it): base classes found in `sources` first, then the class's own annotated
    names (a redeclared field keeps its first place; `ClassVar`s and plain assignments are not fields)."""
    if not isinstance(sources, Mapping):
        raise TypeError("sources must be a mapping of file name -> Python source text")
    classes = _classes(sources)
    if class_name not in classes:
        raise LookupError(f"no top-level class {class_name!r} in {', '.join(sorted(sources)) or 'no sources'}")

    def walk(name: str, seen: frozenset[str]) -> list[str]:
        node = classes[name]
        out: list[str] = []
        for base in node.bases:  # dataclasses collect fields from bases in reverse MRO; for single bases, base first
            base_id = _base_name(base)
            if base_id in classes and base_id not in seen:
                out += [f for f in walk(base_id, seen | {base_id}) if f not in out]
        for stmt in node.body:
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and not _is_classvar(stmt.annotation)
                and stmt.target.id not in out
            ):
                out.append(stmt.target.id)
        return out

    return walk(class_name, frozenset({class_name}))


def release_sources(relative: list[str], release: str | None = None) -> dict[str, str]:
    """{'verl/<relative>': text} for files of the installed verl (`release=None`) or an earlier release."""
    root = verl_root(release)
    out = {}
    for rel in relative:
        path = root / rel
        if not path.is_file():
            raise UpstreamMoved(f"verl {release or 'installed'} has no file verl/{rel}")
        out[f"verl/{rel}"] = path.read_text(encoding="utf-8")
    return out


def engine_config_fields(class_name: str = "McoreEngineConfig", release: str | None = None) -> list[str]:
    """Upstream's config fields, from `verl/workers/config/engine.py` and `verl/base_config.py` (ast only)."""
    return dataclass_fields(release_sources([BASE_CONFIG, ENGINE_CONFIG], release), class_name)


def package_files(root: Path) -> list[Path]:
    """Every .py file of a package folder, sorted (the order is the same on every machine)."""
    if not root.is_dir():
        raise FileNotFoundError(f"no package folder {root.name!r}")
    return sorted(root.rglob("*.py"))


@dataclass(frozen=True)
class ReleaseScan:
    """The dead-field search over one verl release: the class's fields and those no code acts on."""

    release: str
    class_name: str
    fields: tuple[str, ...]
    dead: tuple[DeadField, ...]
    files: int  # .py files searched

    def dead_names(self) -> list[str]:
        return [d.name for d in self.dead]


@functools.lru_cache(maxsize=8)
def scan_release(release: str | None = None, class_name: str = "McoreEngineConfig") -> ReleaseScan:
    """Run `dead_fields` for upstream's `class_name` over every .py file of a verl release (keyed
    'verl/...', relative to the folder holding the package). Cached: a release's files do not change."""
    root = verl_root(release)
    files = package_files(root)
    fields = engine_config_fields(class_name, release)
    dead = dead_fields(files, fields, root=root.parent)
    return ReleaseScan(verl_version(release), class_name, tuple(fields), tuple(dead), len(files))


def scan_keyed_by_name(
    release: str | None = None, class_name: str = "McoreEngineConfig", only: tuple[str, ...] | None = None
) -> ReleaseScan:
    """The old bug, reconstructed: sources keyed by file name, so a later `utils.py` replaces an earlier
    one. `files` is how many survive; fields read only in a replaced file look dead. `only` limits the
    search to some fields (each falsely dead field costs a parse of every file that mentions it)."""
    root = verl_root(release)
    by_name = {p.name: p.read_text(encoding="utf-8") for p in package_files(root)}
    fields = engine_config_fields(class_name, release)
    dead = dead_fields(by_name, [f for f in fields if only is None or f in only])
    return ReleaseScan(verl_version(release), class_name, tuple(fields), tuple(dead), len(by_name))
