"""kit.guards: a learner's guard must pass every right implementation and catch every wrong one."""

import pytest

from verlstudy.kit import check_conditions
from verlstudy.kit.exercises import ExerciseFailure
from verlstudy.kit.guards import GuardLetThrough, check_guard, guard_verdict


def right_guard(fn):
    assert fn(2) == 4 and fn(-3) == 9, "not a square"


def positive_only_guard(fn):
    assert fn(2) == 4 and fn(3) == 9, "not a square"


def test_a_guard_must_pass_the_good_and_catch_every_bad():
    good = [(lambda x: x * x, "the square")]
    bad = [(lambda x: 2 * x, "doubling"), (lambda x: x * abs(x), "the signed square")]
    assert check_guard(right_guard, good=good, bad=bad).startswith("passes 1 right")
    with pytest.raises(ExerciseFailure, match="let the signed square through"):
        check_guard(positive_only_guard, good=good, bad=bad)
    with pytest.raises(ExerciseFailure, match="rejected the square, which is right"):
        check_guard(lambda fn: (_ for _ in ()).throw(AssertionError("no")), good=good, bad=bad)


def test_a_wrong_implementation_let_through_is_carried_with_the_calls_it_passed_on():
    square, signed = (lambda x: x * x), (lambda x: x * abs(x))
    with pytest.raises(GuardLetThrough) as let:
        check_guard(positive_only_guard, good=[(square, "the square")], bad=[(signed, "the signed square")])
    assert let.value.impl is signed and let.value.what == "the signed square"
    assert let.value.passed == ((signed,),)  # the guard picks its own cases: its one call
    assert isinstance(let.value, ExerciseFailure) and str(let.value) == "your guard let the signed square through"

    def guard(fn, x):
        assert fn(x) == x * x, f"wrong at {x}"

    with pytest.raises(GuardLetThrough) as let:  # caught on none of its calls: all of them
        check_guard(guard, good=[], bad=[(signed, "s")], calls=lambda impl: [(impl, 2), (impl, 0)])
    assert let.value.passed == ((signed, 2), (signed, 0))
    calls = lambda impl: [(impl, 2), (impl, -3), (impl, 0), (impl, -1)]  # noqa: E731
    with pytest.raises(GuardLetThrough) as let:  # every call is a case where it is wrong: those it passed
        check_guard(guard, good=[], bad=[(signed, "s")], calls=calls, every_call=True)
    assert let.value.passed == ((signed, 2), (signed, 0))
    assert str(let.value) == "your guard let s through (e.g. on guard(2))"


def test_a_guard_that_crashes_is_told_a_guard_fails_with_assertion_error():
    with pytest.raises(ExerciseFailure, match="a guard fails with AssertionError"):
        check_guard(lambda fn: 1 / 0, good=[(abs, "abs")], bad=[])


def test_an_exercise_failure_inside_a_guard_is_not_read_as_the_guard_failing():
    def guard(impl):
        raise ExerciseFailure("the checker's own verdict")

    with pytest.raises(ExerciseFailure, match="own verdict"):
        guard_verdict(guard, abs)


def test_a_guard_that_does_not_return_is_cut_off_at_the_time_limit(monkeypatch):
    import time

    monkeypatch.setattr(check_conditions, "CALL_TIMEOUT_S", 0.2)

    def endless(fn):
        while True:
            time.sleep(0.01)

    with pytest.raises(ExerciseFailure, match=r"your guard did not return within 0\.2 s"):
        guard_verdict(endless, abs)
