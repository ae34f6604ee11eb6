"""Specification of configs: YAML with locations, composition, strict building, the golden
check of the generated config, dead-field detection and removed-key migration errors."""

from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from verlstudy.kit.exercises import ExerciseFailure, check_exercise, exercise_results
from verlstudy.lessons.l09_dead_config import configs as c

PKG = Path(__file__).resolve().parents[3] / "data" / "engine_config"
ROOT = PKG / "conf" / "trainer.yaml"
GENERATED = PKG / "conf" / "_generated_trainer.yaml"


@pytest.fixture
def pkg():
    return c.import_fresh(PKG)


@pytest.fixture
def tmp_pkg(tmp_path):
    copy = c.copy_package(PKG, tmp_path)
    return copy


@dataclass
class Replay:
    mode: str = "disabled"
    record_file: str | None = None


@dataclass
class Engine:
    param_offload: bool = False
    micro_batch: int = 1
    lr: float = 1e-6
    names: list[str] = field(default_factory=list)
    replay: Replay = field(default_factory=Replay)


ENGINE_PATH = c.class_path(Engine)


# ---- YAML with locations ------------------------------------------------------------------


def test_parse_yaml_keeps_values_and_one_based_key_lines():
    tree = c.parse_yaml("# comment\na: 1\nb:\n  c: true\n", "x.yaml")
    assert tree.data == {"a": 1, "b": {"c": True}}
    assert tree.where(("a",)) == "x.yaml:2"
    assert tree.where(("b", "c")) == "x.yaml:4"
    assert tree.where(("b", "zz")) == "x.yaml:3"  # nearest located parent
    assert tree.where(("nope",)) == "<config>"


def test_parse_yaml_empty_text_is_an_empty_config():
    assert c.parse_yaml("", "e.yaml").data == {}
    assert c.parse_yaml("# only a comment\n", "e.yaml").data == {}


def test_yaml_syntax_error_names_file_line_and_column():
    with pytest.raises(c.ConfigError, match=r"^bad\.yaml:3:\d+: invalid YAML"):
        c.parse_yaml("a: 1\nb: [1, 2\nc: 3\n", "bad.yaml")


def test_yaml_bad_indentation_error_has_its_line():
    with pytest.raises(c.ConfigError, match=r"^bad\.yaml:2:") as info:
        c.parse_yaml("a: 1\n  b: 2\n", "bad.yaml")
    assert "invalid YAML" in str(info.value)


def test_duplicate_keys_are_errors_naming_both_lines():
    # PyYAML alone would silently keep the last value
    with pytest.raises(c.ConfigError, match=r"^d\.yaml:3: duplicate key 'a' \(first written on line 1\)"):
        c.parse_yaml("a: 1\nb: 2\na: 3\n", "d.yaml")


def test_top_level_must_be_a_mapping():
    with pytest.raises(c.ConfigError, match="top level of a config must be a mapping, got list"):
        c.parse_yaml("- 1\n- 2\n", "l.yaml")


def test_non_string_keys_and_merge_keys_are_rejected():
    with pytest.raises(c.ConfigError, match=r"k\.yaml:1: config keys must be plain strings"):
        c.parse_yaml("1: a\n", "k.yaml")
    with pytest.raises(c.ConfigError, match="merge keys"):
        c.parse_yaml("base: &b {x: 1}\nother:\n  <<: *b\n", "m.yaml")


