"""Lesson 06's checkers test a contract: new wrong answers of other classes fail, right ones written otherwise pass.

6.1's classes: a separator that is not a comma, blanks only partly stripped, entries reordered or deduplicated,
the empty value. 6.2's: a wrong value on part of the domain (no imports, the variable set but empty, several
names), the order misread, the input changed, state kept between calls, another type.
"""

from __future__ import annotations

import re
import time

from conftest import Wrong, checker_tests
from verlstudy.kit.exercises import check_exercise, exercise_results
from verlstudy.lessons.l06_external_modules import checks

ADAPTOR, HOOK, LIB = "toylib_adaptor", "toyverl", "toylib.model"


def parse(value):
    return [p.strip() for p in value.split(",") if p.strip()]


def patched(imports, env):
    for module in imports:
        if module == ADAPTOR or (module == HOOK and ADAPTOR in (env or "").split(",")):
            return True
        if module == LIB:
            return False
    return False


# ---------------------------------------------------------------- 6.1 wrong


def splits_on_colons_too(value):  # PATH-like
    return [p.strip() for p in re.split(r"[,:]", value) if p.strip()]


def strips_spaces_only(value):
    return [p.strip(" ") for p in value.split(",") if p.strip(" ")]


def sorted_names(value):
    return sorted(parse(value))


def set_of_names(value):
    return list(set(parse(value)))


def drops_only_empty(value):  # a blank-only entry survives as ""
    return [p.strip() for p in value.split(",") if p]


def left_strip_only(value):
    return [p.lstrip() for p in value.split(",") if p.strip()]


def none_for_empty(value):
    return parse(value) or None


def splits_on_dash(value):
    return [p.strip() for p in re.split(r"[,-]", value) if p.strip()]


def stops_at_empty(value):  # "a,,b" ends at the empty entry
    out = []
    for p in value.split(","):
        if not p.strip():
            break
        out.append(p.strip())
    return out


def drops_underscored(value):  # "private" names thrown away
    return [n for n in parse(value) if not n.startswith("_")]


# ---------------------------------------------------------------- 6.2 wrong


def needs_an_import(imports, env):  # an empty process is thought to crash: says True
    return True if not imports else patched(imports, env)


def empty_env_counts(imports, env):  # a set variable is thought to import the adaptor
    return patched(imports, ADAPTOR if env == "" else env)


def last_name_only(imports, env):
    return patched(imports, (env or "").split(",")[-1])


def reversed_walk(imports, env):
    return patched(list(reversed(imports)), env)


def sorts_imports(imports, env):  # changes the caller's list
    imports.sort()
    return patched(imports, env)


def remembers(imports, env, _seen=[]):  # noqa: B006 (the mistake: state kept between calls)
    _seen.append(patched(imports, env))
    return any(_seen[-2:])


def toylib_package_patches(imports, env):  # "toylib" in the variable taken for the adaptor
    names = (env or "").split(",")
    return patched(imports, ADAPTOR if "toylib" in names else env)


def returns_string(imports, env):
    return "patched" if patched(imports, env) else "vanilla"


def model_never_imported_unpatched_only_with_hook(imports, env):  # forgets the adaptor counts without the hook
    return any(m == HOOK for m in imports) and patched(imports, env)


def any_adaptor_anywhere(imports, env):  # the adaptor imported anywhere patches
    return ADAPTOR in imports or patched(imports, env)


# ---------------------------------------------------------------- right answers written otherwise


def parse_by_regex(value):
    return [m.strip() for m in re.findall(r"[^,]+", value) if m.strip()]


def parse_filter_map(value):
    return tuple(filter(None, map(str.strip, value.split(","))))


def parse_partition(value):
    out, rest = [], value
    while True:
        head, sep, rest = rest.partition(",")
        if head.strip(" \t"):
            out.append(head.strip(" \t"))
        if not sep:
            return out


def predict_first_event(imports, env):
    names = set(env.split(",")) if env else set()
    events = [m for m in imports if m in (ADAPTOR, LIB) or (m == HOOK and ADAPTOR in names)]
    return bool(events) and events[0] != LIB


