"""Lesson 02's set-up helper: the device picked, every size checked, the seed last."""

import pytest
import torch

from verlstudy.kit import claims
from verlstudy.lessons.l02_detach.setup import lesson_setup

GOOD = ("cpu", 3, 1000, 12, 8, 0.5, 0.001)


def test_good_values_come_back_checked_and_nothing_is_said(capsys):
    dev, seed, *rest = lesson_setup(*GOOD)
    assert (dev.type, seed, *rest) == ("cpu", 3, 1000, 12, 8, 0.5, 0.001)
    assert capsys.readouterr() == ("", "")  # the notebook says the device itself


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({1: -1}, "seed"),
        ({3: 7}, "steps"),
        ({1: -1, 2: 0}, "n_leaves"),  # the seed is checked last, after every size
        ({1: -1, 6: 0.5}, "kl_coef"),
        ({0: "tpu", 1: -1, 2: 0}, "device"),  # the device first
    ],
)
def test_a_bad_value_is_named(changes, named):
    args = [changes.get(i, v) for i, v in enumerate(GOOD)]
    with pytest.raises((ValueError, TypeError), match=f"^(parameter )?{named}\\b"):
        lesson_setup(*args)


def test_a_bad_size_leaves_the_claims_and_the_seed_alone():
    claims.reset_claims()
    claims.claim("recorded before the set-up", True)
    state = torch.random.get_rng_state()
    with pytest.raises(ValueError, match=r"^parameter group_size=2"):
        lesson_setup("cpu", 5, 1000, 12, 2, 0.5, 0.001)
    assert len(claims.recorded_claims()) == 1 and torch.equal(torch.random.get_rng_state(), state)
    claims.reset_claims()
