"""Exercise 9.2's contract: wrong answers of many kinds fail (on the generated blocks alone too, not only on a
named case), right answers written differently pass, and the reference and the course's own comparison look
inside `Optional[...]` blocks of verl 0.9.1's real config classes."""

from __future__ import annotations

import dataclasses
import functools
import typing

import pytest

from conftest import verdict_of
from verlstudy.kit.exercises import ExerciseFailure
from verlstudy.kit.properties import compare_on_inputs
from verlstudy.lessons.l09_dead_config import check_yaml_keys, schema, upstream
from verlstudy.lessons.l09_dead_config import exercise_configs as ex


def _inner(kind):
    if typing.get_origin(kind) in (typing.Union, type(int | None)):
        arms = [a for a in typing.get_args(kind) if a is not type(None)]
        kind = arms[0] if len(arms) == 1 else None
    return kind if dataclasses.is_dataclass(kind) else None


def walker(names_of=lambda cls: {f.name for f in dataclasses.fields(cls)}, skip=lambda k, v: k == "_target_",
           inner=_inner, key_of=lambda k: k):  # fmt: skip
    """A yaml_only_keys built from its parts, so that each wrong answer below changes one part."""

    def answer(cls, data, prefix=""):
        hints, names, out = typing.get_type_hints(cls), names_of(cls), []
        for key, value in data.items():
            if skip(key, value):
                continue
            if key_of(key) not in names:
                out.append(prefix + key)
            elif key in hints and inner(hints[key]) is not None and isinstance(value, dict):
                out.extend(answer(inner(hints[key]), value, prefix + key + "."))
        return sorted(out)

    return answer


def first_arg_only(kind):
    args = typing.get_args(kind)
    kind = args[0] if args else kind  # Optional[X] is Union[X, None]: but `None | X` puts None first
    return kind if dataclasses.is_dataclass(kind) else None


ALL_FIELDS = {f.name for c in ex.CLASSES for f in dataclasses.fields(c)}


def instance_attributes(cls):
    try:
        return set(vars(cls()))  # __post_init__ adds attributes; a class with a required field cannot be made
    except TypeError:
        return {f.name for f in dataclasses.fields(cls)}


@functools.cache
def _cached_names(cls):
    return {f.name for f in dataclasses.fields(cls)}


_seen: dict = {}


def remembers_the_first_answer(cls, data):
    if cls not in _seen:  # a second call with the same class answers the first call's block
        _seen[cls] = walker()(cls, data)
    return _seen[cls]


def pops_nested_target(cls, data, prefix=""):
    for value in data.values():
        if isinstance(value, dict):
            value.pop("_target_", None)  # the caller's nested block loses its _target_
    return walker()(cls, data, prefix)


WRONG = {
    "skips null values": walker(skip=lambda k, v: k == "_target_" or v is None),
    "skips falsy values": walker(skip=lambda k, v: k == "_target_" or not v),
    "skips every `_` key": walker(skip=lambda k, v: k.startswith("_")),
    "skips keys ending in `_`": walker(skip=lambda k, v: k.endswith("_")),
    "names from type hints (ClassVar counted)": walker(names_of=lambda cls: set(typing.get_type_hints(cls))),
    "names from __dataclass_fields__": walker(names_of=lambda cls: set(cls.__dataclass_fields__)),
    "names from an instance's vars": walker(names_of=instance_attributes),
    "names by hasattr": walker(names_of=lambda cls: {n for n in typing.get_type_hints(cls) if hasattr(cls, n)}),
    "case-folded keys": walker(key_of=str.lower),
    "dashes read as underscores": walker(key_of=lambda k: k.replace("-", "_")),
    "no Optional blocks (the old solution)": walker(inner=lambda k: k if dataclasses.is_dataclass(k) else None),
    "first Union arm only": walker(inner=first_arg_only),
    "one pool of names for every block": walker(names_of=lambda cls: ALL_FIELDS),
    "remembers the first call": remembers_the_first_answer,
    "changes a nested block": pops_nested_target,
    "a set": lambda cls, data: set(walker()(cls, data)),
}


