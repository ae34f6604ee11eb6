"""Lessons 05-09's checker messages in Chinese (issue 45): each held-out answer checked in both languages.

In Chinese the message after the verdict holds Chinese and every number of the English one (values are never
translated); in English it is the English code's, with no Chinese in it. Each exercise's where-to-look, question
and method have a translation in the lesson's catalog.
"""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from tests.answer_sets.heldout import FIRST_SET, _module, cases
from verlstudy.kit import exercises, i18n

LESSONS = range(5, 10)
SETS = (FIRST_SET, "heldout_2026_12b")  # each tester's wrong answers
CJK = re.compile(r"[\u4e00-\u9fff]")
DIGITS = re.compile(r"\d+")
ADDRESS = re.compile(r" at 0x[0-9a-f]+")  # an object's repr: its address differs from run to run


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


@pytest.fixture(autouse=True)
def _no_attempt_log(monkeypatch):
    monkeypatch.setenv("VERLSTUDY_ATTEMPTS", "0")
    monkeypatch.delenv(i18n.SESSION_ENV, raising=False)


WRONG = [(answer_set, *case) for answer_set in SETS for case in cases(LESSONS, answer_set) if case[1] == "WRONG"]


@pytest.mark.parametrize(("answer_set", "exercise", "group", "label"), WRONG)
def test_a_held_out_answer_gets_its_message_in_chinese_with_the_english_numbers(
    monkeypatch, answer_set, exercise, group, label
):
    args = getattr(_module("ex_" + exercise.replace(".", "_"), answer_set), group)[label]
    monkeypatch.delenv(i18n.LANG_ENV, raising=False)
    verdict, english = _message(exercise, args)
    monkeypatch.setenv(i18n.LANG_ENV, "zh_CN")
    verdict_in_chinese, chinese = _message(exercise, args)
    assert verdict_in_chinese == verdict
    assert not CJK.search(english), english
    if english:
        assert CJK.search(chinese), f"{exercise} '{label}': {chinese}"
        numbers = DIGITS.findall(ADDRESS.sub("", chinese))
        missing = [d for d in DIGITS.findall(ADDRESS.sub("", english)) if d not in numbers]
        assert not missing, f"{exercise} '{label}': {missing} of {english!r} not in {chinese!r}"


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


def test_8_2_says_what_the_command_installs_in_either_language(monkeypatch):
    answer = (lambda manifest: "pip install torchvision=0.25.0",)  # pip refuses '=': nothing is installed
    monkeypatch.delenv(i18n.LANG_ENV, raising=False)
    assert _message("8.2", answer)[1].startswith("what pip_line(StackManifest(")
    monkeypatch.setenv(i18n.LANG_ENV, "zh_CN")
    chinese = _message("8.2", answer)[1]
    assert chinese.startswith("pip_line(StackManifest(") and ") 安装的是：无（shell 或 pip 拒绝这一行）；" in chinese
