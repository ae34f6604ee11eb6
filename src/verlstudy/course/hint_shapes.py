"""Does a hint state its exercise's solution? Code fragments of the hint compared with the solution by shape.

A hint may say where to look and what to do in words; it must not hold a piece of the solution's code or
its formula. Every span of the hint's words that parses as a Python expression (backticked or not) is
compared with every expression of the solution cell, names and numbers masked: `2 * S * H * itemsize`
matches `2 * seq * hidden * size`. Fragments of fewer than `MIN_NODES` nodes (`x`, `f(x)`, `a.b`) are
words, not formulas, and are ignored.
"""

from __future__ import annotations

import ast
import copy
import re

MIN_NODES = 5
MAX_WORDS = 24


class _Mask(ast.NodeTransformer):
    def generic_visit(self, node: ast.AST) -> ast.AST:
        if hasattr(node, "ctx"):
            node.ctx = ast.Load()  # `x` read or written is the same shape
        return super().generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Name(id="_", ctx=ast.Load())

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        return ast.Constant(value=0 if isinstance(node.value, (int, float, complex)) else "_")

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        return ast.Attribute(value=self.visit(node.value), attr="_", ctx=ast.Load())

    def visit_keyword(self, node: ast.keyword) -> ast.AST:
        return ast.keyword(arg="_", value=self.visit(node.value))


def _size(node: ast.AST) -> int:
    return sum(
        1
        for n in ast.walk(node)
        if not isinstance(n, (ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop))
    )


def shape(node: ast.AST) -> str:
    """The masked dump of an expression: its structure with every name and number replaced."""
    return ast.dump(_Mask().visit(copy.deepcopy(node)))


def solution_shapes(source: str) -> set[str]:
    """The masked shape of every expression of at least MIN_NODES nodes in the solution's code."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {shape(n) for n in ast.walk(tree) if isinstance(n, ast.expr) and _size(n) >= MIN_NODES}


def hint_fragments(text: str) -> list[ast.expr]:
    """Every expression of at least MIN_NODES nodes a hint's text holds: backticked spans, and runs of words."""
    spans = re.findall(r"`([^`]+)`", text)
    words = re.sub(r"`", " ", text).split()
    for i in range(len(words)):
        for j in range(i + 1, min(len(words), i + MAX_WORDS) + 1):
            spans.append(" ".join(words[i:j]).strip(",;:."))
    found = []
    for span in spans:
        try:
            node = ast.parse(span, mode="eval").body
        except (SyntaxError, ValueError):
            continue
        if _size(node) >= MIN_NODES:
            found.append(node)
    return found


def leaked_fragments(hint: str, solution: str) -> list[str]:
    """The fragments of `hint` whose shape is an expression of `solution` (empty when the hint gives nothing away)."""
    shapes = solution_shapes(solution)
    return sorted({ast.unparse(f) for f in hint_fragments(hint) if shape(f) in shapes})