def test_parse_yaml_bad_arguments():
    with pytest.raises(TypeError, match="text must be a str"):
        c.parse_yaml(b"a: 1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="source must be a non-empty"):
        c.parse_yaml("a: 1", "")


def test_load_yaml_missing_file_names_only_the_file(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        c.load_yaml(tmp_path / "absent.yaml")
    assert "absent.yaml" in str(info.value)
    assert str(tmp_path) not in str(info.value)


def test_config_tree_get():
    tree = c.parse_yaml("a:\n  b: 2\n")
    assert tree.get(("a", "b")) == 2
    with pytest.raises(KeyError, match=r"a\.c"):
        tree.get(("a", "c"))


# ---- composition, merging, overrides ------------------------------------------------------


def test_compose_mounts_the_engine_block_three_times_with_file_locations():
    tree = c.compose(ROOT)
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
    assert c.compose(root).data == {"a": {"v": "from_group"}}
    root2 = _write(tmp_path, "root2.yaml", "defaults:\n  - g@a: x\na:\n  v: from_root\n")
    assert c.compose(root2).data == {"a": {"v": "from_root"}}


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
    with pytest.raises(c.ConfigError, match=r"^root\.yaml:2: ") as info:
        c.compose(root)
    assert message in str(info.value)


def test_merge_applies_a_user_file_and_takes_its_locations():
    base = c.compose(ROOT)
    user = c.parse_yaml("actor:\n  megatron:\n    param_offload: true\n", "my_run.yaml")
    merged = c.merge(base, user)
    assert merged.data["actor"]["megatron"]["param_offload"] is True
    assert base.data["actor"]["megatron"]["param_offload"] is False  # base untouched
    assert merged.where(("actor", "megatron", "param_offload")) == "my_run.yaml:3"


def test_merge_removed_key_gives_the_migration_message_with_the_users_line():
    user = c.parse_yaml("actor:\n  megatron:\n    grad_offload: true\n", "my_run.yaml")
    base = c.compose(ROOT)
    del base.data["actor"]["megatron"]["grad_offload"]  # the schema after the removal
    with pytest.raises(c.RemovedKeyError) as info:
        c.merge(base, user)
    text = str(info.value)
    assert text.startswith("my_run.yaml:3: 'actor.megatron' has no key 'grad_offload'")
    for part in ("verl 0.9.1", "PR #7544", "Use 'param_offload' instead"):
        assert part in text


def test_merge_typo_suggests_the_closest_key():
    user = c.parse_yaml("actor:\n  megatron:\n    param_ofload: true\n", "my_run.yaml")
    expected = r"my_run\.yaml:3: .* 'param_ofload'; did you mean 'param_offload'\? \(also close: 'optimizer_offload'\)$"
    with pytest.raises(c.UnknownKeyError, match=expected):
        c.merge(c.compose(ROOT), user)


def test_unknown_key_without_close_match_lists_valid_keys():
    err = c.unknown_key_error("zzz", ["b", "a"], where="w", owner="X")
    assert str(err) == "w: X has no key 'zzz'; valid keys: a, b"
    assert not isinstance(err, c.RemovedKeyError)


def test_merge_rejects_plain_dicts():
    with pytest.raises(TypeError, match="ConfigTree"):
        c.merge({"a": 1}, c.parse_yaml("a: 2"))  # type: ignore[arg-type]


def test_apply_overrides_sets_parses_and_adds():
    tree = c.compose(ROOT)
    out = c.apply_overrides(
        tree, ["actor.megatron.param_offload=true", "trainer.total_training_steps=3", "+trainer.note=x y"]
    )
    assert out.data["actor"]["megatron"]["param_offload"] is True
    assert out.data["trainer"]["total_training_steps"] == 3
    assert out.data["trainer"]["note"] == "x y"
    assert out.where(("trainer", "total_training_steps")) == "override 2 'trainer.total_training_steps=3'"
    assert tree.data["trainer"]["total_training_steps"] == 10


def test_override_of_a_removed_key_names_release_and_replacement():
    tree = c.compose(ROOT)
    for role in ("actor", "ref", "critic"):
        del tree.data[role]["megatron"]["grad_offload"]
    with pytest.raises(c.RemovedKeyError) as info:
        c.apply_overrides(tree, ["actor.megatron.grad_offload=true"])
    text = str(info.value)
    assert text.startswith("override 1 'actor.megatron.grad_offload=true': 'actor.megatron' has no key")
    assert "removed in verl 0.9.1" in text and "'param_offload'" in text


@pytest.mark.parametrize(
    ("override", "error", "message"),
    [
        ("actor.megatron.param_offload", c.ConfigError, "must look like 'a.b.c=value'"),
        ("actor..x=1", c.ConfigError, "empty key name"),
        ("actor.megatron.dtype=[1", c.ConfigError, "override 1 .*invalid YAML"),
        ("actor.megatron.seed.x=1", c.ConfigError, "'actor.megatron.seed' is not a mapping"),
        ("actr.megatron.seed=1", c.UnknownKeyError, "did you mean 'actor'"),
    ],
)
def test_bad_overrides(override, error, message):
    with pytest.raises(error, match=message):
        c.apply_overrides(c.compose(ROOT), [override])


def test_overrides_must_be_a_list():
    with pytest.raises(TypeError, match="list of strings"):
        c.apply_overrides(c.compose(ROOT), "a=1")  # type: ignore[arg-type]


# ---- building dataclasses -----------------------------------------------------------------


def test_build_nested_with_types():
    tree = c.parse_yaml(
        f"_target_: {ENGINE_PATH}\nparam_offload: true\nlr: 1\nnames: [a]\nreplay:\n  mode: R2\n", "e.yaml"
    )
    eng = c.build(Engine, tree)
    assert eng == Engine(param_offload=True, lr=1.0, names=["a"], replay=Replay(mode="R2"))
    assert isinstance(eng.lr, float)


def test_build_from_a_subtree_path():
    tree = c.parse_yaml("outer:\n  micro_batch: 4\n", "o.yaml")
    assert c.build(Engine, tree, path=("outer",)).micro_batch == 4


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("param_offload: 'yes'\n", r"e\.yaml:1: 'param_offload' must be bool, got str 'yes'"),
        ("micro_batch: true\n", r"e\.yaml:1: 'micro_batch' must be int, got bool True"),
        ("micro_batch: null\n", r"'micro_batch' must be int, got null"),
        ("names: a\n", r"'names' must be list\[str\], got str"),
        ("replay:\n  record_file: 3\n", r"e\.yaml:2: 'replay.record_file' must be str \| None, got 3"),
        ("replay: 5\n", r"e\.yaml:1: 'replay' must be a mapping for Replay"),
        ("_target_: other.Engine\n", r"e\.yaml:1: _target_ is 'other.Engine' but this block builds"),
    ],
)
def test_build_rejects_wrong_values_with_locations(text, message):
    with pytest.raises(c.ConfigError, match=message):
        c.build(Engine, c.parse_yaml(text, "e.yaml"))


