"""The fourth held-out set's answers of lessons 07-09 (heldout_2026_12d/README.md): measured once, kept as regression
cases."""

import pytest

from tests.answer_sets.heldout import library_cases, library_verdict, verdict_test

SET = "heldout_2026_12d"
test_a_held_out_answer_gets_the_verdict_it_deserves = verdict_test(range(7, 10), SET)


@pytest.mark.parametrize("label", library_cases(SET))
def test_a_held_out_library_answer_is_refused(label):
    exercise, got = library_verdict(label, SET)
    assert got.startswith("not yet right |"), f"{exercise} library answer '{label}': {got}"
