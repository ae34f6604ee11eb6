"""verl's version is part of every run (issue 43 item 4): the run record holds it and --if-stale reruns when it
changes; a failing row under another verl says so; verify-upstream prints a row per moved function."""

import json

import pytest

from verlstudy.course import registry, run_record, runner, verify
from verlstudy.course.runner import RunResult
from verlstudy.course.usage import UsageError
from verlstudy.kit import upstream
from verlstudy.kit.upstream import Comparison

L00 = registry.get_lesson(0)


def fake_verl(monkeypatch, version):
    real = run_record.metadata.version
    monkeypatch.setattr(run_record.metadata, "version", lambda name: version if name == "verl" else real(name))


def test_the_run_record_holds_verls_version_and_a_change_makes_it_stale(tmp_path, monkeypatch):
    fake_verl(monkeypatch, "0.9.1")
    (tmp_path / L00.notebook.name).write_text("executed")
    run_record.write(tmp_path, [RunResult(L00, "passed", 1.0)], RunResult(None, "passed", 1.0), {}, with_floor=True)
    assert json.loads((tmp_path / run_record.RECORD).read_text())["environment"]["verl"] == "0.9.1"
    assert run_record.stale_reasons(tmp_path, [L00], {}, with_floor=True) == []
    fake_verl(monkeypatch, "0.9.0")  # issue 43: "fresh, nothing executed" although 6 of 8 lessons fail there
    assert run_record.stale_reasons(tmp_path, [L00], {}, with_floor=True) == [
        "the environment changed since the last run (verl 0.9.1 -> 0.9.0)"
    ]


def test_a_record_from_before_verl_was_recorded_is_stale(tmp_path):
    (tmp_path / L00.notebook.name).write_text("executed")
    run_record.write(tmp_path, [RunResult(L00, "passed", 1.0)], RunResult(None, "passed", 1.0), {}, with_floor=True)
    path = tmp_path / run_record.RECORD
    record = json.loads(path.read_text())
    del record["environment"]["verl"]
    path.write_text(json.dumps(record))
    [reason] = run_record.stale_reasons(tmp_path, [L00], {}, with_floor=True)
    assert "verl not recorded -> " in reason


def test_a_failing_row_under_another_verl_says_so(monkeypatch):
    verified = registry.upstream_verified_versions()[L00.code]
    monkeypatch.setattr(upstream, "verl_version", lambda release=None: "0.1.0")
    note = runner.verl_note(L00)
    assert note == f" (run under verl 0.1.0; lesson 00 was verified with verl {verified}: that may be the cause)"
    monkeypatch.setattr(upstream, "verl_version", lambda release=None: verified)
    assert runner.verl_note(L00) == ""

    def absent(release=None):
        raise upstream.VerlNotInstalled("no verl")

    monkeypatch.setattr(upstream, "verl_version", absent)
    assert runner.verl_note(L00) == ""


def test_a_damaged_run_record_is_replaced_with_one_line(tmp_path, capsys):
    # issue 43: a damaged run-record.json blocked every later run with "a learner's work?"
    run_record.mark_running(tmp_path)
    (tmp_path / run_record.RECORD).write_text('{"format": 1, "sta')
    run_record.mark_running(tmp_path)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "was damaged (it is not a readable JSON file" in err
    assert json.loads((tmp_path / run_record.RECORD).read_text())["state"] == "running"


def test_a_run_record_verlstudy_did_not_write_is_named_with_what_to_do(tmp_path):
    (tmp_path / "other.txt").write_text("x")
    run_record.mark_running(tmp_path)
    (tmp_path / ".verlstudy-written.json").unlink()
    (tmp_path / ".verlstudy-written.json").write_text('{"written_by": "verlstudy", "files": {}}')
    (tmp_path / run_record.RECORD).write_text("garbage")
    with pytest.raises(UsageError, match="delete it and rerun"):
        run_record.mark_running(tmp_path)


def moved(cases, seed):
    raise upstream.UpstreamMoved(
        "verl/workers/engine/utils.py defines no top-level detach_tree: it moved or was renamed"
    )


def changed_shape(cases, seed):
    raise TypeError("merge() got an unexpected keyword argument 'model'")


def test_a_moved_function_is_a_row_and_the_rest_is_compared(monkeypatch, capsys):
    part = registry.get_lesson(2).import_part("upstream")
    agree = Comparison("02", "verl/x.py::f", "9.9.9", 5, "agree")
    monkeypatch.setattr(part, "COMPARISONS", (moved, changed_shape, lambda cases, seed: agree))
    rows = verify.lesson_rows(registry.get_lesson(2), cases=5)
    assert [(r.upstream, r.status) for r in rows] == [
        ("verl/workers/engine/utils.py::detach_tree", "moved"),
        ("changed_shape", "error"),
        ("verl/x.py::f", "agree"),
    ]
    assert rows[1].detail == "TypeError: merge() got an unexpected keyword argument 'model'"
    with pytest.raises(ValueError, match="moved"):
        verify.record(rows)


AGAINST_0_9_0 = """
import sys
from verlstudy.course import cli
from verlstudy.kit import upstream
real_root = upstream.verl_root
upstream.verl_root = lambda release=None: real_root(release or "0.9.0")
upstream.verl_version = lambda release=None: release or "0.9.0"
sys.exit(cli.main(["verify-upstream", "--cases", "5"]))
"""


@pytest.mark.skipif(not upstream.verl_available("0.9.0"), reason="verl 0.9.0 is not fetched (make setup)")
def test_verify_upstream_against_another_release_prints_its_table():
    # issue 43: against another release verify-upstream ended in an UpstreamMoved traceback with no table
    # (a process of its own: the lessons cache what they load from "the installed verl")
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", AGAINST_0_9_0], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "| 02 | verl/workers/engine/utils.py::detach_tree | 0.9.0 | 0 | moved |" in done.stdout
    assert "| agree |" in done.stdout and " moved" in done.stdout.splitlines()[-1]
