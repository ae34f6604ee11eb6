"""Exercise 9.1's checker and reference: `attribute_reads(source)`, the attribute names Python code reads.
Registered by `checks` (import that).

Contract. `attribute_reads(source)` returns the set of names `name` for which running the code `source` would
evaluate an attribute access `obj.name` for its value, as Python's parser writes the code: an `obj.name` the
parser marks as a load, wherever it sits (a chain `a.b.c` reads `b` and `c`; the object of a store or a `del`,
`b` in `a.b.c = v` and in `del a.b.c`; a called method; a decorator, a default, an annotation, a base class,
an f-string's field, a walrus' value, a comprehension's own scope, a lambda, a `match` value pattern), and the
target of an augmented assignment (`cfg.a += 1` reads `a`, then stores it). Not reads: an attribute only stored
(`=`, an annotated assignment, a `for`/`with` target, unpacking) or deleted; plain variable names; dotted module
names of `import`; keyword argument names; text in strings and comments; numbers such as `1.e5`. A name read by
another spelling (`getattr(x, "name")` or `hasattr` with a constant name, a class pattern's `Point(x=0)`) may be
returned or not; a name computed at run time (`getattr(x, key)`) is never known, so neither it nor `key` is.
Each name once: a `set` (a `frozenset`, or a list without repeats, passes too). The source text is not changed.

Domain: sources built from statements over verl's config and engine names (`grad_offload`, `_is_offload_param`,
`router_replay`, `__init__`...), every statement kind above with the attribute written with blanks, a line break
or a backslash after its dot, the same name read in one place and stored in another, strings and comments that
spell attributes, and the lesson's fixture engine; a seeded sweep tries every statement kind, then random draws.
"""

from __future__ import annotations

import ast
import io
import random
import tokenize
from collections.abc import Callable
from typing import Any

from verlstudy.kit import i18n
from verlstudy.kit.exercises import checker
from verlstudy.kit.properties import Case, compare_on_inputs
from verlstudy.lessons.l09_dead_config.read_index import _index_reads, attribute_read


def _reference_attribute_reads(source: str) -> set[str]:
    nodes = _nodes(source)
    return _attrs(nodes, ast.Load) | _augmented(nodes)  # an augmented assignment reads before it writes


def _other_spellings(source: str) -> set[str]:
    """Names read by another spelling, which an answer may return or not: getattr/hasattr with a constant name
    and a class pattern's keywords (`case Point(x=0)` reads `x`)."""
    out: set[str] = set()
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("getattr", "hasattr"):
            if len(n.args) >= 2 and isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str):
                out.add(n.args[1].value)
        elif isinstance(n, ast.MatchClass):
            out.update(n.kwd_attrs)
    return out


def _judged(fn: Callable[[str], object]) -> Callable[[str], object]:
    """The learner's answer with the names it may return or not taken out (where the reference does not read
    them by attribute syntax too), so the comparison sees only what the contract fixes."""

    def read(source: str) -> object:
        got = fn(source)
        if not isinstance(got, set | frozenset | list | tuple):
            return got
        free = _other_spellings(source) - _reference_attribute_reads(source)
        kept = [name for name in got if not (isinstance(name, str) and name in free)]
        return type(got)(kept) if not isinstance(got, set | frozenset) else set(kept)

    read.__name__ = "attribute_reads"
    return read


# ---------------------------------------------------------------- generated sources

# verl's config and engine names, dunders, and names that are also plain variables or keywords' neighbours
ATTRS = ("grad_offload", "param_offload", "optimizer_offload", "_is_offload_param", "_is_offload_grad", "mode",
         "router_replay", "config", "use_mbridge", "record_file", "__init__", "engine", "x", "real")  # fmt: skip
