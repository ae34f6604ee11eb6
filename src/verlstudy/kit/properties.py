"""Checkers that judge by property: the learner's function against the reference, on many inputs.

A checker states what must hold and the kit tries it: first on the exercise's named edge cases (B=1,
empty containers, the last rank ...), then on inputs drawn from the exercise's own input domain with
hypothesis. Drawing is derandomized, with no example database and a fixed number of examples, so a
checker prints the same verdict on every run (nbval compares it). On a failure hypothesis shrinks the
input, and the learner reads the smallest input that shows the mistake, what they returned there and
what was expected, and, when the exercise recognises it, a sentence naming the mistake. Never the
formula.

The learner's function is handed deep copies of each input; changing its input is itself a mistake.
Equal values in another reasonable container pass (a numpy array for a list, a frozenset for a set,
a tuple for a list) unless the exercise asks for a type (`strict_types=True`); an int asked for must
be an int (not a float that happens to be whole).
"""

from __future__ import annotations

import copy
import math
import numbers
import re
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from verlstudy.kit import check_conditions, i18n
from verlstudy.kit.check_conditions import (
    NoReturn,
    fixed_constant_pool,
    heap_set_aside,
    one_thread,
    storage_in_course_cache,
    time_limit,
)
from verlstudy.kit.exercises import ExerciseFailure
from verlstudy.kit.params import a_kind

__all__ = [
    "Case",
    "PropertyCheck",
    "a_kind",
    "compare_on_inputs",
    "difference",
    "one_thread",
    "warm_up",
]

# Each checker tries this many generated inputs (after its named cases); small enough to stay under 1 s.
DEFAULT_EXAMPLES = 60


@dataclass(frozen=True)
class Case:
    """A named input every run of the checker tries before the generated ones (`name` says why it matters)."""

    args: tuple[Any, ...]
    name: str = ""
    kwargs: Mapping[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------- comparing values


def _is_array(value: object) -> bool:
    return type(value).__module__ == "numpy" and hasattr(value, "tolist")


def _is_tensor(value: object) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "dtype") and hasattr(value, "shape")


def difference(
    got: object, want: object, *, strict_types: bool = False, rtol: float = 1e-6, atol: float = 1e-9
) -> str | None:
    """Why `got` is not `want` (a short phrase), or None when they are equal for a learner's purposes."""
    if _is_tensor(want):
        return _tensor_difference(got, want, rtol=rtol, atol=atol)
    if _is_array(got) and not strict_types:
        got = got.tolist()
    if isinstance(want, bool):
        if not isinstance(got, bool) and type(got).__name__ != "bool_":
            return i18n.pick("{kind} where a bool (True or False) is asked", kind=a_kind(got))
        return None if bool(got) == want else _expected(got, want)
    if isinstance(want, numbers.Integral):
        if isinstance(got, bool) or not isinstance(got, numbers.Integral):
            return i18n.pick("{kind} where an int is asked", kind=a_kind(got))
        return None if int(got) == int(want) else _expected(got, want)
    if isinstance(want, numbers.Real):
        if isinstance(got, bool) or not isinstance(got, numbers.Real):
            return i18n.pick("{kind} where a number is asked", kind=a_kind(got))
        close = math.isclose(float(got), float(want), rel_tol=rtol, abs_tol=atol)
        both_nan = math.isnan(float(got)) and math.isnan(float(want))
        return None if close or both_nan else _expected(got, want)
    if isinstance(want, str) or want is None:
        return None if got == want and type(got) is type(want) else _expected(got, want)
    if isinstance(want, Mapping):
        return _mapping_difference(got, want, strict_types=strict_types, rtol=rtol, atol=atol)
    if isinstance(want, Set):
        return _set_difference(got, want, strict_types=strict_types)
    if isinstance(want, (list, tuple)):
        return _sequence_difference(got, want, strict_types=strict_types, rtol=rtol, atol=atol)
    return None if got == want else _expected(got, want)


def _expected(got: object, want: object) -> str:
    return i18n.pick("{got} where {want} was expected", got=repr(got), want=repr(want))


def _tensor_difference(got: object, want: Any, *, rtol: float, atol: float) -> str | None:
    if not _is_tensor(got):
        return i18n.pick("{kind} where a tensor is asked", kind=a_kind(got))
    if tuple(got.shape) != tuple(want.shape):
        return i18n.pick(
            "a tensor of shape {shape} where shape {want} was expected", shape=tuple(got.shape), want=tuple(want.shape)
        )
    if got.dtype != want.dtype:
        return i18n.pick("a tensor of dtype {dtype} where {want} was expected", dtype=got.dtype, want=want.dtype)
    if want.is_floating_point() or want.is_complex():
        import torch

        same = torch.allclose(got.detach(), want.detach(), rtol=rtol, atol=atol, equal_nan=True)
    else:
        same = bool((got == want).all())
    return None if same else i18n._("a tensor with other values than expected")


