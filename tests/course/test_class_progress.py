"""Class progress from the attempt logs (course.class_progress): the class as a facilitator lays it out, each
exercise's state from what the checkers recorded, who is stuck, the one-screen matrix, CSV/JUnit and the HTML page."""

import datetime as dt
import json
import re
import shutil

import pytest

from verlstudy.course import class_progress as cp
from verlstudy.course import class_progress_page, progress, registry, student
from verlstudy.kit import attempts

LESSON_00 = registry.get_lesson(0)
LESSON_01 = registry.get_lesson(1)
NB_00 = f"{LESSON_00.stem}.ipynb"
NOW = dt.datetime(2025, 6, 2, 14, 0, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    """One student edition of lessons 00 and 01, copied into each learner's folder (cheaper than writing each)."""
    out = tmp_path_factory.mktemp("edition") / "student"
    student.write_student_edition(out, [LESSON_00, LESSON_01])
    return out


def learner(folder, edition):
    shutil.copytree(edition, folder)
    return folder


def log(folder, *records):
    """Append attempt records (exercise, verdict[, message][, minutes before NOW]) to the learner's log."""
    path = folder / attempts.LOG_FOLDER / attempts.LOG_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        for i, (exercise, verdict, *rest) in enumerate(records):
            message = rest[0] if rest else ""
            ago = rest[1] if len(rest) > 1 else 1
            f.write(
                json.dumps(
                    {
                        "format": 1,
                        "exercise": exercise,
                        "verdict": verdict,
                        "message": message,
                        "try": i + 1,
                        "time": (NOW - dt.timedelta(minutes=ago)).isoformat(timespec="seconds"),
                        "notebook": "",
                        "answer_sha256": f"{i:016x}",
                        "kernel": "k",
                    }
                )
                + "\n"
            )


def states(progress, name):
    learner = next(p for p in progress.learners if p.name == name)
    return {e: (s.state, s.wrong) for e, s in learner.statuses.items()}


# ---------------------------------------------------------------- the class as laid out


def test_two_learners_with_the_same_last_folder_name_stay_two(tmp_path, edition):
    learner(tmp_path / "room1" / "student", edition)
    learner(tmp_path / "room2" / "student", edition)
    layout = cp.find_learners([tmp_path])
    assert list(layout.learners) == ["room1/student", "room2/student"]


def test_the_same_folder_given_twice_or_inside_another_given_is_one_learner(tmp_path, edition):
    learner(tmp_path / "ada", edition)
    assert list(cp.find_learners([tmp_path, tmp_path / "ada", tmp_path / ".." / tmp_path.name]).learners) == ["ada"]
    assert list(cp.find_learners([tmp_path / "ada", tmp_path / "ada"]).learners) == ["ada"]


def test_learners_given_one_by_one_are_named_from_their_common_folder(tmp_path, edition):
    learner(tmp_path / "alice" / "student", edition)
    learner(tmp_path / "bob" / "student", edition)
    layout = cp.find_learners([tmp_path / "alice" / "student", tmp_path / "bob" / "student"])
    assert list(layout.learners) == ["alice/student", "bob/student"]


def test_an_unknown_notebook_is_listed_as_not_a_lesson_and_skipped(tmp_path, edition):
    ada = learner(tmp_path / "ada", edition)
    (ada / "99_my_extra.ipynb").write_text("{}")
    progress = cp.read_class([tmp_path], now=NOW)
    assert progress.layout.not_lessons == ((ada / "99_my_extra.ipynb").resolve(),)
    assert "not a lesson (skipped): ada/99_my_extra.ipynb" in cp.matrix_text(progress)
    assert states(progress, "ada")["0.1"] == ("not attempted", 0)


def test_a_stray_lesson_at_the_top_does_not_turn_the_class_into_one_learner(tmp_path, edition):
    learner(tmp_path / "ada", edition)
    learner(tmp_path / "ben", edition)
    shutil.copy(edition / NB_00, tmp_path / NB_00)
    progress = cp.read_class([tmp_path], now=NOW)
    assert list(progress.layout.learners) == ["ada", "ben"]
    assert f"outside any learner's folder (skipped): {NB_00}" in cp.matrix_text(progress)


def test_the_top_folder_is_one_learner_named_by_its_folder_only_without_learner_folders(tmp_path, edition):
    top = learner(tmp_path / "mine", edition)
    (top / "notes").mkdir()  # a folder without lessons is no learner
    assert list(cp.find_learners([top]).learners) == ["mine"]  # issue 43: was "."


def test_a_folder_without_lessons_or_a_missing_one_is_refused_by_name(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match=f"{re.escape(str(tmp_path))} holds no lesson notebooks"):
        cp.find_learners([tmp_path])
    with pytest.raises(ValueError, match="nowhere does not exist: check the spelling"):  # issue 43 G21
        cp.find_learners([tmp_path / "nowhere"])
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ValueError, match="afile is not a folder"):
        cp.find_learners([tmp_path / "afile"])
    with pytest.raises(ValueError, match="idle minutes must be a number >= 0"):
        cp.read_class([tmp_path], idle_minutes=-1)
    with pytest.raises(ValueError, match="and under 1000000"):  # issue 43 G12: the upper bound is said
        cp.read_class([tmp_path], idle_minutes=1e308)


