"""Round trips for configs shaped like verl's: a base class with a `_target_` field defaulting to '',
nested blocks with and without `_target_`, configs made in Python, and element types of list fields."""

from __future__ import annotations

import collections.abc
from dataclasses import dataclass, field, fields
from typing import Any, Literal, Optional

import pytest

from verlstudy.lessons.l09_dead_config import errors, loading, schema


@dataclass
class Base(collections.abc.Mapping):  # the shape of verl/base_config.py::BaseConfig (written for this test)
    _target_: str = ""

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def __iter__(self):
        return (f.name for f in fields(self))

    def __len__(self) -> int:
        return len(fields(self))


@dataclass
class Replay(Base):
    mode: Literal["disabled", "R2", "R3"] = "disabled"
    record_file: Optional[str] = None  # noqa: UP045 - verl's spelling, a typing.Union


@dataclass
class Optim(Base):
    betas: list[float] = field(default_factory=lambda: [0.9, 0.999])
    clip: dict[str, int] = field(default_factory=dict)


@dataclass
class Engine(Base):
    param_offload: bool = False
    strategy: str = None  # as verl's EngineConfig declares it
    max_token_len_per_gpu: int = None
    router_replay: Replay = field(default_factory=Replay)
    optim: Optim = field(default_factory=Optim)
    extra: dict[str, Any] = field(default_factory=dict)


def _round_trip(config: Any) -> Any:
    text = schema.dump_yaml(schema.to_dict(config))
    return schema.build(type(config), loading.parse_yaml(text, "rt.yaml"))


@pytest.mark.parametrize(
    "config",
    [
        Engine(),
        Engine(param_offload=True, strategy="megatron", max_token_len_per_gpu=4096),
        Engine(
            router_replay=Replay(mode="R2", record_file="r.pt"),
            optim=Optim(betas=[0.5, 0.75], clip={"a": 1}),
            extra={"k": [1, "x"]},
        ),
    ],
)
def test_configs_made_in_python_read_back_equal(config):
    data = schema.to_dict(config)
    assert data["_target_"] == schema.class_path(Engine), "the class path, not BaseConfig's '' default"
    assert data["router_replay"]["_target_"] == schema.class_path(Replay)
    back = _round_trip(config)
    assert back == config and back._target_ == "" and back.router_replay._target_ == ""


def test_blocks_with_and_without_target_and_with_the_empty_default():
    text = (
        f"_target_: {schema.class_path(Engine)}\n"
        "router_replay:\n  mode: R3\n"  # no _target_: the field's type decides
        f"optim:\n  _target_: ''\n  betas: [1, 0.5]\n"  # '' is BaseConfig's 'no target'
    )
    built = schema.build(Engine, loading.parse_yaml(text, "e.yaml"))
    assert built.router_replay == Replay(mode="R3") and built.optim.betas == [1.0, 0.5]
    assert all(isinstance(b, float) for b in built.optim.betas)
    tree = loading.parse_yaml(f"engine:\n  _target_: {schema.class_path(Engine)}\n  router_replay: {{}}\n")
    assert schema.instantiate(tree)["engine"] == Engine()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("optim:\n  betas: ['a', 0.9]\n", r"e\.yaml:2: 'optim\.betas\[0\]' must be float, got str 'a'"),
        ("optim:\n  betas: [0.9, true]\n", r"'optim\.betas\[1\]' must be float, got bool True"),
        ("optim:\n  clip:\n    a: x\n", r"'optim\.clip\.a' must be int, got str 'x'"),
        ("router_replay:\n  mode: R4\n", r"'router_replay\.mode' must be one of \('disabled', 'R2', 'R3'\)"),
        ("param_offload: null\n", r"'param_offload' must be bool, got null"),
        ("_target_: other.Engine\n", r"_target_ is 'other\.Engine'"),
    ],
)
def test_element_types_and_targets_are_checked(text, message):
    with pytest.raises(errors.ConfigError, match=message):
        schema.build(Engine, loading.parse_yaml(text, "e.yaml"))


def test_a_null_is_accepted_only_where_the_default_is_none():
    built = schema.build(Engine, loading.parse_yaml("strategy: null\nmax_token_len_per_gpu: null\n"))
    assert built.strategy is None and built.max_token_len_per_gpu is None


def test_dotted_names_list_items_without_a_dot():
    assert loading.dotted(("optim", "betas", "[0]")) == "optim.betas[0]"
    assert loading.dotted(()) == "<root>"