OBJECTS = ("self", "cfg", "config", "engine", "self.engine", "get_config()", "xs[0]", "(a or b)", "super()", '"."')
# one statement each; {0} {1} {2} are attribute names, {o} an object; every kind the contract names
STATEMENTS = (
    "self._x = {o}.{0}",
    "{o}.{0} = {o}.{1}",
    "{o}.{0}.{1} = value",
    "{o}.{0}[{o}.{1}] = 3",
    "{o}.{0} += 1",
    "{o}.{0}.{1} -= {o}.{2}",
    "{o}.{0}[0] *= 2",
    "counter += {o}.{0}",
    "del {o}.{0}",
    "del {o}.{0}.{1}",
    "del {o}.{0}[0]",
    "self.{0}: int = 1",
    "self.{0}: {o}.{1} = {o}.{2}",
    "for self.{0} in {o}.{1}:\n    pass",
    "with {o}.{0}() as self.{1}:\n    pass",
    "self.{0}, *self.{1} = {o}.{2}",
    "if (n := {o}.{0}) and {o}.{1} == {o}.{2}:\n    pass",
    "values = [y.{0} for y in {o}.{1} if y.{2}]",
    "table = {{k.{0}: v for k, v in {o}.{1}.items()}}",
    "print(f'{{{o}.{0}!r:>{{{o}.{1}}}}}')",
    "def step(a={o}.{0}, *, b: {o}.{1} = None) -> {o}.{2}:\n    return a",
    "@{o}.{0}\ndef wrapped():\n    yield {o}.{1}",
    "class Box({o}.{0}):\n    size = {o}.{1}\n    {2} = 3",
    "callback = lambda c=None: c.{0}.{1}",
    "async def run():\n    await {o}.{0}()\n    async with {o}.{1} as h:\n        pass",
    "try:\n    pass\nexcept {o}.{0} as error:\n    raise {o}.{1}(error)",
    "assert {o}.{0}, {o}.{1}",
    "match {o}.{0}:\n    case Mode.{1}:\n        pass\n    case Point({2}=0):\n        pass",
    "value = getattr({o}, {q}{0}{q}, None) or getattr({o}, key)",
    "ok = hasattr({o}, {q}{0}{q})",
    "import os.{0}\nfrom a.{1} import {2}",
    "call({2}={o}.{0}, {1}=1)",
    "{0} = {1}\n{2}({0})",
    "note = '{o}.{0}'  # {o}.{1} in a comment",
    "scale = 1.e5 + 2.j + {o} . {0} + {o}.\\\n    {1}",
    "total = ({o}.\n    {0} + 1 .real)",
    "if {o}.{0}:\n    {o}.{0} = None",
    "{o}.{0}.{1}({o}.{2})",
)


def _statement(template: str, names: list[str], obj: str, quote: str = '"') -> str:
    return template.format(*names, o=obj, q=quote)


def _source_inputs() -> Any:
    from hypothesis import strategies as st

    names = st.lists(st.sampled_from(ATTRS), min_size=3, max_size=3, unique=True)
    statement = st.tuples(st.sampled_from(STATEMENTS), names, st.sampled_from(OBJECTS)).map(lambda t: _statement(*t))
    return st.lists(statement, min_size=0, max_size=4).map(lambda ls: ("\n".join(ls) + "\n",))


def _swept_cases(seed: int = 9) -> list[Case]:
    """Every statement kind once, each with names and an object drawn at random (seeded), then the lesson's
    fixture engine: a sweep, so no kind depends on what the random draws reach."""
    from verlstudy.kit.resources import data_dir

    rng = random.Random(seed)
    cases = []
    for template in STATEMENTS:
        names = rng.sample(ATTRS, 3)
        text = _statement(template, names, rng.choice(OBJECTS), rng.choice("\"'")) + "\n"
        named = i18n.pick("generated: {statement}", statement=repr(template.splitlines()[0][:40]))  # per check
        cases.append(Case((text,), named))
    engine = data_dir() / "engine_config" / "engine.py"
    cases.append(Case((engine.read_text(encoding="utf-8"),), "the lesson's fixture engine.py"))
    return cases


ATTRIBUTE_READ_CASES = [
    Case(("self._is_offload_grad = config.grad_offload\n",), "a copy: the value read, the target stored"),
    Case(("if self._is_offload_param:\n    move(self.module)\n",), "a condition and its body"),
    Case(("mode = engine.config.router_replay.mode\n",), "a chain three attributes deep"),
    Case(("self.a = 1\nself.b = self.c = 2\n",), "stores only: nothing is read"),
    Case(("to(device, model=self._is_offload_param, grad=self._is_offload_grad)\n",), "attributes as call arguments"),
    Case(("del cfg.grad_offload\nx = cfg.mode\n",), "a `del` removes an attribute, it does not read it"),
    Case(("x = 1\n\ny = x.param_offload\n",), "the read is not in the first statement"),
    Case(("def f(cfg):\n    return cfg.use_mbridge\n",), "a read inside a function body"),
    Case(("",), "an empty module"),
    Case(("self.cfg.grad_offload = True\n",), "a store into an attribute of an attribute reads the outer one"),
    Case(("if cfg.mode:\n    use(cfg.mode)\n",), "the same attribute read twice: each name once"),
    Case(("self.engine.offload(cfg.mode)\n",), "a method called on an attribute"),
    Case(("self.steps += 1\n",), "an augmented assignment reads the attribute, then stores it"),
]


# ---------------------------------------------------------------- naming the mistake


def _nodes(source: str) -> list[ast.AST]:
    return list(ast.walk(ast.parse(source)))


def _attrs(nodes: list[ast.AST], ctx: type) -> set[str]:
    return {n.attr for n in nodes if isinstance(n, ast.Attribute) and isinstance(n.ctx, ctx)}


def _augmented(nodes: list[ast.AST]) -> set[str]:
    return {n.target.attr for n in nodes if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Attribute)}


