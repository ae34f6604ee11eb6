"""Lesson 09's read index: every attribute read (`x.name`, `getattr(x, "name")`, `x["name"]`) in a set of
sources, by name and file, which the dead-field search (`field_reads`) and the reflective-read search
(`reflective`) walk.

Sources are keyed by their path (relative to the folder they share), so two files with the same name never
hide each other (verl has many `utils.py` and `__init__.py`). Files are parsed lazily, only those whose text
mentions a name being followed, which keeps a search over the whole verl package fast.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from verlstudy.lessons.l09_dead_config.errors import ConfigError


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


_WORD = re.compile(r"[A-Za-z_]\w*")


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
        self.strings: dict[str, list[str]] = {}  # a name written as a string constant -> 'file:line' sites
        self._words: dict[str, list[str]] | None = None  # word -> files holding it, built on first use
        self._trees: dict[str, ast.Module] = {}
        self._reflective: dict[str, list[str]] = {}  # class name -> reflective read sites
        self._functions: dict[str, list] = {}  # file -> each function's annotated names and reflective reads

    def files_naming(self, name: str) -> list[str]:
        """The files in which `name` occurs as a whole word (an identifier or a string's content)."""
        if self._words is None:
            self._words = {}
            for file, text in self.sources.items():
                for word in set(_WORD.findall(text)):
                    self._words.setdefault(word, []).append(file)
        return list(self._words.get(name, ()))

    def tree(self, file: str) -> ast.Module:
        """The parsed module of `file` (parsed once)."""
        if file not in self._trees:
            try:
                self._trees[file] = ast.parse(self.sources[file], filename=file)
            except SyntaxError as err:
                raise ConfigError(f"{file}:{err.lineno}: cannot parse Python source: {err.msg}") from None
        return self._trees[file]

    def reads_of(self, name: str) -> Iterator[_Read]:
        # a read of `name` is written `.name`, `getattr(x, "name")` or `x["name"]`: only such files are parsed
        spellings = (f".{name}", f'"{name}"', f"'{name}'")
        mentions = [f for f in self.files_naming(name) if any(s in self.sources[f] for s in spellings)]
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
        module = self.tree(file)
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
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                self.strings.setdefault(node.value, []).append(f"{file}:{node.lineno}")
            stack.extend((child, node, scope) for child in reversed(list(ast.iter_child_nodes(node))))


def _index_reads(sources: dict[str, str]) -> tuple[dict[str, list[_Read]], dict[int, set[str]]]:
    """Every attribute read in every source (the eager form of the index `dead_fields` builds lazily)."""
    index = _ReadIndex(sources)
    index.index_all()
    reads = {name: [r for file_reads in by_file.values() for r in file_reads] for name, by_file in index.reads.items()}
    return reads, index.local_loads
