"""Lesson 09's read index: every attribute read (`x.name`, `getattr(x, "name")`, `x["name"]`) in a set of
sources, by name and file, which the dead-field search (`field_reads`) and the reflective-read search
(`reflective`) walk.

Sources are keyed by their path (relative to the folder they share), so two files with the same name never
hide each other (verl has many `utils.py` and `__init__.py`). Files are parsed lazily: `reads_of(name)` parses
only the files whose text spells a read of `name` (`.name`, also with spaces, line breaks, backslashes or a
comment after the dot; or "name" where a read takes a string: `getattr(x, "name")`, `x["name"]`), which keeps a
search over the whole verl package fast. That test assumes what a by-name search assumes anyway: a read's name
and a string's content are written out in the source, not built from escapes or from two string literals
joined. A file is parsed and walked once per text (`source_file`), so the files two releases share, or two
searches over the same sources, cost one parse; what the walk found is kept, the tree itself is not.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from verlstudy.common.heap import collector_paused
from verlstudy.kit.params import check_path, check_str
from verlstudy.lessons.l09_dead_config.errors import ConfigError
from verlstudy.lessons.l09_dead_config.reflective import NameTest, reads_reflectively, typed_rows
from verlstudy.lessons.l09_dead_config.syntax import _CHILD_FIELDS, WORD, _child_fields


def source_texts(
    source_files: Mapping[str, str] | Sequence[str | Path], root: str | Path | None = None
) -> dict[str, str]:
    """{key: source text}, keyed by path: a mapping is taken as it is; paths are keyed relative to
    `root` (default: the folder they all share), with '/' separators, so same-named files stay apart."""
    if isinstance(source_files, Mapping):
        return {
            str(k): check_str(f"source_files[{k!r}]", v, what="Python source text (a str)")
            for k, v in source_files.items()
        }
    if isinstance(source_files, str | Path) or not isinstance(source_files, Sequence):
        raise TypeError("source_files must be a list of paths or a mapping of name -> source text")
    paths = [
        check_path(f"source_files[{i}]", p, what="a file's path (str or Path)") for i, p in enumerate(source_files)
    ]
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


# between a dot (or a read's `[` or `,`) and what it reads: spaces, line breaks, backslashes, comments to line end
_READ_GAP = r"(?:[\s\\]|#[^\n]*+)*+"
# `.name`; `. name`, `.\<newline>name`, `(x.<newline>name)` and a comment between the dot and the name. The name
# is matched in a lookahead, so a match takes only the dot and every dot is tried (one in a comment a gap runs over)
_DOTTED = re.compile(rf"\.(?={_READ_GAP}({WORD}))")
# a string a read takes: getattr(x, "name"), x["name"], x[("name")] (not f("name")); the gap as above, or a `(`
_QUOTED_READ = re.compile(rf"[\[,](?=(?:[\s\\(]|#[^\n]*+)*+[rRbBuUfF]{{0,2}}[\"']{{1,3}}({WORD})[\"'])")
# any string that can be just "name": "name", 'name', and the pieces of an f-string: f"{x}name{y}", f"{x:name}"
_QUOTED = re.compile(rf"[\"'}}:]({WORD})(?=[\"'{{}}])")


@functools.lru_cache(maxsize=4096)
def _spellings(text: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """The names `text` writes after a dot, as a string where a read takes one (`getattr(x, "name")`,
    `x["name"]`), and as any string or f-string piece."""
    return frozenset(_DOTTED.findall(text)), frozenset(_QUOTED_READ.findall(text)), frozenset(_QUOTED.findall(text))


@functools.lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    return frozenset(re.findall(WORD, text))


CopyTargets = tuple[tuple[str, str], ...]  # ('attr', '_x') for `self._x = <read>`, ('local', 'x') for `x = <read>`


@dataclass(frozen=True)
class _Read:
    file: str
    line: int
    copied_into: CopyTargets | None  # where the read is only copied (`copy_targets`); None: it is used
    loads: frozenset[str] | set[str]  # the names loaded in the enclosing function (or module)


def copy_targets(node: ast.AST, parent: ast.AST | None) -> CopyTargets | None:
    """If the read `node` is only copied (`target = <read>`, `target: T = <read>`), the targets as (kind, name);
    None when it is used (a condition, a call, arithmetic, unpacking, a subscript target...)."""
    if isinstance(parent, ast.Assign) and parent.value is node:
        targets = parent.targets
    elif isinstance(parent, ast.AnnAssign) and parent.value is node:
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
    return tuple(out)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


class _ScopeEnd:
    """Pushed under a function's children: when it comes off the stack, the walk is back in the enclosing scope."""

    __slots__ = ("scope",)

    def __init__(self, scope: int) -> None:
        self.scope = scope


