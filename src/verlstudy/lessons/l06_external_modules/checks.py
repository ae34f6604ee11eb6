"""Lesson 06's exercise checkers: 6.1 parses VERL_USE_EXTERNAL_MODULES, 6.2 predicts whether a process is patched.

A notebook reaches them only as check_exercise("N.M", answer); the mechanism's own parser and
predictor are refused as answers. A wrong answer's message names the mistake it shows; how to get there
is each checker's `method`, shown after repeated tries or by `exercise_hint`.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import strategies as st

from verlstudy.kit import i18n
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
        return i18n.pick("return a list of names, not {kind}", kind=type(got).__name__)
    names = [str(n) for n in got]
    if value == "" and names:
        return i18n._("an empty value names no modules, but your list is not empty")
    if any(n != n.strip() for n in names) and list(got) == value.split(","):
        return i18n._(
            "your names keep the blanks around them (verl 0.9.1's own split does that; this parser forgives what "
            "verl does not)"
        )
    if any(n != n.strip() for n in names):
        return i18n._("your names keep the blanks around them")
    if any(not n for n in names):
        return i18n._("your list holds empty names")
    inner = [part.strip() for part in value.split(",") if any(c.isspace() for c in part.strip())]
    if inner and not all(n in names for n in inner):
        return i18n.pick(
            "{entry} is one entry between two commas, blank inside and all: only a comma separates names, and only "
            "the blanks around an entry go (your parser cut or squeezed it, so the import would name something else)",
            entry=repr(inner[0]),
        )
    if len(names) > len([part for part in value.split(",") if part.strip()]):
        return i18n._("your parser also cuts where there is no comma: only a comma separates names")
    if any(" " in n for n in names):
        return i18n._("your names are not the text between the commas")
    return i18n._("your list does not hold the names between the commas")


def _case_changed(got: Any, want: list[str]) -> bool:
    """The right names with other capitals (lower-cased, upper-cased ...)."""
    if not isinstance(got, list | tuple) or len(got) != len(want) or not all(isinstance(g, str) for g in got):
        return False
    return list(got) != want and [g.casefold() for g in got] == [w.casefold() for w in want]


def _reference_parse(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


# hand-typed entries: real adaptor names, capitals, a dash or a colon (PATH-like), a blank or a tab inside one
_NAMES = (
    "megatron_adaptor", "json", "pkg.sub", "a", "b", "megatron adaptor", "Megatron_Adaptor",
    "mindspeed.megatron_adaptor", "my-adaptor", "pkg:mod", "x\ty", "B", "_private",
)  # fmt: skip
_GAPS = ("", " ", "  ", "\t", " \t")
# any other typed name: letters, digits and every printable punctuation but the comma (a semicolon or a pipe
# a person may type between names is part of a name: only a comma separates)
_TYPED = st.text(alphabet="abcXYZ019" + "".join(c for c in string.punctuation if c != ","), min_size=1, max_size=6)


@st.composite
def _env_value(draw: Any) -> tuple[str]:
    entry = st.tuples(st.sampled_from(_GAPS), st.sampled_from(("", *_NAMES)) | _TYPED, st.sampled_from(_GAPS))
    entries = draw(st.lists(entry, max_size=6))
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
    Case(("b,a,b",), "a name written twice, out of alphabetical order"),
    Case(("pkg:mod, my-adaptor",), "a colon and a dash are no separators"),
]


def _parse_names(args: tuple[Any, ...], got: Any, want: Any) -> str | None:
    if isinstance(got, list | tuple) and len(got) < len(want) and list(got) == list(dict.fromkeys(want)):
        return i18n._("your list drops a name written twice: keep every entry, in the order written")
    if _case_changed(got, want):
        changed = next(g for g, w in zip(got, want, strict=True) if g != w)
        return i18n.pick(
            "your list changes the case of the letters ({name}): module names are case-sensitive, so the import "
            "would name another module",
            name=repr(changed),
        )
    return _parse_mistake(args[0], got)


@checker(
    "6.1",
    library_answers=[parse_module_list],
    where=(
        "the paragraph before the exercise: the value is typed by hand into a Dockerfile or a workflow, so look at "
        "what lies between two commas, before the first and after the last one"
    ),
    question=(
        "Work ' a ,, b\\t,' by hand: which pieces do the commas give you, which of them name a module once you "
        "look past the blanks around them, and what would a blank between two letters of one piece become?"
    ),
    method=(
        "Cut only where a comma is. Look at each piece in turn and decide what the blanks at its two ends are worth, "
        "and what a piece made of blanks alone is worth, then keep the survivors in the order written. Check your "
        "parser on the empty value and on a value that is only commas and blanks."
    ),
    reveals=["strips blanks, drops empty entries"],
)
def check_parse_modules(fn: Callable[[str], list[str]]) -> str:
    """Exercise 6.1: the course's forgiving parser of VERL_USE_EXTERNAL_MODULES.

    Contract. Returns, as a list of str (a tuple passes), the entries between commas with the blanks (spaces
    and tabs) around each removed, entries that are blank or empty dropped, every other entry kept as written
    (capitals, a blank, tab, dash, colon, semicolon or any other character but a comma inside it, a name
    written twice), in the order written; the empty value gives an empty list. Only a comma separates.
    Domain: hand-typed values of zero to six entries (Dockerfiles, workflows), blanks of any mix around them, a
    trailing comma, only commas, only blanks; strings are immutable, so there is no effect to check.
    """
    return compare_on_inputs(
        fn, _reference_parse, inputs=_env_value(), edge_cases=_PARSE_CASES, mistakes=_parse_names, name="parse_modules"
    )


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
        if first is not None and imports[0] == LIBRARY:
            return i18n._(
                "toylib.model is the first import here, yet you said patched: your answer ignores the order of the "
                "imports"
            )
        if first is not None:
            return i18n.pick(
                "toylib.model is imported before {module} here, yet you said patched: your answer ignores the order "
                "of the imports",
                module=imports[first],
            )
        names = split_like_verl_091(env)  # the variable's names, split as verl splits it
        if ADAPTOR in names:
            return i18n._(
                "the variable names the adaptor, but nothing here imports toyverl, yet you said patched: your answer "
                "lets the variable act without toyverl"
            )
        if env is None:
            return i18n._(
                "the variable does not name toylib_adaptor here (it is unset), nor is the adaptor imported, yet you "
                "said patched"
            )
        return i18n._(
            "the variable does not name toylib_adaptor here, nor is the adaptor imported, yet you said patched"
        )
    if first is None:
        return None
    if first == 0:
        if imports[0] == ADAPTOR:
            return i18n._("the process imports the adaptor itself first, yet you said unpatched")
        if env is not None and "," in env:
            return i18n._("the variable holds a comma-separated list here: your answer does not read every name in it")
        return i18n._("toyverl comes first here, with the variable naming the adaptor, yet you said unpatched")
    if LIBRARY not in imports or (imports[first] == HOOK_PACKAGE and env is not None and "," in env):
        return None  # more than one slip gives this answer here: the two values say it
    before = list(imports[:first])
    if len(before) == 1:
        return i18n.pick(
            "{module} comes before {patcher} here, yet you said unpatched: your answer stops at {module}",
            module=before[0],
            patcher=imports[first],
        )
    return i18n.pick(
        "{modules} come before {patcher} here, yet you said unpatched: your answer stops before {patcher}",
        modules=functools.reduce(_and, before),
        patcher=imports[first],
    )


def _and(left: str, right: str) -> str:
    return i18n.pick("{left} and {right}", left=left, right=right)


_MODULES = (HOOK_PACKAGE, ADAPTOR, "toylib.ops", LIBRARY)


# what the variable may name in the toy world: modules that exist there (a name that does not would make the
# hook's import, and so `import toyverl`, fail), never toylib.model itself (the exercise rules it out)
_IMPORTABLE = (ADAPTOR, "toylib.ops", "toylib", "json", "os")


@st.composite
def _process(draw: Any) -> tuple[list[str], str | None]:
    imports = draw(st.permutations(_MODULES))[: draw(st.integers(0, len(_MODULES)))]
    env = draw(st.none() | st.just("") | st.lists(st.sampled_from(_IMPORTABLE), min_size=1, max_size=4).map(",".join))
    return list(imports), env


_PATCH_CASES = [
    Case(([HOOK_PACKAGE, LIBRARY], ADAPTOR), "the image default, verl imported first"),
    Case(([LIBRARY], ADAPTOR), "a worker that never imports verl"),
    Case(([LIBRARY, HOOK_PACKAGE], ADAPTOR), "the image default, the library imported first"),
    Case(([HOOK_PACKAGE, LIBRARY], None), "no variable"),
    Case(([HOOK_PACKAGE, LIBRARY], ""), "the variable set, but empty"),
    Case(([ADAPTOR, LIBRARY], None), "an explicit import at the entry point"),
    Case(([LIBRARY, ADAPTOR], None), "the adaptor imported after the library"),
    Case(([HOOK_PACKAGE, LIBRARY], f"toylib.ops,{ADAPTOR}"), "the adaptor is the last name of a list"),
    Case(([HOOK_PACKAGE, LIBRARY], f"{ADAPTOR},json"), "the adaptor is the first name of a list"),
    Case((["toylib.ops", HOOK_PACKAGE, LIBRARY], ADAPTOR), "toylib.ops imported first"),
    Case(([HOOK_PACKAGE, "toylib.ops", LIBRARY], "toylib.ops"), "the variable names another module"),
    Case(([HOOK_PACKAGE], ADAPTOR), "the library is never imported"),
    Case(([], None), "a process that imports nothing before the library"),
]


def _patch_names(args: tuple[Any, ...], got: Any, want: Any) -> str | None:
    imports, env = args
    if not isinstance(got, bool):
        return i18n._("return True or False")
    if LIBRARY not in imports and not got and want and _first_patcher(imports, env) == 0:
        return i18n._(
            "the process never imports toylib.model here: the question is then whether an import of it after these "
            "would be patched, and you said unpatched"
        )
    return _patch_mistake(imports, env, got)


@checker(
    "6.2",
    library_answers=[predict_patched],
    where=(
        "the printed sources of toylib/model.py and toylib_adaptor.py, and the paragraph 'How verl reads the "
        "variable': which line runs at import time, and what does the hook do with the value?"
    ),
    question=(
        "Three processes with the variable naming the adaptor: (toyverl, toylib.model), (toylib.model, toyverl) and "
        "(toylib.ops, toylib.model). For each, at the moment toylib.model is imported and takes its `attention`, "
        "has anything replaced the function yet? What in each process could have replaced it?"
    ),
    method=(
        "Follow the process one import at a time, asking at each: does this import run the adaptor's code (itself, "
        "or through the hook reading the variable, split as verl splits it)? Does it bind the library's function "
        "for good? Which imports do neither? The first import that settles the question settles it for the "
        "process; decide what a process that settles nothing ends up with, given that the script imports the "
        "library last."
    ),
    reveals=["patched iff the adaptor is imported before the library", "toylib.model -> toyverl | no"],
)
def check_predict_patched(fn: Callable[[Sequence[str], str | None], bool]) -> str:
    """Exercise 6.2: predict whether a process ends up patched from its import order and the variable.

    Contract. Returns a bool (the exercise asks for one): what `toylib.model.forward()` gives in a fresh process
    that imports `imports` in order, with VERL_USE_EXTERNAL_MODULES set to `env_value` (None: unset), then
    imports toylib.model, the toy packages with verl 0.9.1's own hook; leaves `imports` unchanged. Domain:
    every order of any subset of toyverl, toylib_adaptor, toylib.ops and toylib.model (none, one, all four),
    the variable unset, set but empty, or naming one to four modules that exist in the toy world (the adaptor,
    toylib, toylib.ops, json, os; repeats allowed), never toylib.model and never a name that would make the
    hook's import fail. tests/lessons/l06_external_modules checks the reference against real processes there.
    """
    return compare_on_inputs(
        fn,
        predict_patched,
        inputs=_process(),
        edge_cases=_PATCH_CASES,
        mistakes=_patch_names,
        name="will_be_patched",
        max_examples=120,
    )