def test_build_unknown_key_suggests_and_removed_key_migrates():
    with pytest.raises(
        c.UnknownKeyError, match=r"e\.yaml:2: Engine has no key 'micro_bach'; did you mean 'micro_batch'"
    ):
        c.build(Engine, c.parse_yaml("lr: 1.0\nmicro_bach: 2\n", "e.yaml"))
    with pytest.raises(
        c.RemovedKeyError, match=r"e\.yaml:1: Engine has no key 'grad_offload': 'grad_offload' was removed"
    ):
        c.build(Engine, c.parse_yaml("grad_offload: false\n", "e.yaml"))


def test_build_with_a_custom_removal_table():
    table = {"old": c.Removal("old", "v2", "new", "renamed", 1)}
    with pytest.raises(c.RemovedKeyError, match=r"'old' was removed in v2 \(PR #1\): renamed\. Use 'new' instead"):
        c.build(Engine, {"old": 1}, removals=table)


def test_build_wraps_post_init_errors_with_the_location(pkg):
    tree = c.compose(ROOT)
    tree.data["actor"]["megatron"]["dtype"] = "float32"
    with pytest.raises(c.ConfigError, match=r"engine/megatron.yaml:3: McoreEngineConfig rejected 'actor.megatron'"):
        c.build(pkg.config.McoreEngineConfig, tree, path=("actor", "megatron"))


