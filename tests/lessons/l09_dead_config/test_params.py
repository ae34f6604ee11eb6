"""Lesson 09's parameter helper: every value checked and named, the seed applied, the device said."""

import pytest
import torch

from verlstudy.kit import claims
from verlstudy.lessons.l09_dead_config.params import lesson_params


def test_good_values_come_back_checked_and_the_device_is_said(capsys):
    claims.claim("left over from an earlier run", True)
    capsys.readouterr()
    dev, hidden, diff_context = lesson_params("cpu", 16, 1, 7)
    assert (dev.type, hidden, diff_context) == ("cpu", 16, 1)
    assert capsys.readouterr().out == "running on cpu\n"
    assert claims.recorded_claims() == []  # a rerun starts a fresh table
    first = torch.rand(2)
    lesson_params("cpu", 16, 1, 7)
    assert torch.equal(torch.rand(2), first)  # seeded


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("cpu", 0, 1, 0), "hidden"),
        (("cpu", 16, 11, 0), "diff_context"),
        (("cpu", 16, 1, -1), "seed"),
        (("cpu", "16", 1, 0), "hidden"),
        (("tpu", 16, 1, 0), "device"),
        (("cpu", 0, 1, -1), "hidden"),  # the seed is checked last
        (("cpu", 16, 11, -1), "diff_context"),
        (("tpu", 0, 1, -1), "device"),  # the device first
    ],
)
def test_a_bad_value_is_named(args, named):
    with pytest.raises((ValueError, TypeError), match=f"^(parameter )?{named}\\b"):
        lesson_params(*args)