class SourceFile:
    """One source text, parsed and walked once: its attribute reads by name (line, copy targets and the names
    loaded in the function they are in, in walk order), the lines of its identifier strings by value, and (for a
    file that reads objects reflectively) `reflective.typed_rows`. The tree is not kept: ~10^5 live nodes per
    file would make every later garbage collection slower."""

    def __init__(self, file: str, text: str) -> None:
        self.text = text
        with collector_paused():  # a parse builds ~10^5 acyclic nodes; the tree goes before the collector is back
            try:
                tree = ast.parse(text, filename=file)
            except SyntaxError as err:
                raise ConfigError(f"{file}:{err.lineno}: cannot parse Python source: {err.msg}") from None
            self._walk(tree)
            self.typed_functions = typed_rows(tree, text)
            del tree

    def reads_of(self, name: str, file: str) -> Iterator[_Read]:
        """The reads of `name`, as found in `file` (this text's key), made one at a time: a search that stops at
        the first use builds no others."""
        loads = self.loads
        for line, into, scope in self.reads.get(name, ()):
            yield _Read(file, line, into, loads[scope])

    def _walk(self, module: ast.Module) -> None:
        """Depth first in `ast.iter_child_nodes` order: what `attribute_read` finds (with `copy_targets`, and the
        function it is in), the names each function loads, and the string constants that are identifiers."""
        Assign, AnnAssign, Attribute, Call, Constant, Load, Name, Subscript = (
            ast.Assign, ast.AnnAssign, ast.Attribute, ast.Call, ast.Constant, ast.Load, ast.Name, ast.Subscript
        )  # fmt: skip
        reads: dict[str, list[tuple[int, CopyTargets | None, int]]] = {}
        strings: dict[str, list[int]] = {}
        scopes: list[set[str]] = [set()]  # the names loaded in each function (or the module, first)
        copies: dict[int, CopyTargets] = {}  # id(value) -> targets, for each `targets = value` met so far
        scope = 0  # the function (or module) being walked
        stack: list = [module]
        push, pop, known_fields, ScopeEnd = stack.append, stack.pop, _CHILD_FIELDS, _ScopeEnd
        while stack:  # iterative, so deeply nested upstream code cannot hit the recursion limit
            node = pop()
            kind = type(node)
            if kind is Name:
                if type(node.ctx) is Load:
                    scopes[scope].add(node.id)
                continue
            if kind is Constant:
                if type(node.value) is str and node.value.isidentifier():
                    strings.setdefault(node.value, []).append(node.lineno)
                continue
            if kind is Attribute:
                if type(node.ctx) is Load:
                    reads.setdefault(node.attr, []).append((node.lineno, copies.get(id(node)), scope))
                push(node.value)
                continue
            if kind is ScopeEnd:
                scope = node.scope
                continue
            if kind is Call or kind is Subscript:
                attr = attribute_read(node)
                if attr is not None:
                    reads.setdefault(attr, []).append((node.lineno, copies.get(id(node)), scope))
            elif kind is Assign or kind is AnnAssign:
                targets = None if node.value is None else copy_targets(node.value, node)
                if targets is not None:
                    copies[id(node.value)] = targets
            elif kind in _SCOPES:
                push(ScopeEnd(scope))
                scope = len(scopes)
                scopes.append(set())
            fields = known_fields.get(kind) or _child_fields(kind)
            for field in fields:  # last field first, each list last item first: popped in order
                value = getattr(node, field, None)
                if type(value) is list:
                    stack.extend(reversed(value))
                elif value is not None:
                    push(value)
        # kept as tuples and frozensets of plain values, which the garbage collector soon stops tracking
        self.reads = {name: tuple(found) for name, found in reads.items()}
        self.strings = {value: tuple(lines) for value, lines in strings.items()}
        self.loads = tuple(frozenset(names) for names in scopes)


