"""Lesson 05's checkers: the references pass; plausible wrong answers fail, each with a message naming the mistake."""

from __future__ import annotations

import re

from torch import nn

from conftest import Wrong, checker_tests
from verlstudy.kit.exercises import check_exercise, exercise_results
from verlstudy.lessons.l05_checkpoint.checkpoint import audit_state_dict, matches_prefix


def reference_matcher(key: str, pattern: str) -> bool:
    module = pattern.rstrip(".")
    return key == module or key.startswith(module + ".")


def reference_missing_audit(model: nn.Module, state_dict: dict, allowed: tuple[str, ...]) -> list[str]:
    result = model.load_state_dict(state_dict, strict=False)
    return sorted(k for k in result.missing_keys if not any(reference_matcher(k, p) for p in allowed))


def stub(*args: object) -> object:
    raise NotImplementedError("exercise")


# ---------------------------------------------------------------- 5.1


def matcher_only_dotted(key, pattern):
    return key.startswith(pattern) if pattern.endswith(".") else key == pattern


def matcher_hard_coded(key, pattern):  # the notebook's own module, whatever the pattern
    return key == "mtp" or key.startswith("mtp.")


def matcher_regex(key, pattern):  # '.' in a regex matches any letter, and no end-of-name check
    return re.match(pattern, key) is not None


def matcher_truthy(key, pattern):
    return int(reference_matcher(key, pattern))


def matcher_split_pieces(key, pattern):
    want = pattern.rstrip(".").split(".")
    return key.split(".")[: len(want)] == want


def matcher_padded(key, pattern):
    return (key + ".").startswith(pattern.rstrip(".") + ".")


def matcher_fullmatch(key, pattern):
    return re.fullmatch(re.escape(pattern.rstrip(".")) + r"(\..*)?", key) is not None


# ---------------------------------------------------------------- 5.2


def plain_prefix(model, state_dict, allowed):
    """Megatron-Bridge's own matching (str.startswith): 'mtp' also covers mtp_extra.*."""
    result = model.load_state_dict(state_dict, strict=False)
    return sorted(k for k in result.missing_keys if not any(k.startswith(p) for p in allowed))


def substring(model, state_dict, allowed):
    result = model.load_state_dict(state_dict, strict=False)
    return sorted(k for k in result.missing_keys if not any(p in k for p in allowed))


def dotted_substring(model, state_dict, allowed):
    result = model.load_state_dict(state_dict, strict=False)
    return sorted(k for k in result.missing_keys if not any(p.rstrip(".") + "." in k for p in allowed))


def skips_loading(model, state_dict, allowed):
    missing = [k for k in model.state_dict() if k not in state_dict]
    return sorted(k for k in missing if not any(reference_matcher(k, p) for p in allowed))


def ignores_allowed(model, state_dict, allowed):
    return sorted(model.load_state_dict(state_dict, strict=False).missing_keys)


def unsorted(model, state_dict, allowed):
    return list(reversed(reference_missing_audit(model, state_dict, allowed)))


def with_unexpected(model, state_dict, allowed):
    result = model.load_state_dict(state_dict, strict=False)
    keys = list(result.missing_keys) + list(result.unexpected_keys)
    return sorted(k for k in keys if not any(reference_matcher(k, p) for p in allowed))


def nothing_missing(model, state_dict, allowed):  # right on the notebook's own example only
    model.load_state_dict(state_dict, strict=False)
    return []


def drops_strays_in_place(model, state_dict, allowed):
    for key in [k for k in state_dict if k not in model.state_dict()]:
        del state_dict[key]
    return reference_missing_audit(model, state_dict, allowed)


def as_a_set(model, state_dict, allowed):
    return set(reference_missing_audit(model, state_dict, allowed))


def by_key_sets(model, state_dict, allowed):
    model.load_state_dict(state_dict, strict=False)
    missing = set(model.state_dict()) - set(state_dict)
    return sorted(k for k in missing if not any(matcher_split_pieces(k, p) for p in allowed))


def as_tuple_with_regex(model, state_dict, allowed):
    result = model.load_state_dict(state_dict, strict=False)
    return tuple(sorted(k for k in result.missing_keys if not any(matcher_fullmatch(k, p) for p in allowed)))


def matcher_unescaped_regex(key, pattern):  # the adversary's 5.1 W9: the pattern's dots match any character
    return re.match(pattern.rstrip(".") + r"(\.|$)", key) is not None


def first_allowed_only(model, state_dict, allowed):  # the adversary's 5.2 W5
    result = model.load_state_dict(state_dict, strict=False)
    return sorted(k for k in result.missing_keys if not (allowed and reference_matcher(k, allowed[0])))


def parameters_only(model, state_dict, allowed):  # the adversary's 5.2 W7: a missing saved buffer goes unreported
    model.load_state_dict(state_dict, strict=False)
    missing = [n for n, _ in model.named_parameters() if n not in state_dict]
    return sorted(k for k in missing if not any(reference_matcher(k, p) for p in allowed))


