"""Lesson 09's dead-field search: config fields that code copies somewhere and never reads, found with `ast`.

In verl 0.9.0 `grad_offload` was copied into `self._is_offload_grad`, which nothing read; `dead_fields`
finds such fields by following every read of a field through its chain of copies.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
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
            attr = attribute_read(node)
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