def _mapping_difference(got: object, want: Mapping, **options: Any) -> str | None:
    if not isinstance(got, Mapping):
        return i18n.pick("{kind} where a mapping (a dict) is asked", kind=a_kind(got))
    if options["strict_types"] and type(got) is not type(want):
        return _asked(got, want)
    missing, extra = [k for k in want if k not in got], [k for k in got if k not in want]
    if missing and extra:
        return i18n.pick("missing keys {missing} and unexpected keys {extra}", missing=repr(missing), extra=repr(extra))
    if missing:
        return i18n.pick("missing keys {missing}", missing=repr(missing))
    if extra:
        return i18n.pick("unexpected keys {extra}", extra=repr(extra))
    for key in want:
        inner = difference(got[key], want[key], **options)
        if inner is not None:
            return i18n.pick("at key {key}: {inner}", key=repr(key), inner=inner)
    return None


def _asked(got: object, want: object) -> str:
    return i18n.pick("{kind} where {want} is asked", kind=a_kind(got), want=a_kind(want))


def _set_difference(got: object, want: Set, *, strict_types: bool) -> str | None:
    if strict_types and type(got) is not type(want):
        return _asked(got, want)
    if _is_array(got):
        got = got.tolist()
    if isinstance(got, (list, tuple)):
        if len(set(got)) != len(got):
            return i18n._("a collection with repeated items where a set (each item once) is asked")
        got = set(got)
    if not isinstance(got, Set):
        return i18n.pick("{kind} where a set is asked", kind=a_kind(got))
    missing, extra = sorted(map(repr, set(want) - set(got))), sorted(map(repr, set(got) - set(want)))
    if missing and extra:
        return i18n.pick("missing {missing} and unexpected {extra}", missing=", ".join(missing), extra=", ".join(extra))
    if missing:
        return i18n.pick("missing {missing}", missing=", ".join(missing))
    if extra:
        return i18n.pick("unexpected {extra}", extra=", ".join(extra))
    return None


def _sequence_difference(got: object, want: Sequence, **options: Any) -> str | None:
    if _is_tensor(got) and not options["strict_types"]:
        got = got.tolist()
    if not isinstance(got, (list, tuple)):
        return i18n.pick("{kind} where a list is asked", kind=a_kind(got))
    if options["strict_types"] and type(got) is not type(want):
        return _asked(got, want)
    if len(got) != len(want):
        return i18n.pick("{got} items where {want} were expected", got=len(got), want=len(want))
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        inner = difference(g, w, **options)
        if inner is not None:
            return i18n.pick("at position {i}: {inner}", i=i, inner=inner)
    return None


# ---------------------------------------------------------------- calling the learner's function


class _Mismatch(Exception):
    """One input where the learner's function and the reference disagree (what hypothesis shrinks)."""

    def __init__(self, call: str, message: str) -> None:
        super().__init__(message)
        self.call, self.message = call, message


def _clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 5] + " ...)"


def _short(value: object, limit: int = 160) -> str:
    # one line: a tensor's or array's repr spans many, and a message cut off mid-block hides the diagnosis after it
    return _clip(re.sub(r"\n\s*", " ", repr(value)), limit)  # a str's repr has no raw newline: its blanks stay


def describe_call(name: str, args: Sequence[Any], kwargs: Mapping[str, Any] | None = None) -> str:
    """`name(arg, ..., key=value)` with each value's repr, shortened: how a failing input is shown."""
    parts = [_short(a, 80) for a in args] + [f"{k}={_short(v, 80)}" for k, v in (kwargs or {}).items()]
    return f"{name}({', '.join(parts)})"


def _same_input(before: object, after: object) -> bool:
    if callable(getattr(before, "state_dict", None)) and callable(getattr(after, "state_dict", None)):
        before, after = before.state_dict(), after.state_dict()  # a module (a copy is never `==`): its tensors
    elif isinstance(before, (list, tuple)) and isinstance(after, (list, tuple)) and len(before) == len(after):
        return all(_same_input(b, a) for b, a in zip(before, after, strict=True))
    if type(before) is type(after) and type(before).__eq__ is object.__eq__ and hasattr(before, "__dict__"):
        return _same_input(vars(before), vars(after))  # a plain object (a copy is never ==): its attributes
    try:
        return difference(after, before, strict_types=True, rtol=0.0, atol=0.0) is None
    except Exception:  # a value difference() cannot compare: trust ==
        return bool(before == after)