_FILES: dict[str, SourceFile] = {}
_FILES_KEPT = 1024


def source_file(file: str, text: str) -> SourceFile:
    """The `SourceFile` of `text`, made once per text: two releases, or two keyings of one release, share the
    walk of every file they have in common (`file` names it in a parse error). The oldest of 1024 are let go."""
    check_str("file", file, what="a file's name (a str)")
    check_str("text", text, what="Python source text (a str)")
    found = _FILES.get(text)
    if found is None:
        found = _FILES[text] = SourceFile(file, text)
        if len(_FILES) > _FILES_KEPT:
            del _FILES[next(iter(_FILES))]
    return found


class _ReadIndex:
    """Attribute reads by name and file over a set of sources. `reads_of(name)` walks the files that spell a
    read of `name`, parsing each only when reached, so a search that stops at the first use never parses
    unrelated files."""

    def __init__(self, sources: Mapping[str, str]) -> None:
        self.sources = dict(sources)
        self._position = {file: i for i, file in enumerate(self.sources)}
        self._spelled: tuple[dict[str, list[str]], ...] | None = None
        self._mentions: dict[str, list[str]] = {}
        self._reflective: dict[str, list] = {}  # class name -> reflective read sites (`reflective`)
        self._reflective_files: list[str] | None = None  # the files `reflective` looks in

    def file(self, file: str) -> SourceFile:
        return source_file(file, self.sources[file])

    def _spelling_index(self) -> tuple[dict[str, list[str]], ...]:
        """Name -> the files that write it (after a dot; as a string a read takes; as any string), in source
        order: `_spellings` inverted."""
        if self._spelled is None:
            found: tuple[dict[str, list[str]], ...] = ({}, {}, {})
            for file, text in self.sources.items():
                for names, files in zip(_spellings(text), found, strict=True):
                    for name in names:
                        files.setdefault(name, []).append(file)
            self._spelled = found
        return self._spelled

    def mentions(self, name: str) -> list[str]:
        """The files that spell a read of `name`, in source order."""
        if name not in self._mentions:
            dotted, read_quoted, _ = self._spelling_index()
            spelled = {*dotted.get(name, ()), *read_quoted.get(name, ())}
            self._mentions[name] = sorted(spelled, key=self._position.__getitem__)
        return self._mentions[name]

    def spelling_counts(self, names: Iterable[str]) -> dict[str, int]:
        """For each file, how many of `names` it writes after a dot: a search for all of them parses fewest
        files by trying the files that write most of them first."""
        dotted = self._spelling_index()[0]
        counts: dict[str, int] = {}
        for name in set(names):
            for file in dotted.get(name, ()):
                counts[file] = counts.get(file, 0) + 1
        return counts

    def reads_of(
        self, name: str, in_source_order: bool = False, prefer: Mapping[str, int] | None = None
    ) -> Iterator[_Read]:
        """Every read of `name`, file by file, in walk order within a file. The files come in source order when
        `in_source_order`; else those already walked first, then those writing `.name`, those with the highest
        `prefer` count first: a search that stops at the first use then parses the fewest files."""
        files = self.mentions(name)
        if not in_source_order:
            prefer = prefer or {}
            dotted = set(self._spelling_index()[0].get(name, ()))
            files = sorted(files, key=lambda f: (self.sources[f] not in _FILES, f not in dotted, -prefer.get(f, 0)))
        for file in files:
            yield from self.file(file).reads_of(name, file)

    def string_sites(self, name: str, first: int | None = None) -> list[str]:
        """'file:line' of every string constant `name` (written as a string or an f-string piece), in source
        order; only the `first` ones (the files after them are not parsed)."""
        sites: list[str] = []
        for file in self._spelling_index()[2].get(name, []):
            if first is not None and len(sites) >= first:
                break
            sites += [f"{file}:{line}" for line in self.file(file).strings.get(name, ())]
        return sites[:first]

    def files_naming(self, name: str, among: Sequence[str] | None = None) -> list[str]:
        """The files (of `among`, default all) in which `name` occurs as a whole word (an identifier or a
        string's content), in source order."""
        texts = ((f, self.sources[f]) for f in (self.sources if among is None else among))
        return [f for f, text in texts if name in text and name in _words(text)]  # the substring test is quick


