"""Specification of schema: strict YAML -> dataclass building with locations, round trips, instantiation,
and the field checks a removal needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verlstudy.lessons.l09_dead_config import errors, loading, schema, workspace

PKG = Path(__file__).resolve().parents[3] / "data" / "engine_config"
ROOT = PKG / "conf" / "trainer.yaml"


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


ENGINE_PATH = schema.class_path(Engine)


# ---- building dataclasses -----------------------------------------------------------------


def test_build_nested_with_types():
    tree = loading.parse_yaml(
        f"_target_: {ENGINE_PATH}\nparam_offload: true\nlr: 1\nnames: [a]\nreplay:\n  mode: R2\n", "e.yaml"
    )
    eng = schema.build(Engine, tree)
    assert eng == Engine(param_offload=True, lr=1.0, names=["a"], replay=Replay(mode="R2"))
    assert isinstance(eng.lr, float)


def test_build_from_a_subtree_path():
    tree = loading.parse_yaml("outer:\n  micro_batch: 4\n", "o.yaml")
    assert schema.build(Engine, tree, path=("outer",)).micro_batch == 4


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
    with pytest.raises(errors.ConfigError, match=message):
        schema.build(Engine, loading.parse_yaml(text, "e.yaml"))


def test_build_unknown_key_suggests_and_removed_key_migrates():
    with pytest.raises(
        errors.UnknownKeyError, match=r"e\.yaml:2: Engine has no key 'micro_bach'; did you mean 'micro_batch'"
    ):
        schema.build(Engine, loading.parse_yaml("lr: 1.0\nmicro_bach: 2\n", "e.yaml"))
    with pytest.raises(
        errors.RemovedKeyError, match=r"e\.yaml:1: Engine has no key 'grad_offload': 'grad_offload' was removed"
    ):
        schema.build(Engine, loading.parse_yaml("grad_offload: false\n", "e.yaml"))


def test_build_with_a_custom_removal_table():
    table = {"old": errors.Removal("old", "v2", "nothing read it", 1)}
    with pytest.raises(
        errors.RemovedKeyError,
        match=r"'old' was removed in v2 \(PR #1\): nothing read it, so removing it changes nothing; delete 'old'",
    ):
        schema.build(Engine, {"old": 1}, removals=table)
    table = {"old": errors.Removal("old", "v2", "renamed", 2, effect="its value is lost", not_a_replacement="X.")}
    assert table["old"].message().endswith("so its value is lost; delete 'old' from your config. X.")


def test_build_wraps_post_init_errors_with_the_location(pkg):
    tree = loading.compose(ROOT)
    tree.data["actor"]["megatron"]["dtype"] = "float32"
    with pytest.raises(
        errors.ConfigError, match=r"engine/megatron.yaml:3: McoreEngineConfig rejected 'actor.megatron'"
    ):
        schema.build(pkg.config.McoreEngineConfig, tree, path=("actor", "megatron"))


def test_build_bad_class():
    with pytest.raises(TypeError, match="dataclass type"):
        schema.build(dict, {})


def test_to_dict_round_trip_through_yaml():
    eng = Engine(param_offload=True, names=["x"], replay=Replay("R3", "r.pt"))
    data = schema.to_dict(eng)
    assert list(data)[:2] == ["_target_", "param_offload"]
    assert data["replay"]["_target_"] == schema.class_path(Replay)
    assert schema.build(Engine, loading.parse_yaml(schema.dump_yaml(data))) == eng
    with pytest.raises(TypeError, match="dataclass instance"):
        schema.to_dict(Engine)


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
    text = schema.dump_yaml(schema.to_dict(eng))
    assert schema.build(Engine, loading.parse_yaml(text, "rt.yaml")) == eng
    assert text == schema.dump_yaml(schema.to_dict(eng))  # same object, same bytes


def test_instantiate_builds_every_target_block(pkg):
    objs = schema.instantiate(loading.compose(ROOT))
    assert isinstance(objs["actor"]["megatron"], pkg.config.McoreEngineConfig)
    assert isinstance(objs["actor"]["optim"], pkg.config.OptimConfig)
    assert objs["actor"]["ppo_mini_batch_size"] == 16
    assert objs["ref"]["megatron"].forward_only is True


def test_instantiate_bad_target_names_the_line():
    tree = loading.parse_yaml("a:\n  _target_: engine_config.config.Nope\n", "t.yaml")
    workspace.import_fresh(PKG)
    with pytest.raises(errors.ConfigError, match=r"t\.yaml:2: module 'engine_config.config' has no class 'Nope'"):
        schema.instantiate(tree)
    with pytest.raises(errors.ConfigError, match="cannot import module 'no_such_mod'"):
        schema.resolve_target("no_such_mod.X")
    with pytest.raises(errors.ConfigError, match=r"dotted 'module\.Class'"):
        schema.resolve_target("X")


def test_hydra_shaped_instantiation_names_the_target_class_but_no_file(pkg):
    block = loading.compose(ROOT).data["actor"]["megatron"]
    assert isinstance(schema.instantiate_like_hydra(block), pkg.config.McoreEngineConfig)
    block["grad_offload_typo"] = True
    with pytest.raises(schema.InstantiationError) as info:
        schema.instantiate_like_hydra(block, full_key="actor.megatron")
    lines = str(info.value).splitlines()
    assert lines[0] == "Error in call to target 'engine_config.config.McoreEngineConfig':"
    assert lines[1].startswith("TypeError(") and "unexpected keyword argument 'grad_offload_typo'" in lines[1]
    assert lines[2] == "full_key: actor.megatron"
    assert isinstance(info.value.__cause__, TypeError)
    assert ".yaml" not in str(info.value), "hydra's error carries no file or line"
    with pytest.raises(errors.ConfigError, match="needs a mapping with a _target_"):
        schema.instantiate_like_hydra({"a": 1})


def test_hydra_shaped_instantiation_builds_nested_targets_first(pkg):
    block = loading.compose(ROOT).data["actor"]["megatron"]
    block["router_replay"]["mode"] = "R9"
    # the nested block's own class rejects nothing here; McoreEngineConfig's __post_init__ does, naming itself
    with pytest.raises(schema.InstantiationError, match=r"^Error in call to target 'engine_config\.config\.Mcore"):
        schema.instantiate_like_hydra(block)


def test_field_names_and_removed_field_guard(pkg):
    assert "grad_offload" in schema.field_names(pkg.config.McoreEngineConfig)
    with pytest.raises(AssertionError, match=r"McoreEngineConfig has field 'grad_offload' again: .*verl 0\.9\.1"):
        schema.assert_field_removed(pkg.config.McoreEngineConfig, "grad_offload")
    schema.assert_field_removed(pkg.config.McoreEngineConfig, "no_such_field")
    with pytest.raises(TypeError):
        schema.field_names(object)


def test_yaml_field_mismatches():
    data = {"_target_": "x", "param_offload": True, "extra": 1, "replay": {"mode": "R2", "bad": 1}}
    got = schema.yaml_field_mismatches(Engine, data)
    assert got == {
        "yaml_only": ["extra", "replay.bad"],
        "dataclass_only": ["micro_batch", "lr", "names", "replay.record_file"],
    }


def test_fixture_yaml_matches_its_dataclass(pkg):
    block = loading.load_yaml(PKG / "conf" / "engine" / "megatron.yaml").data
    assert schema.yaml_field_mismatches(pkg.config.McoreEngineConfig, block) == {"yaml_only": [], "dataclass_only": []}


def test_the_hydra_like_message_is_the_same_on_pythons_that_suggest_a_keyword():
    from verlstudy.lessons.l09_dead_config.schema import _stable_repr

    plain = TypeError("McoreEngineConfig.__init__() got an unexpected keyword argument 'grad_offload'")
    suggested = TypeError(f"{plain}. Did you mean 'param_offload'?")  # Python 3.13's wording
    assert _stable_repr(suggested) == _stable_repr(plain) == repr(plain)


@pytest.mark.parametrize("value", [None, 7, "x", [1], float("nan")])
def test_schema_helpers_name_an_argument_of_the_wrong_type(value):
    # issue 43 item 8: instantiate(None) ended in a raw AttributeError ('NoneType' object has no attribute 'data')
    @dataclass
    class Block:
        n: int = 1

    calls = [
        (lambda v: schema.instantiate(v), r"argument tree must be a ConfigTree \(from parse_yaml"),
        (lambda v: schema.dump_yaml(v), r"argument data must be a mapping"),
        (lambda v: schema.yaml_field_mismatches(Block, v), r"argument data must be a YAML block \(a mapping\)"),
        (lambda v: schema.yaml_field_mismatches(v, {}), "field_names takes a dataclass type"),
    ]
    for call, named in calls:
        with pytest.raises(TypeError, match=named) as info:
            call(value)
        assert "\n" not in str(info.value)
