"""Specification of verl_tree: upstream config fields read with `ast`, and the dead-field search on verl."""

from __future__ import annotations

import dataclasses

import pytest

from verlstudy.kit import upstream
from verlstudy.lessons.l09_dead_config import verl_tree

needs = pytest.mark.skipif(not upstream.verl_available(), reason="verl is not installed (make setup installs it)")
needs_090 = pytest.mark.skipif(not upstream.verl_available("0.9.0"), reason="verl 0.9.0 was not fetched")

SOURCE = """
from dataclasses import dataclass
from typing import ClassVar
@dataclass
class Base:
    _target_: str = ""
@dataclass
class A(Base):
    x: int = 1
    y: int = 2
    kind: ClassVar[str] = "a"
    plain = 3
@dataclass
class B(A):
    z: int = 0
    x: int = 5
"""


def test_dataclass_fields_from_source_match_dataclasses_fields():
    names = verl_tree.dataclass_fields({"m.py": SOURCE}, "B")
    namespace: dict = {}
    exec(compile(SOURCE, "m.py", "exec", dont_inherit=True), namespace)  # without this file's __future__ flag
    assert names == [f.name for f in dataclasses.fields(namespace["B"])] == ["_target_", "x", "y", "z"]
    with pytest.raises(LookupError, match="no top-level class 'C'"):
        verl_tree.dataclass_fields({"m.py": SOURCE}, "C")
    with pytest.raises(TypeError, match="mapping"):
        verl_tree.dataclass_fields(SOURCE, "B")


@needs
@needs_090
def test_grad_offload_is_dead_in_090_and_gone_in_091():
    before, after = verl_tree.scan_release("0.9.0"), verl_tree.scan_release()
    assert "grad_offload" in before.fields and "grad_offload" not in after.fields
    assert set(before.fields) - set(after.fields) == {"grad_offload"}
    (grad,) = [d for d in before.dead if d.name == "grad_offload"]
    assert grad.copied_into == ("self._is_offload_grad",)
    assert grad.sites == ("verl/workers/engine/megatron/transformer_impl.py:198",)
    # the basename bug called these dead on 0.9.1; keyed by path they are read
    for live in ("param_offload", "use_mbridge", "optimizer_offload", "router_replay"):
        assert live not in after.dead_names()
    assert after.dead_names() == ["dist_checkpointing_prefix"], "the next cleanup candidate"


@needs
def test_upstream_fields_from_ast_equal_the_loaded_classes():
    from verlstudy.lessons.l09_dead_config.upstream import load_config_classes

    cls = load_config_classes()["McoreEngineConfig"]
    assert verl_tree.engine_config_fields() == [f.name for f in dataclasses.fields(cls)]


def test_package_files_bad_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="no package folder"):
        verl_tree.package_files(tmp_path / "nope")


@needs
def test_release_sources_names_a_missing_file():
    with pytest.raises(upstream.UpstreamMoved, match=r"has no file verl/no/such\.py"):
        verl_tree.release_sources(["no/such.py"])


@needs
def test_keyed_by_name_the_bug_loses_files_and_calls_read_fields_dead():
    wrong, right = verl_tree.scan_keyed_by_name(), verl_tree.scan_release()
    assert wrong.files < right.files
    assert set(right.dead_names()) < set(wrong.dead_names())
    assert "use_mbridge" in wrong.dead_names() and "use_mbridge" not in right.dead_names()


def test_config_table_lists_classes_with_findings_and_counts_cannot_tell():
    from verlstudy.lessons.l09_dead_config.field_reads import DeadField
    from verlstudy.lessons.l09_dead_config.verl_tree import ReleaseScan, config_table

    dead, unsure = DeadField("g", ("self._g",), ("e.py:3",)), DeadField("m", (), (), ("v.py:7",))
    old = (ReleaseScan("0.9.0", "A", ("g", "m"), (dead, unsure), 2), ReleaseScan("0.9.0", "Quiet", ("x",), (), 2))
    new = (ReleaseScan("0.9.1", "A", ("m",), (unsure,), 2), ReleaseScan("0.9.1", "Quiet", ("x",), (), 2))
    table = config_table(old, new)
    assert table.header == ("class", "fields (old/new)", "dead in 0.9.0", "dead in 0.9.1", "cannot tell in 0.9.1")
    assert table.rows == (("A", "2/1", "g", "-", "1"),)  # a class with nothing found is left out
    assert table.text().splitlines()[1:] == ["| --- | ---: | --- | --- | ---: |", "| A | 2/1 | g | - | 1 |"]


@needs
def test_veomni_loop_in_verl_keeps_only_implementation_fields():
    # verl 0.9.1 veomni/transformer_impl.py: for f in fields(engine_config): skips names not ending _implementation
    veomni = {s.class_name: s for s in verl_tree.scan_config_classes()}["VeOmniEngineConfig"]
    assert veomni.dead_names() == ["ckpt_manager", "load_checkpoint_path", "force_use_huggingface"]
    assert len(veomni.cannot_tell_names()) == 13
    assert all(n.endswith("_implementation") for n in veomni.cannot_tell_names())
    kept = [n for n in veomni.fields if n.endswith("_implementation")]
    assert (len(kept), len(veomni.fields) - len(kept)) == (14, 38)  # the loop reads 14, skips 38
    # the 14th kept field is also read by name (VeOmniEngineConfig.__post_init__: self.attn_implementation)
    assert set(kept) - set(veomni.cannot_tell_names()) - set(veomni.dead_names()) == {"attn_implementation"}


@pytest.mark.parametrize("value", [None, 7, "engine.py", [1], float("nan")])
def test_verl_tree_helpers_name_an_argument_of_the_wrong_type(value):
    # issue 43 item 8: these ended in a raw TypeError ('NoneType' object is not iterable)
    calls = [
        (lambda v: verl_tree.release_sources(v), r"argument relative must be a list, each item a path inside verl"),
        (lambda v: verl_tree.config_table(v, v), r"argument before must be a list, each item a ReleaseScan"),
    ]
    if isinstance(value, list):
        calls = [
            (lambda v: verl_tree.release_sources(v), r"argument relative\[0\] must be a path inside verl"),
            (lambda v: verl_tree.config_table(v, v), r"argument before\[0\] must be a ReleaseScan"),
        ]
    for call, named in calls:
        with pytest.raises(TypeError, match=named) as info:
            call(value)
        assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="before and after must not be empty"):
        verl_tree.config_table((), ())


@pytest.mark.parametrize("value", [None, 7, [1], float("nan")])
def test_dataclass_fields_names_a_source_of_the_wrong_type(value):
    # issue 43 item 8: dataclass_fields({"a.py": 7}, ...) ended in "compile() arg 1 must be a string"
    with pytest.raises(TypeError, match=r"argument sources\['a\.py'\] must be Python source text \(a str\)"):
        verl_tree.dataclass_fields({"a.py": value}, "Engine")
    with pytest.raises(TypeError, match=r"argument class_name must be a class name \(a str\)"):
        verl_tree.dataclass_fields({"a.py": "x = 1"}, value)


@pytest.mark.parametrize("value", [7, "dtype", [1]])
def test_scan_keyed_by_name_names_only_of_the_wrong_type(value):
    # issue 43 item 8: only=7 ended in "argument of type 'int' is not iterable" after the package was read
    with pytest.raises(TypeError, match=r"argument only(\[0\])? must be (a list, each item )?a field name"):
        verl_tree.scan_keyed_by_name(only=value)
