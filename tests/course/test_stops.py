"""Signals and stops (issue 43 item 6) and options and pipes (item 7): SIGHUP and SIGTERM stop every command like
Ctrl-C with one line, a stop the tool caused prints no kernel-death line, "not run" is counted apart from "failed";
--timeout and --watch are bounded; a closed pipe ends quietly."""

import logging
import os
import pathlib
import signal
import subprocess
import sys

import pytest

from tests.course.test_run_safety import SLEEPY_RUN, _stop_once_kernels_sleep
from verlstudy.course import cli, registry, run_command, runner, stopping
from verlstudy.course.runner import RunResult


def stopping_command(sig):
    """A command that receives `sig` from outside while it works."""

    def command(args):
        os.kill(os.getpid(), sig)
        for _ in range(1000):  # Python runs the handler between bytecodes: the loop never ends unhandled
            pass
        raise AssertionError("the signal did not stop the command")

    return command


@pytest.mark.parametrize(("name", "code", "said"), [("SIGHUP", 129, "SIGHUP"), ("SIGTERM", 143, "SIGTERM")])
def test_every_command_stops_on_sighup_and_sigterm_with_one_line(monkeypatch, capsys, name, code, said):
    monkeypatch.setattr(cli, "cmd_plan", stopping_command(getattr(signal, name)))
    assert cli.main(["plan"]) == code
    err = capsys.readouterr().err
    assert err == f"verlstudy plan: stopped ({said}); no file is left half-written\n"
    assert signal.getsignal(getattr(signal, name)) is not stopping._on_stop_signal  # handlers given back


def test_an_inherited_ignored_sigint_is_re_enabled(monkeypatch, capsys):
    monkeypatch.setattr(cli, "cmd_plan", stopping_command(signal.SIGINT))
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert cli.main(["plan"]) == 130
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    assert "stopped (Ctrl-C)" in capsys.readouterr().err


def test_sigterm_to_init_leaves_no_staging_folder(tmp_path, monkeypatch, capsys):
    # issue 43: SIGTERM to `init` left a hidden staging folder for good
    real = pathlib.Path.write_text
    calls = []

    def write_then_stop(self, *args, **kwargs):
        calls.append(self)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGTERM)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "write_text", write_then_stop)
    assert cli.main(["init", str(tmp_path / "course")]) == 143
    assert len(calls) >= 3
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert "stopped (SIGTERM)" in capsys.readouterr().err


def test_a_stopped_runs_line_counts_not_run_apart_from_failed():
    lessons = registry.LESSONS
    results = [
        RunResult(lessons[0], "passed", 1.0),
        RunResult(lessons[1], "failed", 1.0),
        RunResult(lessons[2], "interrupted", 1.0),
        *(RunResult(lesson, "not run", 0.0) for lesson in lessons[3:]),
    ]
    stopping.STOP.signal = signal.SIGINT
    line = run_command.stopped_line(results)
    assert line.startswith(f"stopped (Ctrl-C): 1 passed, 1 failed, {len(lessons) - 2} not run")


def test_a_stopped_runs_report_says_what_ran_and_sends_nobody_to_the_lab(tmp_path):
    # S1: "05: interrupted" under a table saying "not run", and "Next:" named executed notebooks that were never
    # written and sent the learner to `make lab`
    from verlstudy.course import reports

    lesson0, lesson5 = registry.get_lesson(0), registry.get_lesson(5)
    cut = RunResult(lesson0, "interrupted", 3.3, error=runner.STOPPED_WHILE_RUNNING)
    results = runner._ordered([lesson0, lesson5], {lesson0.stem: cut})
    text = reports.report_markdown(results, None, interrupted=True, out=tmp_path)
    assert f"- {lesson5.stem}: never started: the run was stopped first" in text
    assert "make lab" not in text and "executed notebooks are in" not in text and "init DIR" not in text
    assert text.endswith("Next:\n- run the same command again to execute the lessons that did not finish\n")
    (tmp_path / lesson0.notebook.name).write_text("{}")
    done = RunResult(lesson0, "passed", 3.3, output=tmp_path / lesson0.notebook.name)
    text = reports.report_markdown([done, results[1]], None, interrupted=True, out=tmp_path)
    assert f"- 1 executed notebook(s) are in `{tmp_path}`" in text


