"""Parameter validation: a bad papermill value names the parameter and what is allowed."""

import pytest

from verlstudy.kit.params import check_choice, check_float, check_int, positive_int


def test_check_choice_accepts_an_allowed_value_and_names_the_rest():
    assert check_choice("mode", "R2", ("disabled", "R2", "R3")) == "R2"
    with pytest.raises(ValueError, match=r"parameter mode='R4' is not allowed; choose one of 'disabled', 'R2', 'R3'"):
        check_choice("mode", "R4", ("disabled", "R2", "R3"))


@pytest.mark.parametrize("bad", ["3", 3.0, True, None])
def test_check_int_rejects_non_integers(bad):
    with pytest.raises(TypeError, match="parameter n must be an integer"):
        check_int("n", bad)


def test_check_int_range():
    assert check_int("n", 3, minimum=1, maximum=3) == 3
    with pytest.raises(ValueError, match="1 <= n <= 3"):
        check_int("n", 4, minimum=1, maximum=3)
    with pytest.raises(ValueError, match="allowed: n <= 0"):
        check_int("n", 1, maximum=0)


def test_check_float():
    assert check_float("lr", 1, minimum=0.0) == 1.0
    with pytest.raises(TypeError, match="lr must be a number"):
        check_float("lr", "0.1")
    with pytest.raises(ValueError, match="out of range"):
        check_float("lr", -0.5, minimum=0.0)


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        (0, ValueError, r"argument tp must be a positive integer \(>= 1\), got 0"),
        (-3, ValueError, "got -3"),
        (2.0, TypeError, "argument tp must be a positive integer, got float 2.0"),
        (True, TypeError, "got bool True"),
        ("2", TypeError, "got str '2'"),
    ],
)
def test_positive_int_names_the_argument_and_what_is_allowed(value, error, match):
    with pytest.raises(error, match=match):
        positive_int("tp", value)


def test_positive_int_returns_a_plain_int():
    import numpy as np

    assert positive_int("tp", np.int64(4)) == 4 and type(positive_int("tp", np.int64(4))) is int


def test_a_range_open_on_one_side_reads_plainly():
    with pytest.raises(ValueError, match=r"allowed: seed >= 0$"):
        check_int("seed", -1, minimum=0)
    with pytest.raises(ValueError, match=r"allowed: 0.0 <= lr <= 1.0$"):
        check_float("lr", 2.0, minimum=0.0, maximum=1.0)
