"""`verlstudy run` never loses a run or a learner's work: every failure is a row, every output path is checked."""

import json
import os
import shutil
import time

import nbformat
import pytest

from verlstudy.course import cli, files, parameters, registry, reports, run_out, runner
from verlstudy.kit import resources


def _notebook(path, *sources):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


# ---------------------------------------------------------------- a failure outside the notebook's code is a row


@pytest.mark.slow
def test_a_kernel_that_dies_is_a_failed_row_not_a_crash(tmp_path):
    source = _notebook(tmp_path / "dies.ipynb", "print('start')", "import os; os._exit(3)")
    status, error, _ = runner.execute_with_papermill(source, tmp_path / "out" / "dies.ipynb", {}, tmp_path)
    assert status == "failed" and "the kernel died" in error


@pytest.mark.slow
def test_a_cell_over_the_timeout_is_a_failed_row(tmp_path):
    source = _notebook(tmp_path / "slow.ipynb", "import time; time.sleep(600)")
    status, error, _ = runner.execute_with_papermill(source, tmp_path / "out" / "slow.ipynb", {}, tmp_path, timeout_s=2)
    assert status == "failed" and "longer than 2 s" in error


@pytest.mark.slow
def test_the_timeout_is_for_the_whole_notebook_not_each_cell(tmp_path):
    # every cell stays under the limit; together they pass it: an endless notebook, not an endless cell
    cells = ["import time; open('started', 'w').close()"] + ["time.sleep(1.5)"] * 400 + ["open('finished', 'w')"]
    source = _notebook(tmp_path / "long.ipynb", *cells)
    status, error, _ = runner.execute_with_papermill(source, tmp_path / "out" / "long.ipynb", {}, tmp_path, timeout_s=3)
    assert status == "failed" and "the notebook ran longer than 3 s and was stopped" in error
    assert (tmp_path / "started").exists() and not (tmp_path / "finished").exists()


def test_ctrl_c_stops_the_queue_and_keeps_what_finished(tmp_path, monkeypatch):
    started = []

    def fake_run_one(lesson, out_dir, parameters=None, **kwargs):
        started.append(lesson.code)
        return runner.RunResult(lesson, "passed", 1.0)

    def ctrl_c(result):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_one", fake_run_one)
    monkeypatch.setattr(runner, "kill_kernels", lambda: None)
    lessons = list(registry.LESSONS)
    with pytest.raises(runner.Interrupted) as stop:
        runner.run_lessons(lessons, tmp_path, workers=1, with_floor=False, on_done=ctrl_c)
    statuses = {r.lesson.code: r.status for r in stop.value.results}
    assert statuses[started[0]] == "passed" and "not run" in statuses.values()
    assert len(started) < len(lessons), "queued lessons must not start after Ctrl-C"
    text = reports.report_markdown(stop.value.results, None, interrupted=True)
    assert "interrupted: partial" in text and "| not run |" in text


def test_ctrl_c_kills_the_kernels_this_process_started():
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        runner.kill_kernels()
        assert child.wait(timeout=10) != 0
    finally:
        child.kill()


# ---------------------------------------------------------------- nothing a user wrote is overwritten


def test_run_refuses_the_courses_own_notebooks_folder():
    with pytest.raises(ValueError, match="course's own notebooks/ folder"):
        run_out.check_run_out(registry.notebooks_dir(), ["00_start_here.ipynb"])


def test_run_refuses_to_overwrite_a_learners_notebook_it_did_not_write(tmp_path):
    shutil.copy(registry.get_lesson(2).notebook, tmp_path / "02.ipynb")
    with pytest.raises(files.WouldOverwriteWork, match=r"did not write, or that changed since \(02.ipynb\)"):
        run_out.check_run_out(tmp_path, ["02.ipynb"])
    run_out.check_run_out(tmp_path, ["03.ipynb"])  # a notebook the run does not write is no obstacle


