"""Device choice and seeding: CPU first, accelerators optional, every bad value named."""

import random

import numpy as np
import pytest
import torch

from verlstudy.kit.devices import (
    DEVICE_CHOICES,
    has_accelerator,
    pick_device,
    skip_unless,
    visible_accelerators,
)
from verlstudy.kit.seeding import seed_everything

on_cpu_only = pytest.mark.skipif(torch.cuda.is_available(), reason="checks CPU-only behaviour")


def test_auto_picks_an_accelerator_when_present_else_cpu():
    expected = visible_accelerators()[0] if visible_accelerators() else "cpu"
    assert pick_device("auto").type == expected
    assert pick_device("cpu") == torch.device("cpu")


@pytest.mark.parametrize("bad", ["tpu", "CUDA", ""])
def test_unknown_device_names_the_parameter_and_the_choices(bad):
    with pytest.raises(ValueError, match=r"device=.* is not allowed; choose one of 'auto', 'cpu', 'cuda', 'npu'"):
        pick_device(bad)


def test_non_string_device_is_a_type_error():
    with pytest.raises(TypeError, match="device must be a string"):
        pick_device(0)  # type: ignore[arg-type]


@on_cpu_only
def test_asking_for_a_missing_gpu_is_an_error_not_a_silent_fallback():
    with pytest.raises(ValueError, match="no CUDA device is visible"):
        pick_device("cuda")


@on_cpu_only
def test_skip_unless_prints_one_line_and_returns_false(capsys):
    assert skip_unless("cuda") is False
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("[skip] no CUDA device")


def test_has_accelerator_only_knows_accelerators():
    assert set(DEVICE_CHOICES) >= {"cuda", "npu"}
    with pytest.raises(ValueError, match="kind='cpu'"):
        has_accelerator("cpu")
    assert has_accelerator("npu") in (True, False)


def test_seed_everything_makes_all_three_generators_repeat():
    def draw():
        return random.random(), float(np.random.rand()), float(torch.rand(1))

    seed_everything(3)
    first = draw()
    seed_everything(3)
    assert draw() == first
    seed_everything(4)
    assert draw() != first


@pytest.mark.parametrize(("bad", "exc"), [(-1, ValueError), (2**32, ValueError), ("0", TypeError), (True, TypeError)])
def test_seed_must_be_a_non_negative_int(bad, exc):
    with pytest.raises(exc, match="seed must"):
        seed_everything(bad)
