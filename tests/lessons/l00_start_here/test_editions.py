"""Lesson 00's student-edition reader and verdict demo: three verdicts, nothing printed, bad input refused."""

import pytest
import torch

from verlstudy.kit import exercises, i18n
from verlstudy.kit.exercises import exercise_results, reset_exercises
from verlstudy.kit.resources import notebooks_dir
from verlstudy.lessons.l00_start_here import editions
from verlstudy.lessons.l00_start_here.arc import read_cells
from verlstudy.lessons.l00_start_here.editions import demo_verdict, exercise_cells


def test_lesson_00_pairs_each_solution_cell_with_its_checker():
    rows = exercise_cells(read_cells(notebooks_dir() / "00_start_here.ipynb"))
    assert [r["exercise"] for r in rows] == ["0.1", "0.2"]
    assert all(r["next cell"] == ["checker", f"exercise-{r['exercise']}"] for r in rows)


def test_exercise_cells_reports_a_missing_id_and_a_missing_checker():
    cells = [{"cell_type": "code", "metadata": {"tags": ["solution"]}, "source": "def f(): pass"}]
    assert exercise_cells(cells) == [{"exercise": None, "tags": ["solution"], "next cell": []}]
    with pytest.raises(TypeError, match="cells must be a list"):
        exercise_cells("cells")


def stub(seed, n):
    raise NotImplementedError("exercise 0.1")


def good(seed, n):
    return torch.randn(n, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize(
    ("answer", "verdict", "says"),
    [
        (stub, "not attempted", ""),
        (lambda seed, n: torch.randn(n), "not yet right", "global stream"),
        (good, "correct", "named cases"),
    ],
)
def test_demo_verdict_gives_each_verdict_and_prints_nothing(capsys, answer, verdict, says):
    reset_exercises()
    got, message = demo_verdict("0.1", answer)
    assert got == verdict and says in message and not message.startswith(":")
    assert capsys.readouterr().out == ""  # the checker's line is held back
    assert exercise_results() == {"0.1": verdict}  # read back where a learner's verdict is


def test_demo_verdict_refuses_a_non_string_id():
    with pytest.raises(TypeError, match="exercise_id must be a string"):
        demo_verdict(0.1, stub)


@pytest.mark.parametrize("lang", [None, "zh_CN"])
def test_the_ladders_rungs_are_found_in_every_edition(lang, monkeypatch):
    monkeypatch.setenv("VERLSTUDY_ATTEMPTS", "0")
    if lang:
        monkeypatch.setenv(i18n.LANG_ENV, lang)
    else:
        monkeypatch.delenv(i18n.LANG_ENV, raising=False)
    tries = editions.demo_tries("0.1", lambda seed, n: torch.randn(n), tries=exercises.METHOD_AFTER_TRIES)
    first = {}  # rung -> the try that first prints it
    for number, lines in enumerate(tries, start=1):
        for line in lines:
            first.setdefault(editions.rung_of(line), number)
    first.pop(None)
    assert first == {"where to look": exercises.WHERE_AFTER_TRIES, "a question": exercises.QUESTION_AFTER_TRIES,
                     "method": exercises.METHOD_AFTER_TRIES}  # fmt: skip
    assert any("该看哪里" in line for lines in tries for line in lines) == bool(lang)  # the learner's language


def test_a_line_that_is_no_rung_is_none_and_a_non_line_is_refused():
    assert editions.rung_of("exercise 0.1: not yet right") is None
    with pytest.raises(TypeError, match="line must be a printed line"):
        editions.rung_of(None)


@pytest.mark.parametrize("value", [None, 7, "x", [1]])
def test_exercise_cells_names_a_cell_of_the_wrong_type(value):
    # issue 43 item 8: exercise_cells([1]) ended in "'int' object has no attribute 'get'"
    with pytest.raises(TypeError, match=r"argument cells\[0\] must be a notebook cell \(a dict\)"):
        exercise_cells([value])