def test_run_accepts_its_own_earlier_output_in_a_folder_from_before_the_manifest(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["papermill"] = {"parameters": {}}
    nbformat.write(nb, tmp_path / "02.ipynb")
    run_out.check_run_out(tmp_path, ["02.ipynb"])


@pytest.mark.parametrize(
    ("named", "message"),
    [
        ({"--report": "lesson.ipynb"}, "is a notebook"),
        ({"--report": "folder"}, "is a folder"),
        ({"--report": "r.md", "--junit": "r.md"}, "name the same file"),
        ({"--junit": "notes.xml"}, "verlstudy did not write it"),
        ({"--report": "afile/r.md"}, "is a file, not a folder"),
    ],
)
def test_report_paths_are_checked_before_any_kernel_starts(tmp_path, named, message):
    (tmp_path / "notes.xml").write_text("<mine/>")
    (tmp_path / "afile").write_text("x")
    (tmp_path / "folder").mkdir()
    with pytest.raises(ValueError, match=message):
        files.check_report_paths({flag: tmp_path / name for flag, name in named.items()})


def _deny_writes_in(folder, monkeypatch):
    """What a non-root user meets in a read-only folder (root passes every permission check, so CI sees none)."""
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if os.fspath(p) == os.fspath(folder) else real(p, mode))


def test_a_report_in_a_folder_the_user_cannot_write_is_refused_by_name(tmp_path, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    _deny_writes_in(locked, monkeypatch)
    with pytest.raises(ValueError, match=f"--junit {locked}/sub/j.xml: {locked} is not writable"):
        files.check_report_paths({"--junit": locked / "sub" / "j.xml"})


def test_the_cli_refuses_an_unwritable_report_before_a_kernel_starts(tmp_path, monkeypatch, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    _deny_writes_in(locked, monkeypatch)
    monkeypatch.setattr(runner, "run_lessons", lambda *a, **k: pytest.fail("no kernel may start"))
    code = cli.main(["run", "00", "--out", str(tmp_path / "out"), "--report", str(locked / "r.md")])
    assert code == 2 and "is not writable" in capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere: the permission itself is tested above")
def test_a_real_read_only_folder_is_refused(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(ValueError, match="is not writable"):
        files.check_report_paths({"--report": locked / "r.md"})


def test_an_earlier_report_may_be_replaced(tmp_path):
    (tmp_path / "report.md").write_text("# Course run\n")
    (tmp_path / "junit.xml").write_text("<testsuites/>")
    files.check_report_paths({"--report": tmp_path / "report.md", "--junit": tmp_path / "junit.xml"})


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "00", "--out", "{notebooks}"], "course's own notebooks/ folder"),
        (["run", "00", "--report", "{notebooks}/00_start_here.ipynb"], "is in the course's own notebooks/ folder"),
        (["run", "00", "--report", "elsewhere/00_start_here.ipynb"], "is a notebook"),
        (["run", "00", "--device", "cpu", "-p", "device=cuda"], "conflicts with -p device=cuda"),
        (["run", "00", "--out", ""], "--out is empty"),
        (["run", "00", "--junit", " "], "--junit is empty"),
    ],
)
def test_the_cli_refuses_with_one_line_and_exit_2(argv, message, capsys):
    argv = [a.replace("{notebooks}", str(registry.notebooks_dir())) for a in argv]
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


def test_results_json_records_an_interrupted_run(tmp_path):
    data = json.loads(reports.results_json([], None, interrupted=True))
    assert data["interrupted"] is True


# ---------------------------------------------------------------- the course's own kernel, or a clear error


