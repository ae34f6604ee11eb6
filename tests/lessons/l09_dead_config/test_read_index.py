"""Specification of read_index's lazy search: it parses only the files that spell a read, shares a file's walk
between indexes, and finds exactly what the plain eager walk (`_index_reads`) finds."""

from __future__ import annotations

import ast
from collections.abc import Iterator

import pytest

from verlstudy.lessons.l09_dead_config import errors, field_reads, read_index, reflective, syntax

# Sources that stress the spelling test and the walk: reads written across lines, after comments, as strings;
# names that are prefixes of longer ones; stores and deletions; nested scopes, decorators, f-strings, odd nodes.
TRICKY = {
    "pkg/a.py": """
import dataclasses
from dataclasses import fields


@register(cfg.deco)                       # a decorator: walked after the function's body
def build(cfg: Cfg, *, extra=cfg.default_kw, **kw):
    keys = cfg.keys()                     # `.keys` is not a read of `key`
    local_a = cfg.a                       # a local copy, read below
    local_dead = cfg.dead_local           # a local copy, never read here...
    use(local_a, {**kw, "k": cfg.in_dict})

    def inner():
        return local_dead                 # ...only in a nested function, which has its own loads
    self._b = cfg.b                       # copied, and the copy is read in b.py
    self._c = self._d = cfg.c             # two targets
    x, y = cfg.unpacked                   # unpacking counts as a use
    spaced = (cfg .  spaced_name)
    cut = cfg.\\
        after_backslash
    wrapped = (cfg.
               after_newline)
    remarked = (cfg.  # a comment between the dot and the name
                after_comment)
    cfg["stored"] = 1                     # a store, not a read
    del cfg.deleted
    text = f"{cfg.in_fstring} {x}piece{y}"
    getattr(cfg, "by_getattr")
    getattr(
        cfg,  # the object, then the name
        "after_comma_comment",
    )
    opts = cfg.get("via_get", cfg[("in_parens")])  # .get("via_get") takes a string but reads nothing
    lam = lambda: cfg.in_lambda          # noqa: E731
    return cfg['by_subscript'], remarked, spaced, cut, wrapped, text, lam
""",
    "pkg/b.py": """
NAMES = ("named_only", 'quoted_too')


class Engine:
    global_thing: int = 0

    def go(self, cfg):
        global G
        if self._b:
            return self._c
        match cfg:
            case Point(x=0, kwd=cfg.pattern_attr):
                pass
        return cfg.a
""",
    "pkg/c.py": '"""Mentions .key and cfg.b only in a docstring."""\n# and cfg.dead_local in a comment\n',
    "pkg/copy_of_b.py": "",  # filled below with b.py's text: the same text under a second key
}
TRICKY["pkg/copy_of_b.py"] = TRICKY["pkg/b.py"]


def _preorder(node: ast.AST) -> Iterator[ast.AST]:
    stack = [node]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _string_sites(sources: dict[str, str], name: str) -> list[str]:
    """The plain reference for `string_sites`: every identifier string constant, files in source order."""
    return [
        f"{file}:{node.lineno}"
        for file, text in sources.items()
        for node in _preorder(ast.parse(text))
        if isinstance(node, ast.Constant) and node.value == name
    ]


def test_the_lazy_index_finds_what_the_eager_walk_finds():
    eager, _ = read_index._index_reads(TRICKY)
    lazy = read_index._ReadIndex(TRICKY)
    names = {*eager, "key", "missing", "named_only", "stored", "deleted", "piece", "via_get"}
    for name in names:
        assert list(lazy.reads_of(name, in_source_order=True)) == eager.get(name, []), name
        assert sorted(lazy.reads_of(name), key=str) == sorted(eager.get(name, []), key=str), name
        assert lazy.string_sites(name) == _string_sites(TRICKY, name), name
    for name in ("spaced_name", "after_backslash", "after_newline", "after_comment", "in_fstring", "pattern_attr"):
        assert [r.file for r in eager[name]] == ["pkg/a.py"] or name == "pattern_attr", name
    assert "key" not in eager and "stored" not in eager and "deleted" not in eager
    line = next(i for i, s in enumerate(TRICKY["pkg/a.py"].splitlines(), 1) if "piece" in s)
    assert lazy.string_sites("piece") == [f"pkg/a.py:{line}"]  # an f-string's piece is a string constant too


def test_copies_and_loads_are_recorded_as_the_eager_walk_records_them():
    eager, _ = read_index._index_reads(TRICKY)
    (a_copy,) = eager["a"][:1]
    assert a_copy.copied_into == (("local", "local_a"),) and "local_a" in a_copy.loads
    (dead_local,) = eager["dead_local"]
    assert dead_local.copied_into == (("local", "local_dead"),) and "local_dead" not in dead_local.loads
    assert eager["c"][0].copied_into == (("attr", "_c"), ("attr", "_d"))
    assert eager["unpacked"][0].copied_into is None