def test_build_bad_class():
    with pytest.raises(TypeError, match="dataclass type"):
        c.build(dict, {})


def test_to_dict_round_trip_through_yaml():
    eng = Engine(param_offload=True, names=["x"], replay=Replay("R3", "r.pt"))
    data = c.to_dict(eng)
    assert list(data)[:2] == ["_target_", "param_offload"]
    assert data["replay"]["_target_"] == c.class_path(Replay)
    assert c.build(Engine, c.parse_yaml(c.dump_yaml(data))) == eng
    with pytest.raises(TypeError, match="dataclass instance"):
        c.to_dict(Engine)


yaml_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12)


@settings(max_examples=60, deadline=None)
@given(
    param_offload=st.booleans(),
    micro_batch=st.integers(-(2**40), 2**40),
    lr=st.floats(allow_nan=False, allow_infinity=False, width=64),
    names=st.lists(yaml_text, max_size=3),
    mode=yaml_text,
    record_file=st.none() | yaml_text,
)
def test_dataclass_yaml_round_trip_property(param_offload, micro_batch, lr, names, mode, record_file):
    eng = Engine(param_offload, micro_batch, lr, names, Replay(mode, record_file))
    text = c.dump_yaml(c.to_dict(eng))
    assert c.build(Engine, c.parse_yaml(text, "rt.yaml")) == eng
    assert text == c.dump_yaml(c.to_dict(eng))  # same object, same bytes


def test_instantiate_builds_every_target_block(pkg):
    objs = c.instantiate(c.compose(ROOT))
    assert isinstance(objs["actor"]["megatron"], pkg.config.McoreEngineConfig)
    assert isinstance(objs["actor"]["optim"], pkg.config.OptimConfig)
    assert objs["actor"]["ppo_mini_batch_size"] == 16
    assert objs["ref"]["megatron"].forward_only is True


def test_instantiate_bad_target_names_the_line():
    tree = c.parse_yaml("a:\n  _target_: engine_config.config.Nope\n", "t.yaml")
    c.import_fresh(PKG)
    with pytest.raises(c.ConfigError, match=r"t\.yaml:2: module 'engine_config.config' has no class 'Nope'"):
        c.instantiate(tree)
    with pytest.raises(c.ConfigError, match="cannot import module 'no_such_mod'"):
        c.resolve_target("no_such_mod.X")
    with pytest.raises(c.ConfigError, match=r"dotted 'module\.Class'"):
        c.resolve_target("X")


def test_unchecked_instantiation_fails_like_upstream_with_no_location(pkg):
    block = c.compose(ROOT).data["actor"]["megatron"]
    assert isinstance(c.instantiate_unchecked(block), pkg.config.McoreEngineConfig)
    block["grad_offload_typo"] = True
    with pytest.raises(TypeError, match="unexpected keyword argument 'grad_offload_typo'"):
        c.instantiate_unchecked(block)
    with pytest.raises(c.ConfigError, match="needs a mapping with a _target_"):
        c.instantiate_unchecked({"a": 1})


def test_field_names_and_removed_field_guard(pkg):
    assert "grad_offload" in c.field_names(pkg.config.McoreEngineConfig)
    with pytest.raises(AssertionError, match=r"McoreEngineConfig has field 'grad_offload' again: .*verl 0\.9\.1"):
        c.assert_field_removed(pkg.config.McoreEngineConfig, "grad_offload")
    c.assert_field_removed(pkg.config.McoreEngineConfig, "no_such_field")
    with pytest.raises(TypeError):
        c.field_names(object)