def test_a_verify_build_folder_in_the_class_is_skipped_not_counted_as_learners(tmp_path, edition):
    # issue 43 DL3: `progress --verify --build` copies inside a class folder were counted as a new learner
    learner(tmp_path / "ada", edition)
    build = learner(tmp_path / "build" / "amy", edition).parent
    (build / cp.VERIFY_CACHE).write_text("{}")
    listed = {f"amy/{nb.name}": None for nb in (build / "amy").glob("*.ipynb")}
    (build / ".verlstudy-written.json").write_text(json.dumps({"files": listed}))
    progress = cp.read_class([tmp_path], now=NOW)
    assert list(progress.layout.learners) == ["ada"]
    assert "executed copies (skipped): build (a verlstudy progress --verify build folder)" in cp.matrix_text(progress)
    # a learner's own notebooks in such a folder (a --build named before it was refused) are never hidden
    learner(build / "bea", edition)
    assert list(cp.find_learners([tmp_path]).learners) == ["ada", "build/bea"]


def test_the_matrix_lines_up_wide_names_and_shows_control_characters_escaped(tmp_path, edition):
    # issue 43 G1: a CJK character takes two columns; an escape sequence in a folder name must not act on a screen
    learner(tmp_path / "ada", edition)
    learner(tmp_path / "chlöe 中 {x}", edition)
    learner(tmp_path / "x\x1b[2Jy", edition)
    text = cp.matrix_text(cp.read_class([tmp_path], now=NOW))
    rows = [line for line in text.splitlines() if line.endswith(("/4", "correct"))]
    assert len(rows) == 4 and "\x1b" not in text and "x\\x1b[2Jy" in text
    ends = {cp.text_width(line[: line.rindex("  ")]) for line in rows}
    assert len(ends) == 1, rows  # every row's last cell ends in the same terminal column


def test_hidden_folders_are_not_learners(tmp_path, edition):
    learner(tmp_path / "ada", edition)
    learner(tmp_path / "ada" / ".ipynb_checkpoints", edition)
    assert list(cp.find_learners([tmp_path]).learners) == ["ada"]


# ---------------------------------------------------------------- each exercise's state


def test_states_come_from_the_log(tmp_path, edition):
    ada = learner(tmp_path / "ada", edition)
    log(
        ada,
        ("0.1", "not yet right", "moves the global stream"),
        ("0.1", "correct"),
        ("0.2", "not yet right", "misses durations"),
        ("0.2", "not yet right", "misses dates"),
        ("1.1", "not attempted"),
        ("1.2", "not yet right", "first micro-batch"),
        ("1.2", "solution shown"),
    )
    progress = cp.read_class([tmp_path], now=NOW)
    assert states(progress, "ada") == {
        "0.1": ("correct", 0),
        "0.2": ("not yet right", 2),
        "1.1": ("not attempted", 0),
        "1.2": ("solution shown", 1),
    }
    row = next(r for r in cp.to_rows(progress) if r.exercise == "0.2")
    assert row.verdict == "not yet right" and row.message == "2 wrong tries; last: misses dates"


