"""Lesson 09's checkers: the references pass; plausible wrong answers fail, each with a message naming the
mistake; the lesson's own dead-field search and YAML/dataclass comparison are refused, also when wrapped."""

from __future__ import annotations

import ast
import dataclasses
import re
import typing

import pytest

from verlstudy.kit.exercises import (
    ExerciseFailure,
    check_exercise,
    exercise_method,
    exercise_results,
    find_checker,
    reset_exercises,
)
from verlstudy.lessons.l09_dead_config import checks, schema
from verlstudy.lessons.l09_dead_config.field_reads import _index_reads, attribute_read

LESSON = "verlstudy.lessons.l09_dead_config"


# ---- 9.1 attribute_reads --------------------------------------------------------------------


def attribute_reads(source):
    return {n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}


def every_attribute(source):
    return {n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute)}


def assigned_values_only(source):
    return {
        n.value.attr for n in ast.parse(source).body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Attribute)
    }


def outermost_attribute_only(source):
    found = set()

    class Reads(ast.NodeVisitor):
        def visit_Attribute(self, node):
            if isinstance(node.ctx, ast.Load):
                found.add(node.attr)  # no generic_visit: in `a.b.c` the inner `b` is never reached

    Reads().visit(ast.parse(source))
    return found


def loaded_names_too(source):
    tree = ast.walk(ast.parse(source))
    return {
        n.attr if isinstance(n, ast.Attribute) else n.id
        for n in tree
        if isinstance(n, ast.Attribute | ast.Name) and isinstance(n.ctx, ast.Load)
    }


def test_9_1_accepts_attribute_loads_found_by_walking_the_tree():
    assert find_checker("9.1")(attribute_reads) == "5 sources"


@pytest.mark.parametrize(
    ("wrong", "mentions"),
    [
        (every_attribute, "only assigns (stores into), never reads"),
        (lambda s: set(re.findall(r"\.(\w+)", s)), "only assigns"),
        (assigned_values_only, "not only at the top of a statement"),
        (outermost_attribute_only, "an attribute can sit inside another attribute"),
        (loaded_names_too, "not attributes"),
        (lambda s: sorted(attribute_reads(s)), "return a set"),
    ],
    ids=["stores-too", "regex", "assignments-only", "no-recursion", "plain-names", "a-list"],
)
def test_9_1_rejects(assert_wrong, wrong, mentions):
    assert_wrong("9.1", wrong, mentions=mentions)


def test_9_1_refuses_the_lessons_read_search_and_wrappers_of_it(assert_wrong):
    wrapped_node_reader = lambda s: {attribute_read(n) for n in ast.walk(ast.parse(s))} - {None}  # noqa: E731
    wrapped_index = lambda s: set(_index_reads({"s.py": s})[0])  # noqa: E731
    # unguarded, both wrappers would score correct: the refusal is what stops them
    assert checks.check_attribute_reads(wrapped_node_reader) == checks.check_attribute_reads(wrapped_index)
    assert_wrong("9.1", attribute_read, mentions="library's own attribute_read")
    assert_wrong("9.1", wrapped_node_reader, mentions="calls the library's own attribute_read")
    assert_wrong("9.1", wrapped_index, mentions="calls the library's own _index_reads")


def test_9_1_is_not_passed_by_any_mechanism_function(assert_mechanism_does_not_pass):
    assert assert_mechanism_does_not_pass("9.1", LESSON) > 20


def test_9_1_through_check_exercise_reports_correct_and_not_attempted(capsys):
    check_exercise("9.1", attribute_reads)
    assert exercise_results()["9.1"] == "correct"
    assert capsys.readouterr().out == "exercise 9.1: correct: 5 sources\n"

    def stub(source):
        raise NotImplementedError("exercise 9.1")

    check_exercise("9.1", stub)
    assert exercise_results()["9.1"] == "not attempted"
    assert "exercise 9.1: not attempted" in capsys.readouterr().out


# ---- 9.2 yaml_only_keys ---------------------------------------------------------------------


def yaml_only_keys(cls, data, prefix=""):
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out = []
    for key, value in data.items():
        if key == "_target_":
            continue
        if key not in names:
            out.append(prefix + key)
        elif dataclasses.is_dataclass(hints[key]) and isinstance(value, dict):
            out.extend(yaml_only_keys(hints[key], value, prefix + key + "."))
    return sorted(out)


def flat_only(cls, data):
    names = {f.name for f in dataclasses.fields(cls)}
    return sorted(k for k in data if k != "_target_" and k not in names)


