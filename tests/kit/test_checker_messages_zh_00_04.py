"""The kit's generic checker messages and lessons 00-04's own in Chinese (issue 45), each in both languages.

In Chinese the message after the verdict holds Chinese and every number of the English one (values are never
translated); in English it is the English code's, with no Chinese in it. Each exercise's where-to-look, question
and method have a translation in the lesson's catalog.
"""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from tests.answer_sets.heldout import _module, cases
from verlstudy.kit import exercises, i18n
from verlstudy.kit.exercises import ExerciseFailure
from verlstudy.kit.guards import GuardLetThrough, check_guard
from verlstudy.kit.properties import Case, compare_on_inputs

LESSONS: tuple[int, ...] = (0, 1, 2, 3, 4)
# answers whose wrong values are whatever memory held (torch.empty): their numbers differ from run to run
UNINITIALISED = {("3.2", "to_wire: padding not zeroed")}
CJK = re.compile(r"[\u4e00-\u9fff]")
DIGITS = re.compile(r"\d+")


@pytest.fixture(autouse=True)
def _no_attempt_log(monkeypatch):
    monkeypatch.setenv("VERLSTUDY_ATTEMPTS", "0")
    monkeypatch.delenv(i18n.SESSION_ENV, raising=False)


def _in_both(monkeypatch, make) -> tuple[str, str]:
    """What `make()` says in English, then in Chinese."""
    monkeypatch.delenv(i18n.LANG_ENV, raising=False)
    english = make()
    monkeypatch.setenv(i18n.LANG_ENV, "zh_CN")
    return english, make()


def _same_values(english: str, chinese: str) -> None:
    assert not CJK.search(english), english
    assert CJK.search(chinese), chinese
    missing = [d for d in DIGITS.findall(english) if d not in DIGITS.findall(chinese)]
    assert not missing, f"{missing} of {english!r} not in {chinese!r}"


def _failure(check) -> str:
    with pytest.raises(ExerciseFailure) as failed:
        check()
    return str(failed.value)


def _square(x: int) -> int:
    return x * x


@pytest.mark.parametrize(
    ("answer", "expected_english"),
    [
        (lambda x: x + x, "fn(3) returned 6; expected 9 there [three]"),
        (lambda x: float(x * x), "fn(3) returned 9.0; expected 9 there (a float where an int is asked) [three]"),
        (lambda x: [x], "fn(3) returned [3]; expected 9 there (a list where an int is asked) [three]"),
        (lambda x: 1 // 0, "fn(3) raised ZeroDivisionError: integer division or modulo by zero [three]"),
        ("not a function", "the answer should be a function, got str"),
    ],
)
def test_the_kits_property_messages_are_chinese_with_the_same_values(monkeypatch, answer, expected_english):
    def check() -> str:
        return _failure(lambda: compare_on_inputs(answer, _square, edge_cases=[Case((3,), "three")]))

    english, chinese = _in_both(monkeypatch, check)
    assert english == expected_english
    _same_values(english, chinese)


def test_a_nested_difference_reads_whole_in_chinese(monkeypatch):
    def check() -> str:
        return _failure(lambda: compare_on_inputs(lambda: {"a": {1, 5}}, lambda: {"a": {1, 2}}, edge_cases=[()]))

    english, chinese = _in_both(monkeypatch, check)
    assert (
        english == "fn() returned {'a': {1, 5}}; expected {'a': {1, 2}} there (at key 'a': missing 2 and unexpected 5)"
    )
    assert chinese == "fn() 返回了 {'a': {1, 5}}；此处应为 {'a': {1, 2}}（在键 'a' 处：缺少 2，且多出了意外的 5）"


def test_a_right_answers_summary_and_the_guards_verdicts_are_chinese(monkeypatch):
    def summary() -> str:
        return compare_on_inputs(_square, _square, edge_cases=[Case((3,), "three")], max_examples=0)

    english, chinese = _in_both(monkeypatch, summary)
    assert english == "right on 1 named cases and 0 generated inputs"
    _same_values(english, chinese)

    def positive(fn):
        assert fn(2) > 0, "not positive"

    def let_through() -> tuple[str, str]:
        with pytest.raises(GuardLetThrough) as failed:
            check_guard(positive, good=[(lambda x: x, "the identity")], bad=[(lambda x: x * 3, "a tripling")])
        return str(failed.value), failed.value.what

    (english, what), (chinese, what_in_chinese) = _in_both(monkeypatch, let_through)
    assert english == "your guard let a tripling through" and what == what_in_chinese == "a tripling"
    assert CJK.search(chinese)


def test_your_code_raised_is_chinese(monkeypatch):
    def printed() -> str:
        exercises.reset_exercises()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exercises.check_exercise("0.1", lambda seed, n: 1 / 0)
        return out.getvalue().splitlines()[0]

    english, chinese = _in_both(monkeypatch, printed)
    assert "raised ZeroDivisionError" in english
    assert "抛出了 ZeroDivisionError" in chinese


def _message(exercise: str, args: tuple[object, ...]) -> tuple[str, str]:
    """The verdict (recorded in English) and the message printed after it, in the language chosen now."""
    exercises.reset_exercises()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exercises.check_exercise(exercise, *args)
    verdict = exercises.exercise_results()[exercise]
    first = printed.getvalue().splitlines()[0]
    prefix = i18n.pick("exercise {id}: {verdict}", id=exercise, verdict=i18n._(verdict))
    assert first.startswith(prefix), first
    return verdict, first[len(prefix) :].removeprefix(i18n._(exercises.VERDICT_JOINER))


def _wrong_answers() -> list:
    return [c for n in LESSONS for c in cases(range(n, n + 1)) if c[1] == "WRONG"]


@pytest.mark.parametrize(("exercise", "group", "label"), _wrong_answers())
def test_a_held_out_answer_gets_its_message_in_chinese_with_the_english_numbers(monkeypatch, exercise, group, label):
    def fresh() -> tuple[str, str]:  # an answer may keep state between calls (a cached generator): a new copy each
        return _message(exercise, getattr(_module.__wrapped__("ex_" + exercise.replace(".", "_")), group)[label])

    (verdict, english), (verdict_in_chinese, chinese) = _in_both(monkeypatch, fresh)
    assert verdict_in_chinese == verdict
    if english and (exercise, label) in UNINITIALISED:
        assert not CJK.search(english) and CJK.search(chinese), chinese
    elif english:
        _same_values(english, chinese)


@pytest.mark.parametrize("exercise", [e for n in LESSONS for e in exercises.registered_exercises(n)])
def test_where_to_look_the_question_and_the_method_are_translated(exercise):
    catalog = i18n.translations("zh_CN")
    for text in (
        exercises.exercise_where(exercise),
        exercises.exercise_question(exercise),
        exercises.exercise_method(exercise),
    ):
        if text:
            assert CJK.search(catalog.gettext(text)), f"{exercise}: {text}"


def test_a_mistyped_exercise_id_is_told_in_chinese(monkeypatch):
    def printed() -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exercises.exercise_hint("0.9")
            exercises.exercise_hint("12.1")
        return out.getvalue()

    english, chinese = _in_both(monkeypatch, printed)
    # starts with: a test in the same worker may have registered more of lesson 0's ids (0.91 ...)
    first = "exercise_hint('0.9'): no checker for exercise '0.9'; lesson 0 has: 0.1, 0.2"
    assert english.splitlines()[0].startswith(first)
    assert english.splitlines()[1].startswith("exercise_hint('12.1'): there is no lesson 12; the course's lessons are")
    _same_values(english, chinese)
