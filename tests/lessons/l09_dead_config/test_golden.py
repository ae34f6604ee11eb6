"""Specification of golden: the generated flat config is deterministic, and the golden check fails with a
unified diff when the committed file is stale."""

from __future__ import annotations

from pathlib import Path

import pytest

from verlstudy.lessons.l09_dead_config import errors, golden, workspace

PKG = Path(__file__).resolve().parents[3] / "data" / "engine_config"
ROOT = PKG / "conf" / "trainer.yaml"
GENERATED = PKG / "conf" / "_generated_trainer.yaml"


# ---- the generated config -----------------------------------------------------------------


def test_generated_fixture_is_up_to_date():
    golden.check_generated(GENERATED, ROOT)


def test_generation_is_deterministic_and_has_the_header():
    text = golden.generate_flat_config(ROOT)
    assert text == golden.generate_flat_config(ROOT)
    assert text.startswith("# This file is generated from trainer.yaml")
    assert "Do not modify it directly" in text
    assert text.count("grad_offload: false") == 3


def test_stale_generated_file_fails_with_a_unified_diff(tmp_pkg):
    conf = tmp_pkg / "conf"
    workspace.replace_once(
        conf / "engine" / "megatron.yaml", "# Whether to offload gradients to CPU\ngrad_offload: False\n\n", ""
    )
    with pytest.raises(errors.StaleGeneratedConfigError) as info:
        golden.check_generated(conf / "_generated_trainer.yaml", conf / "trainer.yaml")
    diff = info.value.diff
    assert diff.startswith("--- a/_generated_trainer.yaml\n+++ b/_generated_trainer.yaml")
    assert diff.count("-    grad_offload: false") == 3
    assert not [line for line in diff.splitlines() if line.startswith("+ ")]
    assert str(tmp_pkg) not in str(info.value)
    golden.write_generated(conf / "trainer.yaml", conf / "_generated_trainer.yaml")
    golden.check_generated(conf / "_generated_trainer.yaml", conf / "trainer.yaml")


def test_generated_diff_is_empty_when_fresh_and_takes_context(tmp_pkg):
    conf = tmp_pkg / "conf"
    assert golden.generated_diff(conf / "_generated_trainer.yaml", conf / "trainer.yaml") == ""
    workspace.replace_once(conf / "trainer.yaml", "total_training_steps: 10", "total_training_steps: 11")
    tight = golden.generated_diff(conf / "_generated_trainer.yaml", conf / "trainer.yaml", context=0)
    assert tight.splitlines()[2:] == ["@@ -79 +79 @@", "-  total_training_steps: 10", "+  total_training_steps: 11"]
    with pytest.raises(ValueError, match="context must be a non-negative int"):
        golden.generated_diff(conf / "_generated_trainer.yaml", conf / "trainer.yaml", context=-1)


def test_missing_generated_file(tmp_path):
    with pytest.raises(errors.ConfigError, match=r"'gen\.yaml' does not exist"):
        golden.check_generated(tmp_path / "gen.yaml", ROOT)


@pytest.mark.parametrize("value", [None, 7, [1], {"a": 1}, float("nan")])
def test_golden_helpers_name_an_argument_of_the_wrong_type(value, tmp_path):
    # issue 43 item 8: these ended in pathlib's raw "expected str, bytes or os.PathLike object, not NoneType"
    calls = [
        (lambda v: golden.generate_flat_config(v), r"argument root must be the root YAML file's path"),
        (lambda v: golden.write_generated(tmp_path / "r.yaml", v), r"argument out must be the file to write"),
        (lambda v: golden.generated_diff(v, tmp_path), r"argument generated must be the generated file's path"),
        (lambda v: golden.check_generated(tmp_path, v), r"argument root must be the root YAML file's path"),
    ]
    for call, named in calls:
        with pytest.raises(TypeError, match=named) as info:
            call(value)
        assert "\n" not in str(info.value)