def predict_positions(imports, env):
    big = len(imports) + 1
    lib = imports.index(LIB) if LIB in imports else big
    ad = imports.index(ADAPTOR) if ADAPTOR in imports else big
    hook = imports.index(HOOK) if HOOK in imports and env and ADAPTOR in env.split(",") else big
    return min(ad, hook) < lib


def predict_substring(imports, env):  # right in the toy world: no module there has a longer name
    for m in imports:
        if m == LIB:
            return False
        if m == ADAPTOR or (m == HOOK and env is not None and ADAPTOR in env):
            return True
    return False


WRONG = {
    "6.1": [
        Wrong(splits_on_colons_too, "only a comma separates", why="a colon separates too"),
        Wrong(strips_spaces_only, "blanks", why="tabs kept"),
        Wrong(sorted_names, "does not hold the names", why="sorted"),
        Wrong(set_of_names, ("twice", "does not hold"), why="a set"),
        Wrong(drops_only_empty, "empty names", why="blank-only entry kept"),
        Wrong(left_strip_only, "blanks", why="right end kept"),
        Wrong(none_for_empty, "list", why="None for the empty value"),
        Wrong(splits_on_dash, ("only a comma separates", "not the text between"), why="a dash separates"),
        Wrong(stops_at_empty, "does not hold the names", why="stops at an empty entry"),
        Wrong(drops_underscored, "does not hold the names", why="_private names dropped"),
    ],
    "6.2": [
        Wrong(needs_an_import, "nor is the adaptor imported", why="an empty process said patched"),
        Wrong(empty_env_counts, "does not name toylib_adaptor", why="the empty variable taken for the adaptor"),
        Wrong(last_name_only, "every name", why="the list's last name only"),
        Wrong(reversed_walk, ("order", "stops", "unpatched", "patched"), why="walks backwards"),
        Wrong(sorts_imports, "changed its input", why="sorts the caller's list"),
        Wrong(remembers, ("patched", "unpatched"), why="state kept between calls"),
        Wrong(toylib_package_patches, "does not name toylib_adaptor", why="toylib taken for the adaptor"),
        Wrong(returns_string, "True or False", why="a string"),
        Wrong(model_never_imported_unpatched_only_with_hook, "adaptor itself", why="the adaptor needs the hook"),
        Wrong(any_adaptor_anywhere, "order of the imports", why="the adaptor after the library still patches"),
    ],
}
RIGHT = {
    "6.1": [parse_filter_map, parse_partition, parse_by_regex],
    "6.2": [predict_first_event, predict_positions, predict_substring],
}
test_new_wrong_answers_fail, test_new_right_answers_pass = checker_tests(WRONG, RIGHT)


def test_generated_processes_span_the_domain() -> None:
    """No imports and all four, the variable unset, empty, and naming several modules, the adaptor among them."""
    from hypothesis import given, settings

    lengths, envs = set(), set()

    @settings(max_examples=200, derandomize=True, database=None)
    @given(checks._process())
    def record(args) -> None:
        lengths.add(len(args[0]))
        envs.add(args[1])

    record()
    assert lengths == {0, 1, 2, 3, 4}
    assert None in envs and "" in envs
    assert any(e and "," in e and ADAPTOR in e.split(",") for e in envs)
    assert not any(e and LIB in e.split(",") for e in envs)


def test_stubs_are_not_attempted_and_print_nothing_of_the_answer(capsys) -> None:
    def stub(*args):
        raise NotImplementedError

    for exercise_id in ("6.1", "6.2"):
        check_exercise(exercise_id, stub)
        assert exercise_results()[exercise_id] == "not attempted"
    assert "strip" not in capsys.readouterr().out


def test_each_check_is_quick() -> None:
    for exercise_id, answer in (("6.1", parse), ("6.2", patched)):
        start = time.process_time()
        check_exercise(exercise_id, answer)
        assert exercise_results()[exercise_id] == "correct"
        assert time.process_time() - start < 1.0  # CPU, not wall: a loaded machine does not fail it