def by_stack(cls, data):
    out, todo = [], [(cls, data, ())]
    while todo:
        klass, block, path = todo.pop()
        kinds = {f.name: typing.get_type_hints(klass)[f.name] for f in dataclasses.fields(klass)}
        for key, value in block.items():
            if key == "_target_":
                continue
            if key not in kinds:
                out.append(".".join((*path, key)))
                continue
            arms = [a for a in (typing.get_args(kinds[key]) or (kinds[key],)) if a is not type(None)]
            if len(arms) == 1 and dataclasses.is_dataclass(arms[0]) and isinstance(value, typing.Mapping):
                todo.append((arms[0], value, (*path, key)))
    return tuple(sorted(out))


def by_generator(cls, data):
    def keys(klass, block, prefix):
        hints = typing.get_type_hints(klass)
        fields = {f.name: hints[f.name] for f in dataclasses.fields(klass)}
        for key in block:
            if key != "_target_" and key not in fields:
                yield prefix + key
            elif key in fields and isinstance(block[key], dict):
                sub = _inner(fields[key])
                if sub:
                    yield from keys(sub, block[key], f"{prefix}{key}.")

    return sorted(keys(cls, data, ""))


RIGHT = {
    "the walker itself": walker(),
    "a stack, Mapping test, tuple result": by_stack,
    "a generator": by_generator,
    "a copy of the data first": lambda cls, data: walker()(cls, dict(data)),
}


@pytest.mark.parametrize("name", WRONG)
def test_wrong_answers_fail(name):
    assert verdict_of("9.2", WRONG[name]).startswith("not yet right: ")


@pytest.mark.parametrize("name", [n for n in WRONG if n != "a set"])
def test_generated_blocks_alone_catch_each_wrong_answer(name):
    """The named cases illustrate; the drawn blocks are the check: each wrong answer fails without them."""
    _seen.clear()
    with pytest.raises(ExerciseFailure):
        compare_on_inputs(WRONG[name], check_yaml_keys._reference_yaml_only, inputs=check_yaml_keys._yaml_inputs(),
                          name="yaml_only_keys", max_examples=100)  # fmt: skip


@pytest.mark.parametrize("name", RIGHT)
def test_right_answers_pass(name):
    assert verdict_of("9.2", RIGHT[name]) == "correct"


@pytest.mark.parametrize(
    ("name", "mentions"),
    [("skips null values", "null too"), ("skips every `_` key", "'_target_' itself"), ("case-folded keys", "exactly"),
     ("names from type hints (ClassVar counted)", "ClassVar"), ("no Optional blocks (the old solution)", "optional"),
     ("one pool of names for every block", "not of the class of the block")],
)  # fmt: skip
def test_first_message_names_the_mistake_made(name, mentions):
    _seen.clear()
    assert mentions.lower() in verdict_of("9.2", WRONG[name]).lower()


def test_the_reference_and_the_course_look_inside_optional_blocks_of_verl_091():
    names = ("KLControlConfig", "FilterGroupsConfig", "RolloutCorrectionConfig", "AlgoConfig")
    algo = upstream.load_config_classes("trainer/config/algorithm.py", names=names)["AlgoConfig"]
    assert typing.get_origin(typing.get_type_hints(algo)["filter_groups"]) is typing.Union  # Optional[...] upstream
    block = {"gamma": 1.0, "grad_offload": None, "filter_groups": {"enable": True, "metrik": "acc"}}
    want = ["filter_groups.metrik", "grad_offload"]
    assert check_yaml_keys._reference_yaml_only(algo, block) == want
    assert sorted(schema.yaml_field_mismatches(algo, block)["yaml_only"]) == want
    assert check_yaml_keys._reference_yaml_only(algo, {"filter_groups": None}) == []


def test_nested_dataclass_reads_optional_and_union_with_none_only():
    assert schema.nested_dataclass(ex.Replay) is ex.Replay
    assert schema.nested_dataclass(typing.Optional[ex.Profiler]) is ex.Profiler  # noqa: UP045
    assert schema.nested_dataclass(None | ex.Replay) is ex.Replay
    assert schema.nested_dataclass(ex.Replay | ex.Profiler) is None  # two dataclasses: which one is unknowable
    assert schema.nested_dataclass(dict) is None and schema.nested_dataclass(typing.Optional[int]) is None  # noqa: UP045