def _words_outside_code(source: str) -> set[str]:
    """Words in strings, comments and numbers: where a text search finds names no code reads."""
    out: set[str] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (tokenize.STRING, tokenize.COMMENT, tokenize.NUMBER):
            out.update(w for w in "".join(c if c.isalnum() or c == "_" else " " for c in tok.string).split())
    return out


def _reads_mistake(args: tuple[Any, ...], got: object, want: set[str]) -> str | None:
    (source,) = args
    try:
        got = set(got)  # type: ignore[call-overload]
    except TypeError:
        return i18n._("return the names as a set of strings")
    extra, missing = sorted(got - want, key=str), sorted(want - got)
    nodes = _nodes(source)
    names = {n.id for n in nodes if isinstance(n, ast.Name)}
    imported = set()  # the parts of dotted module names in imports
    for n in nodes:
        if isinstance(n, ast.Import | ast.ImportFrom):
            modules = [alias.name for alias in n.names] + [getattr(n, "module", None) or ""]
            imported.update(part for module in modules for part in module.split("."))
    keywords = {k.arg for n in nodes if isinstance(n, ast.Call) for k in n.keywords if k.arg}
    if extra and set(extra) <= _attrs(nodes, ast.Del) - _attrs(nodes, ast.Store):
        return i18n.pick("{names} is only deleted (`del`): a deletion is not a read", names=extra)
    if extra and set(extra) <= _attrs(nodes, ast.Store) | _attrs(nodes, ast.Del):
        return i18n.pick("{names} is only assigned (stored into), never read", names=extra)
    if extra and set(extra) <= names:
        return i18n.pick(
            "{names} are plain variables, not attributes: an attribute is the name after a dot", names=extra
        )
    if extra and set(extra) <= imported:
        return i18n.pick("{names} is part of a module's dotted name in an import, not an attribute read", names=extra)
    if extra and set(extra) <= keywords:
        return i18n.pick("{names} names a keyword argument of a call, not an attribute", names=extra)
    if extra and set(extra) <= _words_outside_code(source):
        return i18n.pick(
            "{names} appears only in a string, a comment or a number: the parser's tree, not the text, has reads",
            names=extra,
        )
    if extra:
        return i18n.pick("{names} is not an attribute read in this code", names=extra)
    if missing and set(missing) <= _augmented(nodes):
        return i18n.pick(
            "you missed {names}: an augmented assignment such as `x.{first} += 1` reads the attribute first, then "
            "stores it, though the parser marks its target as a store",
            names=missing,
            first=missing[0],
        )
    targets = [n.value for n in nodes if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load)]
    if missing and set(missing) <= {a.attr for t in targets for a in ast.walk(t) if isinstance(a, ast.Attribute)}:
        return i18n.pick(
            "you missed {names}: in a store such as `a.b.c = v` only the last name is assigned; the names before it "
            "are read to find the object that is stored into",
            names=missing,
        )
    called = {n.func.attr for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    if missing and set(missing) <= called:
        return i18n.pick(
            "you missed {names}, which the code calls: to call `x.{first}(...)` it reads it first",
            names=missing,
            first=missing[0],
        )
    if missing:
        return i18n.pick(
            "you missed {names}, which the code reads: an attribute can sit inside another attribute, a call, a later "
            "statement, a function body, a decorator, an f-string or a comprehension, not only at the top",
            names=missing,
        )
    return None


@checker(
    "9.1",
    library_answers=[attribute_read, _index_reads],
    where=(
        "the section 'Root cause: assigned, never read' and the fixture's engine.py: the one line that mentions "
        "grad_offload copies it into another attribute; Python's own parser tells a read from a store"
    ),
    question=(
        "Parse `self.n += cfg.step` and print `ast.dump` of it: which attribute nodes does the tree hold, what "
        "context does each carry, and does the line read the value of `self.n` before it stores the new one?"
    ),
    method=(
        "Let Python's parser turn the source into a tree, then visit every node of it, at every depth, not only "
        "the top-level statements. Keep the nodes that are attribute accesses and whose context marks a read (the "
        "parser marks stores and deletions differently); an augmented assignment's target is the one store that "
        "also reads, so add the name of such a target when it is an attribute. Collect the names after the dots "
        "into a set."
    ),
    reveals=["ast.Load", "ast.walk", "ast.AugAssign"],
)
def check_attribute_reads(attribute_reads: Callable[[str], set[str]]) -> str:
    """Exercise 9.1: `attribute_reads(source)`: the contract is this module's docstring."""
    return compare_on_inputs(
        _judged(attribute_reads),
        _reference_attribute_reads,
        inputs=_source_inputs(),
        edge_cases=ATTRIBUTE_READ_CASES + _swept_cases(),
        mistakes=_reads_mistake,
        name="attribute_reads",
        max_examples=30,
    )
