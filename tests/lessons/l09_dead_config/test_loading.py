"""Specification of loading: YAML that keeps key locations, composition with defaults, strict merges and
overrides, and the unknown/removed-key errors they raise."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from verlstudy.lessons.l09_dead_config import errors, loading

PKG = Path(__file__).resolve().parents[3] / "data" / "engine_config"
ROOT = PKG / "conf" / "trainer.yaml"


# ---- YAML with locations ------------------------------------------------------------------


def test_parse_yaml_keeps_values_and_one_based_key_lines():
    tree = loading.parse_yaml("# comment\na: 1\nb:\n  c: true\n", "x.yaml")
    assert tree.data == {"a": 1, "b": {"c": True}}
    assert tree.where(("a",)) == "x.yaml:2"
    assert tree.where(("b", "c")) == "x.yaml:4"
    assert tree.where(("b", "zz")) == "x.yaml:3"  # nearest located parent
    assert tree.where(("nope",)) == "<config>"


def test_parse_yaml_empty_text_is_an_empty_config():
    assert loading.parse_yaml("", "e.yaml").data == {}
    assert loading.parse_yaml("# only a comment\n", "e.yaml").data == {}


def test_yaml_syntax_error_names_file_line_and_column():
    with pytest.raises(errors.ConfigError, match=r"^bad\.yaml:3:\d+: invalid YAML"):
        loading.parse_yaml("a: 1\nb: [1, 2\nc: 3\n", "bad.yaml")


def test_yaml_bad_indentation_error_has_its_line():
    with pytest.raises(errors.ConfigError, match=r"^bad\.yaml:2:") as info:
        loading.parse_yaml("a: 1\n  b: 2\n", "bad.yaml")
    assert "invalid YAML" in str(info.value)


def test_duplicate_keys_are_errors_naming_both_lines():
    # PyYAML alone would silently keep the last value
    with pytest.raises(errors.ConfigError, match=r"^d\.yaml:3: duplicate key 'a' \(first written on line 1\)"):
        loading.parse_yaml("a: 1\nb: 2\na: 3\n", "d.yaml")


def test_top_level_must_be_a_mapping():
    with pytest.raises(errors.ConfigError, match="top level of a config must be a mapping, got list"):
        loading.parse_yaml("- 1\n- 2\n", "l.yaml")


def test_non_string_keys_and_merge_keys_are_rejected():
    with pytest.raises(errors.ConfigError, match=r"k\.yaml:1: config keys must be plain strings"):
        loading.parse_yaml("1: a\n", "k.yaml")
    with pytest.raises(errors.ConfigError, match="merge keys"):
        loading.parse_yaml("base: &b {x: 1}\nother:\n  <<: *b\n", "m.yaml")


def test_parse_yaml_bad_arguments():
    with pytest.raises(TypeError, match="text must be a str"):
        loading.parse_yaml(b"a: 1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="source must be a non-empty"):
        loading.parse_yaml("a: 1", "")


def test_load_yaml_missing_file_names_only_the_file(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        loading.load_yaml(tmp_path / "absent.yaml")
    assert "absent.yaml" in str(info.value)
    assert str(tmp_path) not in str(info.value)


def test_config_tree_get():
    tree = loading.parse_yaml("a:\n  b: 2\n")
    assert tree.get(("a", "b")) == 2
    with pytest.raises(KeyError, match=r"a\.c"):
        tree.get(("a", "c"))


# ---- composition, merging, overrides ------------------------------------------------------


def test_compose_mounts_the_engine_block_three_times_with_file_locations():
    tree = loading.compose(ROOT)
    for role in ("actor", "ref", "critic"):
        assert tree.data[role]["megatron"]["_target_"] == "engine_config.config.McoreEngineConfig"
        assert tree.where((role, "megatron", "grad_offload")) == "engine/megatron.yaml:9"
    assert "defaults" not in tree.data
    # the root's own keys (_self_, last) win over the mounted blocks
    assert tree.data["ref"]["megatron"]["forward_only"] is True
    assert tree.data["actor"]["megatron"]["forward_only"] is False
    assert tree.where(("ref", "megatron", "forward_only")) == "trainer.yaml:18"


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_self_first_lets_mounted_blocks_win(tmp_path):
    _write(tmp_path, "g/x.yaml", "v: from_group\n")
    root = _write(tmp_path, "root.yaml", "defaults:\n  - _self_\n  - g@a: x\na:\n  v: from_root\n")
    assert loading.compose(root).data == {"a": {"v": "from_group"}}
    root2 = _write(tmp_path, "root2.yaml", "defaults:\n  - g@a: x\na:\n  v: from_root\n")
    assert loading.compose(root2).data == {"a": {"v": "from_root"}}


@pytest.mark.parametrize(
    ("defaults", "message"),
    [
        ("defaults: 3\n", "'defaults' must be a list"),
        ("defaults:\n  - g: x\n", "must look like 'group@place.path: name'"),
        ("defaults:\n  - plain\n", "must be '_self_' or 'group@place: name'"),
        ("defaults:\n  - g@a: missing\n", "g/missing.yaml, which does not exist"),
    ],
)
def test_bad_defaults_entries_fail_with_the_defaults_line(tmp_path, defaults, message):
    root = _write(tmp_path, "root.yaml", "x: 1\n" + defaults)
    with pytest.raises(errors.ConfigError, match=r"^root\.yaml:2: ") as info:
        loading.compose(root)
    assert message in str(info.value)


def test_merge_applies_a_user_file_and_takes_its_locations():
    base = loading.compose(ROOT)
    user = loading.parse_yaml("actor:\n  megatron:\n    param_offload: true\n", "my_run.yaml")
    merged = loading.merge(base, user)
    assert merged.data["actor"]["megatron"]["param_offload"] is True
    assert base.data["actor"]["megatron"]["param_offload"] is False  # base untouched
    assert merged.where(("actor", "megatron", "param_offload")) == "my_run.yaml:3"


def test_merge_removed_key_gives_the_migration_message_with_the_users_line():
    user = loading.parse_yaml("actor:\n  megatron:\n    grad_offload: true\n", "my_run.yaml")
    base = loading.compose(ROOT)
    del base.data["actor"]["megatron"]["grad_offload"]  # the schema after the removal
    with pytest.raises(errors.RemovedKeyError) as info:
        loading.merge(base, user)
    text = str(info.value)
    assert text.startswith("my_run.yaml:3: 'actor.megatron' has no key 'grad_offload'")
    for part in (
        "verl 0.9.1",
        "PR #7544",
        "removing it changes nothing; delete 'grad_offload' from your config",
        "'param_offload' is not a replacement: it offloads the parameters too",
    ):
        assert part in text
    assert "instead" not in text, "the PR names no replacement: param_offload does more than the removed key"


def test_merge_typo_suggests_the_closest_key():
    user = loading.parse_yaml("actor:\n  megatron:\n    param_ofload: true\n", "my_run.yaml")
    expected = r"my_run\.yaml:3: .* 'param_ofload'; did you mean 'param_offload'\? \(also close: 'optimizer_offload'\)$"
    with pytest.raises(errors.UnknownKeyError, match=expected):
        loading.merge(loading.compose(ROOT), user)


def test_unknown_key_without_close_match_lists_valid_keys():
    err = errors.unknown_key_error("zzz", ["b", "a"], where="w", owner="X")
    assert str(err) == "w: X has no key 'zzz'; valid keys: a, b"
    assert not isinstance(err, errors.RemovedKeyError)


def test_merge_rejects_plain_dicts():
    with pytest.raises(TypeError, match="ConfigTree"):
        loading.merge({"a": 1}, loading.parse_yaml("a: 2"))  # type: ignore[arg-type]


def test_apply_overrides_sets_parses_and_adds():
    tree = loading.compose(ROOT)
    out = loading.apply_overrides(
        tree, ["actor.megatron.param_offload=true", "trainer.total_training_steps=3", "+trainer.note=x y"]
    )
    assert out.data["actor"]["megatron"]["param_offload"] is True
    assert out.data["trainer"]["total_training_steps"] == 3
    assert out.data["trainer"]["note"] == "x y"
    assert out.where(("trainer", "total_training_steps")) == "override 2 'trainer.total_training_steps=3'"
    assert tree.data["trainer"]["total_training_steps"] == 10


def test_override_of_a_removed_key_names_release_and_replacement():
    tree = loading.compose(ROOT)
    for role in ("actor", "ref", "critic"):
        del tree.data[role]["megatron"]["grad_offload"]
    with pytest.raises(errors.RemovedKeyError) as info:
        loading.apply_overrides(tree, ["actor.megatron.grad_offload=true"])
    text = str(info.value)
    assert text.startswith("override 1 'actor.megatron.grad_offload=true': 'actor.megatron' has no key")
    assert "removed in verl 0.9.1" in text and "'param_offload'" in text


@pytest.mark.parametrize(
    ("override", "error", "message"),
    [
        ("actor.megatron.param_offload", errors.ConfigError, "must look like 'a.b.c=value'"),
        ("actor..x=1", errors.ConfigError, "empty key name"),
        ("actor.megatron.dtype=[1", errors.ConfigError, "override 1 .*invalid YAML"),
        ("actor.megatron.seed.x=1", errors.ConfigError, "'actor.megatron.seed' is not a mapping"),
        ("actr.megatron.seed=1", errors.UnknownKeyError, "did you mean 'actor'"),
    ],
)
def test_bad_overrides(override, error, message):
    with pytest.raises(error, match=message):
        loading.apply_overrides(loading.compose(ROOT), [override])


def test_overrides_must_be_a_list():
    with pytest.raises(TypeError, match="list of strings"):
        loading.apply_overrides(loading.compose(ROOT), "a=1")  # type: ignore[arg-type]


def test_load_yaml_names_a_file_that_is_not_utf8_without_its_full_path(tmp_path):
    path = tmp_path / "megatron.yaml"
    path.write_bytes(b"grad_offload: \xff\n")
    with pytest.raises(errors.ConfigError, match=r"^megatron\.yaml is not UTF-8 text \(byte 14\)") as error:
        loading.load_yaml(path)
    assert str(tmp_path) not in str(error.value)


@pytest.mark.parametrize(
    "text",
    ["", "a: 1\n", "a: &x {b: [1, 2.5, null, true]}\nc: *x\nd: '2024-01-01'\ne: 2024-01-01\n", "x:\n  y:\n    z: v\n"],
)
def test_parse_yaml_builds_what_safe_load_builds(text):
    assert loading.parse_yaml(text, "s.yaml").data == (yaml.safe_load(text) or {})


def test_a_yaml_error_is_reported_before_a_key_the_config_refuses():
    # one parse builds both the locations and the data: the merge key is refused only when the YAML is valid
    text = "a: &b {x: 1}\nc:\n  <<: *b\n  d: !!python/name:os.system x\n"
    with pytest.raises(errors.ConfigError, match="invalid YAML: could not determine a constructor"):
        loading.parse_yaml(text, "m.yaml")
    with pytest.raises(errors.ConfigError, match="merge keys"):
        loading.parse_yaml("a: &b {x: 1}\nc:\n  <<: *b\n", "m.yaml")


@pytest.mark.parametrize("value", [None, 7, [1], {"a": 1}, float("nan")])
def test_loading_helpers_name_an_argument_of_the_wrong_type(value):
    # issue 43 item 8: apply_overrides([...], ...) ended in a raw AttributeError ('list' object has no attribute 'data')
    calls = [
        (lambda v: loading.apply_overrides(v, ["a=1"]), r"argument tree must be a ConfigTree \(from parse_yaml"),
        (lambda v: loading.load_yaml(v), r"argument path must be a YAML file's path \(str or Path\)"),
        (lambda v: loading.compose(v), r"argument root must be the root YAML file's path \(str or Path\)"),
        (lambda v: loading.dotted(v), r"argument path must (be a key path|hold str keys)"),
    ]
    for call, named in calls:
        with pytest.raises(TypeError, match=named) as info:
            call(value)
        assert "\n" not in str(info.value)
    assert loading.dotted(("optim", "betas", "[0]")) == "optim.betas[0]" and loading.dotted(()) == "<root>"
