"""Lesson 06's exercise checkers: 6.1 parses VERL_USE_EXTERNAL_MODULES, 6.2 predicts whether a process is patched.

A notebook reaches them only as check_exercise("N.M", answer); the mechanism's own parser and
predictor are refused as answers. A wrong answer's message names the mistake it shows; how to get there
is each checker's `method`, shown after repeated tries or by `exercise_hint`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import strategies as st

from verlstudy.kit.exercises import checker
from verlstudy.kit.properties import Case, compare_on_inputs
from verlstudy.lessons.l06_external_modules.modules_env import (
    ADAPTOR,
    HOOK_PACKAGE,
    LIBRARY,
    parse_module_list,
    predict_patched,
    split_like_verl_091,
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
    inner = [part.strip() for part in value.split(",") if any(c.isspace() for c in part.strip())]
    if inner and not all(n in names for n in inner):
        return (
            f"{inner[0]!r} is one entry between two commas, blank inside and all: only a comma separates names, "
            "and only the blanks around an entry go (your parser cut or squeezed it, so the import would name "
            "something else)"
        )
    if any(" " in n for n in names) or len(names) > len(value.split(",")):
        return "your names are not the text between the commas"
    return "your list does not hold the names between the commas"


def _case_changed(got: Any, want: list[str]) -> bool:
    """The right names with other capitals (lower-cased, upper-cased ...)."""
    if not isinstance(got, list | tuple) or len(got) != len(want) or not all(isinstance(g, str) for g in got):
        return False
    return list(got) != want and [g.casefold() for g in got] == [w.casefold() for w in want]


def _reference_parse(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


_NAMES = ("megatron_adaptor", "json", "pkg.sub", "a", "b", "megatron adaptor")
_GAPS = ("", " ", "  ", "\t")


@st.composite
def _env_value(draw: Any) -> tuple[str]:
    entries = draw(st.lists(st.tuples(st.sampled_from(_GAPS), st.sampled_from(("", *_NAMES)), st.sampled_from(_GAPS))))
    return (",".join(f"{left}{name}{right}" for left, name, right in entries),)


_PARSE_CASES = [
    Case(("megatron_adaptor",), "the images' own value, one name"),
    Case(("",), "an empty value names no modules"),
    Case(("a,b",), "two names"),
    Case((" a , b ",), "blanks around the names"),
    Case(("a,,b,",), "an empty entry and a trailing comma"),
    Case((",",), "only a comma"),
    Case(("   ",), "only blanks"),
    Case(("pkg.sub, other",), "a dotted name, then a blank after the comma"),
    Case(("\tjson ,megatron_adaptor",), "a tab is a blank too"),
    Case(("megatron adaptor,json",), "a blank inside an entry: one (bad) name, which the import will name"),
    Case((" megatron\tadaptor ",), "a tab inside an entry, blanks around it"),
    Case(("Megatron_Adaptor, json",), "capital letters: Python's import tells Megatron_Adaptor from megatron_adaptor"),
]


def _parse_names(args: tuple[Any, ...], got: Any, want: Any) -> str | None:
    if isinstance(got, list | tuple) and len(got) < len(want) and list(got) == list(dict.fromkeys(want)):
        return "your list drops a name written twice: keep every entry, in the order written"
    if _case_changed(got, want):
        changed = next(g for g, w in zip(got, want, strict=True) if g != w)
        return (
            f"your list changes the case of the letters ({changed!r}): module names are case-sensitive, so "
            "the import would name another module"
        )
    return _parse_mistake(args[0], got)


@checker(
    "6.1",
    library_answers=[parse_module_list],
    where=(
        "the paragraph before the exercise: the value is typed by hand into a Dockerfile or a workflow, so look at "
        "what lies between two commas, before the first and after the last one"
    ),
    method=(
        "Cut the value at every comma. Each piece may carry blanks (spaces, tabs) on either side: remove them from "
        "both ends. A piece that is nothing once its blanks are gone names no module, so leave it out; what remains, "
        "in the order written, is the answer (an empty value therefore gives an empty list)."
    ),
    reveals=["strips blanks, drops empty entries"],
)
def check_parse_modules(fn: Callable[[str], list[str]]) -> str:
    """Exercise 6.1: the course's forgiving parser of the variable, ignoring blanks and empty entries."""
    return compare_on_inputs(
        fn, _reference_parse, inputs=_env_value(), edge_cases=_PARSE_CASES, mistakes=_parse_names, name="parse_modules"
    )


# A module whose name only contains the adaptor's: the hook imports the names between the commas, whole
LOOK_ALIKE = f"{ADAPTOR}_v2"


def _first_patcher(imports: Sequence[str], env: str | None) -> int | None:
    """The position of the first import that patches (the adaptor, or toyverl with the variable naming it).

    An import patches when a process of that import alone is patched: the mechanism's own walk decides it.
    """
    return next((i for i, module in enumerate(imports) if predict_patched([module], env)), None)