def test_a_stop_while_the_command_line_is_read_is_one_line(monkeypatch, capsys):
    # S3: SIGTERM half a second into `run` (the parser still loading) killed it without a word
    real = cli.build_parser

    def stopped_parser():
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # Python runs the handler between bytecodes
            pass
        return real()

    monkeypatch.setattr(cli, "build_parser", stopped_parser)
    assert cli.main(["run", "05"]) == 143
    assert capsys.readouterr().err == "verlstudy run: stopped (SIGTERM) before it began; nothing was written\n"


def test_kernel_death_lines_are_dropped_only_after_a_kill_verlstudy_made(monkeypatch):
    death = logging.LogRecord(
        "papermill", logging.ERROR, "", 0, "Kernel died while waiting for execute reply.", (), None
    )
    monkeypatch.setattr(stopping, "_last_kill", [float("-inf")])
    assert runner.PAPERMILL_QUIET.filter(death)  # a kernel that died on its own is news
    stopping.kill_tree(2**22 + 12345)  # no such process: only the moment of the kill is kept
    assert not runner.PAPERMILL_QUIET.filter(death)
    other = logging.LogRecord("papermill", logging.ERROR, "", 0, "something else", (), None)
    assert runner.PAPERMILL_QUIET.filter(other)


@pytest.mark.slow
def test_sighup_stops_a_run_with_its_report_and_no_kernel_death_line(tmp_path):
    # issue 43: SIGHUP killed `run` with no report; "Kernel died" was printed on every stop verlstudy caused
    out = tmp_path / "out"
    code, _out, err = _stop_once_kernels_sleep(
        SLEEPY_RUN, tmp_path, 1, str(tmp_path / "sleepy.ipynb"), str(out), "1", sig=signal.SIGHUP
    )
    assert code == 129, err
    assert (out / "report.md").read_text().startswith("# Course run (interrupted: partial)")
    assert "Kernel died" not in err and "Error occurred while starting" not in err and "Traceback" not in err
    assert "stopped (SIGHUP): 0 passed, 0 failed, 3 not run" in err


@pytest.mark.parametrize("value", ["1e300", "inf", "nan", "0", "-1", "86401"])
def test_a_timeout_is_bounded(capsys, value):
    assert cli.main(["run", "00", "--timeout", value]) == 2
    assert "--timeout must be a number of seconds above 0 and at most 86400" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0.001", "0.5", "nan"])
def test_watch_is_at_least_a_second(tmp_path, capsys, value):
    assert cli.main(["progress", str(tmp_path), "--html", str(tmp_path / "p.html"), "--watch", value]) == 2
    assert "--watch must be a number of seconds from 1" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["list"], ["list", "--json"], ["plan"]])
def test_a_closed_pipe_ends_quietly_even_unbuffered(command):
    # issue 43: `list | head` ended in BrokenPipe when PYTHONUNBUFFERED was set (common in Docker and CI)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    read, write = os.pipe()
    os.close(read)  # the reader has gone before anything is written
    try:
        done = subprocess.run(
            [sys.executable, "-m", "verlstudy", *command], stdout=write, stderr=subprocess.PIPE, env=env, timeout=120
        )
    finally:
        os.close(write)
    assert done.returncode == 141 and done.stderr == b""


def test_an_occupied_path_is_one_line_naming_it(tmp_path, capsys):
    # issue 43: `init`/`student` on a read-only or occupied path ended in tracebacks
    (tmp_path / "afile").write_text("x")
    assert cli.main(["student", "--out", str(tmp_path / "afile" / "sub")]) == 1
    err = capsys.readouterr().err
    said = "a file is where a folder is needed; check that path and its permissions"
    assert err == f"verlstudy student: {tmp_path / 'afile'}: {said}\n"


def test_a_kernel_json_without_argv_is_named(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from verlstudy.course import doctor, twins

    spec = SimpleNamespace(argv=[], resource_dir=str(tmp_path))
    monkeypatch.setattr(
        twins, "course_kernel_manager_class", lambda: lambda kernel_name: SimpleNamespace(kernel_spec=spec)
    )
    ok, line = doctor.kernel_spec_line()
    assert not ok and "has no command (argv is empty)" in line and str(tmp_path) in line