@pytest.mark.slow
def test_a_stale_python3_kernelspec_elsewhere_on_the_jupyter_path_cannot_capture_a_lesson(tmp_path, monkeypatch):
    stale = tmp_path / "jupyter" / "kernels" / "python3"
    stale.mkdir(parents=True)
    argv = ["/nonexistent/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (stale / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "stale", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jupyter"))
    source = _notebook(tmp_path / "which.ipynb", "import sys\nprint(sys.prefix)")
    status, error, _ = runner.execute_with_papermill(source, tmp_path / "out" / "which.ipynb", {}, tmp_path)
    assert (status, error) == ("passed", "")
    printed = nbformat.read(tmp_path / "out" / "which.ipynb", as_version=4).cells[0].outputs[0]["text"].strip()
    import sys

    assert printed == sys.prefix


# ---------------------------------------------------------------- refresh never drops an edit silently


def _lesson_files(tmp_path):
    from types import SimpleNamespace

    from verlstudy.course import twins

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# 99 · A lesson"), nbformat.v4.new_code_cell("x = 1")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    lesson = SimpleNamespace(
        code="99", stem="99_lesson", notebook=tmp_path / "99_lesson.ipynb", twin=tmp_path / "py" / "99_lesson.py"
    )
    lesson.twin.parent.mkdir()
    lesson.twin.write_text(twins.twin_text(nb))
    nb.cells.insert(1, nbformat.v4.new_markdown_cell("A note I added in Jupyter."))
    nbformat.write(nb, lesson.notebook)
    return lesson


def test_refresh_refuses_to_drop_a_cell_added_in_the_ipynb_and_names_it(tmp_path):
    import os

    from verlstudy.course import twins

    lesson = _lesson_files(tmp_path)
    os.utime(lesson.twin, (1, 1))  # the .ipynb is the newer file
    with pytest.raises(twins.WouldDropCells, match="markdown cell 1: A note I added in Jupyter"):
        twins.refresh(lesson)


def test_a_newer_twin_still_names_a_cell_added_in_the_ipynb_that_refresh_would_drop(tmp_path):
    import os

    from verlstudy.course import twins

    lesson = _lesson_files(tmp_path)
    os.utime(lesson.notebook, (1, 1))  # the twin is the newer file: its edits are meant, the added cell is not lost
    assert twins.cells_refresh_would_drop(lesson) == ["markdown cell 1: A note I added in Jupyter."]
    with pytest.raises(twins.WouldDropCells, match=r"99_lesson.py is newer(.|\n)*markdown cell 1(.|\n)*--force"):
        twins.refresh(lesson)


# ---------------------------------------------------------------- nothing written outside the output folders


@pytest.mark.slow
def test_kernels_keep_library_caches_in_the_build_folder(tmp_path, monkeypatch):
    from verlstudy.course import twins

    for key in twins.CACHE_ENV:
        monkeypatch.delenv(key, raising=False)
    twins.quiet_kernel_env()
    for key, folder in twins.CACHE_ENV.items():
        assert os.environ[key] == str(resources.cache_root() / folder)
    source = _notebook(tmp_path / "mpl.ipynb", "import matplotlib\nprint(matplotlib.get_configdir())")
    status, error, _ = runner.execute_with_papermill(source, tmp_path / "out" / "mpl.ipynb", {}, tmp_path)
    assert (status, error) == ("passed", "")
    printed = nbformat.read(tmp_path / "out" / "mpl.ipynb", as_version=4).cells[0].outputs[0]["text"].strip()
    assert printed == str(resources.cache_root() / "matplotlib")


@pytest.mark.parametrize("text", ["{not json", '{"cells": 3}', ""])
def test_a_corrupt_notebook_is_named_not_a_traceback(tmp_path, text):
    broken = tmp_path / "05_broken.ipynb"
    broken.write_text(text)
    with pytest.raises(ValueError, match=r"05_broken.ipynb is not a valid notebook"):
        parameters.notebook_parameters(broken)