def _plain_dead_fields(sources: dict[str, str], names: list[str]) -> list[tuple[str, tuple, tuple, tuple]]:
    """The dead-field rule over the eager walk, with no laziness: the reference the search must equal."""
    reads, _ = read_index._index_reads(sources)

    def live(attr: str, seen: frozenset[str]) -> bool:
        for read in reads.get(attr, []):
            if read.copied_into is None:
                return True
            for kind, target in read.copied_into:
                if kind == "local" and target in read.loads:
                    return True
                if kind == "attr" and target not in seen and live(target, seen | {target}):
                    return True
        return False

    out = []
    for name in names:
        if not live(name, frozenset({name})):
            found = reads.get(name, [])
            into = tuple(t if k == "local" else f"self.{t}" if t.startswith("_") else f".{t}"
                         for r in found for k, t in r.copied_into)  # fmt: skip
            sites = tuple(f"{r.file}:{r.line}" for r in found)
            out.append((name, into, sites, tuple(_string_sites(sources, name))[:2]))
    return out


FIELDS = ["a", "b", "c", "dead_local", "key", "stored", "named_only", "quoted_too", "spaced_name", "in_lambda"]


def test_dead_fields_equal_the_plain_rule_over_the_eager_walk():
    found = [(d.name, d.copied_into, d.sites, d.reflective) for d in field_reads.dead_fields(TRICKY, FIELDS)]
    assert found == _plain_dead_fields(TRICKY, FIELDS)
    assert [name for name, *_ in found] == ["dead_local", "key", "stored", "named_only", "quoted_too"]


def test_a_search_gives_the_same_answer_whatever_was_searched_before():
    shared = read_index._ReadIndex(TRICKY)
    field_reads.dead_fields({}, ["b", "a", "in_dict", "deco"], index=shared)  # walks some files first
    assert field_reads.dead_fields({}, FIELDS, index=shared) == field_reads.dead_fields(TRICKY, FIELDS)


def test_a_copy_read_in_two_files_lists_its_sites_in_source_order():
    sources = {"z.py": "def f(s, cfg):\n    s._late = cfg.x\n", "a.py": "def g(s, cfg):\n    s._early = cfg.x\n"}
    index = read_index._ReadIndex(sources)
    list(index.reads_of("x"))  # the search may try z.py first
    (dead,) = field_reads.dead_fields({}, ["x"], index=index)
    assert dead.sites == ("z.py:2", "a.py:2") and dead.copied_into == ("self._late", "self._early")


def test_only_files_that_spell_a_read_are_mentioned():
    index = read_index._ReadIndex(TRICKY)
    assert index.mentions("key") == ["pkg/c.py"]  # not a.py's `.keys()`; c.py's docstring spells `.key`
    assert index.mentions("after_comment") == index.mentions("after_comma_comment") == ["pkg/a.py"]
    assert index.mentions("in_parens") == ["pkg/a.py"] and index.mentions("via_get") == []
    assert index.mentions("named_only") == []  # `("named_only", ...`: a tuple of strings, no read
    assert index.mentions("quoted_too") == ["pkg/b.py", "pkg/copy_of_b.py"]  # after a comma: parsed, to be sure
    assert index.string_sites("named_only") == ["pkg/b.py:2", "pkg/copy_of_b.py:2"]
    assert index.string_sites("named_only", first=1) == ["pkg/b.py:2"]
    assert index.mentions("b") == ["pkg/a.py", "pkg/c.py"]  # c.py's docstring: parsed, holds no read
    counts = {"pkg/a.py": 2, "pkg/b.py": 1, "pkg/c.py": 1, "pkg/copy_of_b.py": 1}
    assert index.spelling_counts(["a", "b", "nowhere"]) == counts


def test_a_text_is_parsed_once_whatever_key_it_has():
    first = read_index.source_file("one/key.py", TRICKY["pkg/b.py"])
    assert read_index.source_file("another/key.py", TRICKY["pkg/b.py"]) is first
    reads = read_index._ReadIndex(TRICKY).reads_of("a", in_source_order=True)
    assert [r.file for r in reads] == ["pkg/a.py", "pkg/b.py", "pkg/copy_of_b.py"]


def test_a_parse_error_names_the_key_it_was_asked_under():
    with pytest.raises(errors.ConfigError, match=r"^odd\.py:1: cannot parse"):
        read_index.source_file("odd.py", "x = cfg.a (:\n")
    with pytest.raises(errors.ConfigError, match=r"^again\.py:1: cannot parse"):  # a failed parse is not kept
        read_index.source_file("again.py", "x = cfg.a (:\n")


def test_child_nodes_are_the_ast_children_less_markers_operators_and_names():
    tree = ast.parse(TRICKY["pkg/a.py"] + TRICKY["pkg/b.py"])
    for node in ast.walk(tree):
        kept = syntax.child_nodes(node)
        every = list(ast.iter_child_nodes(node))
        assert kept == [c for c in every if c in kept]  # the same order
        left_out = [c for c in every if c not in kept]
        assert all(isinstance(c, ast.expr_context | ast.operator | ast.cmpop | ast.unaryop | ast.boolop | ast.alias)
                   for c in left_out)  # fmt: skip