def string_annotations(cls, data, prefix=""):
    # dataclasses.fields(cls)[i].type is the string "_ExReplay" under `from __future__ import annotations`
    types_ = {f.name: f.type for f in dataclasses.fields(cls)}
    out = []
    for key, value in data.items():
        if key == "_target_":
            continue
        if key not in types_:
            out.append(prefix + key)
        elif dataclasses.is_dataclass(types_[key]) and isinstance(value, dict):
            out.extend(string_annotations(types_[key], value, prefix + key + "."))
    return sorted(out)


def no_prefix(cls, data):
    return sorted(k.rpartition(".")[2] for k in yaml_only_keys(cls, data))


def keeps_target(cls, data):
    return yaml_only_keys(cls, data) + (["_target_"] if "_target_" in data else [])


def dataclass_only(cls, data):
    return sorted(f.name for f in dataclasses.fields(cls) if f.name not in data)


def every_key(cls, data):
    return sorted(k for k in data if k != "_target_")


def test_9_2_accepts_sorted_dotted_keys_with_recursion():
    assert find_checker("9.2")(yaml_only_keys) == "5 blocks"


@pytest.mark.parametrize(
    ("wrong", "mentions"),
    [
        (flat_only, "keys inside the nested block 'router_replay'"),
        (string_annotations, "makes a field's .type a string"),
        (no_prefix, "without the block it sits in"),
        (keeps_target, "you reported '_target_'"),
        (lambda cls, data: sorted(yaml_only_keys(cls, data), reverse=True), "sort the keys"),
        (lambda cls, data: set(yaml_only_keys(cls, data)), "sorted list"),
        (dataclass_only, "the exercise asks the reverse"),
        (every_key, "which are fields of the class"),
        (lambda cls, data: yaml_only_keys(cls, data)[:1], "keys of this YAML block that are not fields"),
    ],
    ids=[
        "no-recursion",
        "string-annotations",
        "no-prefix",
        "target",
        "unsorted",
        "a-set",
        "fields-not-keys",
        "every-key",
        "first-only",
    ],
)
def test_9_2_rejects(assert_wrong, wrong, mentions):
    assert_wrong("9.2", wrong, mentions=mentions)


def test_9_2_refuses_the_lessons_mismatch_check_and_a_wrapper_of_it(assert_wrong):
    assert_wrong("9.2", schema.yaml_field_mismatches, mentions="library's own yaml_field_mismatches")
    wrapper = lambda cls, data: sorted(schema.yaml_field_mismatches(cls, data)["yaml_only"])  # noqa: E731
    assert checks.check_yaml_only_keys(wrapper) == "5 blocks"  # unguarded, the wrapper would score correct
    assert_wrong("9.2", wrapper, mentions="calls the library's own yaml_field_mismatches")


def test_9_2_is_not_passed_by_any_mechanism_function(assert_mechanism_does_not_pass):
    assert assert_mechanism_does_not_pass("9.2", LESSON, answer=lambda fn: (fn,)) > 20


def test_9_2_through_check_exercise_reports_correct_and_not_attempted(capsys):
    check_exercise("9.2", yaml_only_keys)
    assert exercise_results()["9.2"] == "correct"
    assert capsys.readouterr().out == "exercise 9.2: correct: 5 blocks\n"

    def stub(cls, data):
        raise NotImplementedError("exercise 9.2")

    check_exercise("9.2", stub)
    assert exercise_results()["9.2"] == "not attempted"
    assert "exercise 9.2: not attempted" in capsys.readouterr().out


# ---- hints escalate: a nudge first, the method on request ----------------------------------


@pytest.mark.parametrize(
    ("exercise_id", "wrong", "tools"),
    [
        ("9.1", every_attribute, ("ast.Load", "ast.walk", "node.ctx")),
        ("9.1", assigned_values_only, ("ast.Load", "ast.walk", "node.ctx")),
        ("9.1", loaded_names_too, ("ast.Load", "ast.walk", "ast.Attribute")),
        ("9.2", flat_only, ("get_type_hints", "dataclasses.fields", "recurs")),
        ("9.2", string_annotations, ("get_type_hints", "dataclasses.fields", "recurs")),
        ("9.2", dataclass_only, ("get_type_hints", "dataclasses.fields", "recurs")),
    ],
)
def test_a_wrong_try_names_the_mistake_not_the_tools_of_the_solution(exercise_id, wrong, tools):
    with pytest.raises(ExerciseFailure) as failed:
        find_checker(exercise_id)(wrong)
    message = str(failed.value)
    assert not [t for t in tools if t in message], message
    assert all(t in exercise_method(exercise_id) for t in tools[:2])  # the method is where they are


def test_the_method_follows_from_the_third_wrong_try(capsys):
    reset_exercises()
    for _ in range(2):
        check_exercise("9.2", flat_only)
    assert "method" not in capsys.readouterr().out.replace("shows the method", "")
    check_exercise("9.2", flat_only)
    assert "method (after 3 tries): take the field names" in capsys.readouterr().out
    reset_exercises()