def test_a_torn_line_or_another_format_in_the_log_is_skipped(tmp_path, edition):
    ada = learner(tmp_path / "ada", edition)
    log(ada, ("0.1", "correct"))
    with (ada / attempts.LOG_FOLDER / attempts.LOG_FILE).open("a") as f:
        f.write('{"format": 2, "exercise": "0.2", "verdict": "correct"}\n{"format": 1, "exerc')
    assert states(cp.read_class([tmp_path], now=NOW), "ada")["0.2"] == ("not attempted", 0)


@pytest.mark.parametrize(
    "text, why",
    [
        ("{ this is not json", "not valid JSON"),
        ('{"cells": []}', "not a notebook (no nbformat 4 header)"),
        ('{"nbformat": 4, "metadata": {}, "cells": [{"cell_type": "code"}]}', "cell 0 is malformed"),
    ],
)
def test_a_broken_notebook_is_named_and_keeps_the_verdicts_logged_before_it_broke(tmp_path, edition, text, why):
    ada = learner(tmp_path / "ada", edition)
    log(ada, ("0.1", "correct"))
    (ada / NB_00).write_text(text)
    progress = cp.read_class([tmp_path], now=NOW)
    assert states(progress, "ada")["0.1"] == ("correct", 0)
    assert states(progress, "ada")["0.2"] == ("broken", 0)
    assert states(progress, "ada")["1.1"] == ("not attempted", 0)  # the other lesson is fine
    assert why in progress.learners[0].broken[NB_00]
    assert f"broken: ada/{NB_00} is" in cp.matrix_text(progress)
    rows = cp.to_rows(progress)
    assert [r.verdict for r in rows if r.lesson == LESSON_00.stem] == ["broken notebook", "correct", "broken notebook"]


def test_a_lesson_one_learner_lacks_is_no_notebook_for_them(tmp_path, edition):
    learner(tmp_path / "ada", edition)
    ben = learner(tmp_path / "ben", edition)
    (ben / NB_00).unlink()
    progress = cp.read_class([tmp_path], now=NOW)
    assert states(progress, "ben")["0.1"] == ("no notebook", 0)
    assert [e for e in progress.exercises] == ["0.1", "0.2", "1.1", "1.2"]  # only the lessons handed out


def test_the_columns_are_the_lessons_exercises_their_checkers_define():
    from verlstudy.kit.exercises import registered_exercises

    for lesson in registry.LESSONS:
        assert list(cp.exercises_of(lesson)) == registered_exercises(lesson.number)


# ---------------------------------------------------------------- who is stuck


def test_three_wrong_tries_on_an_exercise_not_yet_right_is_stuck(tmp_path, edition):
    ada, ben, cy = (learner(tmp_path / n, edition) for n in ("ada", "ben", "cy"))
    log(ada, *[("0.1", "not yet right", "wrong")] * 3)
    log(ben, *[("0.1", "not yet right", "wrong")] * 2)
    log(cy, *[("0.1", "not yet right", "wrong")] * 3, ("0.1", "correct"))
    stuck = cp.read_class([tmp_path], now=NOW).stuck()
    assert stuck == [("ada", '3 wrong tries on 0.1 (last: "wrong")')]
    log(ada, *[("1.2", "not yet right", "again")] * 4)  # one line per learner, however many exercises
    assert cp.read_class([tmp_path], now=NOW).stuck() == [("ada", "3 wrong tries on 0.1; 4 wrong tries on 1.2")]


def test_no_attempt_for_the_idle_minutes_is_stuck_and_zero_turns_it_off(tmp_path, edition):
    ada, ben, _ = (learner(tmp_path / n, edition) for n in ("ada", "ben", "cy"))
    log(ada, ("0.1", "correct", "", 20))
    log(ben, ("0.1", "correct", "", 5))
    assert cp.read_class([tmp_path], idle_minutes=15, now=NOW).stuck() == [
        ("ada", "no attempt for 20 min"),
        ("cy", "no attempt logged yet"),
    ]
    assert cp.read_class([tmp_path], idle_minutes=0, now=NOW).stuck() == []


# ---------------------------------------------------------------- the matrix, CSV, JUnit, HTML


