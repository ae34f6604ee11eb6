"""Lesson 09's dead-field search: config fields that code copies somewhere and never reads, found with `ast`.

In verl 0.9.0 `grad_offload` was copied into `self._is_offload_grad`, which nothing read; `dead_fields`
finds such fields by following every read of a field through its chain of copies. Sources are keyed
by their path (relative to the folder they share), so two files with the same name never hide each
other (verl has many `utils.py` and `__init__.py`). Files are parsed lazily, only those whose text
mentions a name being followed, which keeps a search over the whole verl package fast.

A loop over a config's fields that skips fields by name first (`for f in fields(cfg): if not
f.name.endswith("_implementation"): continue`, as verl 0.9.1's VeOmni engine does) reads only the fields
whose names pass: a field it skips gets no "cannot tell" from that loop.
"""

from __future__ import annotations

import ast
import os
import re
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
    reflective: tuple[str, ...] = ()  # where code reads the config's fields by computed name (fields()+getattr)

    @property
    def cannot_tell(self) -> bool:
        """No read by name, but the config is read reflectively: whether this field is used cannot be told."""
        return bool(self.reflective)

    def __str__(self) -> str:
        if self.reflective:
            return f"{self.name}: read reflectively: cannot tell ({', '.join(self.reflective)})"
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


REFLECTIVE_CALLS = frozenset({"fields", "asdict", "astuple", "vars"})
_REFLECTIVE_WORDS = ("fields(", "asdict(", "astuple(", "vars(", "getattr(", "__dict__")


def _called(node: ast.Call) -> str | None:
    return (
        node.func.id
        if isinstance(node.func, ast.Name)
        else node.func.attr
        if isinstance(node.func, ast.Attribute)
        else None
    )


def _reflective_target(node: ast.AST) -> str | None:
    """The variable whose fields a node reads by computed name: `fields(x)`, `asdict(x)`, `vars(x)`, `x.__dict__`,
    or `getattr(x, name)` with a name that is not a constant; None otherwise."""
    if isinstance(node, ast.Attribute) and node.attr == "__dict__" and isinstance(node.value, ast.Name):
        return node.value.id
    if not isinstance(node, ast.Call) or not node.args or not isinstance(node.args[0], ast.Name):
        return None
    called = _called(node)
    if called in REFLECTIVE_CALLS:
        return node.args[0].id
    if called == "getattr" and len(node.args) >= 2 and not isinstance(node.args[1], ast.Constant):
        return node.args[0].id
    return None


# A test on a field's name, as a loop's guard writes it: (method, constants, wanted), where method is
# 'endswith', 'startswith' or 'in' and a name passes when `name.<method>(constants)` (or `name in constants`)
# is `wanted`. A loop's filter is a tuple of such tests, all of which must hold; () lets every field through.
NameTest = tuple[str, tuple[str, ...], bool]


def passes(name: str, tests: Iterable[NameTest]) -> bool:
    """Whether a field called `name` gets past every test of a loop's filter."""
    for method, constants, wanted in tests:
        got = name in constants if method == "in" else getattr(name, method)(constants)
        if got != wanted:
            return False
    return True