def every_buffer_counted(model, state_dict, allowed):  # the adversary's 5.2 W8: non-persistent buffers too
    model.load_state_dict(state_dict, strict=False)
    names = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
    return sorted(k for k in names if k not in state_dict and not any(reference_matcher(k, p) for p in allowed))


WRONG = {
    "5.1": [
        Wrong(matcher_unescaped_regex, "a dot in a module name is a dot", why="regex without escaping the dots"),
        Wrong(lambda key, pattern: key.startswith(pattern.rstrip(".")), "letters of", why="plain string prefix"),
        Wrong(lambda key, pattern: key.startswith(pattern), "own name", why="the pattern as given, dot or not"),
        Wrong(lambda key, pattern: key.startswith(pattern.rstrip(".") + "."), "own name", why="forgets the name"),
        Wrong(lambda key, pattern: pattern.rstrip(".") + "." in key + ".", "not the first module", why="substring"),
        Wrong(lambda key, pattern: key.split(".")[0] == pattern.rstrip("."), "misses a key", why="first piece only"),
        Wrong(matcher_only_dotted, "ends with a dot", why="works only for dotted patterns"),
        Wrong(matcher_hard_coded, "is the pattern read", why="pattern ignored (hard-coded mtp)"),
        Wrong(matcher_regex, ("letters", "own name"), why="regex: no end-of-name check"),
        Wrong(matcher_truthy, "bool", why="1/0 where a bool is asked"),
        Wrong(
            lambda key, pattern: key == "mtp.proj.weight" or key.startswith("layers.1."),
            "whatever the pattern",
            why="example-shaped: the notebook's keys, pattern ignored",
        ),
    ],
    "5.2": [
        Wrong(plain_prefix, "covers more than the modules", why="str.startswith (Megatron-Bridge's own)"),
        Wrong(substring, "covers more than the modules", why="substring"),
        Wrong(dotted_substring, "covers more than the modules", why="dotted substring: nested blocks.mtp"),
        Wrong(skips_loading, "does not hold the checkpoint's weights", why="computes keys, never loads"),
        Wrong(ignores_allowed, "allowed module covers", why="allowed ignored"),
        Wrong(unsorted, "not sorted", why="unsorted"),
        Wrong(with_unexpected, "unexpected keys", why="unexpected keys reported too"),
        Wrong(nothing_missing, "left out", why="hard-coded to the notebook's example"),
        Wrong(drops_strays_in_place, "changed the checkpoint", why="input mutated"),
        Wrong(as_a_set, "list", why="a set where a sorted list is asked"),
        Wrong(first_allowed_only, "allowed module covers", why="only the first allowed module used"),
        Wrong(parameters_only, "a missing buffer is missing too", why="parameters only: missing buffers not reported"),
        Wrong(every_buffer_counted, "never in a checkpoint", why="non-persistent buffers counted as missing"),
    ],
}
RIGHT = {
    "5.1": [matcher_split_pieces, matcher_padded, matcher_fullmatch],
    "5.2": [by_key_sets, as_tuple_with_regex],
}
test_wrong_answers_fail_naming_the_mistake, test_right_answers_written_differently_pass = checker_tests(WRONG, RIGHT)


def test_references_pass_and_stubs_are_not_attempted() -> None:
    for exercise_id, reference in (("5.1", reference_matcher), ("5.2", reference_missing_audit)):
        check_exercise(exercise_id, reference)
        assert exercise_results()[exercise_id] == "correct"
        check_exercise(exercise_id, stub)
        assert exercise_results()[exercise_id] == "not attempted"


def test_glm5_mtp_layer_is_a_named_case(assert_wrong) -> None:
    """GLM-5's MTP layer sits at model.layers.78: a letter prefix 'model.layers.7' must not cover it."""
    text = assert_wrong("5.1", lambda key, pattern: key.startswith(pattern.rstrip(".")), mentions="letters")
    assert "layers.78" in text or "mtp_norm" in text


def test_the_mechanisms_own_matcher_and_audit_are_refused(assert_wrong):
    assert_wrong("5.1", matches_prefix, mentions="library's own matches_prefix")
    assert_wrong("5.1", lambda key, pattern: matches_prefix(key, pattern), mentions="calls the library's own")
    assert_wrong(
        "5.2",
        lambda m, sd, allowed: audit_state_dict(m.state_dict(), sd, allowed).missing_denied,
        mentions="library's own",
    )


def test_5_1_is_not_passed_by_any_mechanism_function(assert_mechanism_does_not_pass):
    assert assert_mechanism_does_not_pass("5.1", "verlstudy.lessons.l05_checkpoint") > 10


def test_5_2_is_not_passed_by_any_mechanism_function(assert_mechanism_does_not_pass):
    assert_mechanism_does_not_pass("5.2", "verlstudy.lessons.l05_checkpoint")
