"""Lesson 09's walk over Python syntax trees: the child nodes that may hold an attribute read, and what a name is.

Shared by the read index (`read_index`) and the reflective-read search (`reflective`), so neither imports the other
for them.
"""

from __future__ import annotations

import ast

WORD = r"[A-Za-z_]\w*"  # an identifier as the searches spell it

# fields that never hold a node with a read, a loaded name or a string in it: load/store markers, operators, and
# names written as plain text (`def name`, `x.attr`, `import names`, keyword `arg=`)
_LEAF_FIELDS = frozenset({"ctx", "op", "ops", "name", "names", "id", "attr", "arg", "module", "level", "kind"})
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node type that may hold child nodes, last first (`()` for a value that is not a node)."""
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        fields = _CHILD_FIELDS[kind] = tuple(f for f in reversed(getattr(kind, "_fields", ())) if f not in _LEAF_FIELDS)
    return fields


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """`ast.iter_child_nodes(node)` as a list, less the nodes that hold no read, loaded name or string (`Load`,
    `Add`, `alias`...)."""
    out: list[ast.AST] = []
    for name in reversed(_child_fields(type(node))):
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            out.append(value)
        elif type(value) is list:
            out.extend(item for item in value if isinstance(item, ast.AST))
    return out
