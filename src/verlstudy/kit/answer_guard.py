"""While a check runs, the course's own answers refuse to answer for the learner.

`handed_over` (kit.exercises calls it before the check) reads an answer's names. The rest of this module
closes the routes that read nothing: a library function kept in a list, fetched with `__import__` or
`vars(module)[...]` at call time, or a checker's own reference wrapped in a lambda. For the duration of a
check each guarded function's code is swapped for a trampoline that looks at who is calling: from the checker
(or library code it runs) the original runs as before; from the learner's code (a notebook cell, a test,
anything outside the course, verl and the installed packages) the call is refused with `LibraryCallRefused`,
which the checker turns into one line.

A BaseException, not an Exception: a checker that reads a learner's raise as part of the answer ("this layout
must raise") must not read a refusal as one. Only plain functions without closures are swapped (every
reference and mechanism function the checkers guard is one); their code is restored when the check ends.
"""

from __future__ import annotations

import builtins
import functools
import gc
import importlib
import inspect
import os
import site
import sys
import sysconfig
import types
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from verlstudy.kit import i18n, upstream

# The name the trampolines call through; it lives in builtins only while a check runs.
_ROUTE_NAME = "__verlstudy_guarded_call__"
_KEY = "__verlstudy_guarded_key__"


# Files of the installed packages and the standard library, and of the course itself wherever it lives (an editable
# checkout too): code there is library code even when run under another module name (hypothesis re-executes some).
# Every site directory on the path counts, not only this interpreter's: a hub's venv reads the course's venv's
# packages through a .pth file (make hub-env), and torch or hypothesis calling a reference there is not the learner.
def _installed_roots() -> tuple[str, ...]:
    roots = {
        *(sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")),
        *site.getsitepackages(),
        site.getusersitepackages(),
        *(p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")),
        str(Path(__file__).resolve().parents[1]),
    }
    return tuple(sorted({os.path.join(p, "") for p in roots if p}))


_INSTALLED = _installed_roots()


# Where the course's and verl's own code lives: an answer from there is handed over, not written.
LIBRARY_MODULES = ("verlstudy", "verl", "upstream:")


def _is_library(module: object) -> bool:
    name = module if isinstance(module, str) else ""
    return any(name == m or name.startswith(m if m.endswith(":") else m + ".") for m in LIBRARY_MODULES)


def unwrap(answer: object) -> object:
    """The function under partials and bound methods (what an answer really runs)."""
    while True:
        if isinstance(answer, functools.partial):
            answer = answer.func
        elif isinstance(answer, types.MethodType):
            answer = answer.__func__
        else:
            return answer


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names) | set(code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _referenced(fn: types.FunctionType) -> list[object]:
    """The objects `fn`'s code can reach by name: its globals, closure cells and their attributes."""
    names = _code_names(fn.__code__)
    values: list[object] = [fn.__globals__[n] for n in sorted(names) if n in fn.__globals__]
    if fn.__closure__:
        values += [cell.cell_contents for cell in fn.__closure__ if cell.cell_contents is not None]
    for value in list(values):  # `pl.aligned_length`: a module alias, then an attribute of it
        if inspect.ismodule(value):
            values += [getattr(value, n) for n in sorted(names) if callable(getattr(value, n, None))]
    return values


def handed_over(answer: object, library_answers: Iterable[Callable[..., object]] = ()) -> str | None:
    """Why `answer` is the library's own mechanism rather than the learner's, or None if it is not.

    An answer is handed over when it is a function of verlstudy or verl itself, or when its code
    reaches one of `library_answers` (the mechanism functions the exercise asks the learner to
    write) by name, as a thin wrapper around the course's own function would.
    """
    answer = unwrap(answer)
    if not callable(answer):
        return None
    module = getattr(answer, "__module__", None)
    name = getattr(answer, "__qualname__", type(answer).__qualname__)
    if _is_library(module):
        return i18n.pick(
            "that is the library's own {name} (from {module}): the exercise asks you to write it",
            name=name,
            module=module,
        )
    if isinstance(answer, types.FunctionType):
        banned = {id(unwrap(f)): f for f in library_answers}
        for value in _referenced(answer):
            if id(unwrap(value)) in banned:
                used = banned[id(unwrap(value))]
                return i18n.pick(
                    "your {name} calls the library's own {used}: write it yourself",
                    name=answer.__name__,
                    used=used.__qualname__,
                )
    return None


class LibraryCallRefused(BaseException):
    """The learner's answer called a function the exercise asks them to write, while it was being checked."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    @property
    def reason(self) -> str:
        return i18n.pick(
            "your answer calls the course's own {name} while it is checked: the exercise asks you to write it",
            name=self.name,
        )


def _template(*args: Any, **kwargs: Any) -> Any:
    return __verlstudy_guarded_call__("__verlstudy_guarded_key__", args, kwargs)  # type: ignore[name-defined]  # noqa: F821


def is_library_file(filename: str) -> bool:
    """True for code of the standard library, the installed packages or the course itself (not the learner's)."""
    return filename.startswith("<frozen") or filename.startswith(_INSTALLED)


def _is_library_frame(frame: types.FrameType) -> bool:
    return _is_library(frame.f_globals.get("__name__", "")) or is_library_file(frame.f_code.co_filename)


class _Session:
    """The swapped functions of one check, and the code object that marks the checker's frame (the boundary)."""

    def __init__(self, functions: dict[str, types.FunctionType], boundary: types.CodeType) -> None:
        self.functions = functions
        self.originals = {key: fn.__code__ for key, fn in functions.items()}
        self.runners = {key: _copy_with_code(fn, fn.__code__) for key, fn in functions.items()}
        self.boundary = boundary

    def call(self, key: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        guarded = self.functions[key]
        frame = sys._getframe(2)  # the caller of the guarded function (1 is the trampoline itself)
        while frame is not None and frame.f_code is not self.boundary:
            # learner code may call what it was handed (a guard judging the split it is given), not what it fetched
            if not _is_library_frame(frame) and not _received_as_argument(frame, guarded):
                raise LibraryCallRefused(guarded.__qualname__)
            frame = frame.f_back
        return self.runners[key](*args, **kwargs)


def _received_as_argument(frame: types.FrameType, fn: types.FunctionType) -> bool:
    """Whether the function running in `frame` was passed `fn` by its caller (a default value does not count)."""
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount
    names = list(code.co_varnames[:count])
    names += [
        code.co_varnames[count + i]
        for i, flag in enumerate((inspect.CO_VARARGS, inspect.CO_VARKEYWORDS))
        if code.co_flags & flag and count + i < len(code.co_varnames)
    ]
    values: list[object] = []
    for name in names:
        value = frame.f_locals.get(name)
        values += (
            list(value) if isinstance(value, tuple) else list(value.values()) if isinstance(value, dict) else [value]
        )
    if not any(v is fn for v in values):
        return False
    owners = [f for f in gc.get_referrers(code) if isinstance(f, types.FunctionType) and f.__code__ is code]
    defaults = [d for f in owners for d in (*(f.__defaults__ or ()), *(f.__kwdefaults__ or {}).values())]
    return not any(d is fn for d in defaults)


def _copy_with_code(fn: types.FunctionType, code: types.CodeType) -> types.FunctionType:
    copy = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__dict__.update(fn.__dict__)
    return copy


def guardable(candidates: Iterable[object]) -> dict[str, types.FunctionType]:
    """The plain functions among `candidates` (partials and methods unwrapped), keyed uniquely, once each."""
    found: dict[int, types.FunctionType] = {}
    for candidate in candidates:
        fn = unwrap(candidate)
        fn = getattr(fn, "__wrapped__", fn) if not isinstance(fn, types.FunctionType) else fn
        if isinstance(fn, types.FunctionType) and not fn.__closure__ and fn.__code__ is not _template.__code__:
            found[id(fn)] = fn
    return {f"guarded-{i}": fn for i, fn in enumerate(found.values())}


@contextmanager
def refusing(functions: Iterable[object], boundary: types.CodeType) -> Iterator[None]:
    """Inside the block, `functions` refuse calls that come from the learner's code (see the module docstring).

    `boundary` is the code object of the frame that runs the checker: the walk up the stack stops there, so the
    notebook cell that called check_exercise is not mistaken for the learner's answer.
    """
    swapped = guardable(functions)
    if not swapped or hasattr(builtins, _ROUTE_NAME):  # nothing to guard, or an outer check already guards
        yield
        return
    session = _Session(swapped, boundary)
    setattr(builtins, _ROUTE_NAME, session.call)
    try:
        for key, fn in swapped.items():
            consts = tuple(key if c == _KEY else c for c in _template.__code__.co_consts)
            fn.__code__ = _template.__code__.replace(
                co_consts=consts, co_name=fn.__code__.co_name, co_qualname=fn.__code__.co_qualname
            )
        yield
    finally:
        for key, fn in swapped.items():
            fn.__code__ = session.originals[key]
        delattr(builtins, _ROUTE_NAME)


def module_functions(module_name: str) -> list[Callable[..., object]]:
    """The functions defined at the top of module `module_name` (a lesson's checks: its references)."""
    module = sys.modules.get(module_name)
    if module is None:
        return []
    return [v for v in vars(module).values() if isinstance(v, types.FunctionType) and v.__module__ == module_name]


def _code_fingerprint(code: types.CodeType) -> tuple[object, ...]:
    consts = tuple(_code_fingerprint(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts)
    return (code.co_code, code.co_names, code.co_varnames, consts)


def solution_fingerprints(source: str) -> set[tuple[object, ...]]:
    """The fingerprints of every function the solution text defines (its bytecode, names and constants)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            module = compile(source, "<solution>", "exec")
        except SyntaxError:
            return set()
    found: set[tuple[object, ...]] = set()
    pending = [module]
    while pending:
        code = pending.pop()
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                found.add(_code_fingerprint(const))
                pending.append(const)
    return found


def executed_from_text(answer: object) -> bool:
    """Whether `answer`'s code was compiled from a string at run time (exec/eval), not typed in a cell or file."""
    code = getattr(answer, "__code__", None)
    if not isinstance(code, types.CodeType):
        return False
    name = code.co_filename  # a cell typed in IPython is "<ipython-input-...>", in ipykernel a file path
    return name.startswith("<") and name != "<stdin>" and not name.startswith("<ipython-input")


def answer_fingerprint(answer: object) -> tuple[object, ...] | None:
    code = getattr(answer, "__code__", None)
    return _code_fingerprint(code) if isinstance(code, types.CodeType) else None


def upstream_doors(checks_module: str) -> list[Callable[..., object]]:
    """The lesson's doors to verl's own code (the functions of its `upstream` module, which load verl's functions
    from source) and the kit's loaders: during a check the learner's code may not fetch verl's answer through them."""
    package = checks_module.rpartition(".")[0]
    try:
        importlib.import_module(f"{package}.upstream")
    except ImportError:
        return list(_UPSTREAM_LOADERS)
    return [*module_functions(f"{package}.upstream"), *_UPSTREAM_LOADERS]


# the kit's own doors to verl's source, refused to the learner's code during a check like a lesson's
_UPSTREAM_LOADERS = (upstream.load_upstream, upstream.load_from_source, upstream.upstream_file)
