"""Lesson 06's exercise checkers: 6.1 parses VERL_USE_EXTERNAL_MODULES, 6.2 predicts whether a process is patched.

A notebook reaches them only as check_exercise("N.M", answer); the mechanism's own parser and
predictor are refused as answers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.lessons.l06_external_modules.modules_env import (
    ADAPTOR,
    HOOK_PACKAGE,
    LIBRARY,
    parse_module_list,
    predict_patched,
)


@checker("6.1", library_answers=[parse_module_list])
def check_parse_modules(fn: Callable[[str], list[str]]) -> str:
    """Exercise 6.1: the course's forgiving parser of the variable, ignoring blanks and empty entries."""
    cases = {
        "megatron_adaptor": ["megatron_adaptor"],
        "": [],
        "a,b": ["a", "b"],
        " a , b ": ["a", "b"],
        "a,,b,": ["a", "b"],
        "pkg.sub, other": ["pkg.sub", "other"],
    }
    for value, want in cases.items():
        got = fn(value)
        if list(got) != want:
            hint = "strip blanks around each name" if " " in value else "drop empty entries between commas"
            if value == "":
                hint = "an empty variable names no modules: return []"
            if isinstance(got, list) and got == value.split(","):
                hint += " (that is verl 0.9.1's own split; this parser forgives what verl does not)"
            raise ExerciseFailure(f"for {value!r} you returned {got!r}, expected {want!r}: {hint}")
    return f"{len(cases)} values parsed"


@checker("6.2", library_answers=[predict_patched])
def check_predict_patched(fn: Callable[[Sequence[str], str | None], bool]) -> str:
    """Exercise 6.2: predict whether a process ends up patched from its import order and the variable."""
    cases = [
        ((HOOK_PACKAGE, LIBRARY), ADAPTOR),
        ((LIBRARY, HOOK_PACKAGE), ADAPTOR),
        ((HOOK_PACKAGE, LIBRARY), None),
        ((LIBRARY,), ADAPTOR),
        ((ADAPTOR, LIBRARY), None),
        ((LIBRARY, ADAPTOR), None),
        ((HOOK_PACKAGE, LIBRARY), f"toylib.ops,{ADAPTOR}"),
        (("toylib.ops", HOOK_PACKAGE, LIBRARY), ADAPTOR),
        ((HOOK_PACKAGE, "toylib.ops", LIBRARY), "toylib.ops"),
    ]
    for imports, env in cases:
        want = predict_patched(imports, env)
        got = fn(imports, env)
        if not isinstance(got, bool):
            raise ExerciseFailure(f"return a bool, got {type(got).__name__} {got!r}")
        if got != want:
            if LIBRARY in imports[:1]:
                hint = "the library binds `attention` when it is imported: a patch after that comes too late"
            elif env is None or ADAPTOR not in env:
                hint = "the hook imports only the modules the variable names; unset means nothing"
            elif "," in env:
                hint = "the variable is a comma-separated list: the hook imports every name in it, in order"
            elif imports[0] == "toylib.ops":
                hint = "only toylib.model binds `attention`; importing toylib.ops first is harmless"
            else:
                hint = "importing the hook package first patches the library before its model is imported"
            raise ExerciseFailure(f"imports {' -> '.join(imports)} with variable {env!r}: you said {got}: {hint}")
    return f"{len(cases)} processes predicted"
