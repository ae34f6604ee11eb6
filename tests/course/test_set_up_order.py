"""Every lesson's set-up cell takes its first steps in one order: the device picked, then the lesson's other
parameters checked, then `kit.lesson_start.start_lesson(dev, seed)` last. So a bad value is named before anything
is reset, seeded or printed, and with a bad seed beside it, the other parameter is the one named.

The cells run here the way `verlstudy run` checks parameters before any kernel starts (the `parameters` cell, the
overrides, the next cell), with this process's output captured; `course.parameters.validate_parameters` is asked too.
"""

from __future__ import annotations

import gc
import random
import re

import numpy as np
import pytest
import torch

from verlstudy.course import parameters, registry
from verlstudy.course.files import read_notebook
from verlstudy.kit import claims

BAD_SEED = -1
BAD_DEVICE = "tpu"
NOT_A_VALUE = "not a value"  # no lesson parameter takes this string: an int, a float, a list or a choice refuses it


def _other_parameters(lesson: registry.Lesson) -> list[str]:
    return [name for name in parameters.notebook_parameters(lesson.notebook) if name not in ("device", "seed")]


def _pairs() -> list[tuple[registry.Lesson, str]]:
    return [(lesson, name) for lesson in registry.LESSONS for name in _other_parameters(lesson)]


def _set_up_cells(lesson: registry.Lesson) -> tuple[str, str]:
    """The `parameters` cell and the set-up cell after it."""
    code = [c for c in read_notebook(lesson.notebook).cells if c.cell_type == "code"]
    index = next(i for i, c in enumerate(code) if "parameters" in c.metadata.get("tags", []))
    return code[index].source, code[index + 1].source


@pytest.fixture
def collector_kept():
    """The set-up cells pause and freeze the collector around their imports, and 03 and 04 resume it in a later
    cell: give this process its collector back whatever the cell did before it raised."""
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()


def _rng_states() -> tuple[object, ...]:
    return torch.random.get_rng_state(), np.random.get_state()[1].copy(), random.getstate()


def _same(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    return torch.equal(a[0], b[0]) and np.array_equal(a[1], b[1]) and a[2] == b[2]


def _refused_without_a_trace(lesson: registry.Lesson, overrides: dict[str, object], capsys) -> str:
    """Run the set-up cell with the overrides; it must raise, and before that print nothing, reset no claim and
    seed nothing. Returns the error's message."""
    params_cell, set_up = _set_up_cells(lesson)
    namespace: dict[str, object] = {"__name__": f"set_up_order_{lesson.code}"}
    exec(compile(params_cell, f"{lesson.stem}:parameters", "exec"), namespace)
    namespace.update(overrides)
    claims.reset_claims()
    claims.claim("recorded before the set-up cell", True)
    capsys.readouterr()
    before = _rng_states()
    try:
        with pytest.raises((ValueError, TypeError)) as raised:
            exec(compile(set_up, f"{lesson.stem}:set-up", "exec"), namespace)
        assert capsys.readouterr() == ("", ""), f"lesson {lesson.code} printed before refusing {overrides}"
        assert len(claims.recorded_claims()) == 1, f"lesson {lesson.code} reset the claims before refusing"
        assert _same(_rng_states(), before), f"lesson {lesson.code} seeded before refusing {overrides}"
    finally:
        claims.reset_claims()
    return str(raised.value)


def _names(message: str, name: str) -> bool:
    """The message names `name` first, the way kit.params and kit.devices write it."""
    return re.match(rf"(?:parameter )?{re.escape(name)}\b", message) is not None


@pytest.mark.parametrize(("lesson", "name"), _pairs(), ids=lambda v: v.stem if hasattr(v, "stem") else v)
def test_a_bad_parameter_beside_a_bad_seed_is_the_one_named(lesson, name, capsys, collector_kept):
    overrides = {name: NOT_A_VALUE, "seed": BAD_SEED}
    message = _refused_without_a_trace(lesson, overrides, capsys)
    assert _names(message, name), f"lesson {lesson.code}: {message!r} should name {name}, not the seed"
    with pytest.raises((ValueError, TypeError), match=rf"^(?:parameter )?{re.escape(name)}\b"):
        parameters.validate_parameters(lesson, overrides)


@pytest.mark.parametrize("lesson", registry.LESSONS, ids=lambda lesson: lesson.stem)
def test_a_bad_device_is_named_before_every_other_bad_value(lesson, capsys, collector_kept):
    overrides = {**dict.fromkeys(_other_parameters(lesson), NOT_A_VALUE), "device": BAD_DEVICE, "seed": BAD_SEED}
    message = _refused_without_a_trace(lesson, overrides, capsys)
    assert message.startswith(f"device={BAD_DEVICE!r} is not allowed"), f"lesson {lesson.code}: {message!r}"


@pytest.mark.parametrize("lesson", registry.LESSONS, ids=lambda lesson: lesson.stem)
def test_a_bad_seed_alone_is_named_and_still_leaves_no_trace(lesson, capsys, collector_kept):
    message = _refused_without_a_trace(lesson, {"seed": BAD_SEED}, capsys)
    assert message == "parameter seed=-1 is out of range; allowed: 0 <= seed <= 4294967295"


def test_every_lesson_but_08_has_another_parameter_to_pair_with_the_seed():
    paired = {lesson.code for lesson, _ in _pairs()}
    assert paired == {lesson.code for lesson in registry.LESSONS} - {"08"}
