"""A static check on source text: is every value stored under ``"model_output"`` wrapped in `detach_tree`?

CI cannot assert GPU memory. Upstream's regression test for the leak is #6699's weakref test. The static
check of the four engine call sites the course's digest of #7874 mentions is in a verl fork, not in verl:
zhiyu-zhao-ucas/verl_meta_token (commit 9ac85640), tests/workers/test_engine_detach_tree_on_cpu.py, requires
every "model_output" subscript store or dict key in the four engines' transformer_impl.py to be a direct
`detach_tree(...)` call (that rule passes on verl 0.9.1 and fails on 0.9.0 at the four stores #7874 wrapped);
verl's repository, as we can read it, does not hold it. This module is the course's own, wider check. It finds every
place a value is *stored* under a key (default ``"model_output"``):

- a dict display entry ``{"model_output": v}`` (at any nesting depth);
- a subscript assignment ``out["model_output"] = v`` (also annotated assignments);
- ``dict(model_output=v)`` and ``out.update(model_output=v)``;
- ``out.setdefault("model_output", v)``;
- a write *into* the stored dict, ``out["model_output"]["k"] = v`` or
  ``out.setdefault("model_output", {})["k"] = v``: the literal ``{}`` holds nothing, but what is
  written into it afterwards is judged like any stored value (kind ``write into model_output['k']``).

A key may be a string literal or a module-level name bound to one (``KEY = "model_output"``).
A store is *wrapped* when its value is a call to the wrapper (``detach_tree(...)`` or
``utils.detach_tree(...)``), a name whose last earlier assignment in the same function is such a call
and runs unconditionally before the store (aliasing through a variable; ``(name := ...)`` counts too),
or a literal with no names in it (``{}``, ``None``: nothing there can hold a graph). Any other
rebinding in between (tuple unpacking, ``+=``, a ``for`` or ``with`` target) makes the value unknown.
Everything else is reported, unless it is a write whose inner key a reviewer has cleared by name
(``reviewed={"routed_experts": "why"}``): a name rule cannot see a dtype, so integer routing indices
look exactly like live log-probs to it. The check is
deliberately conservative: an assignment inside an ``if``/``for``/``try`` that does not also enclose
the store does not count, because it may not have run.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from verlstudy.common.heap import collector_paused
from verlstudy.kit.params import check_path

__all__ = [
    "EXAMPLE_ENGINES",
    "UPSTREAM_ENGINES",
    "Store",
    "check_sources",
    "find_stores",
    "stored_outputs_without",
    "unwrap_calls",
    "upstream_engine_files",
]

# The four engines whose transformer_impl.py stores model_output per micro-batch (verl 0.9.1 paths under verl/).
UPSTREAM_ENGINES: tuple[str, ...] = ("fsdp", "megatron", "automodel", "torchtitan")
# The example engines in data/engines: one per upstream engine, plus one shape of the course's own.
EXAMPLE_ENGINES: tuple[str, ...] = (*UPSTREAM_ENGINES, "course_alias")

_MAX_ALIAS_HOPS = 8


@dataclass(frozen=True)
class Store:
    """One place a value is stored under the key: where, how, what, and whether it is wrapped."""

    line: int
    col: int
    kind: str
    function: str
    value: str
    wrapped: bool
    reason: str
    written_key: str | None = None  # for a write into the stored dict: the inner key written

    def describe(self) -> str:
        verdict = "ok" if self.wrapped else "NOT WRAPPED"
        return f"line {self.line} in {self.function}: {self.kind} = {self.value} -> {verdict} ({self.reason})"


def _check_text(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    return value


def _check_identifier(name: str, value: object) -> str:
    _check_text(name, value)
    if not value.isidentifier():  # type: ignore[union-attr]
        raise ValueError(f"{name} must be a Python identifier such as 'detach_tree', got {value!r}")
    return value  # type: ignore[return-value]


@functools.lru_cache(maxsize=16)
def _parse(source: str) -> ast.Module:
    # Cached: a lesson checks the same engine files more than once; nothing here mutates a tree.
    # Collector paused: an engine file's ~10^4 new nodes form no cycles, yet would set off whole-heap collections.
    try:
        with collector_paused():
            return ast.parse(source)
    except SyntaxError as e:
        raise ValueError(f"source is not valid Python: {e.msg} at line {e.lineno}") from e


def _short(node: ast.AST, limit: int = 60) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _module_string_constants(tree: ast.Module) -> dict[str, str]:
    consts: dict[str, str] = {}
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
        ):
            consts[stmt.targets[0].id] = stmt.value.value
    return consts


def _parent_links(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    """Every node below `tree` -> its parent, in `ast.walk` order (breadth first, children in field order).

    The same links as ``ast.walk`` + ``ast.iter_child_nodes``, a few times faster on an engine file: one
    pass over each node's fields instead of two generators per node.
    """
    parent: dict[ast.AST, ast.AST] = {}
    queue = [tree]
    for node in queue:  # the list grows while it is read: a breadth-first walk without a deque
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, ast.AST):
                parent[value] = node
                queue.append(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        parent[item] = node
                        queue.append(item)
    return parent


@functools.lru_cache(maxsize=16)
def _parents(source: str) -> dict[ast.AST, ast.AST]:
    # Cached with the parse: find_stores and unwrap_calls walk the same engine file; nothing mutates the map.
    return _parent_links(_parse(source))


class _Context:
    """Parent links and scope lookups for one parsed module."""

    def __init__(self, source: str, key: str, wrapper: str) -> None:
        self.key = key
        self.wrapper = wrapper
        self.consts = _module_string_constants(_parse(source))
        self.parent = _parents(source)

    def is_key(self, node: ast.AST | None) -> bool:
        if isinstance(node, ast.Constant):
            return node.value == self.key
        if isinstance(node, ast.Name):
            return self.consts.get(node.id) == self.key
        return False

    def is_wrapper_call(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        return (isinstance(func, ast.Name) and func.id == self.wrapper) or (
            isinstance(func, ast.Attribute) and func.attr == self.wrapper
        )

    def scope_of(self, node: ast.AST) -> ast.AST:
        cur = self.parent.get(node)
        while cur is not None and not isinstance(cur, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            if isinstance(cur, ast.Module):
                return cur
            cur = self.parent.get(cur)
        return cur if cur is not None else node

    def statement_of(self, node: ast.AST) -> ast.stmt:
        cur: ast.AST = node
        while not isinstance(cur, ast.stmt):
            cur = self.parent[cur]
        return cur

    def blocks_above(self, stmt: ast.AST, scope: ast.AST) -> list[ast.AST]:
        # The chain of compound statements (if/for/try/...) between a statement and its scope.
        chain = []
        cur = self.parent.get(stmt)
        while cur is not None and cur is not scope:
            chain.append(cur)
            cur = self.parent.get(cur)
        return chain


def _scope_name(scope: ast.AST) -> str:
    if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
        return scope.name
    if isinstance(scope, ast.Lambda):
        return "<lambda>"
    return "<module>"


def _in_comprehension_target(ctx: _Context, node: ast.AST) -> bool:
    # `for a, stored in ...` inside a comprehension: the Name sits in a Tuple under the comprehension.
    cur = ctx.parent.get(node)
    while isinstance(cur, ast.Tuple | ast.List | ast.Starred):
        cur = ctx.parent.get(cur)
    return isinstance(cur, ast.comprehension)


def _assignments_to(ctx: _Context, scope: ast.AST, name: str) -> list[tuple[ast.stmt, ast.AST | None]]:
    """Every binding of `name` directly in this scope, in source order: (statement, assigned value).

    The value is known for `name = v`, `name: T = v` and `(name := v)`; any other binding (tuple
    unpacking, `+=`, a `for` or `with` target, ...) gives None: the name then holds something unknown.
    """
    found: list[tuple[ast.stmt, ast.AST | None]] = []
    for node in ast.walk(scope):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)):
            continue
        if ctx.scope_of(node) is not scope:
            continue
        parent = ctx.parent.get(node)
        if _in_comprehension_target(ctx, node):
            continue  # a comprehension's loop variable is local to the comprehension
        if isinstance(parent, ast.AnnAssign) and parent.value is None:
            continue  # `name: T` without a value binds nothing
        direct = (
            (isinstance(parent, ast.Assign) and node in parent.targets)
            or isinstance(parent, ast.AnnAssign | ast.NamedExpr)  # the Name is their (only) target
        )
        found.append((ctx.statement_of(node), parent.value if direct else None))  # type: ignore[union-attr]
    return sorted(found, key=lambda sv: (sv[0].lineno, sv[0].col_offset))


def _is_grad_free_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Dict):
        return all(k is not None and _is_grad_free_literal(k) for k in node.keys) and all(
            _is_grad_free_literal(v) for v in node.values
        )
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return all(_is_grad_free_literal(e) for e in node.elts)
    return False


def _judge(ctx: _Context, value: ast.AST, store_stmt: ast.stmt) -> tuple[bool, str]:
    """Whether a stored value is provably wrapped, and why (following simple aliases)."""
    wrapper = f"{ctx.wrapper}(...)"
    scope = ctx.scope_of(store_stmt)
    current, at = value, store_stmt
    for _ in range(_MAX_ALIAS_HOPS):
        if ctx.is_wrapper_call(current):
            return True, f"wrapped in {wrapper}" if current is value else f"alias of {wrapper}"
        if _is_grad_free_literal(current):
            return True, "a literal: holds no tensors"
        if isinstance(current, ast.NamedExpr):  # `(name := value)`: judge the value
            current = current.value
            continue
        if not isinstance(current, ast.Name):
            if at is store_stmt:
                return False, f"value is not wrapped in {wrapper}"
            return False, f"assigned on line {at.lineno} from {_short(current, 40)}, not from {wrapper}"
        earlier = [(s, v) for s, v in _assignments_to(ctx, scope, current.id) if s.lineno < at.lineno]
        if not earlier:
            return False, f"{current.id!r} is not assigned from {wrapper} in this function"
        stmt, assigned = earlier[-1]
        # The assignment counts only if every block around it also surrounds the store.
        if not set(ctx.blocks_above(stmt, scope)) <= set(ctx.blocks_above(at, scope)):
            return False, f"{current.id!r} is assigned on line {stmt.lineno} only conditionally"
        if assigned is None:
            kind = type(stmt).__name__
            return False, f"{current.id!r} is rebound on line {stmt.lineno} ({kind}), not from {wrapper}"
        current, at = assigned, stmt
    return False, f"alias chain longer than {_MAX_ALIAS_HOPS} assignments"


def _is_stored_dict(ctx: _Context, node: ast.AST) -> bool:
    # `out["model_output"]` or `out.setdefault("model_output", ...)`: the dict stored under the key.
    if isinstance(node, ast.Subscript):
        return ctx.is_key(node.slice)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "setdefault"
        and bool(node.args)
        and ctx.is_key(node.args[0])
    )


def _written_key(node: ast.AST) -> str | None:
    target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
    if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant):
        return str(target.slice.value)
    return None


def _stores(ctx: _Context) -> Iterator[tuple[ast.AST, str, ast.AST]]:
    """(node, kind, stored value) for every store under the key."""
    for node in ctx.parent:  # every node but the module itself, already walked once by _Context
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if ctx.is_key(k):
                    yield node, "dict entry", v
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if not isinstance(t, ast.Subscript) or node.value is None:
                    continue
                if ctx.is_key(t.slice):
                    yield node, "subscript assignment", node.value
                elif _is_stored_dict(ctx, t.value):
                    yield node, f"write into {ctx.key}[{_short(t.slice)}]", node.value
        elif isinstance(node, ast.Call):
            func = node.func
            is_dict_call = isinstance(func, ast.Name) and func.id == "dict"
            is_update = isinstance(func, ast.Attribute) and func.attr == "update"
            if is_dict_call or is_update:
                for kw in node.keywords:
                    if kw.arg == ctx.key:
                        yield node, "dict(...) keyword" if is_dict_call else "update(...) keyword", kw.value
            if isinstance(func, ast.Attribute) and func.attr == "setdefault" and node.args and ctx.is_key(node.args[0]):
                default = node.args[1] if len(node.args) > 1 else ast.Constant(None)
                yield node, "setdefault", default


def _check_reviewed(reviewed: object) -> Mapping[str, str]:
    if not isinstance(reviewed, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in reviewed.items()
    ):
        raise TypeError("reviewed must map an inner key written into the stored dict to the reason it holds no graph")
    return reviewed


def find_stores(
    source: str, key: str = "model_output", wrapper: str = "detach_tree", reviewed: Mapping[str, str] | None = None
) -> list[Store]:
    """Every store under `key` in `source`, in line order, each judged wrapped in `wrapper` or not.

    `reviewed` clears writes into the stored dict by their inner key (e.g. ``{"routed_experts": why}``).
    """
    reviewed = _check_reviewed({} if reviewed is None else reviewed)
    _check_text("source", source)
    _check_text("key", key)
    if not key:
        raise ValueError("key must be a non-empty string such as 'model_output'")
    _check_identifier("wrapper", wrapper)
    ctx = _Context(source, key, wrapper)
    out = []
    for node, kind, value in _stores(ctx):
        stmt = ctx.statement_of(node)
        wrapped, reason = _judge(ctx, value, stmt)
        written = _written_key(stmt) if kind.startswith("write into") else None
        if not wrapped and written in reviewed:
            wrapped, reason = True, f"reviewed: {reviewed[written]}"
        out.append(
            Store(
                line=getattr(value, "lineno", stmt.lineno),
                col=getattr(value, "col_offset", stmt.col_offset),
                kind=kind,
                function=_scope_name(ctx.scope_of(stmt)),
                value=_short(value),
                wrapped=wrapped,
                reason=reason,
                written_key=written,
            )
        )
    return sorted(out, key=lambda s: (s.line, s.col))


def stored_outputs_without(name: str, source: str, key: str = "model_output") -> list[Store]:
    """The stores under `key` in `source` whose value is not (provably) wrapped in a call to `name`."""
    return [s for s in find_stores(source, key=key, wrapper=name) if not s.wrapped]


def check_sources(
    sources: Mapping[str, str],
    key: str = "model_output",
    wrapper: str = "detach_tree",
    reviewed: Mapping[str, str] | None = None,
) -> dict[str, list[Store]]:
    """Run `find_stores` over labelled sources; a source with no store at all is an error (wrong file?)."""
    if not isinstance(sources, Mapping) or not sources:
        raise ValueError("sources must be a non-empty mapping of label -> source text")
    report = {}
    for label, text in sources.items():
        try:
            stores = find_stores(text, key=key, wrapper=wrapper, reviewed=reviewed)
        except ValueError as e:  # name the engine file: "source is not valid Python" alone does not say which
            raise ValueError(f"{label}: {e}") from e
        if not stores:
            raise ValueError(f"{label}: no store under {key!r} found; is this an engine source?")
        report[label] = stores
    return report


def unwrap_calls(source: str, wrapper: str = "detach_tree") -> tuple[str, int]:
    """A copy of `source` with every one-argument ``wrapper(x)`` call turned into ``(x)``, and how many.

    Only the wrapper's name (and a trailing comma) goes; the parentheses and line breaks stay, so the
    copy parses and every line keeps its number.
    """
    _check_text("source", source)
    _check_identifier("wrapper", wrapper)
    data = source.encode()
    starts = [0]  # byte offset of each line's start: ast column offsets count UTF-8 bytes
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def at(line: int | None, col: int | None) -> int:
        return starts[(line or 1) - 1] + (col or 0)

    cuts = []
    ctx = _Context(source, key="model_output", wrapper=wrapper)
    for node in ctx.parent:
        if isinstance(node, ast.Call) and ctx.is_wrapper_call(node) and len(node.args) == 1 and not node.keywords:
            arg, func = node.args[0], node.func
            cuts.append((at(func.lineno, func.col_offset), at(func.end_lineno, func.end_col_offset)))
            i, close = at(arg.end_lineno, arg.end_col_offset), at(node.end_lineno, node.end_col_offset) - 1
            while i < close and data[i : i + 1] in (b" ", b"\t", b"\r", b"\n", b")"):  # past the arg's own parens
                i += 1
            cuts.append((i, i + 1) if data[i : i + 1] == b"," else (i, i))  # a trailing comma would make a tuple
    for lo, hi in sorted(cuts, reverse=True):
        data = data[:lo] + data[hi:]
    return data.decode(), len(cuts) // 2


def upstream_engine_files(verl_root: str | Path) -> dict[str, Path]:
    """Paths of upstream's four engine sources under an installed `verl` package directory."""
    root = check_path("verl_root", verl_root, what="the installed verl package directory (str or Path)")
    if not root.is_dir():
        raise ValueError(f"verl_root must be the installed verl package directory, got {str(root)!r}")
    paths = {name: root / "workers" / "engine" / name / "transformer_impl.py" for name in UPSTREAM_ENGINES}
    missing = [str(p.relative_to(root)) for p in paths.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"verl at this path lacks engine files: {', '.join(missing)}")
    return paths
