"""The attempt log as a journal (issue 43 item 1): a record is never lost to a torn tail, a failed write is said
once in the checker's output, and what cannot be read is named rather than silently dropped."""

import errno
import json
import os

import pytest

from verlstudy.kit import attempts, exercises
from verlstudy.kit.exercises import ExerciseFailure, check_exercise, checker


@checker("99.8", method="return twice x")
def _double(fn):
    if fn(3) != 6:
        raise ExerciseFailure("double(3) should be 6")
    return ""


@pytest.fixture
def log_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(attempts.SWITCH_ENV, "1")
    monkeypatch.setenv(attempts.DIR_ENV, str(tmp_path / "logs"))
    monkeypatch.setenv(attempts.NOTEBOOK_ENV, "99_demo.ipynb")
    monkeypatch.setattr(attempts, "_told", [])
    exercises.reset_exercises()
    return tmp_path / "logs"


def full_disk_after(n_bytes):
    """A writer that puts `n_bytes` on disk, then fails as a full disk does."""
    left = [n_bytes]

    def write(fd, data):
        if left[0] <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        done = os.write(fd, data[: left[0]])
        left[0] -= done
        return done

    return write


def test_a_correct_check_after_a_full_disk_is_read_back(log_dir, monkeypatch, capsys):
    # issue 43: half a line was left, the next (correct) record glued onto it, and progress showed nothing
    check_exercise("99.8", lambda x: x)
    monkeypatch.setattr(attempts, "_write", full_disk_after(40))
    check_exercise("99.8", lambda x: x + 1)
    monkeypatch.setattr(attempts, "_write", os.write)
    check_exercise("99.8", lambda x: 2 * x)
    scan = attempts.scan_log(log_dir / attempts.LOG_FILE)
    assert [r["verdict"] for r in scan.records] == ["not yet right", "correct"]
    assert scan.problems == []  # the torn half-record was cut back off


def test_a_record_after_a_torn_tail_starts_on_a_fresh_line(log_dir, capsys):
    log_dir.mkdir()
    (log_dir / attempts.LOG_FILE).write_bytes(b'{"answer_sha256": "ab", "exer')  # a kernel killed mid-write
    check_exercise("99.8", lambda x: 2 * x)
    text = (log_dir / attempts.LOG_FILE).read_text()
    assert text.startswith('{"answer_sha256": "ab", "exer\n') and text.endswith("\n")
    scan = attempts.scan_log(log_dir / attempts.LOG_FILE)
    assert [r["verdict"] for r in scan.records] == ["correct"]
    assert scan.problems == ["1 torn line skipped (line 1): a record cut short by a full disk or a stopped kernel"]


def test_the_learner_is_told_once_in_the_checkers_output(log_dir, monkeypatch, capsys):
    monkeypatch.setattr(attempts, "_write", full_disk_after(0))
    check_exercise("99.8", lambda x: x)
    check_exercise("99.8", lambda x: 2 * x)
    out = capsys.readouterr().out
    assert out.count("your attempts are not being recorded") == 1
    assert "No space left on device" in out and str(log_dir) in out
    assert "exercise 99.8: correct" in out  # the check itself went on
    assert "could not be written" in attempts.last_log_error()


def test_a_read_only_folder_is_told_too(log_dir, monkeypatch, capsys):
    log_dir.mkdir()
    log_dir.chmod(0o500)
    if os.access(log_dir, os.W_OK):  # root writes anyway: a read-only file system says so instead
        real_open = os.open

        def read_only(path, flags, *args):
            if flags & (os.O_WRONLY | os.O_RDWR):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS))
            return real_open(path, flags, *args)

        monkeypatch.setattr(os, "open", read_only)
    try:
        check_exercise("99.8", lambda x: 2 * x)
        check_exercise("99.8", lambda x: 2 * x)
    finally:
        log_dir.chmod(0o700)
    out = capsys.readouterr().out
    assert "exercise 99.8: correct" in out and out.count("your attempts are not being recorded") == 1
    assert "Permission denied" in out or "Read-only file system" in out


def test_each_record_is_fsynced(log_dir, monkeypatch, capsys):
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real(fd))
    check_exercise("99.8", lambda x: 2 * x)
    assert len(synced) == 1


def write_log(tmp_path, data: bytes):
    log = tmp_path / "attempts.jsonl"
    log.write_bytes(data)
    return log


def rec(**fields):
    return json.dumps({"format": 1, "exercise": "1.1", "verdict": "correct", **fields}, sort_keys=True).encode()


def test_another_format_version_is_named_not_dropped(tmp_path):
    log = write_log(tmp_path, rec() + b"\n" + rec(format=2) + b"\n" + rec(format=2) + b"\n")
    scan = attempts.scan_log(log)
    assert len(scan.records) == 1
    assert scan.problems == [
        "2 records of format 2 skipped (lines 2, 3): written by another verlstudy version; this one reads "
        "format 1, so update verlstudy to read them"
    ]


def test_a_glued_record_from_an_older_log_is_read(tmp_path):
    log = write_log(tmp_path, rec(verdict="not yet right") + b"\n" + b'{"answer_sha256": "a' + rec() + b"\n")
    scan = attempts.scan_log(log)
    assert [r["verdict"] for r in scan.records] == ["not yet right", "correct"]
    assert scan.problems == ["a whole record glued after a torn one read (line 2)"]