def test_yaml_field_mismatches():
    data = {"_target_": "x", "param_offload": True, "extra": 1, "replay": {"mode": "R2", "bad": 1}}
    got = c.yaml_field_mismatches(Engine, data)
    assert got == {
        "yaml_only": ["extra", "replay.bad"],
        "dataclass_only": ["micro_batch", "lr", "names", "replay.record_file"],
    }


def test_fixture_yaml_matches_its_dataclass(pkg):
    block = c.load_yaml(PKG / "conf" / "engine" / "megatron.yaml").data
    assert c.yaml_field_mismatches(pkg.config.McoreEngineConfig, block) == {"yaml_only": [], "dataclass_only": []}


# ---- the generated config -----------------------------------------------------------------


def test_generated_fixture_is_up_to_date():
    c.check_generated(GENERATED, ROOT)


def test_generation_is_deterministic_and_has_the_header():
    text = c.generate_flat_config(ROOT)
    assert text == c.generate_flat_config(ROOT)
    assert text.startswith("# This file is generated from trainer.yaml")
    assert "Do not modify it directly" in text
    assert text.count("grad_offload: false") == 3


def test_stale_generated_file_fails_with_a_unified_diff(tmp_pkg):
    conf = tmp_pkg / "conf"
    c.replace_once(
        conf / "engine" / "megatron.yaml", "# Whether to offload gradients to CPU\ngrad_offload: False\n\n", ""
    )
    with pytest.raises(c.StaleGeneratedConfigError) as info:
        c.check_generated(conf / "_generated_trainer.yaml", conf / "trainer.yaml")
    diff = info.value.diff
    assert diff.startswith("--- a/_generated_trainer.yaml\n+++ b/_generated_trainer.yaml")
    assert diff.count("-    grad_offload: false") == 3
    assert not [line for line in diff.splitlines() if line.startswith("+ ")]
    assert str(tmp_pkg) not in str(info.value)
    c.write_generated(conf / "trainer.yaml", conf / "_generated_trainer.yaml")
    c.check_generated(conf / "_generated_trainer.yaml", conf / "trainer.yaml")


def test_generated_diff_is_empty_when_fresh_and_takes_context(tmp_pkg):
    conf = tmp_pkg / "conf"
    assert c.generated_diff(conf / "_generated_trainer.yaml", conf / "trainer.yaml") == ""
    c.replace_once(conf / "trainer.yaml", "total_training_steps: 10", "total_training_steps: 11")
    tight = c.generated_diff(conf / "_generated_trainer.yaml", conf / "trainer.yaml", context=0)
    assert tight.splitlines()[2:] == ["@@ -79 +79 @@", "-  total_training_steps: 10", "+  total_training_steps: 11"]
    with pytest.raises(ValueError, match="context must be a non-negative int"):
        c.generated_diff(conf / "_generated_trainer.yaml", conf / "trainer.yaml", context=-1)


def test_missing_generated_file(tmp_path):
    with pytest.raises(c.ConfigError, match=r"'gen\.yaml' does not exist"):
        c.check_generated(tmp_path / "gen.yaml", ROOT)


# ---- dead fields --------------------------------------------------------------------------


def test_fixture_has_exactly_one_dead_field(pkg):
    dead = c.dead_fields([PKG / "config.py", PKG / "engine.py"], pkg.config.McoreEngineConfig)
    assert [d.name for d in dead] == ["grad_offload"]
    (grad,) = dead
    assert grad.copied_into == ("self._is_offload_grad",)
    line = next(i for i, s in enumerate((PKG / "engine.py").read_text().splitlines(), 1) if "_is_offload_grad =" in s)
    assert grad.sites == (f"engine.py:{line}",)
    assert str(grad) == f"grad_offload: copied into self._is_offload_grad (engine.py:{line}), which is never read"


@dataclass
class Cfg:
    a: bool = False
    b: bool = False
    c: bool = False
    d: bool = False
    e: bool = False