def _patch_mistake(imports: Sequence[str], env: str | None, got: bool) -> str | None:
    """The mistake a wrong prediction shows, named by its kind, never the rule (None: the two values say it all).

    Only a mistake the input makes unambiguous is named: the message then shows the input, both answers and
    the kind of slip (the order, a part of a name, the variable without toyverl ...), not why it matters.
    """
    first = _first_patcher(imports, env)
    if got:  # said patched: nothing patches here, or toylib.model comes before what does
        if first is not None:
            placed = "the first import" if imports[0] == LIBRARY else f"imported before {imports[first]}"
            return f"toylib.model is {placed} here, yet you said patched: your answer ignores the order of the imports"
        names = split_like_verl_091(env)  # the variable's names, split as verl splits it
        if ADAPTOR in names:
            return (
                "the variable names the adaptor, but nothing here imports toyverl, yet you said patched: your answer "
                "lets the variable act without toyverl"
            )
        if env is not None and ADAPTOR in env:
            other = next(name for name in names if ADAPTOR in name)
            return (
                f"the variable names {other!r} here, another module whose name only contains {ADAPTOR!r}, yet you "
                "said patched: your answer matches a part of a name"
            )
        unset = " (it is unset)" if env is None else ""
        return (
            f"the variable does not name toylib_adaptor here{unset}, nor is the adaptor imported, yet you said patched"
        )
    if first is None:
        return None
    if first == 0:
        if imports[0] == ADAPTOR:
            return "the process imports the adaptor itself first, yet you said unpatched"
        if env is not None and "," in env:
            return "the variable holds a comma-separated list here: your answer does not read every name in it"
        return "toyverl comes first here, with the variable naming the adaptor, yet you said unpatched"
    if LIBRARY not in imports or (imports[first] == HOOK_PACKAGE and env is not None and "," in env):
        return None  # more than one slip gives this answer here: the two values say it
    before = list(imports[:first])
    if len(before) == 1:
        return (
            f"{before[0]} comes before {imports[first]} here, yet you said unpatched: your answer stops at {before[0]}"
        )
    return (
        f"{' and '.join(before)} come before {imports[first]} here, yet you said unpatched: your answer stops before "
        f"{imports[first]}"
    )


_MODULES = (HOOK_PACKAGE, ADAPTOR, "toylib.ops", LIBRARY)


@st.composite
def _process(draw: Any) -> tuple[list[str], str | None]:
    imports = draw(st.permutations(_MODULES))[: draw(st.integers(1, len(_MODULES)))]
    names = st.sampled_from((ADAPTOR, "toylib.ops", "json", LOOK_ALIKE))
    env = draw(st.none() | st.lists(names, min_size=1, max_size=3))
    return list(imports), None if env is None else ",".join(env)


_PATCH_CASES = [
    Case(([HOOK_PACKAGE, LIBRARY], ADAPTOR), "the image default, verl imported first"),
    Case(([LIBRARY], ADAPTOR), "a worker that never imports verl"),
    Case(([LIBRARY, HOOK_PACKAGE], ADAPTOR), "the image default, the library imported first"),
    Case(([HOOK_PACKAGE, LIBRARY], None), "no variable"),
    Case(([ADAPTOR, LIBRARY], None), "an explicit import at the entry point"),
    Case(([LIBRARY, ADAPTOR], None), "the adaptor imported after the library"),
    Case(([HOOK_PACKAGE, LIBRARY], f"toylib.ops,{ADAPTOR}"), "the adaptor is the last name of a list"),
    Case(([HOOK_PACKAGE, LIBRARY], LOOK_ALIKE), "the variable names another module with a longer name"),
    Case((["toylib.ops", HOOK_PACKAGE, LIBRARY], ADAPTOR), "toylib.ops imported first"),
    Case(([HOOK_PACKAGE, "toylib.ops", LIBRARY], "toylib.ops"), "the variable names another module"),
    Case(([HOOK_PACKAGE], ADAPTOR), "the library is never imported"),
]


def _patch_names(args: tuple[Any, ...], got: Any, want: Any) -> str | None:
    imports, env = args
    if not isinstance(got, bool):
        return "return True or False"
    if LIBRARY not in imports and not got and want and _first_patcher(imports, env) == 0:
        return (
            "the process never imports toylib.model here: the question is then whether an import of it after "
            "these would be patched, and you said unpatched"
        )
    return _patch_mistake(imports, env, got)


@checker(
    "6.2",
    library_answers=[predict_patched],
    where=(
        "the printed sources of toylib/model.py and toylib_adaptor.py, and the paragraph 'How verl reads the "
        "variable': which line runs at import time, and what does the hook do with the value?"
    ),
    method=(
        "Walk the imports in the order given and stop at the first one that decides. Importing the adaptor itself "
        "decides 'patched'; so does importing toyverl when the variable, cut at its commas, names the adaptor. "
        "Importing the model module before either of those decides 'unpatched', because it takes its reference "
        "to the attention function then. Importing toylib.ops decides nothing. If the walk ends undecided, the "
        "answer is 'unpatched'."
    ),
    reveals=["patched iff the adaptor is imported before the library", "toylib.model -> toyverl | no"],
)
def check_predict_patched(fn: Callable[[Sequence[str], str | None], bool]) -> str:
    """Exercise 6.2: predict whether a process ends up patched from its import order and the variable."""
    return compare_on_inputs(
        fn, predict_patched, inputs=_process(), edge_cases=_PATCH_CASES, mistakes=_patch_names, name="will_be_patched"
    )
