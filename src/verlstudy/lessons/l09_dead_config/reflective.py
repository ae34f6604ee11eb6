"""Lesson 09's reflective reads: code that reads a config's fields by computed name (`fields()` + `getattr`,
`asdict`, `vars`, `__dict__`), which the dead-field search (`field_reads`) cannot follow by name.

A loop over a config's fields that skips fields by name first (`for f in fields(cfg): if not
f.name.endswith("_implementation"): continue`, as verl 0.9.1's VeOmni engine does) reads only the fields
whose names pass: a field it skips gets no "cannot tell" from that loop (`reflective_filters`, `passes`).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable, Iterator

from verlstudy.lessons.l09_dead_config.syntax import WORD, child_nodes

REFLECTIVE_CALLS = frozenset({"fields", "asdict", "astuple", "vars"})
_REFLECTIVE_WORDS = ("fields(", "asdict(", "astuple(", "vars(", "getattr(", "__dict__")
# what a reflective read of a variable must spell (`_reflective_target`): fields/asdict/astuple/vars of a name,
# getattr of a name with a second argument that is not a plain string, or __dict__; any spaces or comments between
_GAP = r"(?:\s|\\|#[^\n]*)*+"  # possessive: the lookahead below cannot make it give back a space
REFLECTIVE_SPELLING = re.compile(
    rf"\b(?:fields|asdict|astuple|vars){_GAP}\({_GAP}[A-Za-z_]"
    rf"|\bgetattr{_GAP}\({_GAP}{WORD}{_GAP},{_GAP}(?![rRbBuU]{{0,2}}[\"'])"
    r"|__dict__"
)
_LINE_END = re.compile(r"\r\n?|\n")
_REFLECTIVE_HEADS = ("fields", "asdict", "astuple", "vars", "getattr", "__dict__")  # how every match begins


def spells_reflective_read(text: str, start: int = 0, end: int | None = None) -> bool:
    """`REFLECTIVE_SPELLING.search(text, start, end) is not None`, answered by trying the pattern only where a
    word it begins with occurs: a search from every position of a large file costs ~10x more."""
    end = len(text) if end is None else end
    for head in _REFLECTIVE_HEADS:
        at = text.find(head, start, end)
        while at != -1:
            if REFLECTIVE_SPELLING.match(text, at, end):
                return True
            at = text.find(head, at + 1, end)
    return False


@functools.lru_cache(maxsize=4096)
def reads_reflectively(text: str) -> bool:
    """Whether `text` calls `fields(`, `asdict(`, `astuple(`, `vars(` or `getattr(`, or uses `__dict__`, and may
    read a variable so (`REFLECTIVE_SPELLING`): `getattr(cfg, "name")` alone reads by name."""
    return any(word in text for word in _REFLECTIVE_WORDS) and spells_reflective_read(text)


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


def _outer_functions(module: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions not inside another function, found through statements only (a `def` is never inside an
    expression)."""
    stack: list[ast.AST] = list(reversed(module.body))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node
            continue
        for child in reversed(child_nodes(node)):
            if isinstance(child, ast.stmt | ast.excepthandler | ast.match_case):
                stack.append(child)


Row = tuple[list[tuple[str, str]], list[tuple[str, int, tuple[NameTest, ...]]]]


def typed_rows(module: ast.Module, text: str) -> list[Row]:
    """Per function of a module (whatever class is asked about): its annotated names with their annotations'
    text (parameters, and annotated assignments anywhere in its body, nested functions included), and its
    reflective reads (target, line, filter), nested functions included. A read inside a loop over the same
    variable's fields that filters them by name (`_loop_filter`) carries that filter: the loop itself, and a
    `getattr(x, <the loop's name>)` in it; any other reflective read carries () (every field). Only functions
    whose text (`text`, the module's source) spells a reflective read are walked: the others have none."""
    rows: list[Row] = []
    if not reads_reflectively(text):
        return rows
    Loops = tuple[tuple[str, str, tuple[NameTest, ...]], ...]
    start: Loops = ()
    starts = [0] + [m.end() for m in _LINE_END.finditer(text)]  # where each line starts, as ast counts
    for function in _outer_functions(module):
        first = min((d.lineno for d in function.decorator_list), default=function.lineno)
        end = starts[function.end_lineno] if function.end_lineno < len(starts) else len(text)
        if not spells_reflective_read(text, starts[first - 1], end):
            continue
        stack: list[tuple[ast.AST, tuple[int, ...], Loops]] = [(function, (), start)]
        while stack:  # each node with the rows of the functions enclosing it and the filtering loops around it
            node, enclosing, loops = stack.pop()
            kind = type(node)
            if kind is ast.Name or kind is ast.Constant:
                continue  # nothing to find, nothing below
            if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                params = (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)
                rows.append(([(a.arg, ast.unparse(a.annotation)) for a in params if a.annotation is not None], []))
                enclosing = (*enclosing, len(rows) - 1)
            elif kind is ast.AnnAssign and isinstance(node.target, ast.Name):
                for row in enclosing:
                    rows[row][0].append((node.target.id, ast.unparse(node.annotation)))
            elif kind is ast.Attribute or kind is ast.Call:
                target = _reflective_target(node)
                if target is not None:
                    tests = _filter_of(node, target, loops)
                    for row in enclosing:
                        rows[row][1].append((target, node.lineno, tests))
            elif kind is ast.For:
                loop = _loop_filter(node)
                if loop is not None and loop[2]:
                    inner = (*loops, loop)
                    stack.append((node.iter, enclosing, inner))
                    stack.extend((child, enclosing, inner) for child in node.body)
                    stack.extend((child, enclosing, loops) for child in (node.target, *node.orelse))
                    continue
            stack += [(child, enclosing, loops) for child in child_nodes(node)]
    return rows


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