def _dead(src: str) -> list[str]:
    return [d.name for d in c.dead_fields({"m.py": src}, Cfg)]


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
    dead = c.dead_fields({"m.py": src}, Cfg)
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
    with pytest.raises(c.ConfigError, match=r"m\.py:1: cannot parse"):
        c.dead_fields({"m.py": "def (:\n"}, Cfg)
    with pytest.raises(TypeError, match="list of paths"):
        c.dead_fields("m.py", Cfg)
    with pytest.raises(TypeError, match="dataclass type"):
        c.dead_fields({"m.py": ""}, int)


# ---- working on a copy --------------------------------------------------------------------


def test_full_removal_in_a_copy_makes_every_check_green(tmp_pkg):
    conf = tmp_pkg / "conf"
    c.replace_once(tmp_pkg / "config.py", "    # whether to offload grad\n    grad_offload: bool = False\n", "")
    c.replace_once(
        conf / "engine" / "megatron.yaml", "# Whether to offload gradients to CPU\ngrad_offload: False\n\n", ""
    )
    c.replace_once(tmp_pkg / "engine.py", "        self._is_offload_grad = engine_config.grad_offload\n", "")
    c.write_generated(conf / "trainer.yaml", conf / "_generated_trainer.yaml")
    fixed = c.import_fresh(tmp_pkg)
    cls = fixed.config.McoreEngineConfig
    assert "grad_offload" not in [f.name for f in dataclasses.fields(cls)]
    c.assert_field_removed(cls, "grad_offload")
    c.check_generated(conf / "_generated_trainer.yaml", conf / "trainer.yaml")
    assert c.dead_fields([tmp_pkg / "config.py", tmp_pkg / "engine.py"], cls) == []
    objs = c.instantiate(c.compose(conf / "trainer.yaml"))
    assert type(objs["actor"]["megatron"]) is cls
    c.import_fresh(PKG)  # leave the original package imported for other tests


def test_half_removal_dataclass_only_breaks_instantiation(tmp_pkg):
    c.replace_once(tmp_pkg / "config.py", "    grad_offload: bool = False\n", "")
    c.import_fresh(tmp_pkg)
    block = c.compose(tmp_pkg / "conf" / "trainer.yaml").data["actor"]["megatron"]
    with pytest.raises(TypeError, match="unexpected keyword argument 'grad_offload'"):
        c.instantiate_unchecked(block)
    with pytest.raises(
        c.RemovedKeyError, match=r"^engine/megatron\.yaml:9: McoreEngineConfig has no key 'grad_offload'"
    ):
        c.instantiate(c.compose(tmp_pkg / "conf" / "trainer.yaml"))
    # the golden check alone does not notice: YAML and generated file still agree
    c.check_generated(tmp_pkg / "conf" / "_generated_trainer.yaml", tmp_pkg / "conf" / "trainer.yaml")
    c.import_fresh(PKG)


def test_import_fresh_and_copy_package_errors(tmp_path):
    with pytest.raises(ValueError, match="not a package folder"):
        c.import_fresh(tmp_path)
    with pytest.raises(ValueError, match="no package folder"):
        c.copy_package(tmp_path / "nope", tmp_path)


def test_import_fresh_writes_no_bytecode_into_the_fixture():
    c.import_fresh(PKG)
    assert not (PKG / "__pycache__").exists()


def test_replace_once(tmp_path):
    path = _write(tmp_path, "f.txt", "a b a\n")
    c.replace_once(path, "b", "c")
    assert path.read_text() == "a c a\n"
    with pytest.raises(ValueError, match="found it 2 times"):
        c.replace_once(path, "a", "x")
    with pytest.raises(ValueError, match="found it 0 times"):
        c.replace_once(path, "zz", "x")
    with pytest.raises(ValueError, match="non-empty"):
        c.replace_once(path, "", "x")


# ---- the fixture engine: grad_offload changes nothing -------------------------------------


