"""Lesson 09's checkers: the references pass; plausible wrong answers fail, each with a message naming the
mistake; the lesson's own dead-field search and YAML/dataclass comparison are refused, also when wrapped."""

from __future__ import annotations

import ast
import dataclasses
import re
import typing

from conftest import Wrong, checker_tests
from verlstudy.kit.exercises import check_exercise, exercise_results
from verlstudy.lessons.l09_dead_config import check_attribute_reads, checks, schema
from verlstudy.lessons.l09_dead_config.read_index import _index_reads, attribute_read

LESSON = "verlstudy.lessons.l09_dead_config"


# ---- 9.1 attribute_reads --------------------------------------------------------------------


def attribute_reads(source):
    tree = ast.parse(source)
    reads = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}
    # `x.a += 1` reads `a` before it stores it: its target is an ast.Store, so it is added by hand
    return reads | {
        n.target.attr for n in ast.walk(tree) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Attribute)
    }


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


def test_9_1_refuses_the_lessons_read_search_and_wrappers_of_it(assert_wrong):
    wrapped_node_reader = lambda s: {attribute_read(n) for n in ast.walk(ast.parse(s))} - {None}  # noqa: E731
    wrapped_index = lambda s: set(_index_reads({"s.py": s})[0])  # noqa: E731
    # the refusal names the library, whatever else the wrappers get wrong (they miss `x.a += 1`'s read)
    assert_wrong("9.1", attribute_read, mentions="library's own attribute_read")
    assert_wrong("9.1", wrapped_node_reader, mentions="calls the library's own attribute_read")
    assert_wrong("9.1", wrapped_index, mentions="calls the library's own _index_reads")


def test_9_1_is_not_passed_by_any_mechanism_function(assert_mechanism_does_not_pass):
    assert assert_mechanism_does_not_pass("9.1", LESSON) > 20


def test_9_1_through_check_exercise_reports_correct_and_not_attempted(capsys):
    check_exercise("9.1", attribute_reads)
    assert exercise_results()["9.1"] == "correct"
    named = len(check_attribute_reads.ATTRIBUTE_READ_CASES) + len(check_attribute_reads._swept_cases())
    assert capsys.readouterr().out.startswith(f"exercise 9.1: correct: right on {named} named cases")

    def stub(source):
        raise NotImplementedError("exercise 9.1")

    check_exercise("9.1", stub)
    assert exercise_results()["9.1"] == "not attempted"
    assert "exercise 9.1: not attempted" in capsys.readouterr().out


# ---- 9.2 yaml_only_keys ---------------------------------------------------------------------


def _block_type(kind):
    """A field's dataclass, through Optional[...] / X | None (verl 0.9.1's RolloutConfig.profiler)."""
    arms = [a for a in typing.get_args(kind) if a is not type(None)] if typing.get_args(kind) else [kind]
    return arms[0] if len(arms) == 1 and dataclasses.is_dataclass(arms[0]) else None


def yaml_only_keys(cls, data, prefix=""):
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out = []
    for key, value in data.items():
        if key == "_target_":
            continue
        if key not in names:
            out.append(prefix + key)
        elif _block_type(hints[key]) and isinstance(value, dict):
            out.extend(yaml_only_keys(_block_type(hints[key]), value, prefix + key + "."))
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


def test_9_2_refuses_the_lessons_mismatch_check_and_a_wrapper_of_it(assert_wrong):
    assert_wrong("9.2", schema.yaml_field_mismatches, mentions="library's own yaml_field_mismatches")
    wrapper = lambda cls, data: sorted(schema.yaml_field_mismatches(cls, data)["yaml_only"])  # noqa: E731
    assert "named cases" in checks.check_yaml_only_keys(wrapper)  # unguarded, the wrapper would score correct
    assert_wrong("9.2", wrapper, mentions="calls the library's own yaml_field_mismatches")


def test_9_2_is_not_passed_by_any_mechanism_function(assert_mechanism_does_not_pass):
    assert assert_mechanism_does_not_pass("9.2", LESSON, answer=lambda fn: (fn,)) > 20


