"""Exercises: `check_exercise("N.M", answer)` finds lesson N's checker by id and records a verdict.

Hints climb a ladder that stops short of the answer. Try 1: the message names the mistake. Try 2: it adds
*where to look* (the section, the idea: the checker's `where=`). Try 3: a *question* (`question=`: a smaller
worked case or the question to ask oneself) that leaves the last step to the learner. Try 4 and later: the
*method*, steps in words (`method=`), never the solution's code or formula (tests/course/test_hints.py
compares every hint with its solution cell by shape). `exercise_hint("N.M")` shows the rungs on request; the reference
solution only comes through `show_solution("N.M")`, which says what it is. Each checker also declares
the texts that would give its answer away (`reveals=`); the student edition's test fails if any of them
shows before the exercise. Every check is appended to the attempt log (`kit.attempts`).

Checkers and their reference answers live in each lesson's `checks.py`, registered with
`@checker("N.M")`; a notebook reaches them only through `check_exercise`, so nothing it imports hands
a learner the answer. The lookup is by naming convention at run time (`verlstudy.lessons.lNN_*.checks`),
which keeps `kit` free of imports of any lesson.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import re
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from verlstudy.kit import answer_guard, attempts, i18n, records
from verlstudy.kit.answer_guard import handed_over, unwrap  # re-exported: the checkers and tests read them here

F = TypeVar("F", bound=Callable[..., Any])
EXERCISE_ID = re.compile(r"^(\d+)\.(\d+)$")
VERDICTS = ("correct", "not yet right", "not attempted")
VERDICT_JOINER = ": "  # between a verdict and its message (a full-width colon in Chinese)
LESSONS_PACKAGE = "verlstudy.lessons"


class ExerciseFailure(AssertionError):
    """Raised by an exercise checker with what is wrong with the learner's answer (the nudge).

    `method`, when given, is how to get this case right: it replaces the checker's own method in the
    escalation, so it too is shown only after repeated tries or on request.
    """

    def __init__(self, message: str, *, method: str | None = None) -> None:
        super().__init__(message)
        self.method = method


# The ladder: where to look from this many wrong tries, the question, then the method (the first only names the mistake)
WHERE_AFTER_TRIES = 2
QUESTION_AFTER_TRIES = 3
METHOD_AFTER_TRIES = 4

_CHECKERS: dict[str, Callable[..., object]] = {}
_VERDICTS: dict[str, dict[str, str]] = {}
_METHODS: dict[str, str] = {}
_WHERE: dict[str, str] = {}
_QUESTIONS: dict[str, str] = {}
_TRIES: dict[str, int] = {}
_REVEALS: dict[str, tuple[str, ...]] = {}
_WRONG_TRIES: dict[str, int] = {}
_HELD: set[str] = set()
_LAST_METHOD: dict[str, str] = {}
_SOURCE_READ: set[str] = set()  # exercises whose solution text was taken as a string (solution_source)


def _check_id(exercise_id: object) -> tuple[int, int]:
    match = EXERCISE_ID.match(exercise_id) if isinstance(exercise_id, str) else None
    if match is None and isinstance(exercise_id, str) and EXERCISE_ID.match(exercise_id.strip()):
        raise ValueError(
            i18n.pick(
                "exercise id {got} has a blank around it: write {id}",
                got=repr(exercise_id),
                id=repr(exercise_id.strip()),
            )
        )
    if match is None:
        raise TypeError(
            i18n.pick("exercise id must be a string like '1.2' (lesson.exercise), got {got}", got=repr(exercise_id))
        )
    return int(match.group(1)), int(match.group(2))


def _references(checks_module: str) -> list[Callable[..., object]]:
    """A lesson's reference answers: the functions of its checks module named `_reference*` (the convention)."""
    return [f for f in answer_guard.module_functions(checks_module) if f.__name__.lstrip("_").startswith("reference")]