def _offloaded(pkg, **flags) -> dict[str, int]:
    engine = pkg.engine.MegatronEngine(pkg.config.McoreEngineConfig(**flags), hidden=8)
    engine.train_step(torch.ones(4, 8))
    return engine.offload("cpu")


def test_grad_offload_has_no_effect_and_grads_follow_param_offload(pkg):
    assert (
        _offloaded(pkg, grad_offload=True)
        == _offloaded(pkg, grad_offload=False)
        == {
            "model": 0,
            "grad": 0,
            "optimizer": 0,
        }
    )
    on = _offloaded(pkg, param_offload=True)
    assert on["grad"] == on["model"] == (8 * 8 + 8) * 2  # bfloat16
    assert _offloaded(pkg, param_offload=True, grad_offload=True) == on


def test_forward_only_engine_has_no_optimizer_state(pkg):
    assert _offloaded(pkg, optimizer_offload=True)["optimizer"] > 0
    assert _offloaded(pkg, optimizer_offload=True, forward_only=True)["optimizer"] == 0


# ---- exercise checkers --------------------------------------------------------------------


def ref_attribute_reads(source: str) -> set[str]:
    return {n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}


def ref_yaml_only_keys(cls, data, prefix=""):
    import typing

    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out = []
    for key, value in data.items():
        if key == "_target_":
            continue
        if key not in names:
            out.append(prefix + key)
        elif dataclasses.is_dataclass(hints[key]) and isinstance(value, dict):
            out.extend(ref_yaml_only_keys(hints[key], value, prefix + key + "."))
    return sorted(out)


def test_attribute_reads_checker(capsys):
    check_exercise("9.1", ref_attribute_reads)
    assert exercise_results()["9.1"] == "correct"
    assert capsys.readouterr().out == "exercise 9.1: correct: 5 sources\n"

    def all_attributes(source):
        return {n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute)}

    with pytest.raises(ExerciseFailure, match=r"only assigned: check node\.ctx"):
        c.check_attribute_reads(all_attributes)

    def top_level_only(source):
        return {
            n.value.attr
            for n in ast.parse(source).body
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Attribute)
        }

    with pytest.raises(ExerciseFailure, match=r"you missed .* walk the whole tree"):
        c.check_attribute_reads(top_level_only)
    with pytest.raises(ExerciseFailure, match="return a set"):
        c.check_attribute_reads(lambda s: sorted(ref_attribute_reads(s)))

    def stub(source):
        raise NotImplementedError("exercise 9.1")

    check_exercise("9.1", stub)
    assert exercise_results()["9.1"] == "not attempted"
    assert "exercise 9.1: not attempted" in capsys.readouterr().out


def test_yaml_only_keys_checker(capsys):
    check_exercise("9.2", ref_yaml_only_keys)
    assert exercise_results()["9.2"] == "correct"
    assert capsys.readouterr().out == "exercise 9.2: correct: 4 blocks\n"

    def flat(cls, data):
        names = {f.name for f in dataclasses.fields(cls)}
        return sorted(k for k in data if k != "_target_" and k not in names)

    with pytest.raises(ExerciseFailure, match="recurse into fields whose type is a dataclass"):
        c.check_yaml_only_keys(flat)

    def keeps_target(cls, data):
        return sorted(k for k in ref_yaml_only_keys(cls, data)) + (["_target_"] if "_target_" in data else [])

    with pytest.raises(ExerciseFailure, match="you reported '_target_'"):
        c.check_yaml_only_keys(keeps_target)

    with pytest.raises(ExerciseFailure, match="sort the keys"):
        c.check_yaml_only_keys(lambda cls, data: sorted(ref_yaml_only_keys(cls, data), reverse=True))

    def stub(cls, data):
        raise NotImplementedError("exercise 9.2")

    check_exercise("9.2", stub)
    assert exercise_results()["9.2"] == "not attempted"
    assert "exercise 9.2: not attempted" in capsys.readouterr().out
