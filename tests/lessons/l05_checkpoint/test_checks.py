"""Lesson 05's checkers: the references pass; plausible wrong answers fail, each with a message naming the mistake."""

from __future__ import annotations

import pytest
from torch import nn

from verlstudy.kit.exercises import ExerciseFailure, check_exercise, exercise_results
from verlstudy.lessons.l05_checkpoint.checkpoint import audit_state_dict, matches_prefix
from verlstudy.lessons.l05_checkpoint.checks import check_missing_audit, check_prefix_matcher


def reference_matcher(key: str, pattern: str) -> bool:
    module = pattern.rstrip(".")
    return key == module or key.startswith(module + ".")


def reference_missing_audit(model: nn.Module, state_dict: dict, allowed: tuple[str, ...]) -> list[str]:
    result = model.load_state_dict(state_dict, strict=False)
    return sorted(k for k in result.missing_keys if not any(reference_matcher(k, p) for p in allowed))


def verdict(exercise_id: str, checker: object, answer: object) -> str:
    check_exercise(exercise_id, answer)  # type: ignore[arg-type]
    return exercise_results()[exercise_id]


def stub(*args: object) -> object:
    raise NotImplementedError("exercise")


def test_prefix_matcher_checker(capsys: pytest.CaptureFixture[str]) -> None:
    assert verdict("5.1", check_prefix_matcher, reference_matcher) == "correct"
    assert verdict("5.1", check_prefix_matcher, stub) == "not attempted"
    with pytest.raises(ExerciseFailure, match=r"mtp_norm\.weight.*module"):
        check_prefix_matcher(lambda key, pattern: key.startswith(pattern.rstrip(".")))
    with pytest.raises(ExerciseFailure, match="with or without its trailing dot"):
        check_prefix_matcher(lambda key, pattern: key.startswith(pattern) and pattern.endswith("."))
    with pytest.raises(ExerciseFailure, match="return a bool"):
        check_prefix_matcher(lambda key, pattern: 1)
    capsys.readouterr()
    assert verdict("5.1", check_prefix_matcher, lambda key, pattern: key.startswith(pattern)) == "not yet right"
    assert "not yet right: ('mtp_norm.weight', 'mtp') -> True" in capsys.readouterr().out


def test_missing_audit_checker() -> None:
    assert verdict("5.2", check_missing_audit, reference_missing_audit) == "correct"
    assert verdict("5.2", check_missing_audit, stub) == "not attempted"

    def all_missing(model: nn.Module, state_dict: dict, allowed: tuple[str, ...]) -> list[str]:
        return sorted(model.load_state_dict(state_dict, strict=False).missing_keys)

    with pytest.raises(ExerciseFailure, match="allowed pattern covers"):
        check_missing_audit(all_missing)

    def unsorted(model: nn.Module, state_dict: dict, allowed: tuple[str, ...]) -> list[str]:
        return list(reversed(reference_missing_audit(model, state_dict, allowed)))

    with pytest.raises(ExerciseFailure, match="sort the keys"):
        check_missing_audit(unsorted)

    with pytest.raises(ExerciseFailure, match="missing_keys"):
        check_missing_audit(lambda model, state_dict, allowed: [])

    with pytest.raises(ExerciseFailure, match="return a list"):
        check_missing_audit(lambda model, state_dict, allowed: ())


def test_the_mechanisms_own_matcher_and_audit_are_refused(assert_wrong):
    assert_wrong("5.1", matches_prefix, mentions="library's own matches_prefix")
    assert_wrong("5.1", lambda key, pattern: matches_prefix(key, pattern), mentions="calls the library's own")
    assert_wrong("5.2", lambda m, sd, allowed: audit_state_dict(m, sd, allowed).missing, mentions="library's own")


def test_5_1_is_not_passed_by_any_mechanism_function(assert_mechanism_does_not_pass):
    assert assert_mechanism_does_not_pass("5.1", "verlstudy.lessons.l05_checkpoint") > 10


def test_5_2_is_not_passed_by_any_mechanism_function(assert_mechanism_does_not_pass):
    assert_mechanism_does_not_pass("5.2", "verlstudy.lessons.l05_checkpoint")