def test_the_matrix_is_one_screen_with_a_symbol_per_state(tmp_path, edition):
    ada = learner(tmp_path / "ada", edition)
    learner(tmp_path / "ben", edition)
    log(ada, ("0.1", "correct"), *[("0.2", "not yet right", "x")] * 3, ("1.2", "solution shown"))
    text = cp.matrix_text(cp.read_class([tmp_path], now=NOW))
    lines = text.splitlines()
    assert lines[2].split() == ["learner", "0.1", "0.2", "1.1", "1.2", "correct"]
    assert lines[3].split() == ["ada", "ok", "3x", ".", "sol", "1/4"]
    assert lines[4].split() == ["ben", ".", ".", ".", ".", "0/4"]
    assert "  ada: 3 wrong tries on 0.2" in text


def test_csv_and_junit_reuse_the_progress_writers(tmp_path, edition):
    ada = learner(tmp_path / "ada", edition)
    log(ada, ("0.1", "correct"), ("0.2", "not yet right", "no"))
    rows = cp.to_rows(cp.read_class([tmp_path], now=NOW))
    assert progress.to_csv(rows).splitlines()[:3] == [
        "learner,lesson,exercise,verdict,message",
        f"ada,{LESSON_00.stem},0.1,correct,",
        f"ada,{LESSON_00.stem},0.2,not yet right,1 wrong tries; last: no",
    ]
    junit = progress.to_junit(rows)
    assert junit.count("<failure") == 1 and junit.count("<skipped") == 2


def test_the_page_is_self_contained_escaped_and_refreshes_only_when_watched(tmp_path, edition):
    ada = learner(tmp_path / "<b>ada", edition)
    log(ada, *[("0.1", "not yet right", "<script>")] * 3)
    progress = cp.read_class([tmp_path], now=NOW)
    page = class_progress_page.page_html(progress)
    assert "<script" not in page and "http://" not in page and "https://" not in page and " src=" not in page
    assert "&lt;b&gt;ada" in page and 'class="not-yet-right stuck"' in page
    assert 'http-equiv="refresh"' not in page
    assert '<meta http-equiv="refresh" content="30">' in class_progress_page.page_html(progress, 30)
    (tmp_path / "p.html").write_text(page)
    assert class_progress_page.is_progress_page(tmp_path / "p.html")
    assert not class_progress_page.is_progress_page(tmp_path / "ada" / NB_00)


def test_reading_starts_no_kernel_and_writes_nothing(tmp_path, edition, monkeypatch):
    from verlstudy.course import runner

    learner(tmp_path / "ada", edition)
    monkeypatch.setattr(runner, "execute_with_papermill", lambda *a, **k: pytest.fail("executed a notebook"))
    before = sorted((p, p.stat().st_mtime_ns) for p in tmp_path.rglob("*"))
    cp.matrix_text(cp.read_class([tmp_path], now=NOW))
    assert sorted((p, p.stat().st_mtime_ns) for p in tmp_path.rglob("*")) == before


# ---------------------------------------------------------------- a class of 30, some logs written by real runs

LESSON_02 = registry.get_lesson(2)
NB_02 = f"{LESSON_02.stem}.ipynb"


def _answer_2_1_wrongly(path):
    """Lesson 02's student edition where 2.1 returns the tree untouched (runs, and is wrong)."""
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if 'raise NotImplementedError("exercise 2.1")' in source:
            cell["source"] = source.replace('raise NotImplementedError("exercise 2.1")', "return tree")
    path.write_text(json.dumps(nb))