def test_the_cli_names_a_corrupt_lesson_notebook(monkeypatch, tmp_path, capsys):
    course = tmp_path / "course"
    course.mkdir()
    (course / "00_start_here.ipynb").write_text("{not json")
    monkeypatch.setattr(registry, "notebooks_dir", lambda: course)
    monkeypatch.setattr(registry.Lesson, "notebook", property(lambda self: course / f"{self.stem}.ipynb"))
    assert cli.main(["run", "00", "--out", str(tmp_path / "out")]) == 2
    assert "00_start_here.ipynb is not a valid notebook" in capsys.readouterr().err


SLEEPY_CELL = "import os, time; open(f'{os.getpid()}.sleeping', 'w').close(); time.sleep(600)"

SLEEPY_RUN = """
import sys
from pathlib import Path
import nbformat
from verlstudy.course import cli, runner

sleepy, out, workers = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(SLEEPY_CELL)])
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nbformat.write(nb, sleepy)

def sleeping_lesson(lesson, out_dir, parameters=None, **kwargs):  # a real kernel, no real lesson
    out_dir.mkdir(parents=True, exist_ok=True)
    status, error, seconds = runner.execute_with_papermill(sleepy, out_dir / lesson.notebook.name, {}, out_dir)
    return runner.RunResult(lesson, status, seconds, error=error)

runner.run_one = sleeping_lesson
argv = ["run", "00", "01", "02", "--workers", workers, "--no-floor", "--out", out, "--junit", out + "/junit.xml"]
sys.exit(cli.main(argv))
""".replace("SLEEPY_CELL", repr(SLEEPY_CELL))


def start_order(*codes: str) -> list[str]:
    """The stems of these lessons in the order the runner starts them (longest budget first)."""
    return [lesson.stem for lesson in sorted(registry.select_lessons(list(codes)), key=lambda lesson: -lesson.budget_s)]


def _wait_for(condition, what: str, proc) -> None:
    """Wait for an event (no wall-clock limit a loaded machine could hit; only a guard against a real hang)."""
    deadline = time.monotonic() + 600
    while not condition():
        if proc.poll() is not None:
            pytest.fail(f"the command exited ({proc.returncode}) before {what}: {proc.stderr.read()}")
        if time.monotonic() > deadline:
            pytest.fail(f"hang: no {what} in 600 s")
        time.sleep(0.1)


def _stop_once_kernels_sleep(
    script: str, folder, kernels: int, *args: str, sig=None, ignore_sigint: bool = False
) -> tuple[int, str, str]:
    """Run `script`; once `kernels` kernels sleep in their cell (each leaves a `PID.sleeping` file somewhere
    under `folder`), send `sig` (SIGINT by default). Returns (exit code, stdout, stderr).

    The sleep is 600 s: the command exiting at all proves it stopped the kernels rather than waited for them.
    """
    import signal
    import subprocess
    import sys

    def inherit_ignored_sigint() -> None:  # what `cmd &` in a non-interactive shell script does to its children
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    proc = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=inherit_ignored_sigint if ignore_sigint else None,
    )
    try:
        _wait_for(lambda: len(list(folder.rglob("*.sleeping"))) >= kernels, f"{kernels} sleeping kernel(s)", proc)
        proc.send_signal(sig or signal.SIGINT)
        out, err = proc.communicate(timeout=600)  # a hang guard, not a speed limit
    finally:
        proc.kill()
    return proc.returncode, out, err


@pytest.mark.slow
def test_ctrl_c_stops_the_run_kills_the_kernel_and_writes_a_partial_report(tmp_path):
    out = tmp_path / "out"
    code, _out, err = _stop_once_kernels_sleep(SLEEPY_RUN, tmp_path, 1, str(tmp_path / "sleepy.ipynb"), str(out), "1")
    assert code == 130, err
    assert "stopped (Ctrl-C): 0 passed, 0 failed, 3 not run" in err
    report = (out / "report.md").read_text()
    assert report.startswith("# Course run (interrupted: partial)") and "| not run |" in report
    first = start_order("00", "01", "02")[0]
    assert f"| {first} | interrupted |" in report  # the lesson in flight was stopped, its kernel did not "die"
    assert "kernel died" not in report


