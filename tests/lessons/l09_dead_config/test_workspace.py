"""Specification of workspace: editing a copy of the config package and importing it afresh, and the
removal done in such a copy (full: every check green; half: instantiation breaks)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from verlstudy.lessons.l09_dead_config import errors, field_reads, golden, loading, schema, workspace

PKG = Path(__file__).resolve().parents[3] / "data" / "engine_config"


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# ---- working on a copy --------------------------------------------------------------------


def test_full_removal_in_a_copy_makes_every_check_green(tmp_pkg):
    conf = tmp_pkg / "conf"
    workspace.replace_once(tmp_pkg / "config.py", "    # whether to offload grad\n    grad_offload: bool = False\n", "")
    workspace.replace_once(
        conf / "engine" / "megatron.yaml", "# Whether to offload gradients to CPU\ngrad_offload: False\n\n", ""
    )
    workspace.replace_once(tmp_pkg / "engine.py", "        self._is_offload_grad = engine_config.grad_offload\n", "")
    golden.write_generated(conf / "trainer.yaml", conf / "_generated_trainer.yaml")
    fixed = workspace.import_fresh(tmp_pkg)
    cls = fixed.config.McoreEngineConfig
    assert "grad_offload" not in [f.name for f in dataclasses.fields(cls)]
    schema.assert_field_removed(cls, "grad_offload")
    golden.check_generated(conf / "_generated_trainer.yaml", conf / "trainer.yaml")
    assert field_reads.dead_fields([tmp_pkg / "config.py", tmp_pkg / "engine.py"], cls) == []
    objs = schema.instantiate(loading.compose(conf / "trainer.yaml"))
    assert type(objs["actor"]["megatron"]) is cls
    workspace.import_fresh(PKG)  # leave the original package imported for other tests


def test_half_removal_dataclass_only_breaks_instantiation(tmp_pkg):
    workspace.replace_once(tmp_pkg / "config.py", "    grad_offload: bool = False\n", "")
    workspace.import_fresh(tmp_pkg)
    block = loading.compose(tmp_pkg / "conf" / "trainer.yaml").data["actor"]["megatron"]
    with pytest.raises(schema.InstantiationError, match="unexpected keyword argument 'grad_offload'"):
        schema.instantiate_like_hydra(block)
    with pytest.raises(
        errors.RemovedKeyError, match=r"^engine/megatron\.yaml:9: McoreEngineConfig has no key 'grad_offload'"
    ):
        schema.instantiate(loading.compose(tmp_pkg / "conf" / "trainer.yaml"))
    # the golden check alone does not notice: YAML and generated file still agree
    golden.check_generated(tmp_pkg / "conf" / "_generated_trainer.yaml", tmp_pkg / "conf" / "trainer.yaml")
    workspace.import_fresh(PKG)


def test_import_fresh_and_copy_package_errors(tmp_path):
    with pytest.raises(ValueError, match="not a package folder"):
        workspace.import_fresh(tmp_path)
    with pytest.raises(ValueError, match="no package folder"):
        workspace.copy_package(tmp_path / "nope", tmp_path)


def test_import_fresh_writes_no_bytecode_into_the_fixture():
    workspace.import_fresh(PKG)
    assert not (PKG / "__pycache__").exists()


def test_replace_once(tmp_path):
    path = _write(tmp_path, "f.txt", "a b a\n")
    workspace.replace_once(path, "b", "c")
    assert path.read_text() == "a c a\n"
    with pytest.raises(ValueError, match="found it 2 times"):
        workspace.replace_once(path, "a", "x")
    with pytest.raises(ValueError, match="found it 0 times"):
        workspace.replace_once(path, "zz", "x")
    with pytest.raises(ValueError, match="non-empty"):
        workspace.replace_once(path, "", "x")


@pytest.mark.parametrize("value", [None, 7, [1], {"a": 1}, float("nan")])
def test_workspace_helpers_name_an_argument_of_the_wrong_type(value, tmp_path):
    # issue 43 item 8: these ended in pathlib's raw "expected str, bytes or os.PathLike object, not NoneType"
    (tmp_path / "f.txt").write_text("a", encoding="utf-8")
    calls = [
        (lambda v: workspace.import_fresh(v), r"argument package_dir must be a package folder's path"),
        (lambda v: workspace.copy_package(v, tmp_path), r"argument package_dir must be a package folder's path"),
        (lambda v: workspace.copy_package(tmp_path, v), r"argument dest_parent must be a folder's path"),
        (lambda v: workspace.replace_once(v, "a", "b"), r"argument path must be a file's path"),
        (lambda v: workspace.replace_once(tmp_path / "f.txt", "a", v), r"argument new must be the replacement text"),
    ]
    for call, named in calls:
        with pytest.raises(TypeError, match=named) as info:
            call(value)
        assert "\n" not in str(info.value)
    assert (tmp_path / "f.txt").read_text(encoding="utf-8") == "a"
