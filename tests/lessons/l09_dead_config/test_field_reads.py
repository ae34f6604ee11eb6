"""Specification of field_reads (and read_index, reflective beneath it): the AST search for config fields that are
copied and never read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from verlstudy.lessons.l09_dead_config import errors, field_reads, read_index, reflective

PKG = Path(__file__).resolve().parents[3] / "data" / "engine_config"


# ---- dead fields --------------------------------------------------------------------------


def test_fixture_has_exactly_one_dead_field(pkg):
    dead = field_reads.dead_fields([PKG / "config.py", PKG / "engine.py"], pkg.config.McoreEngineConfig)
    assert [d.name for d in dead] == ["grad_offload"]
    (grad,) = dead
    assert grad.copied_into == ("self._is_offload_grad",)
    line = next(i for i, s in enumerate((PKG / "engine.py").read_text().splitlines(), 1) if "_is_offload_grad =" in s)
    assert grad.sites == (f"engine.py:{line}",)
    assert str(grad) == f"grad_offload: copied into self._is_offload_grad (engine.py:{line}), which is never read"


def test_the_search_before_it_followed_copies_misses_grad_offload(pkg):
    index = read_index._ReadIndex(read_index.source_texts([PKG / "config.py", PKG / "engine.py"], None))
    names = [n for n in field_reads.field_names(pkg.config.McoreEngineConfig) if not n.startswith("_")]
    assert field_reads._search_any_read_is_live(index, names, "McoreEngineConfig") == []
    assert [d.name for d in field_reads._search(index, names, "McoreEngineConfig")] == ["grad_offload"]
    # a field nothing mentions is dead for both
    assert [d.name for d in field_reads._search_any_read_is_live(index, ["never_named"], None)] == ["never_named"]


@dataclass
class Cfg:
    a: bool = False
    b: bool = False
    c: bool = False
    d: bool = False
    e: bool = False


def _dead(src: str) -> list[str]:
    return [d.name for d in field_reads.dead_fields({"m.py": src}, Cfg)]


def test_dead_fields_rules():
    src = """
class E:
    def __init__(self, cfg):
        self._a = cfg.a          # copy, then read below: live
        self._b = cfg.b          # copy, never read: dead
        local_c = cfg.c          # local copy, read: live
        local_d = cfg.d          # local copy, never read: dead
        print(local_c)

    def go(self):
        if self._a:
            return 1
"""
    assert _dead(src) == ["b", "d", "e"]
    dead = field_reads.dead_fields({"m.py": src}, Cfg)
    assert str(dead[-1]) == "e: never read"
    assert dead[1].copied_into == ("local_d",)


def test_dead_fields_follows_chains_and_other_read_forms():
    src = """
def f(cfg, self):
    self._x = cfg.a
    self._y = self._x        # chain: a -> _x -> _y, and _y is used
    use(self._y)
    use(getattr(cfg, "b"))
    use(cfg["c"])
    self._z = cfg.d
    self._w = self._z        # chain that ends unread: d is dead
    self._w2: bool = cfg.e   # annotated copy
    use(self._w2)
