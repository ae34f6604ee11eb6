"""Shared by every test: a quiet kernel environment, and the fixtures that make each exercise checker a test."""

import importlib
import inspect
import pkgutil
from collections.abc import Callable, Iterable

import pytest

from verlstudy.course.hint_shapes import leaked_fragments
from verlstudy.course.twins import quiet_kernel_env
from verlstudy.kit.exercises import ExerciseFailure, exercise_method, find_checker
from verlstudy.kit.exercises import _solution_text as solution_source  # reads without marking the exercise

# Kernels started by nbval and papermill inherit this process's environment: make it quiet and deterministic.
quiet_kernel_env()


# ---------------------------------------------------------------- checkers are tests: shared test helpers


def mechanism_callables(package: str, exclude: Iterable[str] = ()) -> dict[str, Callable]:
    """Every public function and class defined in `package`'s modules other than checks.py (and kit, common)."""
    excluded = set(exclude)
    found: dict[str, Callable] = {}
    roots = [package, "verlstudy.kit", "verlstudy.common"]
    for root in roots:
        pkg = importlib.import_module(root)
        for info in pkgutil.iter_modules(pkg.__path__):
            if info.name == "checks":
                continue
            module = importlib.import_module(f"{root}.{info.name}")
            for name, obj in vars(module).items():
                qualified = f"{root}.{info.name}.{name}"
                if name.startswith("_") or name in excluded or qualified in excluded:
                    continue
                if (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__ == module.__name__:
                    found[qualified] = obj
    return found


def verdict_of(exercise_id: str, *answer: object) -> str:
    """What check_exercise would say, without printing: 'correct', or the failure's message."""
    try:
        find_checker(exercise_id)(*answer)
    except ExerciseFailure as e:
        return f"not yet right: {e}"
    except Exception as e:  # any crash of a candidate is a fail, which is what we want
        return f"raised {type(e).__name__}: {e}"
    return "correct"


@pytest.fixture
def assert_wrong():
    """assert_wrong("2.1", answer, mentions="grad_fn"): the checker rejects it and its message names the mistake.

    The message is what a learner reads on a first wrong try, so it must not contain the exercise's
    method (that is shown only after repeated tries, or on request).
    """

    def check(exercise_id: str, *answer: object, mentions: str | tuple[str, ...]) -> str:
        verdict = verdict_of(exercise_id, *answer)
        assert verdict.startswith("not yet right: "), f"exercise {exercise_id} accepted a wrong answer: {verdict}"
        words = (mentions,) if isinstance(mentions, str) else mentions
        assert any(w.lower() in verdict.lower() for w in words), f"message should name the mistake ({words}): {verdict}"
        method = exercise_method(exercise_id)
        assert not method or method not in verdict, f"a first wrong try of {exercise_id} shows the method: {verdict}"
        leaked = leaked_fragments(verdict, solution_source(exercise_id))
        assert not leaked, f"exercise {exercise_id}'s message states the solution's code: {leaked}"
        return verdict

    return check


class Wrong:
    """A plausible wrong answer to an exercise, and a word its message must contain (the mistake named)."""

    def __init__(self, answer: object, mentions: str | tuple[str, ...], why: str = "") -> None:
        self.answer = answer if isinstance(answer, tuple) else (answer,)
        self.mentions, self.why = mentions, why

    def __repr__(self) -> str:
        return self.why or getattr(self.answer[0], "__name__", "wrong")


def checker_tests(wrong: dict[str, list[Wrong]], right: dict[str, list[object]]) -> tuple[Callable, Callable]:
    """A lesson's checker tests from its WRONG and RIGHT tables (tests/course/test_checker_tables.py counts them).

    In a lesson's test_checks.py: `test_wrong_answers_fail, test_right_answers_pass = checker_tests(WRONG, RIGHT)`.
    Each wrong answer must fail with a message naming its mistake (and never the method or the solution's
    code); each right answer, written differently from the reference, must pass.
    """
    wrong_cases = [pytest.param(i, w, id=f"{i}-{w!r}") for i, ws in wrong.items() for w in ws]
    right_cases = [
        pytest.param(i, a if isinstance(a, tuple) else (a,), id=f"{i}-{n}")
        for i, rs in right.items()
        for n, a in enumerate(rs)
    ]

    @pytest.mark.parametrize(("exercise_id", "case"), wrong_cases)
    def test_wrong_answers_fail_naming_the_mistake(exercise_id, case, assert_wrong):
        assert_wrong(exercise_id, *case.answer, mentions=case.mentions)

    @pytest.mark.parametrize(("exercise_id", "answer"), right_cases)
    def test_right_answers_written_differently_pass(exercise_id, answer):
        assert verdict_of(exercise_id, *answer) == "correct"

    return test_wrong_answers_fail_naming_the_mistake, test_right_answers_written_differently_pass


@pytest.fixture
def assert_mechanism_does_not_pass():
    """assert_mechanism_does_not_pass("4.1", "verlstudy.lessons.l04_thd", answer=lambda fn: (fn,)).

    Hands every public function and class of the lesson's mechanism modules (and of kit and common)
    to the checker; none may score "correct". `exclude` names callables that must not be called
    blindly (they start processes), with the reason in the test.
    """

    def check(
        exercise_id: str,
        package: str,
        answer: Callable[[Callable], tuple] = lambda fn: (fn,),
        exclude: Iterable[str] = (),
    ) -> int:
        candidates = mechanism_callables(package, exclude)
        passed = [name for name, fn in candidates.items() if verdict_of(exercise_id, *answer(fn)) == "correct"]
        assert not passed, f"exercise {exercise_id} is passed by the library's own {passed}: the answer is importable"
        return len(candidates)

    return check
