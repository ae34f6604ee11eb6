"""Lesson 06's exercise checkers: 6.1 parses VERL_USE_EXTERNAL_MODULES, 6.2 predicts whether a process is patched.

A notebook reaches them only as check_exercise("N.M", answer); the mechanism's own parser and
predictor are refused as answers. A wrong answer's message names the mistake it shows; how to get there
is each checker's `method`, shown after repeated tries or by `exercise_hint`.
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


def _parse_mistake(value: str, got: object) -> str:
    """The mistake a wrong parse shows, named without the rule."""
    if not isinstance(got, list | tuple):
        return f"return a list of names, not {type(got).__name__}"
    names = [str(n) for n in got]
    if value == "" and names:
        return "an empty value names no modules, but your list is not empty"
    if any(n != n.strip() for n in names):
        note = " (verl 0.9.1's own split does that; this parser forgives what verl does not)"
        return "your names keep the blanks around them" + (note if list(got) == value.split(",") else "")
    if any(not n for n in names):
        return "your list holds empty names"
    if any(" " in n for n in names) or len(names) > len(value.split(",")):
        return "your names are not the text between the commas"
    return "your list does not hold the names between the commas"


@checker(
    "6.1",
    library_answers=[parse_module_list],
    method=(
        "split the value on commas, strip the blanks from each piece, and keep only the pieces that are "
        "not empty after stripping (so '' and 'a,,' give no empty names)"
    ),
    reveals=["strips blanks, drops empty entries"],
)
def check_parse_modules(fn: Callable[[str], list[str]]) -> str:
    """Exercise 6.1: the course's forgiving parser of the variable, ignoring blanks and empty entries."""
    if not callable(fn):
        raise ExerciseFailure(f"pass your function itself, not {type(fn).__name__}")
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
        if not isinstance(got, list | tuple) or list(got) != want:
            raise ExerciseFailure(
                f"for {value!r} you returned {got!r}, expected {want!r}: {_parse_mistake(value, got)}"
            )
    return f"{len(cases)} values parsed"


def _patch_mistake(imports: Sequence[str], env: str | None, got: bool) -> str:
    """The mistake a wrong prediction shows, named without the rule."""
    if got and imports[0] == LIBRARY:
        return "toylib.model is imported first here, so the adaptor would come too late: your answer ignores the order"
    if got and (env is None or ADAPTOR not in env.split(",")):
        return "the variable does not name toylib_adaptor here, yet you said patched"
    if got:
        return "toylib.model is imported before anything patches it here, yet you said patched"
    if env is not None and "," in env:
        return "the variable holds a comma-separated list here: your answer does not read every name in it"
    if imports[0] == "toylib.ops":
        return "toylib.ops comes first here; it is not the module that binds `attention`, yet you said unpatched"
    if imports[0] == ADAPTOR:
        return "the process imports the adaptor itself first, yet you said unpatched"
    return "toyverl comes first here, with the variable naming the adaptor, yet you said unpatched"


@checker(
    "6.2",
    library_answers=[predict_patched],
    method=(
        "toylib.model binds `attention` when it is imported, so walk the imports in order: the first time "
        "toylib_adaptor is imported (directly, or by toyverl when the variable split on commas names it) "
        "before toylib.model, the answer is True; reaching toylib.model first, or never importing the "
        "adaptor, gives False. Importing toylib.ops first changes nothing"
    ),
    reveals=["patched iff the adaptor is imported before the library", "toylib.model -> toyverl | no"],
)
def check_predict_patched(fn: Callable[[Sequence[str], str | None], bool]) -> str:
    """Exercise 6.2: predict whether a process ends up patched from its import order and the variable."""
    if not callable(fn):
        raise ExerciseFailure(f"pass your function itself, not {type(fn).__name__}")
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
            mistake = _patch_mistake(imports, env, got)
            raise ExerciseFailure(f"imports {' -> '.join(imports)} with variable {env!r}: you said {got}: {mistake}")
    return f"{len(cases)} processes predicted"