def test_nul_runs_are_named_and_records_around_them_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(attempts, "CHUNK", 64)  # runs and records that straddle chunks
    log = write_log(tmp_path, rec() + b"\n" + b"\0" * 1000 + b"\n" + b"\0" * 10 + rec(exercise="1.2") + b"\n")
    scan = attempts.scan_log(log)
    assert [r["exercise"] for r in scan.records] == ["1.1", "1.2"]
    assert scan.problems == ["1010 NUL bytes skipped (lines 2, 3): left by a crash or a full disk, not by a check"]


def test_a_large_nul_filled_log_is_named_without_holding_it(tmp_path):
    # issue 43: a 1 GB NUL-filled log read as "no attempt"; a sparse file costs no disk
    log = tmp_path / "attempts.jsonl"
    with log.open("wb") as f:
        f.truncate(64 << 20)
    scan = attempts.scan_log(log)
    assert scan.records == [] and scan.problems == [
        f"{64 << 20} NUL bytes skipped (line 1): left by a crash or a full disk, not by a check"
    ]


def test_overlong_lines_are_measured_not_held(tmp_path, monkeypatch):
    monkeypatch.setattr(attempts, "CHUNK", 16)
    monkeypatch.setattr(attempts, "LONGEST_LINE", 50)
    log = write_log(tmp_path, b"x" * 200 + b"\n" + rec() + b"\n")
    scan = attempts.scan_log(log)
    assert len(scan.records) == 1 and scan.problems == ["1 line(s) over 50 bytes skipped (line 1): not records"]


def test_an_unreadable_log_is_named(tmp_path):
    (tmp_path / "attempts.jsonl").mkdir()
    assert attempts.scan_log(tmp_path / "attempts.jsonl").problems[0].startswith("cannot be read (")


def test_kernels_appending_at_once_leave_whole_records(log_dir):
    from concurrent.futures import ThreadPoolExecutor

    def write(n):
        for i in range(50):
            attempts.record_attempt(f"{n}.{i}", "not yet right", "x" * (n * 40), i, ())

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(write, range(4)))
    scan = attempts.scan_log(log_dir / attempts.LOG_FILE)
    assert len(scan.records) == 200 and scan.problems == []


def test_json_that_is_no_record_is_not_blamed_on_a_full_disk(tmp_path):
    # issue 43 G5: '[1,2,3]', 'null' and '"str"' are whole JSON values, not records cut short
    scan = attempts.scan_log(write_log(tmp_path, rec() + b'\n[1,2,3]\nnull\n"str"\n{"format": 1, "exer\n'))
    assert len(scan.records) == 1
    assert scan.problems == [
        "1 torn line skipped (line 5): a record cut short by a full disk or a stopped kernel",
        "3 lines skipped (lines 2, 3, 4): JSON, but not an attempt record (no exercise and format): written by "
        "something other than a check",
    ]


def test_a_record_no_check_would_write_is_named_and_skipped(tmp_path):
    # issue 43 G6 and G7: an unknown exercise, a try and a time of the wrong kind, a verdict no check gives
    log = write_log(
        tmp_path,
        rec() + b"\n" + rec(exercise="99.9", time="not a time", **{"try": "x"}) + b"\n" + rec(verdict="hacked") + b"\n",
    )
    scan = attempts.scan_log(log, exercises={"1.1"})
    assert [r["verdict"] for r in scan.records] == ["correct"]
    assert scan.problems == [
        "2 records not as a check writes them, skipped (line 2: exercise '99.9' (not in this course), try 'x', "
        "time 'not a time'; line 3: verdict 'hacked'): edited by hand?"
    ]
    shown_first = attempts.scan_log(write_log(tmp_path, rec(verdict="solution shown", **{"try": 0}) + b"\n"))
    assert shown_first.problems == []  # the solution looked at before any try is try 0


def test_a_record_dated_in_the_future_is_kept_and_named(tmp_path):
    import datetime as dt

    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    log = write_log(tmp_path, rec(time="2099-01-01T00:00:00+00:00") + b"\n" + rec(time="2026-01-01T00:04:00") + b"\n")
    scan = attempts.scan_log(log, now=now)
    assert len(scan.records) == 2  # a few minutes ahead is a clock's drift, not named
    assert scan.problems == [
        "1 record dated in the future (line 1: 2099-01-01T00:00:00+00:00): a wrong clock or an edit by hand; kept, "
        "but not counted as a recent attempt"
    ]


def test_a_file_where_the_log_folder_should_be_is_named(tmp_path):
    # issue 43 G9: the learner's checks cannot log, and the facilitator is told why
    (tmp_path / attempts.LOG_FOLDER).write_text("x")
    scan = attempts.scan_log(tmp_path / attempts.LOG_FOLDER / attempts.LOG_FILE)
    assert scan.records == [] and scan.problems == [
        ".verlstudy is a file, not a folder: this learner's checks cannot record attempts; move that file away"
    ]
    assert attempts.scan_log(tmp_path / "elsewhere" / attempts.LOG_FILE).problems == []  # not written yet: nothing


def test_a_file_where_the_log_folder_should_be_is_named_as_the_cause(log_dir, capsys):
    # tester case A1: the note advised freeing disk space; the cause was a file in the folder's place
    log_dir.write_text("not a folder")
    check_exercise("99.8", lambda x: 2 * x)
    out = capsys.readouterr().out
    assert f"{log_dir} is a file where the log's folder should be: move it away" in out
    assert "free disk space" not in out