def test_files_naming_and_the_files_read_reflectively():
    index = read_index._ReadIndex({**TRICKY, "r.py": "def f(cfg: Cfg):\n    return vars(cfg)\n"})
    assert index.files_naming("Cfg") == ["pkg/a.py", "r.py"]
    assert index.files_naming("Cfg", among=["r.py"]) == ["r.py"]
    assert index.files_naming("Cf") == []  # whole words only
    reading = [f for f, text in index.sources.items() if reflective.reads_reflectively(text)]
    assert reading == ["r.py"]  # a.py's getattr( calls all name their attribute


@pytest.mark.parametrize(
    ("text", "spelled"),
    [
        ('getattr(cfg, "x")', False),
        ("getattr(cfg,\n    b'x')", False),
        ("getattr(self.cfg, name)", False),  # not a variable: the search follows variables
        ("getattr(cfg, name)", True),
        ('getattr( cfg ,  # a comment\n  f"{x}")', True),  # an f-string is computed
        ("dataclasses.fields( cfg)", True),
        ("vars(cfg)", True),
        ("x.__dict__", True),
    ],
)
def test_reflective_spelling_is_what_a_reflective_read_of_a_variable_writes(text, spelled):
    assert (reflective.REFLECTIVE_SPELLING.search(text) is not None) is spelled
    module = f"def f(cfg: Cfg, name, x, self):\n    return {text}\n"
    assert bool(reflective.typed_rows(ast.parse(module), module)) is spelled  # only such a function is walked


def test_spells_reflective_read_answers_as_the_pattern_searched_from_every_position():
    texts = [
        "myvars(cfg) + dataclass_fields(cfg)",  # the words inside longer names: no read
        "x = 1\nreturn getattr (cfg ,\\\n name)",  # a space, a backslash-newline before the name
        'getattr(cfg, "a"); getattr(cfg, "b"); vars (cfg)',  # the match is not at the first head
        "fields\n(cfg)",
        "obj.__dict__",
        "",
    ]
    for text in texts:
        for start in range(len(text) + 1):
            for end in (start, (start + len(text)) // 2, len(text)):
                want = reflective.REFLECTIVE_SPELLING.search(text, start, end) is not None
                assert reflective.spells_reflective_read(text, start, end) is want, (text, start, end)


def test_typed_rows_walk_only_functions_that_spell_a_reflective_read():
    named = "\n\n\ndef named(cfg: Cfg):\n    return getattr(cfg, 'a')\n"  # by name: its function is not walked
    text = "def plain(cfg: Cfg):\n    return cfg.a\n\n\ndef loop(cfg: Cfg):\n    return asdict (cfg)\n" + named
    rows = reflective.typed_rows(ast.parse(text), text)
    assert rows == [([("cfg", "Cfg")], [("cfg", 6, ())])]  # `asdict (` with a space counts in a function
    alone = text.removesuffix(named)  # but a file is looked at only if it writes `asdict(`, `getattr(`... somewhere
    assert reflective.typed_rows(ast.parse(alone), alone) == []


@pytest.mark.parametrize(
    ("text", "dotted", "read_quoted"),
    [
        ("cfg.a + cfg . b + (cfg.\\\n c)", {"a", "b", "c"}, set()),
        ("(cfg.  # see x.inner\n   # more\n   outer)", {"inner", "outer"}, set()),  # a dot inside a skipped comment
        ('getattr(cfg,  # note, "c"\n  "b") + cfg[ ("d")]', set(), {"b", "c", "d"}),  # `, "c"` in a comment counts
        ('f("e") + 1.5', set(), set()),  # a call's first argument is no read; `.5` is no name
    ],
)
def test_spellings_find_each_dot_and_each_quoted_read_past_gaps_and_comments(text, dotted, read_quoted):
    found_dotted, found_read_quoted, _ = read_index._spellings(text)
    assert (set(found_dotted), set(found_read_quoted)) == (dotted, read_quoted)


@pytest.mark.parametrize("value", [None, 7, [1], float("nan")])
def test_read_index_helpers_name_an_argument_of_the_wrong_type(value):
    # issue 43 item 8: these ended in a raw TypeError from inside re or pathlib
    calls = [
        (lambda v: read_index.source_texts({"a.py": v}), r"argument source_files\['a.py'\] must be Python source"),
        (lambda v: read_index.source_texts([v]), r"argument source_files\[0\] must be a file's path"),
        (lambda v: read_index.source_file(v, "x = 1"), r"argument file must be a file's name \(a str\)"),
        (lambda v: read_index.source_file("a.py", v), r"argument text must be Python source text \(a str\)"),
        (lambda v: field_reads.dead_fields({"a.py": v}, ["x"]), r"argument source_files\['a.py'\] must be"),
    ]
    for call, named in calls:
        with pytest.raises(TypeError, match=named) as info:
            call(value)
        assert "\n" not in str(info.value)