def test_9_2_through_check_exercise_reports_correct_and_not_attempted(capsys):
    check_exercise("9.2", yaml_only_keys)
    assert exercise_results()["9.2"] == "correct"
    assert capsys.readouterr().out.startswith("exercise 9.2: correct: right on 11 named cases")

    def stub(cls, data):
        raise NotImplementedError("exercise 9.2")

    check_exercise("9.2", stub)
    assert exercise_results()["9.2"] == "not attempted"
    assert "exercise 9.2: not attempted" in capsys.readouterr().out


def deletes_too(source):
    return {
        n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Store)
    }


def first_statement_only(source):
    tree = ast.parse(source)
    if not tree.body:
        return set()
    return {n.attr for n in ast.walk(tree.body[0]) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}


def top_level_only(source):
    found = set()
    for stmt in ast.parse(source).body:
        if isinstance(stmt, ast.FunctionDef | ast.ClassDef):
            continue  # function and class bodies skipped
        found |= {n.attr for n in ast.walk(stmt) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}
    return found


def example_only(source):
    return {"grad_offload"} if "grad_offload" in source else set()


def attribute_reads_visitor(source):
    found = []

    class Reads(ast.NodeVisitor):
        def visit_Attribute(self, node):
            if type(node.ctx).__name__ == "Load":
                found.append(node.attr)
            self.generic_visit(node)

        def visit_AugAssign(self, node):
            if isinstance(node.target, ast.Attribute):
                found.append(node.target.attr)
            self.generic_visit(node)

    Reads().visit(ast.parse(source))
    return frozenset(found)


def visitor_list(source):
    found = []

    class Reads(ast.NodeVisitor):
        def visit_Attribute(self, node):
            if isinstance(node.ctx, ast.Load):
                found.append(node.attr)
            self.generic_visit(node)

    Reads().visit(ast.parse(source))
    return found  # a name read twice is listed twice


def store_targets_skipped(source):
    found = set()

    class Reads(ast.NodeVisitor):
        def visit_Assign(self, node):
            self.visit(node.value)  # the targets (and what they read) are never visited

        def visit_Attribute(self, node):
            if isinstance(node.ctx, ast.Load):
                found.add(node.attr)
            self.generic_visit(node)

    Reads().visit(ast.parse(source))
    return found


def own_annotations_only(cls, data, prefix=""):
    hints = typing.get_type_hints(cls)
    names = set(cls.__annotations__)  # the class's own fields: inherited ones are missed
    out = []
    for key, value in data.items():
        if key == "_target_":
            continue
        if key not in names:
            out.append(prefix + key)
        elif _block_type(hints[key]) and isinstance(value, dict):
            out.extend(own_annotations_only(_block_type(hints[key]), value, prefix + key + "."))
    return sorted(out)


def one_level_only(cls, data, prefix=""):
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out = []
    for key, value in data.items():
        if key == "_target_":
            continue
        if key not in names:
            out.append(prefix + key)
        elif not prefix and _block_type(hints[key]) and isinstance(value, dict):
            out.extend(one_level_only(_block_type(hints[key]), value, prefix + key + "."))
    return sorted(out)


def every_dict(cls, data, prefix=""):
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out = []
    for key, value in data.items():
        if key == "_target_":
            continue
        if key not in names:
            out.append(prefix + key)
        elif isinstance(value, dict):
            inner = (
                _block_type(hints[key]) if _block_type(hints[key]) else type("Empty", (), {"__dataclass_fields__": {}})
            )
            out.extend(every_dict(inner, value, prefix + key + ".")) if dataclasses.is_dataclass(inner) else out.extend(
                prefix + key + "." + k for k in value
            )
    return sorted(out)


def pops_target(cls, data, prefix=""):
    data.pop("_target_", None)  # changes the caller's mapping
    return yaml_only_keys(cls, data, prefix)


def target_top_only(cls, data, prefix=""):
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out = []
    for key, value in data.items():
        if key == "_target_" and not prefix:
            continue
        if key not in names:
            out.append(prefix + key)
        elif _block_type(hints[key]) and isinstance(value, dict):
            out.extend(target_top_only(_block_type(hints[key]), value, prefix + key + "."))
    return sorted(out)


