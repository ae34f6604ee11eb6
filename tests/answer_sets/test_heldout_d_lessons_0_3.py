"""The fourth held-out set's answers of lessons 00-03 (heldout_2026_12d/README.md): measured once, kept as regression
cases."""

from tests.answer_sets.heldout import verdict_test

test_a_held_out_answer_gets_the_verdict_it_deserves = verdict_test(range(0, 4), "heldout_2026_12d")