@pytest.mark.slow
def test_sigterm_stops_the_run_like_ctrl_c_with_report_and_junit(tmp_path):
    import signal
    import xml.etree.ElementTree as ET

    out = tmp_path / "out"
    code, _out, err = _stop_once_kernels_sleep(
        SLEEPY_RUN, tmp_path, 1, str(tmp_path / "sleepy.ipynb"), str(out), "1", sig=signal.SIGTERM
    )
    assert code == 143, err  # 128 + SIGTERM, as a shell reports a job stopped by it
    assert (out / "report.md").read_text().startswith("# Course run (interrupted: partial)")
    suites = ET.parse(out / "junit.xml").getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == [
        "00_start_here",
        "01_memory_leak_attribution",
        "02_detach_placement_trap",
    ]


@pytest.mark.slow
def test_a_run_that_inherited_sigint_as_ignored_still_stops_on_sigint(tmp_path):
    out = tmp_path / "out"
    code, _out, err = _stop_once_kernels_sleep(
        SLEEPY_RUN, tmp_path, 1, str(tmp_path / "sleepy.ipynb"), str(out), "1", ignore_sigint=True
    )
    assert code == 130, err
    assert (out / "report.md").read_text().startswith("# Course run (interrupted: partial)")


@pytest.mark.slow
def test_two_lessons_in_flight_at_ctrl_c_are_interrupted_not_dead(tmp_path):
    out = tmp_path / "out"
    code, _out, err = _stop_once_kernels_sleep(SLEEPY_RUN, tmp_path, 2, str(tmp_path / "sleepy.ipynb"), str(out), "2")
    assert code == 130, err
    report = (out / "report.md").read_text()
    last = start_order("00", "01", "02")[-1]
    assert report.count("| interrupted |") == 2 and f"| {last} | not run |" in report
    assert "kernel died" not in report


def test_run_pool_keeps_job_order_and_a_ctrl_c_drops_the_queue_but_keeps_what_finished():
    ran = []

    def work(job):
        ran.append(job)
        time.sleep(0.3 if job == "slow" else 0.0)
        return job.upper()

    assert runner.run_pool(["a", "slow", "b"], work, workers=2) == ["A", "SLOW", "B"]

    ran.clear()

    def interrupt(result):
        if result == "A":
            raise KeyboardInterrupt  # what Ctrl-C raises in the main thread while it waits

    with pytest.raises(runner.PoolInterrupted) as stop:
        runner.run_pool(["a", "slow", "b", "c"], work, workers=2, on_done=interrupt)
    assert stop.value.finished == {0: "A"}
    assert stop.value.cut == {1: "SLOW"}  # the running job ended (its kernel killed): cut short, not finished
    assert sorted(ran) == ["a", "slow"], "queued jobs must not start after Ctrl-C, however fast a worker frees up"


SLEEPY_PROGRESS = """
import sys
from pathlib import Path
import nbformat
from verlstudy.course import cli

learner = Path(sys.argv[1])
learner.mkdir()
for name in ("00_start_here.ipynb", "01_memory_leak_attribution.ipynb"):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(SLEEPY_CELL)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, learner / name)
sys.exit(cli.main(["progress", str(learner), "--verify", "--workers", "1", "--build", sys.argv[2]]))
""".replace("SLEEPY_CELL", repr(SLEEPY_CELL))


@pytest.mark.slow
def test_ctrl_c_stops_progress_and_prints_what_it_has(tmp_path):
    code, out, err = _stop_once_kernels_sleep(
        SLEEPY_PROGRESS, tmp_path / "build", 1, str(tmp_path / "ada"), str(tmp_path / "build")
    )
    assert code == 130, err
    assert "interrupted after 0 of 2 notebooks; the table above is partial" in err
    assert "| ada | 00_start_here | - | interrupted |" in out  # the notebook in flight is reported, not lost
