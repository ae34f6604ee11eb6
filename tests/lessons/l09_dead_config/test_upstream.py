"""Lesson 09 against upstream verl: its config classes loaded from source, the comparison row, and
planted differences that the comparison must catch."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from verlstudy.kit import upstream as kit
from verlstudy.lessons.l09_dead_config import errors, loading, schema
from verlstudy.lessons.l09_dead_config import upstream as l09

needs = pytest.mark.skipif(not kit.verl_available(), reason="verl is not installed (make setup installs it)")
needs_090 = pytest.mark.skipif(not kit.verl_available("0.9.0"), reason="verl 0.9.0 was not fetched")


@needs
def test_the_course_agrees_with_upstream_on_300_generated_configs():
    row = l09.compare_engine_config(cases=300)
    assert (row.lesson, row.status, row.cases) == ("09", "agree", 300)
    assert row.upstream == "verl/workers/config/engine.py::McoreEngineConfig"
    assert (l09.compare_engine_config,) == l09.COMPARISONS


@needs
def test_a_build_that_drops_unknown_keys_is_caught():
    def lax(cls, data, **kw):
        data = data.data if isinstance(data, loading.ConfigTree) else data
        names = {f.name for f in dataclasses.fields(cls)}
        return schema.build(cls, {k: v for k, v in data.items() if k in names}, **kw)

    row = l09.compare_engine_config(cases=300, build=lax)
    assert row.status == "differ" and row.detail.startswith("case ") and "ours built, upstream rejected" in row.detail


@needs
def test_the_old_round_trip_bug_is_caught():
    # before the fix: to_dict wrote BaseConfig's `_target_: ''` over the class path, and build refused ''
    def old_to_dict(config):
        out = {schema.TARGET_KEY: schema.class_path(type(config))}
        for f in dataclasses.fields(config):
            value = getattr(config, f.name)
            out[f.name] = old_to_dict(value) if dataclasses.is_dataclass(value) else copy.deepcopy(value)
        return out

    def old_build(cls, data, **kw):
        if isinstance(data, loading.ConfigTree) and data.data.get(schema.TARGET_KEY) == "":
            raise errors.ConfigError(f"_target_ is '' but this block builds {schema.class_path(cls)!r}")
        return schema.build(cls, data, **kw)

    row = l09.compare_engine_config(cases=300, build=old_build, to_dict=old_to_dict)
    assert row.status == "differ" and "does not read back" in row.detail


@needs
def test_a_to_dict_that_forgets_nested_configs_is_caught():
    def shallow(config):
        return {k: v for k, v in schema.to_dict(config).items() if not isinstance(v, dict) or k.startswith("override")}

    row = l09.compare_engine_config(cases=300, to_dict=shallow)
    assert row.status == "differ" and "reads back different" in row.detail


@needs
@needs_090
def test_upstream_classes_from_both_releases():
    new, old = l09.load_config_classes(), l09.load_config_classes(release="0.9.0")
    schema.assert_field_removed(new["McoreEngineConfig"], "grad_offload")
    with pytest.raises(AssertionError, match="has field 'grad_offload' again"):
        schema.assert_field_removed(old["McoreEngineConfig"], "grad_offload")
    assert new["McoreEngineConfig"] is not old["McoreEngineConfig"]
    cls = new["McoreEngineConfig"]
    assert schema.resolve_target(schema.class_path(cls)) is cls
    with pytest.raises(kit.UpstreamMoved, match="defines no class NoSuch"):
        l09.load_config_classes(names=("NoSuch",))


@needs
def test_upstream_check_prints_one_row(capsys):
    l09.upstream_check(cases=20)  # half as many: each case writes and reads YAML
    assert capsys.readouterr().out == (
        f"[upstream] verl {kit.verl_version()}: verl/workers/config/engine.py::McoreEngineConfig: agree on 10 cases\n"
    )


def test_upstream_check_skips_in_one_line_without_verl(monkeypatch, capsys):
    def absent(release=None):
        raise kit.VerlNotInstalled("no verl")

    monkeypatch.setattr(kit, "verl_root", absent)
    l09.upstream_check()
    assert capsys.readouterr().out == kit.SKIP_LINE + "\n"


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"cases": None}, r"argument cases must be a positive integer, got NoneType None"),
        ({"cases": "3"}, r"argument cases must be a positive integer"),
        ({"seed": [1]}, r"argument seed must be an integer, got list"),
        ({"build": 7}, r"argument build must be a function \(the code under comparison\) or None, got int 7"),
    ],
)
def test_compare_engine_config_names_an_argument_of_the_wrong_type(args, named):
    # issue 43 item 8: cases=None ended in "'NoneType' object cannot be interpreted as an integer"
    with pytest.raises(TypeError, match=named):
        l09.compare_engine_config(**args)
    with pytest.raises(TypeError, match=r"argument cases must be a positive integer"):
        l09.upstream_check(None)


@pytest.mark.parametrize("value", [None, 7, [1]])
def test_load_config_classes_names_an_argument_of_the_wrong_type(value):
    # issue 43 item 8: relative=None ended in "unsupported operand type(s) for /: 'PosixPath' and 'NoneType'"
    with pytest.raises(TypeError, match=r"argument relative must be a path inside verl"):
        l09.load_config_classes(relative=value)
    with pytest.raises(TypeError, match=r"argument names(\[0\])? must be (a list, each item )?a class name"):
        l09.load_config_classes(names=value if value is not None else 7)
    if value is not None:
        with pytest.raises(TypeError, match=r"argument release must be a verl version like '0\.9\.0'"):
            l09.load_config_classes(release=value)