def calls_excluded(source):
    # "a method call is not a config read": the attribute a call is made on is dropped
    tree = ast.parse(source)
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {
        n.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and id(n) not in called
    }


def sorted_per_block(cls, data, prefix=""):
    # each block's own keys sorted, the nested blocks' keys appended after them
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    own, nested = [], []
    for key, value in data.items():
        if key == "_target_":
            continue
        if key not in names:
            own.append(prefix + key)
        elif _block_type(hints[key]) and isinstance(value, dict):
            nested += sorted_per_block(_block_type(hints[key]), value, prefix + key + ".")
    return sorted(own) + nested


def by_walking_with_a_stack(cls, data):
    out, todo = [], [(cls, data, "")]
    while todo:
        klass, block, prefix = todo.pop()
        hints = typing.get_type_hints(klass)
        for key in block:
            if key == "_target_":
                continue
            if key not in {f.name for f in dataclasses.fields(klass)}:  # not `hints`: a ClassVar is no field
                out.append(f"{prefix}{key}")
            elif _block_type(hints[key]) and isinstance(block[key], dict):
                todo.append((_block_type(hints[key]), block[key], f"{prefix}{key}."))
    return tuple(sorted(out))


WRONG = {
    "9.1": [
        Wrong(every_attribute, "only assigned", "stores counted as reads"),
        Wrong(lambda s: set(re.findall(r"\.(\w+)", s)), ("only assigned", "deleted"), "a regex over the text"),
        Wrong(assigned_values_only, "you missed", "direct assignment values only"),
        Wrong(outermost_attribute_only, "inside another attribute", "no recursion into a chain"),
        Wrong(loaded_names_too, "plain variables", "plain names counted"),
        Wrong(deletes_too, "deletion is not a read", "del counted as a read"),
        Wrong(first_statement_only, "later statement", "first statement only"),
        Wrong(top_level_only, "function body", "function bodies skipped"),
        Wrong(example_only, "you missed", "the notebook's example only"),
        Wrong(lambda s: sorted(attribute_reads(s)) * 2, "set", "a list with repeats"),
        Wrong(visitor_list, "repeated", "a list that repeats a name read twice"),
        Wrong(store_targets_skipped, "names before it are read", "whole assignment target skipped"),
        Wrong(calls_excluded, "which the code calls", "a called attribute (x.f()) not counted as read"),
    ],
    "9.2": [
        Wrong(flat_only, "nested block", "no recursion"),
        Wrong(string_annotations, "makes a field's .type a string", "string annotations"),
        Wrong(no_prefix, "without the block it sits in", "no dotted prefix"),
        Wrong(keeps_target, "'_target_'", "_target_ reported"),
        Wrong(lambda cls, data: sorted(yaml_only_keys(cls, data), reverse=True), "sort the keys", "unsorted"),
        Wrong(lambda cls, data: set(yaml_only_keys(cls, data)), "list", "a set"),
        Wrong(dataclass_only, "the exercise asks the reverse", "fields not keys"),
        Wrong(every_key, "fields of the class", "every key"),
        Wrong(lambda cls, data: yaml_only_keys(cls, data)[:1], "you missed", "first only"),
        Wrong(one_level_only, "more than one level", "one nesting level"),
        Wrong(every_dict, "plain dict", "descends into every dict"),
        Wrong(pops_target, "changed its input", "input mutated"),
        Wrong(target_top_only, "'_target_'", "_target_ skipped at the top only"),
        Wrong(own_annotations_only, "inherits from its base class", "cls.__annotations__ misses inherited fields"),
        Wrong(sorted_per_block, "as a whole is not sorted", "each block sorted, nested keys appended"),
    ],
}

RIGHT = {
    "9.1": [attribute_reads_visitor, lambda s: sorted(attribute_reads(s)), lambda s: frozenset(attribute_reads(s))],
    "9.2": [by_walking_with_a_stack, lambda cls, data: list(yaml_only_keys(cls, dict(data)))],
}

test_wrong_answers_fail_naming_the_mistake, test_right_answers_written_differently_pass = checker_tests(WRONG, RIGHT)
