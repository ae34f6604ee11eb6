"""`verlstudy progress CLASS`: the attempt logs by default (no kernel), the --html page and --watch loop, and
--verify (re-execution in parallel over learners, a per-notebook timeout, a content-hash cache in the build folder)."""

import argparse
import json
import os
import shutil

import nbformat
import pytest

from verlstudy.course import cli, progress_live, progress_verify, registry, runner, student
from verlstudy.course.class_progress import find_learners
from verlstudy.kit import attempts

LESSON_00, LESSON_01 = registry.get_lesson(0), registry.get_lesson(1)
NB_00, NB_01 = f"{LESSON_00.stem}.ipynb", f"{LESSON_01.stem}.ipynb"


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("edition") / "student"
    student.write_student_edition(out, [LESSON_00])
    return out


def _class(tmp_path, edition, names=("ada", "ben")):
    for name in names:
        shutil.copytree(edition, tmp_path / "class" / name)
    return tmp_path / "class"


def _log(folder, exercise, verdict, n=1):
    path = folder / attempts.LOG_FOLDER / attempts.LOG_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    line = {
        "format": 1,
        "exercise": exercise,
        "verdict": verdict,
        "message": "m",
        "try": 1,
        "time": "2025-01-01T00:00:00+00:00",
    }
    with path.open("a") as f:
        f.write((json.dumps(line) + "\n") * n)


def _no_kernel(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("the log mode started a kernel")

    monkeypatch.setattr(runner, "execute_with_papermill", refuse)


# ---------------------------------------------------------------- the log mode


def test_the_default_reads_the_logs_writes_csv_junit_and_html_and_starts_no_kernel(
    tmp_path, edition, monkeypatch, capsys
):
    room = _class(tmp_path, edition)
    _log(room / "ada", "0.1", "correct")
    _no_kernel(monkeypatch)
    out = tmp_path / "out"
    argv = [
        "progress",
        str(room),
        "--csv",
        str(out / "p.csv"),
        "--junit",
        str(out / "p.xml"),
        "--html",
        str(out / "p.html"),
    ]
    assert cli.main(argv) == 0
    shown = capsys.readouterr().out
    assert shown.splitlines()[3].split() == ["ada", "ok", ".", "1/2"]
    assert (out / "p.csv").read_text().splitlines()[1] == f"ada,{LESSON_00.stem},0.1,correct,"
    assert (out / "p.xml").read_text().count("<testcase") == 4
    page = (out / "p.html").read_text()
    assert 'class="correct"' in page and 'http-equiv="refresh"' not in page
    assert cli.main(argv) == 0  # a second run replaces its own files


def test_a_users_own_html_file_is_never_overwritten(tmp_path, edition, capsys):
    room = _class(tmp_path, edition)
    mine = tmp_path / "mine.html"
    mine.write_text("<p>my notes</p>")
    assert cli.main(["progress", str(room), "--html", str(mine)]) == 2
    assert "verlstudy did not write it" in capsys.readouterr().err
    assert mine.read_text() == "<p>my notes</p>"


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--watch", "30"], "--watch regenerates the --html page: name it"),
        (["--html", "p.html", "--watch", "0"], "--watch must be a number of seconds from 1"),
        (["--html", "p.html", "--watch", "nan"], "--watch must be a number of seconds from 1"),
        (["--idle", "-1"], "--idle must be a number of minutes >= 0"),
        (["--idle", "1e308"], "and under 1000000 (about two years"),  # issue 43 G12: the bound is said
        (["--build", "b"], "--build b is where --verify puts the executed copies: add --verify"),  # issue 43 V5
        (["--verify", "--html", "p.html"], "use one or the other"),
    ],
)
def test_bad_options_are_one_line_naming_the_option(tmp_path, edition, extra, message, monkeypatch, capsys):
    room = _class(tmp_path, edition)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["progress", str(room), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_watch_rewrites_the_page_until_ctrl_c(tmp_path, edition, capsys):
    room = _class(tmp_path, edition)
    page = tmp_path / "progress.html"
    args = cli.build_parser().parse_args(["progress", str(room), "--html", str(page), "--watch", "30"])
    seen = []

    def sleep(seconds):
        assert seconds == 30
        seen.append(page.read_text())
        if len(seen) == 1:
            _log(room / "ben", "0.2", "not yet right", 3)  # the room moves on between two updates
        else:
            raise KeyboardInterrupt

    assert progress_live.run(args, sleep=sleep) == 0
    assert '<meta http-equiv="refresh" content="30">' in seen[0]
    assert "stuck" not in seen[0].split("<tbody>")[1].split("</tbody>")[0]
    assert 'class="not-yet-right stuck"' in seen[1]
    assert "stopped watching" in capsys.readouterr().err


# ---------------------------------------------------------------- --verify

CELL = """
import time, pathlib
from verlstudy.kit import records
WAIT
records.emit({"kind": "exercise", "id": "ID", "verdict": "correct", "message": ""})
"""


def _learner_notebook(folder, name, exercise, wait=""):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL.replace("ID", exercise).replace("WAIT", wait))])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / name)


def _executions(log):
    return log.read_text().split() if log.exists() else []


def test_jobs_are_interleaved_over_learners(tmp_path):
    for name in ("ada", "ben"):
        for nb in (NB_00, NB_01):
            _learner_notebook(tmp_path / name, nb, "0.1")
    jobs = progress_verify._interleaved(find_learners([tmp_path]))
    assert [(learner, nb.name) for learner, nb in jobs] == [
        ("ada", NB_00),
        ("ben", NB_00),
        ("ada", NB_01),
        ("ben", NB_01),
    ]