@dataclass
class PropertyCheck:
    """The learner's function `answer` must agree with `reference` on every input tried.

    `mistakes(args, got, want)` names the mistake a wrong result shows ("" or None when it recognises
    none); `judge(args, got, want)` states any further property of a result that equals the
    reference's (the same container object returned, a grad-free leaf not the same object ...), as a
    message or None. `show(args, kwargs)` formats an input for the learner.

    A wrong result reads "returned <got>; expected <want> there" (reprs), with the why in brackets where
    the two values do not say it. For a result that is the checker's summary of a run, `describe(got, want)`
    gives the two texts to show instead, and no why is added (it would describe the summary's bookkeeping).
    """

    answer: Callable[..., Any]
    reference: Callable[..., Any]
    inputs: Any = None  # a hypothesis strategy of argument tuples
    edge_cases: Sequence[Case | tuple[Any, ...]] = ()
    mistakes: Callable[[tuple[Any, ...], Any, Any], str | None] | None = None
    judge: Callable[[tuple[Any, ...], Any, Any], str | None] | None = None
    name: str = "fn"
    strict_types: bool = False
    rtol: float = 1e-6
    atol: float = 1e-9
    max_examples: int = DEFAULT_EXAMPLES
    show: Callable[[tuple[Any, ...], Mapping[str, Any]], str] | None = None
    describe: Callable[[Any, Any], tuple[str, str]] | None = None  # how a wrong result and the expected one read
    may_change: Sequence[int] = ()  # positions of arguments the learner is asked to change (a model to load into)
    tried: int = 0
    hung: _Mismatch | None = field(default=None, init=False)  # the first input the function did not return on

    def _show(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
        return self.show(args, kwargs) if self.show else describe_call(self.name, args, kwargs)

    def _mismatch(self, args: tuple[Any, ...], kwargs: Mapping[str, Any], template: str, **values: Any) -> _Mismatch:
        # the input is described only here, for a mismatch: a tensor's repr costs more than most calls
        call = self._show(args, kwargs)
        return _Mismatch(call, i18n.pick(template, call=call, **values))

    def try_input(self, args: tuple[Any, ...], kwargs: Mapping[str, Any] | None = None) -> None:
        """Call both functions on copies of one input; raise _Mismatch when the learner's is wrong there."""
        kwargs = dict(kwargs or {})
        if self.hung is not None:
            # hypothesis shrinks a failing input by re-running the test: after a hang each re-run would wait the
            # whole time limit again (a minute, silent), so the hung input is reported as it is, unshrunk
            if self._show(args, kwargs) == self.hung.call:
                raise self.hung
            return
        self.tried += 1
        want = self.reference(*copy.deepcopy(args), **copy.deepcopy(kwargs))
        given_args, given_kwargs = copy.deepcopy(args), copy.deepcopy(kwargs)
        try:
            with time_limit(check_conditions.CALL_TIMEOUT_S):
                got = self.answer(*given_args, **given_kwargs)
        except (ExerciseFailure, NotImplementedError):
            raise
        except NoReturn:
            endless = "{call} did not return within {limit} s (an endless loop?)"
            self.hung = self._mismatch(args, kwargs, endless, limit=f"{check_conditions.CALL_TIMEOUT_S:g}")
            raise self.hung from None
        except Exception as e:
            raise self._mismatch(
                args, kwargs, "{call} raised {error}: {detail}", error=type(e).__name__, detail=e
            ) from None
        kept = [i for i in range(len(args)) if i not in self.may_change]
        same = _same_input([args[i] for i in kept], [given_args[i] for i in kept])
        if not (same and _same_input(kwargs, given_kwargs)):
            changed = "{call} changed its input: return a new value and leave the argument as it was"
            raise self._mismatch(args, kwargs, changed)
        wrong = difference(got, want, strict_types=self.strict_types, rtol=self.rtol, atol=self.atol)
        if wrong is None and self.judge is not None:
            wrong = self.judge(given_args, got, want)  # the very objects the learner was handed
            if wrong:
                raise self._mismatch(args, kwargs, "{call}: {wrong}", wrong=wrong)
            return
        if wrong is not None:
            call = self._show(args, kwargs)  # before `mistakes` sees the input
            if self.describe is not None:
                shown_got, shown_want = (_clip(text) for text in self.describe(got, want))
                why = ""
            else:
                shown_got, shown_want = _short(got), _short(want)
                # the why in brackets only where it adds to the two values (not "a str where a list is asked")
                described = isinstance(want, str) or (
                    isinstance(got, str) and isinstance(want, (list, tuple, Mapping, Set))
                )
                if not described and i18n.language() is not None:  # the kinds of why are told apart in English
                    with i18n.held(None):
                        english = difference(got, want, strict_types=self.strict_types, rtol=self.rtol, atol=self.atol)
                else:
                    english = wrong
                plain = (
                    english.endswith("was expected") or described
                )  # e.g. an outcome written out, 'raises ValueError'
                why = "" if plain else wrong
            if isinstance(want, str) and want.startswith("raises ") and i18n.language() is not None:
                shown_want = i18n.pick("raises {error}", error=want.removeprefix("raises "))  # an outcome, in words
            named = self.mistakes(args, got, want) if self.mistakes else None
            values = {"call": call, "got": shown_got, "want": shown_want, "why": why, "mistake": named}
            template = "{call} returned {got}; expected {want} there" + (" ({why})" if why else "")
            raise _Mismatch(call, i18n.pick(template + (": {mistake}" if named else ""), **values))

    def run(self) -> str:
        """Try the named cases, then the generated inputs; return a one-line summary or raise ExerciseFailure."""
        with one_thread():
            return self._run()

    def _run(self) -> str:
        for case in self.edge_cases:
            case = case if isinstance(case, Case) else Case(tuple(case))
            try:
                self.try_input(case.args, case.kwargs)
            except _Mismatch as e:
                if not case.name:
                    raise ExerciseFailure(e.message) from None
                # a case's name is its lesson's text, translated in the lesson's catalog
                raise ExerciseFailure(
                    i18n.pick("{mismatch} [{case}]", mismatch=e.message, case=i18n._(case.name))
                ) from None
        named = self.tried
        if self.inputs is not None and self.max_examples > 0:
            self._run_generated()
        generated = self.tried - named
        if not named:  # "right on 0 named cases" reads as if nothing was checked
            return i18n.pick("right on {generated} generated inputs", generated=generated)
        return i18n.pick(
            "right on {named} named cases and {generated} generated inputs", named=named, generated=generated
        )

    def _run_generated(self) -> None:
        from hypothesis import HealthCheck, Phase, Verbosity, given, settings

        @settings(
            max_examples=self.max_examples,
            derandomize=True,
            database=None,
            deadline=None,
            print_blob=False,
            report_multiple_bugs=False,
            verbosity=Verbosity.quiet,
            phases=(Phase.explicit, Phase.generate, Phase.shrink),
            suppress_health_check=list(HealthCheck),
        )
        @given(self.inputs)
        def agrees(args: tuple[Any, ...]) -> None:
            self.try_input(tuple(args))

        try:
            with heap_set_aside(), fixed_constant_pool(), storage_in_course_cache():
                agrees()
        except _Mismatch as e:  # hypothesis re-raises the shrunk (smallest) failing input's mismatch
            raise ExerciseFailure(e.message) from None


def compare_on_inputs(answer: Callable[..., Any], reference: Callable[..., Any], **options: Any) -> str:
    """Check `answer` against `reference` on named cases and generated inputs (see PropertyCheck)."""
    if not callable(answer):
        raise ExerciseFailure(i18n.pick("the answer should be a function, got {kind}", kind=type(answer).__name__))
    return PropertyCheck(answer=answer, reference=reference, **options).run()


_warmed_up = False


def warm_up() -> None:
    """Pay hypothesis's once-per-process costs now, not in a learner's first check (once; later calls do nothing).

    The first property a process runs imports hypothesis (~0.3 s), walks the heap once (`heap_set_aside`) and
    builds its engine's caches: together most of a second on a loaded 2-core machine, which a learner would
    otherwise wait for on the lesson's first check. `start_lesson` calls this at the lesson's
    set-up. It runs one trivial property under the checkers' own settings (integers, lists and floats drawn and
    compared): no checker's inputs, verdicts or generated examples change, since every checker's drawing is
    derandomized and independent of what ran before.
    """
    global _warmed_up
    if _warmed_up:
        return
    _warmed_up = True
    from hypothesis import strategies as st

    def same(n: int, items: list[int], x: float) -> tuple[int, list[int], float]:
        return n, items, x

    # no text: hypothesis's Unicode table stays unread until a checker draws text (where it is read into the course's
    # cache folder, as `storage_in_course_cache` says), and reading it is quick once it is cached
    inputs = st.tuples(st.integers(0, 9), st.lists(st.integers(0, 9), max_size=3), st.floats())
    PropertyCheck(answer=same, reference=same, inputs=inputs, max_examples=5, name="warm_up").run()
