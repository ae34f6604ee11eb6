"""The config classes exercise 9.2's checker draws YAML blocks for: the shapes verl 0.9.1's own configs have.

Written with `from __future__ import annotations`, as the lesson's fixture is, so every field's `.type` is a
string (the `_Resolved*` classes, made with `make_dataclass`, hold the type objects themselves, as verl's config
modules do). Between them they hold what a by-name comparison of keys and fields can trip on:

- fields inherited from a base class (verl's engine configs share `EngineConfig`'s);
- `Optional[...]` and `X | None` dataclass fields, set to a block or to null (0.9.1's
  `RolloutConfig.profiler: Optional[ProfilerConfig]`, `AlgoConfig.filter_groups`);
- a `ClassVar` (verl's `BaseConfig._mutable_fields`) and methods (`BaseConfig.get`): class attributes, not fields;
- a field with a `default_factory` and a field with no default (no class attribute behind either);
- an attribute `__post_init__` sets, which an instance has and the class's fields do not;
- a plain `dict` field, which may hold any key.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional, Union


@dataclass
class Replay:
    mode: str = "disabled"
    record_file: str | None = None


@dataclass
class Profiler:
    tool: str | None = None
    enable: bool = False
    ranks: list = field(default_factory=list)


@dataclass
class BaseEngine:  # verl's BaseConfig + EngineConfig: a ClassVar, a method, fields every engine inherits
    _mutable_fields: ClassVar[frozenset[str]] = frozenset({"param_offload"})
    param_offload: bool = False
    router_replay: Replay = field(default_factory=Replay)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)

    def __post_init__(self) -> None:
        self.dtype_resolved = "bf16"  # an attribute of every instance, not a field


@dataclass
class Engine(BaseEngine):
    optimizer_offload: bool = False
    profiler: Optional[Profiler] = None  # noqa: UP045 (verl 0.9.1 writes Optional[...])
    checkpoint: Union[None, Replay] = None  # noqa: UP007, RUF036 (None first: the arm to take is the second)
    override_config: dict = field(default_factory=dict)  # a plain mapping: any key is allowed inside


@dataclass
class Actor:  # three levels: actor -> engine -> router_replay / profiler
    ppo_micro_batch_size: int  # no default: `Actor()` raises
    engine: Engine = field(default_factory=Engine)
    profiler: Union[Profiler, None] = None  # noqa: UP007
    replay: Replay | None = None  # PEP 604's spelling: a types.UnionType, not a typing.Union
    use_kl_loss: bool = False


ResolvedEngine = dataclasses.make_dataclass(
    "ResolvedEngine",
    [
        ("param_offload", bool, False),
        ("router_replay", Replay, field(default_factory=Replay)),
        ("profiler", Optional[Profiler], None),  # noqa: UP045
        ("checkpoint", Union[None, Replay], None),  # noqa: UP007
        ("tuning", Replay | None, None),
    ],
    bases=(BaseEngine,),
    namespace={"__module__": __name__},
)

CLASSES: tuple[type, ...] = (Engine, Actor, ResolvedEngine, Replay, BaseEngine, Profiler)

# keys that are no field of any class here, and names near `_target_` (only `_target_` itself is allowed)
EXTRA_KEYS: tuple[str, ...] = ("grad_offload", "record_fle", "zeta", "_private", "_target", "target_", "__target__")
NOT_FIELDS = ("_mutable_fields", "get", "dtype_resolved")  # a ClassVar, a method, an attribute __post_init__ sets


def odd_keys(cls: type) -> tuple[tuple[str, ...], ...]:
    """Keys a block of `cls` may hold that are not its fields, by kind (a checker draws each kind as often):
    capitalised, dashed and upper-case spellings of its fields; its class attributes that are no fields; other
    classes' fields; `EXTRA_KEYS`. A kind `cls` has none of is left out."""
    fields = [f.name for f in dataclasses.fields(cls)]
    spelled = [v for n in fields for v in (n.capitalize(), n.replace("_", "-"), n.upper()) if v != n]
    attributes = [n for n in NOT_FIELDS if hasattr(cls, n) or n in typing.get_type_hints(cls)]
    if getattr(cls, "__post_init__", None) is not None:
        attributes.append("dtype_resolved")
    others = sorted({f.name for c in CLASSES for f in dataclasses.fields(c)} - set(fields))
    kinds = (tuple(dict.fromkeys(spelled)), tuple(dict.fromkeys(attributes)), tuple(others), EXTRA_KEYS)
    return tuple(kind for kind in kinds if kind)


# what a YAML value can be: null and other falsy values included (`grad_offload: null`)
VALUES: tuple[Any, ...] = (None, False, 0, "", True, 1, "R2", [], [1, 2])


def field_types(cls: type) -> dict[str, Any]:
    """Each field's resolved type (inherited fields included, ClassVars not)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}
