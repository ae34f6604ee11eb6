"""claim / expect_error / claims_table: the lesson's honesty helpers, as a specification."""

import numpy as np
import pytest

from verlstudy.kit.claims import (
    ClaimError,
    claim,
    claims_table,
    expect_error,
    recorded_claims,
    reset_claims,
)


@pytest.fixture(autouse=True)
def _fresh():
    reset_claims()
    yield
    reset_claims()


def test_claim_within_tolerance_prints_one_stable_line(capsys):
    claim("retained bytes per micro-batch", 4096.0, expected=4096, rtol=0.01, upstream="0.31 MiB (GPU)", unit="B")
    assert capsys.readouterr().out == (
        "[claim] retained bytes per micro-batch: 4096 B (expected 4096 B) | upstream: 0.31 MiB (GPU)\n"
    )


def test_claim_outside_tolerance_raises_and_records_nothing():
    with pytest.raises(ClaimError, match="ours 5000, expected 4096"):
        claim("retained", 5000, expected=4096, rtol=0.1)
    assert recorded_claims() == []


def test_float_formatting_is_rounded_so_nbval_sees_a_stable_string(capsys):
    claim("ratio", 1 / 3, expected=0.3333, atol=1e-4)
    assert "0.3333 (expected 0.3333)" in capsys.readouterr().out


def test_yes_no_claim_needs_a_bool():
    claim("slope is zero", True)
    with pytest.raises(ClaimError):
        claim("slope is zero", False)
    with pytest.raises(TypeError, match="must be a bool"):
        claim("a figure without expected", 3.0)


def test_nan_never_matches():
    with pytest.raises(ClaimError):
        claim("nan", float("nan"), expected=float("nan"), atol=1.0)


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="name"):
        claim("", 1, expected=1)
    with pytest.raises(ValueError, match="rtol"):
        claim("x", 1, expected=1, rtol=-1)
    with pytest.raises(TypeError, match="upstream"):
        claim("x", 1, expected=1, upstream=3)


def test_rerunning_a_cell_replaces_the_claim_instead_of_duplicating_it():
    claim("x", 1, expected=1)
    claim("x", 1, expected=1)
    assert len(recorded_claims()) == 1


def test_claims_table_lists_every_claim_and_the_count(capsys):
    claim("a", 1, expected=1, upstream="1 on GPU")
    claim("b", True)
    capsys.readouterr()
    claims_table()
    out = capsys.readouterr().out
    assert "| a | 1 on GPU | 1 | yes |" in out
    assert out.rstrip().endswith("2/2 claims reproduced")


def test_claims_table_without_claims_is_an_error():
    with pytest.raises(ValueError, match="no claims"):
        claims_table()


def test_expect_error_prints_the_message(capsys):
    with expect_error(ValueError):
        raise ValueError("device='tpu' is not allowed")
    assert capsys.readouterr().out == "expected ValueError: device='tpu' is not allowed\n"


def test_expect_error_fails_when_nothing_is_raised():
    with pytest.raises(AssertionError, match="nothing was raised"), expect_error(KeyError):
        pass


def test_expect_error_lets_other_exceptions_through():
    with pytest.raises(TypeError), expect_error(ValueError):
        raise TypeError("not the one we expected")


def test_expect_error_match_checks_the_message():
    with pytest.raises(AssertionError, match="mentioning 'tp'"), expect_error(ValueError, match="tp"):
        raise ValueError("cp is wrong")
    with pytest.raises(TypeError, match="exception class"), expect_error("ValueError"):  # type: ignore[arg-type]
        pass


def test_claims_table_ends_with_the_lessons_exercise_verdicts(capsys, monkeypatch):
    from verlstudy.kit import exercises

    reset_claims()
    claim("one", True)
    monkeypatch.setattr(exercises, "exercise_results", lambda: {"0.1": "correct", "0.2": "not attempted"})
    claims_table()
    assert capsys.readouterr().out.rstrip().endswith("1/2 exercises correct: 0.1 correct, 0.2 not attempted")


def test_claims_table_is_a_display_object_with_markdown_and_the_same_plain_pipes(monkeypatch):
    import IPython
    import IPython.display

    reset_claims()
    claim("bytes | per step", 3, expected=3)
    shown = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    monkeypatch.setattr(IPython.display, "display", lambda data, raw: shown.append(data))
    claims_table()
    (data,) = shown
    assert data["text/plain"].splitlines()[2] == "| bytes \\| per step | - | 3 | yes |"  # the pipe stays in its cell
    assert data["text/markdown"].startswith("| claim | upstream | ours | reproduced |\n| --- | --- | --- | --- |\n")
    assert data["text/markdown"].endswith("\n\n1/1 claims reproduced\n")


@pytest.mark.parametrize("digits", [None, float("inf"), 0, 18, True])
def test_digits_that_cannot_format_a_figure_are_named(digits):
    # issue 43 item 8: digits=inf or None ended in "Format specifier missing precision", naming nothing
    with pytest.raises(ValueError, match=r"claim 'x': digits must be an int from 1 to 17"):
        claim("x", 1.0, expected=1.0, digits=digits)


def test_ints_beyond_floats_range_are_compared_exactly(capsys):
    claim("a huge count", 10**400, 10**400)
    assert "a huge count: " + "1" + "0" * 400 in capsys.readouterr().out
    with pytest.raises(ClaimError, match="does not hold"):
        claim("a huge count, off by one", 10**400 + 1, 10**400)
    claim("a huge count, within rtol", 10**400 + 1, 10**400, rtol=1e-9)


@pytest.mark.parametrize(
    ("ours", "expected", "why"),
    [(float("nan"), float("nan"), "NaN equals nothing"), (np.float32("nan"), 1.0, "NaN equals nothing"),
     ("a", 1, "ours is a str, expected an int"), (3, "3", "ours is an int, expected a str")],
)  # fmt: skip
def test_a_failed_claim_says_what_the_values_alone_do_not(ours, expected, why):
    with pytest.raises(ClaimError, match=why):
        claim("x", ours, expected)