def _strings(node: ast.AST) -> tuple[str, ...] | None:
    """The string constants `node` writes: 'x', or a tuple, list or set of them; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return (node.value,)
    if isinstance(node, ast.Tuple | ast.List | ast.Set) and node.elts:
        out = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return tuple(out) if len(out) == len(node.elts) else None
    return None


def _name_test(test: ast.AST, name: str) -> NameTest | None:
    """`test` as a NameTest on the expression `name` (ast.dump of it): `name.endswith(C)`, `not ...`,
    `name in C`, `name not in C`; None when it is anything else."""
    wanted = True
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, wanted = test.operand, not wanted
    if (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Attribute)
        and test.func.attr in ("endswith", "startswith")
        and ast.dump(test.func.value) == name
        and len(test.args) == 1
        and not test.keywords
    ):
        constants = _strings(test.args[0])
        return None if constants is None else (test.func.attr, constants, wanted)
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.In | ast.NotIn)
        and ast.dump(test.left) == name
    ):
        constants = _strings(test.comparators[0])
        return None if constants is None else ("in", constants, wanted == isinstance(test.ops[0], ast.In))
    return None


def _loop_filter(loop: ast.For) -> tuple[str, str, tuple[NameTest, ...]] | None:
    """For `for f in fields(x):` (`f.name` is the field's name) or a loop over the keys of `asdict(x)`, `vars(x)`
    or `x.__dict__` (the loop variable is the name): (x, ast.dump of the name expression, the tests on the name
    that the loop's body applies before anything else). The tests are its leading `if <test>: continue`
    guards, and, when what follows is one `if <test>:` with no `else`, that test too. None for other loops."""
    target = _reflective_target(loop.iter)
    if target is None or not isinstance(loop.target, ast.Name):
        return None
    kind = _called(loop.iter) if isinstance(loop.iter, ast.Call) else "__dict__"
    if kind not in ("fields", "asdict", "vars", "__dict__"):
        return None  # getattr(x, name) or astuple(x): the loop variable is a value, not a field's name
    variable = ast.Name(id=loop.target.id, ctx=ast.Load())
    name = ast.dump(ast.Attribute(value=variable, attr="name", ctx=ast.Load()) if kind == "fields" else variable)
    tests: list[NameTest] = []
    body = list(loop.body)
    while body and isinstance(body[0], ast.If) and not body[0].orelse and len(body[0].body) == 1:
        if not isinstance(body[0].body[0], ast.Continue):
            break
        found = _name_test(body[0].test, name)
        if found is None:
            break
        method, constants, wanted = found
        tests.append((method, constants, not wanted))  # the guard skips the fields that pass its test
        body.pop(0)
    if len(body) == 1 and isinstance(body[0], ast.If) and not body[0].orelse:
        found = _name_test(body[0].test, name)
        if found is not None:
            tests.append(found)
    return target, name, tuple(tests)


def _typed_functions(
    index: _ReadIndex, file: str
) -> list[tuple[list[tuple[str, str]], list[tuple[str, int, tuple[NameTest, ...]]]]]:
    """Per function of `file` (one walk of the module, whatever class is asked about): its annotated names with
    their annotations' text (parameters, and annotated assignments anywhere in its body, nested functions included),
    and its reflective reads (target, line, filter), nested functions included. A read inside a loop over the same
    variable's fields that filters them by name (`_loop_filter`) carries that filter: the loop itself, and a
    `getattr(x, <the loop's name>)` in it; any other reflective read carries () (every field)."""
    if file not in index._functions:
        rows: list[tuple[list[tuple[str, str]], list[tuple[str, int, tuple[NameTest, ...]]]]] = []
        Loops = tuple[tuple[str, str, tuple[NameTest, ...]], ...]
        start: Loops = ()
        stack: list[tuple[ast.AST, tuple[int, ...], Loops]] = [(index.tree(file), (), start)]
        while stack:  # each node with the rows of the functions enclosing it and the filtering loops around it
            node, enclosing, loops = stack.pop()
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                params = (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)
                rows.append(([(a.arg, ast.unparse(a.annotation)) for a in params if a.annotation is not None], []))
                enclosing = (*enclosing, len(rows) - 1)
            if enclosing:
                if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                    for row in enclosing:
                        rows[row][0].append((node.target.id, ast.unparse(node.annotation)))
                target = _reflective_target(node)
                if target is not None:
                    tests = _filter_of(node, target, loops)
                    for row in enclosing:
                        rows[row][1].append((target, node.lineno, tests))
            if isinstance(node, ast.For) and enclosing:
                loop = _loop_filter(node)
                if loop is not None and loop[2]:
                    inner = (*loops, loop)
                    stack.append((node.iter, enclosing, inner))
                    stack.extend((child, enclosing, inner) for child in node.body)
                    stack.extend((child, enclosing, loops) for child in (node.target, *node.orelse))
                    continue
            stack.extend((child, enclosing, loops) for child in ast.iter_child_nodes(node))
        index._functions[file] = rows
    return index._functions[file]


def _filter_of(node: ast.AST, target: str, loops: tuple[tuple[str, str, tuple[NameTest, ...]], ...]) -> tuple:
    """The name filter of a reflective read of `target`: that of the innermost filtering loop over `target`'s
    fields when the read is the loop's own iteration or a `getattr(target, <the loop's name>)`; else ()."""
    for var, name, tests in reversed(loops):
        if var != target:
            continue
        if isinstance(node, ast.Call) and _called(node) == "getattr":
            return tests if ast.dump(node.args[1]) == name else ()
        return tests
    return ()


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
    for file in index.files_naming(class_name):
        if not any(word in index.sources[file] for word in _REFLECTIVE_WORDS):
            continue
        for annotated, reflective in _typed_functions(index, file):
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
    class_name: str | None = None,
    index: _ReadIndex | None = None,
) -> list[DeadField]:
    """Fields of `config` (a dataclass, or field names read from source) that no code in
    `source_files` acts on, in field order. Names starting with '_' (`_target_`) are not searched.

    A field is live when some read of it is used (in a condition, a call, arithmetic...). A read
    that is only copied (`self._x = cfg.field`, `x = cfg.field`) counts when the copy is itself
    live, followed through any chain of copies. Matching is by attribute name, whatever the object,
    so it may miss a dead field whose name is also used for something else (`full_determinism` is read by
    some engines and not by Megatron's). A field with no read by name, in a config that code reads by computed
    name (`fields()` + `getattr`, `asdict`, `vars`: `reflective_reads`; a loop that skips fields by name first
    reads only those it keeps: `reflective_filters`), or whose name is written as a string
    somewhere (`optim_config.get(field)` over a tuple of names), is returned with `reflective` set: "read
    reflectively: cannot tell". `class_name` names the config class (default: `config`'s own name).
    `source_files`: paths (keyed relative to `root`, default their shared folder), or a mapping path -> text;
    `index` reuses the read index of an earlier search over the same sources.
    """
    names = [n for n in _field_list(config) if not n.startswith("_")]
    texts = source_texts(source_files, root) if index is None else index.sources
    index = index if index is not None else _ReadIndex(texts)
    cls = class_name or (config.__name__ if isinstance(config, type) else None)
    reflective = reflective_filters(index, cls) if cls else []

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
            named = tuple(index.strings.get(name, ()))[:2]  # e.g. a tuple of field names read with .get(field)
            reads = tuple(site for site, tests in reflective if passes(name, tests))
            out.append(DeadField(name, tuple(into), tuple(sites), reads or named))
    return out