@pytest.mark.parametrize("inside", ["learner", "class"])
def test_the_build_folder_may_never_be_in_a_learners_or_the_class_folder(tmp_path, inside):
    _learner_notebook(tmp_path / "class" / "ada", NB_00, "0.1")
    build = tmp_path / "class" / "ada" / "b" if inside == "learner" else tmp_path / "class" / "b"
    with pytest.raises(ValueError, match="lies inside"):
        progress_verify.verify(find_learners([tmp_path / "class"]), [tmp_path / "class"], build)
    assert not build.exists()


@pytest.mark.slow
def test_verify_reruns_only_what_changed_since_its_last_verification(tmp_path, monkeypatch):
    log = tmp_path / "executions.log"
    monkeypatch.setenv("VERLSTUDY_EXECUTION_LOG", str(log))
    room, build = tmp_path / "class", tmp_path / "build"
    _learner_notebook(room / "ada", NB_00, "0.1")
    _learner_notebook(room / "ben", NB_00, "0.1")
    layout = find_learners([room])
    first = progress_verify.verify(layout, [room], build, workers=2, timeout_s=120)
    assert first.executed == ["ada/" + NB_00, "ben/" + NB_00] and len(_executions(log)) == 2
    assert {(r.learner, r.exercise, r.verdict) for r in first.rows} >= {
        ("ada", "0.1", "correct"),
        ("ben", "0.1", "correct"),
    }
    again = progress_verify.verify(layout, [room], build, workers=2, timeout_s=120)
    assert again.executed == [] and again.cached == first.executed and len(_executions(log)) == 2
    assert again.rows == first.rows
    _learner_notebook(room / "ben", NB_00, "0.2")  # ben changed his notebook
    third = progress_verify.verify(layout, [room], build, workers=2, timeout_s=120)
    assert third.executed == ["ben/" + NB_00] and len(_executions(log)) == 3
    assert ("ben", "0.2", "correct") in {(r.learner, r.exercise, r.verdict) for r in third.rows}


@pytest.mark.slow
def test_learners_notebooks_run_in_parallel(tmp_path):
    """Two learners whose notebooks wait for each other (a barrier): they pass only if they run at the same time."""
    room, meet = tmp_path / "class", tmp_path / "meet"
    meet.mkdir()
    barrier = (
        f"me, other = pathlib.Path({str(meet)!r}) / 'NAME', pathlib.Path({str(meet)!r}) / 'OTHER'\n"
        "me.touch()\n"
        "deadline = time.time() + 120\n"
        "while not other.exists():\n"
        "    assert time.time() < deadline, 'the other learner never ran alongside'\n"
        "    time.sleep(0.2)\n"
    )
    _learner_notebook(room / "ada", NB_00, "0.1", barrier.replace("NAME", "ada").replace("OTHER", "ben"))
    _learner_notebook(room / "ben", NB_00, "0.1", barrier.replace("NAME", "ben").replace("OTHER", "ada"))
    done = progress_verify.verify(find_learners([room]), [room], tmp_path / "build", workers=2, timeout_s=150)
    verdicts = {(r.learner, r.exercise): r.verdict for r in done.rows}
    assert verdicts == {
        ("ada", "0.1"): "correct",
        ("ben", "0.1"): "correct",
        ("ada", "0.2"): "not attempted",
        ("ben", "0.2"): "not attempted",
    }, done.rows


@pytest.mark.slow
def test_an_endless_loop_costs_its_own_row_never_the_table(tmp_path):
    room = tmp_path / "class"
    _learner_notebook(room / "cy", NB_00, "0.1", "while True:\n    pass\n")
    _learner_notebook(room / "dee", NB_00, "0.1")
    done = progress_verify.verify(find_learners([room]), [room], tmp_path / "build", workers=2, timeout_s=15)
    verdicts = {(r.learner, r.exercise): (r.verdict, r.message) for r in done.rows}
    assert verdicts[("dee", "0.1")] == ("correct", ""), verdicts
    assert verdicts[("cy", "-")][0] == "broken notebook" and "ran longer than 15 s" in verdicts[("cy", "-")][1]
    assert ("cy", "0.1") in verdicts  # the row of each exercise is still there


def test_cli_verify_names_what_ran_and_what_the_log_disagrees_with(tmp_path, monkeypatch, capsys):
    room = tmp_path / "class"
    _learner_notebook(room / "ada", NB_00, "0.1")
    _log(room / "ada", "0.1", "correct")
    _log(room / "ada", "0.2", "correct")  # the log claims 0.2; the notebook never checks it

    def fake(layout, given, build, **kw):
        return progress_verify.Verified(
            [
                progress_verify.Row("ada", LESSON_00.stem, "0.1", "correct"),
                progress_verify.Row("ada", LESSON_00.stem, "0.2", "not attempted"),
            ],
            ["ada/" + NB_00],
            [],
        )

    monkeypatch.setattr(progress_verify, "verify", fake)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["progress", str(room), "--verify"]) == 0
    captured = capsys.readouterr()
    assert "1 notebook(s) executed, 0 unchanged" in captured.err
    assert "ada 0.2: the log says correct, re-executed it is not attempted" in captured.err
    assert "| ada | 00_start_here | 0.1 | correct |" in captured.out
    assert sorted(os.listdir(room / "ada")) == sorted([NB_00, ".verlstudy"])  # nothing written beside it


def test_the_parser_takes_what_the_facilitator_guide_runs():
    args = cli.build_parser().parse_args(["progress", "class", "--html", "progress.html", "--watch", "30"])
    assert isinstance(args, argparse.Namespace) and args.watch == 30 and args.idle == 15 and not args.verify
