"""Lesson 05's checkers: the references pass; plausible wrong answers fail, each with a message naming the mistake."""

from __future__ import annotations

import pytest
from torch import nn

from verlstudy.kit.exercises import ExerciseFailure, check_exercise, exercise_method, exercise_results
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
    with pytest.raises(ExerciseFailure, match="return a bool"):
        check_prefix_matcher(lambda key, pattern: 1)
    capsys.readouterr()
    assert verdict("5.1", check_prefix_matcher, lambda key, pattern: key.startswith(pattern)) == "not yet right"
    assert "not yet right: ('mtp_norm.weight', 'mtp') -> True" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("answer", "mentions"),
    [
        (lambda key, pattern: key.startswith(pattern.rstrip(".")), "letters of 'mtp', not the whole module name"),
        (lambda key, pattern: key.startswith(pattern) and pattern.endswith("."), "only when the pattern ends with"),
        (lambda key, pattern: key.startswith(pattern.rstrip(".") + "."), "module's own name lies in it"),
        (lambda key, pattern: pattern.rstrip(".") + "." in key + ".", "not the first module"),
        (lambda key, pattern: key.split(".")[0] == pattern.rstrip("."), "misses a key inside the module"),
    ],
    ids=["plain prefix", "needs the dot", "forgets the name itself", "substring", "first component only"],
)
def test_5_1_rejects_plausible_wrong_matchers(assert_wrong, answer, mentions) -> None:
    verdict_text = assert_wrong("5.1", answer, mentions=mentions)
    assert "startswith" not in verdict_text  # the message names the mistake, not the rule


def test_5_1_method_holds_the_rule_the_messages_leave_out() -> None:
    method = exercise_method("5.1")
    assert "key == module or key.startswith(module + '.')" in method
    assert "rstrip" not in method or "trailing dot" in method


def test_missing_audit_checker() -> None:
    assert verdict("5.2", check_missing_audit, reference_missing_audit) == "correct"
    assert verdict("5.2", check_missing_audit, stub) == "not attempted"

    def all_missing(model: nn.Module, state_dict: dict, allowed: tuple[str, ...]) -> list[str]:
        return sorted(model.load_state_dict(state_dict, strict=False).missing_keys)

    with pytest.raises(ExerciseFailure, match="allowed module covers"):
        check_missing_audit(all_missing)

    def unsorted(model: nn.Module, state_dict: dict, allowed: tuple[str, ...]) -> list[str]:
        return list(reversed(reference_missing_audit(model, state_dict, allowed)))

    with pytest.raises(ExerciseFailure, match="not sorted"):
        check_missing_audit(unsorted)

    def loaded_nothing_missing(model: nn.Module, state_dict: dict, allowed: tuple[str, ...]) -> list[str]:
        model.load_state_dict(state_dict, strict=False)
        return []

    with pytest.raises(ExerciseFailure, match=r"you left out blocks\.0\.bias, blocks\.0\.weight"):
        check_missing_audit(loaded_nothing_missing)

    with pytest.raises(ExerciseFailure, match="return a list"):
        check_missing_audit(lambda model, state_dict, allowed: ())
    assert "missing_keys" in exercise_method("5.2")


def plain_prefix(model: nn.Module, state_dict: dict, allowed: tuple[str, ...]) -> list[str]:
    """Megatron-Bridge's own matching (str.startswith): 'mtp' also covers mtp_extra.*."""
    result = model.load_state_dict(state_dict, strict=False)
    return sorted(k for k in result.missing_keys if not any(k.startswith(p) for p in allowed))


def substring(model: nn.Module, state_dict: dict, allowed: tuple[str, ...]) -> list[str]:
    """'mtp.' anywhere in the key: also covers the nested blocks.mtp.*."""
    result = model.load_state_dict(state_dict, strict=False)
    return sorted(k for k in result.missing_keys if not any(p in k for p in allowed))


def dotted_substring(model: nn.Module, state_dict: dict, allowed: tuple[str, ...]) -> list[str]:
    """The module name with its dot anywhere in the key: right for mtp_extra, but covers the nested blocks.mtp.*."""
    result = model.load_state_dict(state_dict, strict=False)
    return sorted(k for k in result.missing_keys if not any(p.rstrip(".") + "." in k for p in allowed))


def bare_substring(model: nn.Module, state_dict: dict, allowed: tuple[str, ...]) -> list[str]:
    """The module name without its dot anywhere in the key: covers mtp_extra.* even when written 'mtp.'."""
    result = model.load_state_dict(state_dict, strict=False)
    return sorted(k for k in result.missing_keys if not any(p.rstrip(".") in k for p in allowed))


def skips_loading(model: nn.Module, state_dict: dict, allowed: tuple[str, ...]) -> list[str]:
    """The right keys from the key sets alone, but the model keeps its initial weights."""
    missing = [k for k in model.state_dict() if k not in state_dict]
    return sorted(k for k in missing if not any(reference_matcher(k, p) for p in allowed))


@pytest.mark.parametrize(
    ("answer", "mentions"),
    [
        (plain_prefix, "covers more than the modules themselves"),
        (substring, "covers more than the modules themselves"),
        (dotted_substring, "covers more than the modules themselves"),
        (bare_substring, "covers more than the modules themselves"),
        (skips_loading, "does not hold the checkpoint's weights"),
    ],
    ids=["prefix-boundary mtp vs mtp_extra", "substring", "dotted substring", "bare substring", "skips loading"],
)
def test_5_2_rejects_boundary_substring_and_no_load_answers(assert_wrong, answer, mentions) -> None:
    verdict_text = assert_wrong("5.2", answer, mentions=mentions)
    if answer is plain_prefix:
        assert "mtp_extra.weight" in verdict_text and "'mtp'" in verdict_text
    if answer is substring:
        assert "mtp_extra.weight" in verdict_text
    if answer is dotted_substring:
        assert "blocks.mtp.bias, blocks.mtp.weight" in verdict_text
    assert "missing_keys" not in verdict_text and "strict=False" not in verdict_text


def test_5_2_boundary_case_mtp_dot_does_not_cover_mtp_extra() -> None:
    """The checker's own cases: with 'mtp.' allowed, a lost mtp_extra module must be reported."""
    from verlstudy.lessons.l05_checkpoint.checks import _audit_model, _without

    model = _audit_model()
    state = _without(model.state_dict(), "mtp", "mtp_extra")
    assert reference_missing_audit(_audit_model(), state, ("mtp.",)) == ["mtp_extra.weight"]
    assert plain_prefix(_audit_model(), state, ("mtp",)) == []  # the plain prefix hides it


def test_the_mechanisms_own_matcher_and_audit_are_refused(assert_wrong):
    assert_wrong("5.1", matches_prefix, mentions="library's own matches_prefix")
    assert_wrong("5.1", lambda key, pattern: matches_prefix(key, pattern), mentions="calls the library's own")
    assert_wrong("5.2", lambda m, sd, allowed: audit_state_dict(m, sd, allowed).missing, mentions="library's own")


def test_5_1_is_not_passed_by_any_mechanism_function(assert_mechanism_does_not_pass):
    assert assert_mechanism_does_not_pass("5.1", "verlstudy.lessons.l05_checkpoint") > 10


def test_5_2_is_not_passed_by_any_mechanism_function(assert_mechanism_does_not_pass):
    assert_mechanism_does_not_pass("5.2", "verlstudy.lessons.l05_checkpoint")
