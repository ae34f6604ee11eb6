"""The record of a course run (course.run_record) and `verlstudy run --if-stale`: `make site` after `make course`
executes nothing; a stale or partial run is named and run again; `make test` keeps executing unconditionally."""

import json
import re

import pytest

from verlstudy.course import cli, registry, run_record
from verlstudy.course.runner import RunResult
from verlstudy.kit import resources

L00, L08 = registry.get_lesson(0), registry.get_lesson(8)
PASSED_FLOOR = RunResult(None, "passed", 1.0)


def _ran(out, *results, floor=PASSED_FLOOR, params=None, interrupted=False):
    out.mkdir(parents=True, exist_ok=True)
    for result in results:
        (out / result.lesson.notebook.name).write_text(f"executed {result.lesson.code}")
    run_record.write(out, list(results), floor, params or {}, with_floor=True, interrupted=interrupted)


def _stale(out, lessons=(L00,), params=None, reports=()):
    return run_record.stale_reasons(out, list(lessons), params or {}, with_floor=True, reports=reports)


def test_no_record_is_stale_and_a_complete_passed_run_is_fresh(tmp_path):
    assert _stale(tmp_path) == [f"no record of an earlier run in {tmp_path}"]
    _ran(tmp_path, RunResult(L00, "passed", 1.0))
    assert _stale(tmp_path) == []


def test_a_run_still_running_or_killed_or_interrupted_is_partial(tmp_path):
    run_record.mark_running(tmp_path)
    assert "did not finish (running): it was partial" in _stale(tmp_path)[0]
    _ran(tmp_path, RunResult(L00, "passed", 1.0), interrupted=True)
    assert "did not finish (interrupted)" in _stale(tmp_path)[0]


def test_a_lesson_missing_from_the_run_or_failed_is_named(tmp_path):
    _ran(tmp_path, RunResult(L00, "failed", 1.0))
    assert _stale(tmp_path, (L00, L08)) == [
        "lesson 00 failed in the last run",
        "lesson 08 was not in the last run (a partial run)",
    ]


def test_changed_sources_environment_parameters_outputs_or_a_missing_report_are_named(tmp_path, monkeypatch):
    _ran(tmp_path, RunResult(L00, "passed", 1.0), params={"device": "cpu"})
    assert _stale(tmp_path, params={"device": "cpu"}) == []
    assert "other parameters" in _stale(tmp_path, params={"device": "cuda"})[0]
    assert _stale(tmp_path, params={"device": "cpu"}, reports=[tmp_path / "report.md"]) == [
        f"{tmp_path / 'report.md'} is missing"
    ]
    (tmp_path / L00.notebook.name).write_text("edited by hand")
    assert _stale(tmp_path, params={"device": "cpu"}) == [
        f"{tmp_path / L00.notebook.name} is missing or changed since the last run"
    ]
    monkeypatch.setattr(run_record, "course_sources_hash", lambda: "another")
    assert "the course's sources" in _stale(tmp_path, params={"device": "cpu"})[0]
    monkeypatch.setattr(run_record, "_environment", lambda: {"python": "3.99", "torch": "9"})
    assert any("the environment changed" in r for r in _stale(tmp_path, params={"device": "cpu"}))


def test_a_changed_lesson_notebook_is_named(tmp_path, monkeypatch):
    _ran(tmp_path, RunResult(L00, "passed", 1.0))
    real = run_record.file_hash
    monkeypatch.setattr(run_record, "file_hash", lambda p: "edited" if p == L00.notebook else real(p))
    assert _stale(tmp_path) == [f"lesson 00's notebook {L00.notebook.name} changed since the last run"]


def test_a_failed_floor_makes_the_run_stale(tmp_path):
    _ran(tmp_path, RunResult(L00, "passed", 1.0), floor=RunResult(None, "failed", 1.0))
    assert _stale(tmp_path) == ["the floor notebook failed in the last run"]


def test_make_course_and_site_skip_a_fresh_run_and_make_test_always_runs():
    makefile = (resources.checkout_root() or pytest.skip("no checkout")) / "Makefile"
    text = makefile.read_text()

    def recipe(target):
        return re.search(rf"^{target}:.*\n((?:\t.*\n)+)", text, re.MULTILINE).group(1)

    assert "verlstudy run --if-stale" in recipe("course")
    assert re.search(r"^site: course$", text, re.MULTILINE)  # the site renders the run that course left
    assert "verlstudy run" not in recipe("site")
    runs = [line for line in recipe("test").splitlines() if "verlstudy run" in line]
    assert runs and not any("--if-stale" in line for line in runs), "make test must execute the course every time"


@pytest.mark.slow
def test_a_second_run_if_stale_and_the_site_execute_nothing(tmp_path, monkeypatch, capsys):
    log = tmp_path / "executions.log"
    monkeypatch.setenv("VERLSTUDY_EXECUTION_LOG", str(log))
    out = tmp_path / "executed"
    argv = ["run", "08", "--if-stale", "--out", str(out), "--results", str(tmp_path / "run.json")]
    assert cli.main(argv) == 0
    assert sorted(log.read_text().split()) == sorted([L08.stem, "other:floor_input"])  # the two run side by side
    record = json.loads((out / run_record.RECORD).read_text())
    assert record["state"] == "complete" and record["lessons"]["08"]["status"] == "passed"
    capsys.readouterr()
    assert cli.main(argv) == 0
    assert "is fresh (same notebooks, sources and parameters); nothing executed" in capsys.readouterr().out
    assert cli.main(["site", "08", "--from", str(out), "--out", str(tmp_path / "site")]) == 0
    assert len(log.read_text().split()) == 2, "the second run or the site executed a notebook"
    (tmp_path / "run.json").unlink()  # a report gone: named and run again
    assert cli.main(argv) == 0
    assert f"running again: {tmp_path / 'run.json'} is missing" in capsys.readouterr().err
    assert len(log.read_text().split()) == 4


def test_a_fresh_run_folder_copied_elsewhere_reports_the_folder_it_is_now(tmp_path, monkeypatch, capsys):
    # D5: `cp -r s5 d5; run --out d5 --if-stale` was fresh but its report said the notebooks were in s5
    import shutil

    from verlstudy.course import files, reports

    first, copy = tmp_path / "s5", tmp_path / "d5"
    result = RunResult(L00, "passed", 1.0)
    _ran(first, result)
    files.Manifest(first).record([first / L00.notebook.name])  # as the run lists what it executed
    files.write_file_owned(first / "report.md", reports.report_markdown([result], PASSED_FLOOR, out=first), "--report")
    shutil.copytree(first, copy)
    monkeypatch.setattr("verlstudy.course.runner.run_lessons", lambda *a, **k: pytest.fail("it is fresh"))
    assert cli.main(["run", "00", "--if-stale", "--out", str(copy)]) == 0
    out = capsys.readouterr().out
    assert f"the executed notebooks are in `{copy}`" in out and str(first) not in out
    assert f"the executed notebooks are in `{copy}`" in (copy / "report.md").read_text()
    assert f"the executed notebooks are in `{first}`" in (first / "report.md").read_text()
    assert _stale(copy) == []  # the rewritten report is the run's own, listed in the manifest
    assert files.Manifest(copy).may_overwrite(copy / "report.md")