def _index_reads(sources: dict[str, str]) -> tuple[dict[str, list[_Read]], dict[int, set[str]]]:
    """Every attribute read in every source, in source order, and the names each function (by id) loads: the
    plain eager walk, which the lazy `_ReadIndex` must agree with (the tests hold them together)."""
    found: dict[str, list[tuple[str, ast.AST, ast.AST | None, ast.AST]]] = {}
    loads: dict[int, set[str]] = {}
    modules = []  # kept to the end: a freed function's id could be reused by another file's, merging their loads
    for file, text in sources.items():
        try:
            module = ast.parse(text, filename=file)
        except SyntaxError as err:
            raise ConfigError(f"{file}:{err.lineno}: cannot parse Python source: {err.msg}") from None
        modules.append(module)
        stack: list[tuple[ast.AST, ast.AST | None, ast.AST]] = [(module, None, module)]
        while stack:
            node, parent, scope = stack.pop()
            if isinstance(node, _SCOPES):
                scope = node
            loads.setdefault(id(scope), set())
            attr = attribute_read(node)
            if attr is not None:
                found.setdefault(attr, []).append((file, node, parent, scope))
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                loads[id(scope)].add(node.id)
            stack.extend((child, node, scope) for child in reversed(list(ast.iter_child_nodes(node))))
    reads = {
        name: [
            _Read(file, node.lineno, copy_targets(node, parent), loads[id(scope)]) for file, node, parent, scope in r
        ]
        for name, r in found.items()
    }
    return reads, loads


def reflective_reads(sources: Mapping[str, str] | _ReadIndex, class_name: str) -> list[str]:
    """'file:line' of every reflective read of a variable annotated with `class_name` (a function parameter or an
    annotated assignment in the same function): code that reads such a config's fields by computed name.

    Only files that mention `class_name` are parsed. A reflective read of an object whose type is not written
    down (or of `self` inside the config's own methods) is not found: the search stays a by-name search there.
    A read inside a loop that filters the fields by name reads only some of them: `reflective_filters` says which.
    """
    return [site for site, _ in reflective_filters(sources, class_name)]


def reflective_filters(
    sources: Mapping[str, str] | _ReadIndex, class_name: str
) -> list[tuple[str, tuple[NameTest, ...]]]:
    """('file:line', filter) for each reflective read `reflective_reads` finds: the fields it reads are those
    whose names pass the filter (`passes`); () reads every field."""
    if not isinstance(class_name, str) or not class_name.isidentifier():
        raise TypeError(f"class_name must be a class name, got {class_name!r}")
    index = sources if isinstance(sources, _ReadIndex) else _ReadIndex(source_texts(sources))
    if class_name in index._reflective:
        return list(index._reflective[class_name])
    found: dict[str, set[tuple[NameTest, ...]]] = {}
    if index._reflective_files is None:
        index._reflective_files = [f for f, text in index.sources.items() if reads_reflectively(text)]
    for file in index.files_naming(class_name, among=index._reflective_files):
        for annotated, reflective in index.file(file).typed_functions:
            typed = {name for name, annotation in annotated if class_name in annotation}
            for target, line, tests in reflective:
                if target in typed:
                    found.setdefault(f"{file}:{line}", set()).add(tests)
    sites = []
    for site in sorted(found, key=lambda site: (site.rsplit(":", 1)[0], int(site.rsplit(":", 1)[1]))):
        # one line read twice, once filtered and once not, reads every field
        tests = found[site]
        sites.append((site, () if () in tests or len(tests) > 1 else next(iter(tests))))
    index._reflective[class_name] = sites
    return list(sites)