"""
    assert _dead(src) == ["d"]


def test_dead_fields_copy_cycles_terminate():
    src = "def f(cfg, self):\n    self._p = cfg.a\n    self._q = self._p\n    self._p = self._q\n"
    assert _dead(src) == ["a", "b", "c", "d", "e"]


def test_dead_fields_unpacking_counts_as_a_use():
    assert "a" not in _dead("x, y = cfg.a\n")


def test_dead_fields_bad_input():
    with pytest.raises(errors.ConfigError, match=r"m\.py:1: cannot parse"):
        field_reads.dead_fields({"m.py": "x = cfg.a (:\n"}, Cfg)
    with pytest.raises(TypeError, match="list of paths"):
        field_reads.dead_fields("m.py", Cfg)
    with pytest.raises(TypeError, match="dataclass type"):
        field_reads.dead_fields({"m.py": ""}, int)


# ---- keyed by path, lazily parsed ---------------------------------------------------------


def test_same_named_files_do_not_hide_each_other(tmp_path):
    # the bug: keyed by basename, b/utils.py replaced a/utils.py and a's read of `a` was lost
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "utils.py").write_text("def f(cfg):\n    return cfg.a\n")
    (tmp_path / "b" / "utils.py").write_text("def g(cfg, self):\n    self._b = cfg.b\n")
    files = [tmp_path / "a" / "utils.py", tmp_path / "b" / "utils.py"]
    assert sorted(read_index.source_texts(files)) == ["a/utils.py", "b/utils.py"]
    dead = field_reads.dead_fields(files, ["a", "b"])
    assert [(d.name, d.sites) for d in dead] == [("b", ("b/utils.py:2",))]
    assert sorted(read_index.source_texts(files, root=tmp_path.parent)) == [
        f"{tmp_path.name}/a/utils.py",
        f"{tmp_path.name}/b/utils.py",
    ]
    with pytest.raises(ValueError, match="not inside root"):
        read_index.source_texts(files, root=tmp_path / "a")


def test_only_files_that_could_read_a_followed_name_are_parsed():
    sources = {"uses.py": "use(cfg.a)\n", "broken.py": "def (:\n"}  # never parsed: mentions no field
    assert [d.name for d in field_reads.dead_fields(sources, ["a", "b"])] == ["b"]
    # `b = (` names b but reads no attribute b: not parsed either
    assert [d.name for d in field_reads.dead_fields({**sources, "broken.py": "b = (\n"}, ["b"])] == ["b"]
    for reading in ("x = cfg.b (\n", "x = getattr(cfg, 'b') (\n", 'x = cfg["b"] (\n'):  # each spelling of a read
        with pytest.raises(errors.ConfigError, match=r"broken\.py:1: cannot parse"):
            field_reads.dead_fields({**sources, "broken.py": reading}, ["b"])


def test_field_names_as_a_list_and_private_names_skipped():
    assert [d.name for d in field_reads.dead_fields({"m.py": "use(cfg.a)\n"}, ["_target_", "a", "c"])] == ["c"]
    with pytest.raises(TypeError, match="identifiers"):
        field_reads.dead_fields({"m.py": ""}, ["not a name"])
    with pytest.raises(TypeError, match="list of field names"):
        field_reads.dead_fields({"m.py": ""}, "abc")


def test_eager_index_lists_every_read():
    reads, _ = read_index._index_reads({"m.py": "x = cfg.a\nuse(cfg.a, cfg['b'])\n"})
    assert {name: len(r) for name, r in reads.items() if name in ("a", "b")} == {"a": 2, "b": 1}


# ---- reflective reads: "cannot tell" -------------------------------------------------------


def test_a_reflective_read_of_an_annotated_config_makes_unread_fields_cannot_tell():
    src = {
        "use.py": "def build(cfg: Cfg):\n    if cfg.a:\n        pass\n",
        "loop.py": "def ops(cfg: Cfg):\n    for f in fields(cfg):\n        send(getattr(cfg, f.name))\n",
    }
    found = {d.name: d for d in field_reads.dead_fields(src, Cfg)}
    assert sorted(found) == ["b", "c", "d", "e"]
    assert all(d.cannot_tell for d in found.values())
    assert str(found["b"]) == "b: read reflectively: cannot tell (loop.py:2, loop.py:3)"


@pytest.mark.parametrize(
    "body",
    ["x = asdict(cfg)", "x = vars(cfg)", "x = cfg.__dict__", "x = getattr(cfg, name)", "x = dataclasses.fields(cfg)"],
)
def test_each_reflective_form_is_recognised(body):
    assert read_index.reflective_reads({"m.py": f"def f(cfg: Cfg, name):\n    {body}\n"}, "Cfg") == ["m.py:2"]


def test_a_constant_getattr_or_an_unannotated_object_is_not_reflective():
    src = {"m.py": "def f(cfg: Cfg, other):\n    getattr(cfg, 'a')\n    fields(other)\n"}
    assert read_index.reflective_reads(src, "Cfg") == []
    dead = field_reads.dead_fields(src, Cfg)
    assert [d.name for d in dead if not d.cannot_tell] == ["b", "c", "d", "e"]


def test_a_field_named_in_a_string_cannot_be_told():
    src = {"m.py": "NAMES = ('b',)\ndef f(cfg):\n    return [cfg.get(n) for n in NAMES] + [cfg.a]\n"}
    found = {d.name: d for d in field_reads.dead_fields(src, Cfg)}
    assert found["b"].cannot_tell and not found["c"].cannot_tell


# ---- a loop that filters the fields by name reads only those it keeps ------------------------


@dataclass
class Ops:
    a: bool = False
    b_impl: str = "x"
    c_impl: str = "x"
    path: str = ""
    flag: bool = False


@pytest.mark.parametrize(
    ("loop", "cannot_tell"),
    [
        # verl 0.9.1's VeOmni engine: skip every field whose name does not end so
        ("for f in fields(cfg):\n        if not f.name.endswith('_impl'):\n            continue\n"
         "        send(getattr(cfg, f.name))", ["b_impl", "c_impl"]),
        ("for f in fields(cfg):\n        if f.name.startswith(('pa', 'fl')):\n            continue\n"
         "        send(getattr(cfg, f.name))", ["b_impl", "c_impl"]),
        ("for f in fields(cfg):\n        if f.name in ('b_impl', 'x'):\n            send(getattr(cfg, f.name))",
         ["b_impl"]),
        ("for k in vars(cfg):\n        if k not in ['path', 'x']:\n            continue\n        send(k)", ["path"]),
        ("for f in fields(cfg):\n        if not f.name.endswith('_impl'):\n            continue\n"
         "        if f.name.startswith('c'):\n            continue\n        send(getattr(cfg, f.name))", ["b_impl"]),
        # a guard that does not test the name, a test the search cannot read, an else branch: every field
        ("for f in fields(cfg):\n        if not f.init:\n            continue\n        send(getattr(cfg, f.name))",
         ["b_impl", "c_impl", "path", "flag"]),
        ("for f in fields(cfg):\n        if f.name.endswith(SUFFIX):\n            continue\n"
         "        send(getattr(cfg, f.name))", ["b_impl", "c_impl", "path", "flag"]),
        ("for f in fields(cfg):\n        if f.name.endswith('_impl'):\n            send(1)\n        else:\n"
         "            send(getattr(cfg, f.name))", ["b_impl", "c_impl", "path", "flag"]),
    ],
)  # fmt: skip
def test_a_loop_that_filters_fields_by_name_reads_only_those_it_keeps(loop, cannot_tell):
    src = {"m.py": f"def ops(cfg: Ops):\n    use(cfg.a)\n    {loop}\n"}
    dead = field_reads.dead_fields(src, Ops)
    assert [d.name for d in dead if d.cannot_tell] == cannot_tell
    assert [d.name for d in dead if not d.cannot_tell] == [
        n for n in ("b_impl", "c_impl", "path", "flag") if n not in cannot_tell
    ]


def test_a_filtered_loop_does_not_hide_an_unfiltered_read_of_the_same_config():
    src = {
        "m.py": "def ops(cfg: Ops):\n    for f in fields(cfg):\n        if not f.name.endswith('_impl'):\n"
        "            continue\n        send(getattr(cfg, f.name))\n    dump(asdict(cfg))\n"
    }
    keep = (("endswith", ("_impl",), True),)
    assert read_index.reflective_filters(src, "Ops") == [("m.py:2", keep), ("m.py:5", keep), ("m.py:6", ())]
    assert [d.name for d in field_reads.dead_fields(src, Ops) if not d.cannot_tell] == []
    assert reflective.passes("x_impl", keep) and not reflective.passes("c", [("in", ("c",), False)])
