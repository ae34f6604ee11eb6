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

from verlstudy.kit.params import check_items, check_str
from verlstudy.kit.tables import Table
from verlstudy.kit.upstream import UpstreamMoved, verl_root, verl_version
from verlstudy.lessons.l09_dead_config.errors import ConfigError
from verlstudy.lessons.l09_dead_config.field_reads import DeadField, dead_fields
from verlstudy.lessons.l09_dead_config.read_index import _ReadIndex, source_texts

ENGINE_CONFIG = "workers/config/engine.py"  # EngineConfig, McoreEngineConfig
BASE_CONFIG = "base_config.py"  # BaseConfig, with its `_target_: str = ""` field


@functools.lru_cache(maxsize=256)
def _parsed(file: str, text: str) -> ast.Module:
    try:
        return ast.parse(text, filename=file)
    except SyntaxError as err:
        raise ConfigError(f"{file}:{err.lineno}: cannot parse Python source: {err.msg}") from None


def _classes(sources: Mapping[str, str]) -> dict[str, ast.ClassDef]:
    found: dict[str, ast.ClassDef] = {}
    for file, text in sources.items():
        for node in _parsed(file, text).body:
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
    for file, text in sources.items():
        check_str(f"sources[{file!r}]", text, what="Python source text (a str)")
    check_str("class_name", class_name, what="a class name (a str)")
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
    relative = check_items("relative", relative, str, what="a path inside verl (a str, like 'base_config.py')")
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
    if not isinstance(root, str | Path):
        raise TypeError(f"root must be a package folder's path (str or Path), got {type(root).__name__} {root!r:.60}")
    root = Path(root)
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
        """Fields no code reads, by name or reflectively."""
        return [d.name for d in self.dead if not d.cannot_tell]

    def cannot_tell_names(self) -> list[str]:
        """Fields with no read by name, in a config read reflectively: whether they are used cannot be told."""
        return [d.name for d in self.dead if d.cannot_tell]


@functools.lru_cache(maxsize=8)
def scan_release(release: str | None = None, class_name: str = "McoreEngineConfig") -> ReleaseScan:
    """Run `dead_fields` for upstream's `class_name` over every .py file of a verl release (keyed
    'verl/...', relative to the folder holding the package). Cached: a release's files do not change."""
    index, fields = _release_index(release), engine_config_fields(class_name, release)
    dead = dead_fields({}, fields, class_name=class_name, index=index)
    return ReleaseScan(verl_version(release), class_name, tuple(fields), tuple(dead), len(index.sources))


@functools.lru_cache(maxsize=2)
def _release_index(release: str | None) -> _ReadIndex:
    root = verl_root(release)
    return _ReadIndex(source_texts(package_files(root), root.parent))


CONFIG_FOLDER = "workers/config"


def _is_dataclass_def(node: ast.ClassDef) -> bool:
    return any(_base_name(d.func if isinstance(d, ast.Call) else d) == "dataclass" for d in node.decorator_list)


@functools.lru_cache(maxsize=2)
def scan_config_classes(release: str | None = None) -> tuple[ReleaseScan, ...]:
    """The dead-field search for every dataclass defined in `verl/workers/config/*.py` of a release, in file
    and class order: one `ReleaseScan` each (fields read from source with `ast`, searched over the package)."""
    root = verl_root(release)
    folder = root / CONFIG_FOLDER
    config_files = sorted(p.relative_to(root).as_posix() for p in folder.glob("*.py"))
    sources = release_sources([BASE_CONFIG, *config_files], release)
    names = []
    for rel in config_files:
        module = _parsed(f"verl/{rel}", sources[f"verl/{rel}"])
        names += [n.name for n in module.body if isinstance(n, ast.ClassDef) and _is_dataclass_def(n)]
    index, version = _release_index(release), verl_version(release)
    count = len(index.sources)  # every .py file of the package
    scans = []
    for name in dict.fromkeys(names):
        fields = dataclass_fields(sources, name)
        dead = dead_fields({}, fields, class_name=name, index=index)
        scans.append(ReleaseScan(version, name, tuple(fields), tuple(dead), count))
    return tuple(scans)


def config_table(before: tuple[ReleaseScan, ...], after: tuple[ReleaseScan, ...]) -> Table:
    """A table (show it with `kit.tables.show_table`): each config class with a dead field in either release, and
    what was found."""
    before = check_items("before", before, ReleaseScan, what="a ReleaseScan (from scan_config_classes)")
    after = check_items("after", after, ReleaseScan, what="a ReleaseScan (from scan_config_classes)")
    if not before or not after:
        raise ValueError("config_table needs the scans of both releases: before and after must not be empty")
    old = {s.class_name: s for s in before}
    new = {s.class_name: s for s in after}
    header = ["class", "fields (old/new)", f"dead in {before[0].release}", f"dead in {after[0].release}",
              f"cannot tell in {after[0].release}"]  # fmt: skip
    rows = []
    for name in dict.fromkeys([*old, *new]):
        a, b = old.get(name), new.get(name)
        if not any(s and s.dead for s in (a, b)):
            continue
        cell = lambda s: ", ".join(s.dead_names()) if s else "(no class)"  # noqa: E731
        fields = f"{len(a.fields) if a else '-'}/{len(b.fields) if b else '-'}"
        rows.append([name, fields, cell(a) or "-", cell(b) or "-", len(b.cannot_tell_names()) if b else "-"])
    return Table.of(header, rows, align=["", "right", "", "", "right"])


def scan_keyed_by_name(
    release: str | None = None, class_name: str = "McoreEngineConfig", only: tuple[str, ...] | None = None
) -> ReleaseScan:
    """The old bug, reconstructed: sources keyed by file name, so a later `utils.py` replaces an earlier
    one. `files` is how many survive; fields read only in a replaced file look dead. `only` limits the
    search to some fields (each falsely dead field costs a parse of every file that mentions it)."""
    if only is not None:
        only = tuple(check_items("only", only, str, what="a field name (a str)"))
    root = verl_root(release)
    by_name = {p.name: p.read_text(encoding="utf-8") for p in package_files(root)}
    fields = engine_config_fields(class_name, release)
    dead = dead_fields(by_name, [f for f in fields if only is None or f in only])
    return ReleaseScan(verl_version(release), class_name, tuple(fields), tuple(dead), len(by_name))
