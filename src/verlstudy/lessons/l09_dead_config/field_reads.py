"""Lesson 09's dead-field search: config fields that code copies somewhere and never reads, found with `ast`.

In verl 0.9.0 `grad_offload` was copied into `self._is_offload_grad`, which nothing read; `dead_fields`
finds such fields by following every read of a field through its chain of copies. Sources are keyed
by their path (relative to the folder they share), so two files with the same name never hide each
other (verl has many `utils.py` and `__init__.py`). Files are parsed lazily, only those whose text
mentions a name being followed, which keeps a search over the whole verl package fast.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from verlstudy.lessons.l09_dead_config.errors import ConfigError
from verlstudy.lessons.l09_dead_config.schema import field_names


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


def source_texts(
    source_files: Mapping[str, str] | Sequence[str | Path], root: str | Path | None = None
) -> dict[str, str]:
    """{key: source text}, keyed by path: a mapping is taken as it is; paths are keyed relative to
    `root` (default: the folder they all share), with '/' separators, so same-named files stay apart."""
    if isinstance(source_files, Mapping):
        return {str(k): v for k, v in source_files.items()}
    if isinstance(source_files, str | Path) or not isinstance(source_files, Sequence):
        raise TypeError("source_files must be a list of paths or a mapping of name -> source text")
    paths = [Path(p) for p in source_files]
    if not paths:
        return {}
    base = Path(root) if root is not None else Path(os.path.commonpath([p.parent for p in paths]))
    out: dict[str, str] = {}
    for p in paths:
        try:
            key = p.relative_to(base).as_posix()
        except ValueError:
            raise ValueError(f"source file {p.name!r} is not inside root {base.name!r}") from None
        out[key] = p.read_text(encoding="utf-8")
    return out


def attribute_read(node: ast.AST) -> str | None:
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


class _ReadIndex:
    """Attribute reads by name and file, for the files parsed so far. `reads_of(name)` walks the files
    whose text contains `name` (a file that reads it must) and parses each only when reached, so a
    search that stops at the first use never parses unrelated files."""

    def __init__(self, sources: Mapping[str, str]) -> None:
        self.sources = dict(sources)
        self.parsed: set[str] = set()
        self.reads: dict[str, dict[str, list[_Read]]] = {}  # name -> file -> reads
        self.local_loads: dict[int, set[str]] = {}  # id(scope) -> names loaded in it

    def reads_of(self, name: str) -> Iterator[_Read]:
        mentions = [file for file, text in self.sources.items() if name in text]
        # files already parsed, then those writing `.name`, are likeliest to hold a use: try them first
        mentions.sort(key=lambda f: (f not in self.parsed, f".{name}" not in self.sources[f]))
        for file in mentions:
            text = self.sources[file]
            if file not in self.parsed:
                self._index(file, text)
            yield from self.reads.get(name, {}).get(file, [])

    def index_all(self) -> None:
        for file, text in self.sources.items():
            if file not in self.parsed:
                self._index(file, text)

    def _index(self, file: str, text: str) -> None:
        self.parsed.add(file)
        try:
            module = ast.parse(text, filename=file)
        except SyntaxError as err:
            raise ConfigError(f"{file}:{err.lineno}: cannot parse Python source: {err.msg}") from None
        stack: list[tuple[ast.AST, ast.AST | None, ast.AST]] = [(module, None, module)]
        while stack:  # iterative, so deeply nested upstream code cannot hit the recursion limit
            node, parent, scope = stack.pop()
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                scope = node
            attr = attribute_read(node)
            if attr is not None:
                self.reads.setdefault(attr, {}).setdefault(file, []).append(_Read(file, node, parent, scope))
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self.local_loads.setdefault(id(scope), set()).add(node.id)
            stack.extend((child, node, scope) for child in reversed(list(ast.iter_child_nodes(node))))


def _index_reads(sources: dict[str, str]) -> tuple[dict[str, list[_Read]], dict[int, set[str]]]:
    """Every attribute read in every source (the eager form of the index `dead_fields` builds lazily)."""
    index = _ReadIndex(sources)
    index.index_all()
    reads = {name: [r for file_reads in by_file.values() for r in file_reads] for name, by_file in index.reads.items()}
    return reads, index.local_loads


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


def _field_list(config: type | Iterable[str]) -> list[str]:
    if isinstance(config, type):
        return field_names(config)
    if isinstance(config, str) or not isinstance(config, Iterable):
        raise TypeError(f"config must be a dataclass type or a list of field names, got {config!r}")
    names = list(config)
    if not all(isinstance(n, str) and n.isidentifier() for n in names):
        raise TypeError(f"field names must be identifiers, got {names!r}")
    return names


def dead_fields(
    source_files: Mapping[str, str] | Sequence[str | Path],
    config: type | Iterable[str],
    *,
    root: str | Path | None = None,
) -> list[DeadField]:
    """Fields of `config` (a dataclass, or field names read from source) that no code in
    `source_files` acts on, in field order. Names starting with '_' (`_target_`) are not searched.

    A field is live when some read of it is used (in a condition, a call, arithmetic...). A read
    that is only copied (`self._x = cfg.field`, `x = cfg.field`) counts when the copy is itself
    live, followed through any chain of copies. Matching is by attribute name, whatever the object,
    so the search is conservative: it never calls a read field dead, and may miss a dead field whose
    name is also used for something else. `source_files`: paths (keyed relative to `root`, default
    their shared folder), or a mapping path -> source text.
    """
    names = [n for n in _field_list(config) if not n.startswith("_")]
    index = _ReadIndex(source_texts(source_files, root))

    def live(attr: str, seen: frozenset[str], into: list[str], sites: list[str]) -> bool:
        for read in index.reads_of(attr):
            sites.append(f"{read.file}:{read.node.lineno}")
            targets = _copy_targets(read)
            if targets is None:
                return True
            for kind, target in targets:
                if kind == "local":
                    into.append(target)
                    if target in index.local_loads.get(id(read.scope), set()):
                        return True
                else:
                    into.append(f"self.{target}" if target.startswith("_") else f".{target}")
                    if target not in seen and live(target, seen | {target}, [], []):
                        return True
        return False

    out = []
    for name in names:
        into: list[str] = []
        sites: list[str] = []
        if not live(name, frozenset({name}), into, sites):
            out.append(DeadField(name, tuple(into), tuple(sites)))
    return out