def _executed_solution(exercise_id: str, answer: object) -> str | None:
    """Why `answer` is the reference solution's text run as code (exec of `solution_source`), or None."""
    fingerprint = answer_guard.answer_fingerprint(unwrap(answer))
    if fingerprint is None or not (answer_guard.executed_from_text(unwrap(answer)) or exercise_id in _SOURCE_READ):
        return None
    try:
        solution = _solution_text(exercise_id)
    except LookupError:
        return None
    if fingerprint in answer_guard.solution_fingerprints(solution):
        return i18n._("that is the reference solution's text run as code, not your answer: write it yourself")
    return None


def _texts(value: object, name: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a list of strings, got {type(value).__name__}")
    texts = tuple(value)
    if not all(isinstance(t, str) and t.strip() for t in texts):
        raise TypeError(f"{name} must hold non-empty strings, got {texts!r}")
    return texts


def checker(
    exercise_id: str,
    library_answers: Iterable[Callable[..., object]] = (),
    *,
    method: str = "",
    where: str = "",
    question: str = "",
    reveals: Iterable[str] = (),
) -> Callable[[F], F]:
    """Register the decorated function as the checker of `exercise_id` (used in a lesson's checks.py).

    Before the checker runs, every callable in the answer is refused if it is the library's own
    code or wraps one of `library_answers` (see `handed_over`), so importing the mechanism is not a
    way to pass. `where` is the second rung of the hint ladder (where to look: a section, an idea);
    `question` the third (a question or a smaller worked case that leaves the last step to the learner);
    `method` the fourth (how to solve it, steps in words, never the solution's code); `reveals` are the
    texts (numbers, formulas, names) that state the answer, which must not appear before the exercise.
    """
    _check_id(exercise_id)
    answers = tuple(library_answers)
    for name, text in (("method", method), ("where", where), ("question", question)):
        if not isinstance(text, str):
            raise TypeError(f"{name} must be a string (a hint for exercise {exercise_id}), got {type(text).__name__}")
    revealing = _texts(reveals, "reveals")

    def register(fn: F) -> F:
        @functools.wraps(fn)
        def guarded(*answer: object, **kwargs: object) -> object:
            parts = (*answer, *kwargs.values())
            for part in parts:
                reason = handed_over(part, answers) or _executed_solution(exercise_id, part)
                if reason is not None:
                    raise ExerciseFailure(reason)
            refused = (
                *answers,
                *_references(fn.__module__),
                *answer_guard.upstream_doors(fn.__module__),
                *_COURSE_DOORS,
            )
            try:
                with answer_guard.refusing(refused, boundary=guarded.__code__):
                    return fn(*answer, **kwargs)
            except answer_guard.LibraryCallRefused as e:
                raise ExerciseFailure(e.reason) from None

        if exercise_id in _CHECKERS:
            previous = _CHECKERS[exercise_id]
            if (previous.__module__, previous.__qualname__) != (fn.__module__, fn.__qualname__):
                raise ValueError(f"exercise {exercise_id} already has a checker: {previous.__qualname__}")
        _CHECKERS[exercise_id] = guarded
        _METHODS[exercise_id] = method.strip()
        _WHERE[exercise_id] = where.strip()
        _QUESTIONS[exercise_id] = question.strip()
        _REVEALS[exercise_id] = revealing
        return fn

    return register


def lesson_checks_module(lesson_number: int) -> str:
    """The dotted name of lesson `lesson_number`'s checks module, found by the `lNN_` folder prefix."""
    package = importlib.import_module(LESSONS_PACKAGE)
    prefix = f"l{lesson_number:02d}_"
    names = [m.name for m in pkgutil.iter_modules(package.__path__) if m.name.startswith(prefix)]
    if not names:
        lessons = sorted(m.name[1:3] for m in pkgutil.iter_modules(package.__path__) if m.name[:1] == "l")
        raise LookupError(
            i18n.pick(
                "there is no lesson {lesson}; the course's lessons are {lessons}",
                lesson=f"{lesson_number:02d}",
                lessons=", ".join(lessons),
            )
        )
    if len(names) != 1:
        raise LookupError(f"expected one lesson package named {prefix}* under {LESSONS_PACKAGE}, found {names}")
    return f"{LESSONS_PACKAGE}.{names[0]}.checks"


def find_checker(exercise_id: str) -> Callable[..., object]:
    """The checker registered for `exercise_id`, importing its lesson's checks module on first use."""
    lesson_number, _ = _check_id(exercise_id)
    if exercise_id not in _CHECKERS:
        importlib.import_module(lesson_checks_module(lesson_number))
    if exercise_id not in _CHECKERS:
        known = ", ".join(sorted(i for i in _CHECKERS if i.startswith(f"{lesson_number}."))) or i18n._("none")
        raise ValueError(
            i18n.pick(
                "no checker for exercise {id}; lesson {lesson} has: {known}",
                id=repr(exercise_id),
                lesson=lesson_number,
                known=known,
            )
        )
    return _CHECKERS[exercise_id]


def registered_exercises(lesson_number: int) -> list[str]:
    """Every exercise id lesson `lesson_number`'s checks module has a checker for, in order."""
    module = lesson_checks_module(lesson_number)
    importlib.import_module(module)
    # only the lesson's own package (checks.py and the modules it imports a checker from): a checker a test
    # registers under the lesson's number is not the course's
    package = module.rpartition(".")[0] + "."
    ids = [i for i, fn in _CHECKERS.items() if _check_id(i)[0] == lesson_number and fn.__module__.startswith(package)]
    return sorted(ids, key=_check_id)


def exercise_method(exercise_id: str) -> str:
    """The method (escalated hint) of `exercise_id`: the checker's own, or the one its last failure gave."""
    find_checker(exercise_id)
    return _LAST_METHOD.get(exercise_id) or _METHODS.get(exercise_id, "")


def exercise_where(exercise_id: str) -> str:
    """Where to look for `exercise_id` (the ladder's second rung, declared with `@checker(..., where=...)`)."""
    find_checker(exercise_id)
    return _WHERE.get(exercise_id, "")


def exercise_question(exercise_id: str) -> str:
    """The question for `exercise_id` (the ladder's third rung, declared with `@checker(..., question=...)`)."""
    find_checker(exercise_id)
    return _QUESTIONS.get(exercise_id, "")


def exercise_reveals(exercise_id: str) -> tuple[str, ...]:
    """The texts that state `exercise_id`'s answer (declared with `@checker(..., reveals=...)`)."""
    find_checker(exercise_id)
    return _REVEALS.get(exercise_id, ())


def exercise_hint(exercise_id: str) -> None:
    """Print where to look, the question and the method for `exercise_id` on request (a stuck learner asks for it).

    A mistyped id prints one line naming the lesson's exercises (a learner's slip, not a traceback)."""
    try:
        where, question, method = (
            exercise_where(exercise_id),
            exercise_question(exercise_id),
            exercise_method(exercise_id),
        )
    except (TypeError, ValueError, LookupError) as e:
        print(f"exercise_hint({exercise_id!r}): {e}")
        return
    # each exercise's texts are English in its checker and translated in its lesson's catalog
    where = i18n._(where) if where else i18n._("reread the section before the exercise")
    print(i18n.pick("exercise {id}, where to look: {where}", id=exercise_id, where=where))
    if question:
        print(i18n.pick("exercise {id}, a question first: {question}", id=exercise_id, question=i18n._(question)))
    if method:
        print(i18n.pick("exercise {id}, method: {method}", id=exercise_id, method=i18n._(method)))
    print(i18n.pick('(the reference solution itself: show_solution("{id}"))', id=exercise_id))


def solution_source(exercise_id: str) -> str:
    """The reference solution cell of `exercise_id`, read from the course's own notebook (full edition).

    Reading it as text marks the exercise: an answer whose code is that text's code is then refused.
    """
    source = _solution_text(exercise_id)
    _SOURCE_READ.add(exercise_id)
    return source


def _solution_text(exercise_id: str) -> str:
    import json

    from verlstudy.kit.resources import notebooks_dir

    lesson_number, _ = _check_id(exercise_id)
    find_checker(exercise_id)
    found = sorted(notebooks_dir().glob(f"{lesson_number:02d}_*.ipynb"))
    if len(found) != 1:
        raise LookupError(f"expected one notebook for lesson {lesson_number:02d} in the course, found {len(found)}")
    cells = json.loads(found[0].read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if "solution" in tags and f"exercise-{exercise_id}" in tags:
            source = cell["source"]
            return "".join(source) if isinstance(source, list) else source
    raise LookupError(f"{found[0].name} has no solution cell for exercise {exercise_id}")


def show_solution(exercise_id: str) -> None:
    """Print the reference solution of `exercise_id`, saying what it is; the attempt log records the look.

    A mistyped id prints one line naming the lesson's exercises (a learner's slip, not a traceback)."""
    try:
        source = _solution_text(exercise_id)
    except (TypeError, ValueError, LookupError) as e:
        print(f"show_solution({exercise_id!r}): {e}")
        return
    print(
        i18n.pick(
            "Reference solution of exercise {id} (from the course's full edition). Reading it ends the", id=exercise_id
        )
    )
    print(
        i18n._("exercise as practice: type it yourself, run the checker, and try the next exercise without it.") + "\n"
    )
    print(source.rstrip())
    tries = _TRIES.get(exercise_id, 0)
    attempts.record_attempt(exercise_id, "solution shown", "", tries, ())


def _offer_help(namespace: dict[str, Any]) -> None:
    """Put `exercise_hint` and `show_solution` where the learner's cells run (the messages name them).

    Only a notebook's or a console's namespace (`__main__`) is touched, and a name the learner bound is kept.
    """
    if namespace.get("__name__") == "__main__":
        namespace.setdefault("exercise_hint", exercise_hint)
        namespace.setdefault("show_solution", show_solution)


def check_exercise(exercise_id: str, *answer: object, **kwargs: object) -> None:
    """Run exercise `exercise_id`'s checker on the learner's answer; print and record one verdict.

    The verdict is "correct", "not attempted" (the answer still raises NotImplementedError, as the
    student edition's stubs do) or "not yet right" (the checker raised ExerciseFailure, whose message
    says what is wrong). Any other exception in the learner's code is reported, not raised, so one
    broken answer does not stop the rest of the notebook. A wrong try prints only what is wrong; from
    the `METHOD_AFTER_TRIES`-th wrong try on the method follows. Verdicts: `exercise_results()`.
    """
    _offer_help(sys._getframe(1).f_globals)
    check = find_checker(exercise_id)
    method, where = _METHODS.get(exercise_id, ""), _WHERE.get(exercise_id, "")
    question = _QUESTIONS.get(exercise_id, "")
    try:
        inspect.signature(check).bind(*answer, **kwargs)
    except TypeError:  # the answer itself is missing (or extra): a slip in the call, not a wrong try
        wanted = ", ".join(inspect.signature(check).parameters)
        print(i18n.pick(
            'check_exercise("{id}", ...) takes your answer as: {wanted}; nothing was checked or recorded',
            id=exercise_id, wanted=wanted,
        ))  # fmt: skip
        return
    try:
        detail = check(*answer, **kwargs)
    except NotImplementedError:
        verdict, message = "not attempted", ""
    except ExerciseFailure as e:
        verdict, message = "not yet right", str(e)
        method = e.method or method
    except Exception as e:  # the learner's code crashed: say where, briefly (the learner's own line, not torch's)
        frames = traceback.extract_tb(e.__traceback__)
        last = next((f for f in reversed(frames) if not answer_guard.is_library_file(f.filename)), frames[-1])
        verdict, message = (
            "not yet right",
            i18n.pick(
                "your code raised {error}: {detail} (in {function}, line {line})",
                error=type(e).__name__,
                detail=e,
                function=last.name,
                line=last.lineno,
            ),
        )
    except SystemExit as e:  # exit() in an answer ends nothing but the try
        verdict, message = "not yet right", i18n.pick("your code called exit({code}): return a value", code=e.code)
    else:
        verdict, message = "correct", str(detail) if detail else ""
    _VERDICTS[exercise_id] = {"verdict": verdict, "message": message}
    if verdict == "correct":  # the ladder starts again: trying a variant after solving it is not being stuck
        _WRONG_TRIES.pop(exercise_id, None)
    print(
        i18n.pick("exercise {id}: {verdict}", id=exercise_id, verdict=i18n._(verdict))
        + (i18n._(VERDICT_JOINER) + message if message else "")
    )
    if verdict == "not yet right":
        tries = _WRONG_TRIES[exercise_id] = _WRONG_TRIES.get(exercise_id, 0) + 1
        _LAST_METHOD[exercise_id] = method
        if where and tries >= WHERE_AFTER_TRIES:
            print(i18n.pick("  where to look (try {tries}): {where}", tries=tries, where=i18n._(where)))
        if question and tries >= QUESTION_AFTER_TRIES:
            print(i18n.pick("  a question (try {tries}): {question}", tries=tries, question=i18n._(question)))
        if method and tries >= METHOD_AFTER_TRIES:
            print(i18n.pick("  method (try {tries}): {method}", tries=tries, method=i18n._(method)))
        elif method or where or question:
            print(
                i18n.pick(
                    '  (try again; stuck? exercise_hint("{id}") shows where to look and the method)', id=exercise_id
                )
            )
    records.emit({"kind": "exercise", "id": exercise_id, "verdict": verdict, "message": message})
    _TRIES[exercise_id] = _TRIES.get(exercise_id, 0) + 1
    if exercise_id not in _HELD:  # a demonstration inside attempts_held is not the learner's attempt
        attempts.record_attempt(exercise_id, verdict, message, _TRIES[exercise_id], answer + tuple(kwargs.values()))


def exercise_results() -> dict[str, str]:
    """Exercise id -> verdict ("correct", "not yet right", "not attempted") in this process."""
    return {i: v["verdict"] for i, v in _VERDICTS.items()}


@contextmanager
def attempts_held(exercise_id: str, *, verdict: bool = False, from_first_try: bool = False) -> Iterator[None]:
    """Checks of `exercise_id` inside the block leave the learner's own attempts as they were.

    Afterwards the count of wrong tries and the last failure's method are restored (and the verdict too,
    when `verdict`), so a demonstration of wrong answers never moves a learner towards the method; nothing
    inside the block is written to the attempt log.
    `from_first_try` makes the block count its own wrong tries from one.
    """
    _check_id(exercise_id)
    stores: tuple[dict[str, Any], ...] = (_WRONG_TRIES, _LAST_METHOD, _TRIES, *((_VERDICTS,) if verdict else ()))
    saved = [(store, store.get(exercise_id)) for store in stores]
    if from_first_try:
        _WRONG_TRIES.pop(exercise_id, None)
    held_before = exercise_id in _HELD
    _HELD.add(exercise_id)
    try:
        yield
    finally:
        if not held_before:
            _HELD.discard(exercise_id)
        for store, value in saved:
            store.pop(exercise_id, None)
            if value is not None:
                store[exercise_id] = value


def reset_exercises() -> None:
    """Forget this process's verdicts and tries (a lesson's first cell calls it through reset_claims)."""
    _VERDICTS.clear()
    _WRONG_TRIES.clear()
    _LAST_METHOD.clear()
    _TRIES.clear()


# The course's doors to an answer: an answer that calls one of them while it is checked is refused.
_COURSE_DOORS = (solution_source, _solution_text, show_solution, find_checker, check_exercise)
