"""Class progress reads the attempt log as a journal (issue 43 item 1): a look at the solution stays visible after
a later pass in every view, and what a damaged log could not give is named, not dropped."""

import datetime as dt
import shutil

import pytest

from tests.course.test_class_progress import NOW, log
from verlstudy.course import class_progress as cp
from verlstudy.course import class_progress_page, progress, registry, student
from verlstudy.kit import attempts

LESSON_00 = registry.get_lesson(0)


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("edition") / "student"
    student.write_student_edition(out, [LESSON_00])
    return out


def test_a_solution_looked_at_stays_visible_once_the_learner_passes(tmp_path, edition):
    ada = shutil.copytree(edition, tmp_path / "ada")
    shutil.copytree(edition, tmp_path / "ben")
    log(ada, ("0.1", "solution shown"), ("0.1", "correct"), ("0.2", "correct"), ("0.2", "solution shown"))
    state = cp.read_class([tmp_path], now=NOW)
    text = cp.matrix_text(state)
    lines = text.splitlines()
    assert lines[3].split() == ["ada", cp.AFTER_SOLUTION, "ok", "2/2"]  # a look after passing: passed on their own
    assert lines[2].index("0.1") + 3 == lines[3].index(cp.AFTER_SOLUTION) + 4  # columns stay aligned
    assert f"{cp.AFTER_SOLUTION} correct after the solution was shown" in text
    rows = cp.to_rows(state)
    assert ("0.1", "correct", cp.SOLUTION_FIRST) in {(r.exercise, r.verdict, r.message) for r in rows}
    assert f"0.1,correct,{cp.SOLUTION_FIRST}" in progress.to_csv(rows)
    page = class_progress_page.page_html(state)
    assert f">{cp.AFTER_SOLUTION}<" in page and f"0.1: correct: {cp.SOLUTION_FIRST}" in page


def test_a_damaged_log_is_named_in_the_matrix_and_the_rows(tmp_path, edition):
    ada = shutil.copytree(edition, tmp_path / "ada")
    log(ada, ("0.1", "correct"))
    path = ada / attempts.LOG_FOLDER / attempts.LOG_FILE
    with path.open("ab") as f:
        f.write(b'{"format": 2, "exercise": "0.2", "verdict": "correct"}\n' + b"\0" * 4096 + b"\n" + b'{"exer\n')
    state = cp.read_class([tmp_path], now=NOW)
    text = cp.matrix_text(state)
    assert "attempt log ada/.verlstudy/attempts.jsonl: 1 torn line skipped (line 4)" in text
    assert "1 record of format 2 skipped (line 2)" in text and "4096 NUL bytes skipped (line 3)" in text
    damaged = [r for r in cp.to_rows(state) if r.verdict == "damaged attempt log"]
    assert len(damaged) == 3 and all(r.learner == "ada" for r in damaged)
    assert progress.to_junit(cp.to_rows(state)).count("damaged attempt log") == 3


def test_a_full_disk_no_longer_hides_a_correct_answer(tmp_path, edition, monkeypatch):
    # issue 43's worst case end to end: a torn tail, then a correct check written by the kit, then progress
    ada = shutil.copytree(edition, tmp_path / "ada")
    path = ada / attempts.LOG_FOLDER / attempts.LOG_FILE
    path.parent.mkdir()
    path.write_bytes(b'{"answer_sha256": "0123", "exercise": "0.1", "format": 1, "kernel": "k", "mess')
    monkeypatch.setenv(attempts.SWITCH_ENV, "1")
    monkeypatch.setenv(attempts.DIR_ENV, str(path.parent))
    attempts.record_attempt("0.1", "correct", "", 2, ())
    learner = cp.read_class([tmp_path], now=dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).learners[0]
    assert learner.statuses["0.1"].state == "correct" and len(learner.log_problems) == 1


def test_a_record_from_the_future_or_of_another_course_is_named_and_hides_no_idle_learner(tmp_path, edition):
    # issue 43 G6 and G7: such records were read in silence, and a time in 2099 kept a learner "active" for ever
    ada = shutil.copytree(edition, tmp_path / "ada")
    log(ada, ("0.1", "correct", "", 60), ("99.9", "correct"), ("0.2", "not yet right", "x", -(10**6)))
    found = cp.read_class([tmp_path], idle_minutes=15, now=NOW)
    learner = found.learners[0]
    assert learner.last_attempt == NOW - dt.timedelta(minutes=60)
    assert found.stuck() == [("ada", "no attempt for 60 min")]
    assert learner.statuses["0.2"].state == "not yet right"  # a wrong clock loses no verdict
    text = cp.matrix_text(found)
    assert "1 record not as a check writes it, skipped (line 2: exercise '99.9' (not in this course))" in text
    assert "1 record dated in the future (line 3: " in text