@pytest.fixture(scope="module")
def class_of_30(tmp_path_factory):
    """30 learners' folders holding the whole student edition: three ran lesson 02 for real (their kernels wrote
    the logs), the others' logs are synthesized, one notebook is broken and one folder holds an extra notebook."""
    from verlstudy.course.runner import execute_with_papermill

    edition = tmp_path_factory.mktemp("edition") / "student"
    student.write_student_edition(edition)
    room = tmp_path_factory.mktemp("class")
    names = [f"room{1 + i // 15}/learner{i:02d}" for i in range(30)]
    for name in names:
        shutil.copytree(edition, room / name)
    shutil.copy(LESSON_02.notebook, room / names[1] / NB_02)  # the full edition: every answer in place
    _answer_2_1_wrongly(room / names[2] / NB_02)
    build = tmp_path_factory.mktemp("executed")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(attempts.SWITCH_ENV, "1")
        mp.delenv(attempts.DIR_ENV, raising=False)  # the log goes where the kernel runs: the learner's folder
        for i in range(3):
            status, error, _ = execute_with_papermill(
                room / names[i] / NB_02, build / str(i) / NB_02, {}, room / names[i], 300
            )
            assert status == "passed", f"{names[i]}: {error}"
    expected = {
        names[0]: {"2.1": ("not attempted", 0), "2.2": ("not attempted", 0)},
        names[1]: {"2.1": ("correct", 0), "2.2": ("correct", 0)},
        names[2]: {"2.1": ("not yet right", 1), "2.2": ("not attempted", 0)},
    }
    exercises = [e for lesson in registry.LESSONS for e in cp.exercises_of(lesson)]
    for i, name in enumerate(names[3:], start=3):
        records, mine = [], {}
        for j, exercise in enumerate(exercises):
            wrong, solved = (i + j) % 5, (i * j) % 3 == 0
            records += [(exercise, "not yet right", f"mistake {k}") for k in range(wrong)]
            if solved:
                records.append((exercise, "correct"))
            mine[exercise] = ("correct", 0) if solved else ("not yet right", wrong) if wrong else ("not attempted", 0)
        log(room / name, *records)
        expected[name] = mine
    (room / names[4] / NB_00).write_text("{ not json")
    expected[names[4]].update(
        {e: ("broken", 0) for e in ("0.1", "0.2") if expected[names[4]][e] == ("not attempted", 0)}
    )
    (room / names[5] / "99_my_extra.ipynb").write_text("{}")
    return room, names, expected


@pytest.mark.slow
def test_a_class_of_30_is_read_in_under_5_s_with_the_right_verdicts(class_of_30):
    import time

    room, names, expected = class_of_30
    wall, cpu = time.perf_counter(), time.process_time()
    progress = cp.read_class([room], idle_minutes=15)
    text = cp.matrix_text(progress)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    # CPU time, not wall time: a loaded machine slows the wall clock, never the work done
    assert cpu < 5, f"reading 30 learners took {cpu:.1f} s of CPU ({wall:.1f} s wall)"
    assert [p.name for p in progress.learners] == sorted(names)
    for name, mine in expected.items():
        got = states(progress, name)
        assert {e: got[e] for e in mine} == mine, name
    assert f"broken: {names[4]}/{NB_00} is not valid JSON" in text
    assert f"not a lesson (skipped): {names[5]}/99_my_extra.ipynb" in text
    assert len(text.splitlines()) < 30 + 40  # one screen: a line per learner, the legend and the notes


def test_a_headless_browser_shows_the_page_as_a_table(tmp_path, edition):
    """Skipped without a browser (as tests/course/test_site_browser.py): what a projector would show."""
    import subprocess

    browser = next(
        (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome", "chrome") if shutil.which(n)), None
    )
    if browser is None:
        pytest.skip("no headless browser on this machine: the progress page not checked in one")
    ada = learner(tmp_path / "class" / "ada", edition)
    learner(tmp_path / "class" / "ben", edition)
    log(ada, ("0.1", "correct"), *[("0.2", "not yet right", "x")] * 3)
    page = tmp_path / "progress.html"
    page.write_text(class_progress_page.page_html(cp.read_class([tmp_path / "class"], now=NOW), 30))
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()]
    dom = subprocess.run(command, capture_output=True, text=True, timeout=120).stdout
    rows = re.findall(r"<tr>(.*?)</tr>", dom, re.DOTALL)
    assert len(rows) == 3, dom[-2000:]  # the header and a row per learner
    assert re.findall(r'<td class="([^"]+)"', rows[1])[:3] == ["learner", "correct", "not-yet-right stuck"]


def test_a_learner_with_logged_work_stays_a_learner_with_a_copy_inside_her_folder(tmp_path, edition):
    # issue 43 G27: `init` into ada's folder added ada/student; her notebooks became strays and her "ok" vanished
    ada = learner(tmp_path / "ada", edition)
    log(ada, ("0.1", "correct"))
    learner(ada / "student", edition)
    (ada / "notebooks").mkdir()
    progress = cp.read_class([tmp_path], now=NOW)
    assert list(progress.layout.learners) == ["ada", "ada/student"] and not progress.layout.strays
    assert states(progress, "ada")["0.1"] == ("correct", 0)
