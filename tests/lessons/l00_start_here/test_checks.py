"""Lesson 00's checkers: the reference passes; plausible wrong answers fail, each with a message naming the mistake."""

import pytest
import torch

from verlstudy.kit.exercises import find_checker


def seeded_sample(seed, n):
    return torch.randn(n, generator=torch.Generator().manual_seed(seed))


def test_0_1_accepts_a_private_generator():
    assert "untouched" in find_checker("0.1")(seeded_sample)


def test_0_1_rejects_seeding_the_global_rng(assert_wrong):
    def global_seed(seed, n):
        torch.manual_seed(seed)
        return torch.randn(n)

    assert_wrong("0.1", global_seed, mentions="global RNG moved")


def test_0_1_rejects_no_seed_at_all(assert_wrong):
    assert_wrong("0.1", lambda seed, n: torch.randn(n), mentions="different numbers")


def test_0_1_rejects_a_constant_seed(assert_wrong):
    assert_wrong("0.1", lambda seed, n: seeded_sample(0, n), mentions="seed is not used")


def test_0_1_rejects_the_wrong_shape(assert_wrong):
    assert_wrong("0.1", lambda seed, n: seeded_sample(seed, n + 1), mentions="shape")


def test_0_2_rejects_a_detector_that_flags_stable_text(assert_wrong):
    import re

    every_number = lambda t: re.findall(r"\d+(?:\.\d+)?\s?\w*", t)  # noqa: E731  (flags "3 steps" too)
    assert_wrong("0.2", every_number, mentions="stable text")


def test_0_2_rejects_a_detector_that_finds_nothing(assert_wrong):
    assert_wrong("0.2", lambda t: [], mentions="expected")


def test_0_2_rejects_a_detector_that_returns_a_string(assert_wrong):
    assert_wrong("0.2", lambda t: "", mentions="list")


def test_0_2_refuses_a_wrapper_around_the_kits_own_detector(assert_wrong):
    from verlstudy.kit.hygiene import unstable_fragments

    assert_wrong("0.2", lambda t: [f for _, f in unstable_fragments(t)], mentions="library's own unstable_fragments")


@pytest.mark.parametrize(
    ("exercise_id", "answer"),
    [("0.1", lambda fn: (fn,)), ("0.2", lambda fn: (fn,))],
)
def test_no_course_function_passes(assert_mechanism_does_not_pass, exercise_id, answer):
    assert assert_mechanism_does_not_pass(exercise_id, "verlstudy.lessons.l00_start_here", answer=answer) > 5
