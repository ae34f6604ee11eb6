"""The command line: list, doctor, and one clear line with exit 2 for every usage error."""

import os
import subprocess
import sys

import pytest

from verlstudy.course.cli import main
from verlstudy.course.doctor import doctor_checks, verl_status


def test_list_prints_the_course_map(capsys):
    assert main(["list"]) == 0
    assert "lessons," in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "42"], "verlstudy run: unknown lesson '42'; known lessons: 00, 01"),
        (
            ["run", "00", "-p", "sed=1"],
            "verlstudy run: lesson 00 has no parameter 'sed'; its parameters are: device, n_draws, seed",
        ),
        (["run", "00", "-p", "seed"], "verlstudy run: parameter 'seed' must look like name=value"),
        (["refresh"], "verlstudy refresh: name the lessons to refresh"),
        (["plan", "42"], "verlstudy plan: unknown lesson '42'; known lessons: 00, 01"),
        (["plan", "--start", "9am"], "verlstudy plan: start must be a time of day 'HH:MM' (24-hour), got '9am'"),
        # R18: the second value won and the first was dropped without a word
        (
            ["run", "00", "-p", "seed=1", "-p", "seed = 2"],
            "verlstudy run: parameter seed is given twice (-p seed=1, -p seed = 2): give it once",
        ),
        # ED6: --check --update ran the update alone and dropped the check's report
        (["edition", "zh_CN", "--check", "--update"], "verlstudy edition: --check and --update do different things"),
        (["edition", "zh_CN", "--update", "--run", "--out", "x"], "verlstudy edition: --update and --run do different"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


def test_bad_workers_and_bad_device_exit_2(capsys):
    assert main(["run", "00", "--workers", "0"]) == 2
    assert capsys.readouterr().err == "verlstudy run: --workers must be at least 1, got 0\n"  # R2: command, value
    with pytest.raises(SystemExit) as exc:
        main(["run", "00", "--device", "tpu"])
    assert exc.value.code == 2
    assert "invalid choice: 'tpu'" in capsys.readouterr().err


def test_out_that_is_a_file_is_rejected(tmp_path, capsys):
    target = tmp_path / "file"
    target.write_text("x")
    assert main(["run", "00", "--out", str(target)]) == 2
    assert "exists and is a file" in capsys.readouterr().err


def test_doctor_checks_the_essentials():
    checks = doctor_checks(start_kernel=False)  # the kernel start has its own tests (test_doctor.py)
    lines = [line for _, line in checks]
    for needed in (
        "Python",
        "torch",
        "papermill",
        "nbval",
        "kernel 'python3'",
        "accelerators visible",
        "optional verl",
    ):
        assert any(line.startswith(needed) for line in lines), needed
    assert all(ok for ok, line in checks if not line.startswith("notebooks:"))


def test_plan_prints_the_facilitators_day_and_a_half_day_variant(capsys):
    from verlstudy.course import plan

    assert main(["plan"]) == 0
    assert capsys.readouterr().out.strip() == plan.day_plan()
    assert main(["plan", "00", "01", "02", "--start", "13:00", "--no-breaks"]) == 0
    rows = capsys.readouterr().out.strip().splitlines()[2:]
    assert [row.split(" | ")[1][:2] for row in rows] == ["00", "01", "02", "Wr"]
    assert rows[0].startswith("| 13:00-13:15 |") and rows[-1].startswith("| 15:00-15:15 |")


def test_doctor_says_how_to_get_verl_and_when_it_is_not_the_verified_version():
    verified = {"00": "0.9.1", "01": "0.9.1", "02": "0.9.0"}
    assert verl_status(None, verified, "checkout").startswith("not installed (upstream cells skip; `make setup`")
    assert verl_status(None, verified, "pip").endswith(
        "`pip install --no-deps --ignore-requires-python verl==0.9.1` adds it)"
    )
    assert "`%pip install --no-deps --ignore-requires-python verl==0.9.1`" in verl_status(None, verified, "colab")
    assert all("requirements-upstream.txt" not in verl_status(None, verified, kind) for kind in ("pip", "colab"))
    assert verl_status("0.9.1", {"00": "0.9.1", "01": "0.9.1"}) == "0.9.1"
    assert verl_status("0.10.0", {"00": "0.9.1", "01": "0.10.0", "02": "0.9.1"}) == (
        "0.10.0; lessons 00, 02 were verified against another verl: run `verlstudy verify-upstream`"
    )


@pytest.mark.slow
def test_a_run_with_its_own_out_keeps_its_report_there_and_leaves_the_course_build_alone(tmp_path, capsys, monkeypatch):
    from verlstudy.course import registry, runner

    def executed(lesson, out_dir, parameters=None, **kwargs):  # the layout, not the lesson, is tested here
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / lesson.notebook.name).write_text("{}")
        return runner.RunResult(lesson, "passed", 1.0, 3, 3, output=out_dir / lesson.notebook.name)

    monkeypatch.setattr(runner, "run_one", executed)
    course_report = registry.project_root() / "build" / "report.md"
    before = course_report.read_text() if course_report.exists() else None
    out = tmp_path / "mine"
    assert main(["run", "00", "--out", str(out), "--no-floor"]) == 0
    assert (out / "00_start_here.ipynb").exists()
    assert "| 00_start_here | passed |" in (out / "report.md").read_text()
    assert (course_report.read_text() if course_report.exists() else None) == before


def test_a_stopped_refresh_says_what_was_written_in_one_line_and_exits_130(monkeypatch, capsys):
    from verlstudy.course import twins

    done = []

    def fake_refresh(lesson, source="py", force=False):
        if done:
            raise KeyboardInterrupt  # what Ctrl-C (or SIGTERM, under stop_signals) raises mid-execution
        done.append(lesson.code)
        return []

    monkeypatch.setattr(twins, "refresh", fake_refresh)
    assert main(["refresh", "00", "01"]) == 130
    out, err = capsys.readouterr()
    assert out == "00_start_here: 0 change(s)\n"
    assert err.count("\n") == 1 and "interrupted while executing 01_memory_leak_attribution" in err


def test_lesson_numbers_after_an_option_are_lessons_too(capsys):
    # `edition zh_CN --update 07` failed with "unrecognized arguments: 07"; a lesson list may follow the options
    assert main(["plan", "--start", "10:00", "00", "--no-breaks", "05"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 1")]
    assert [row.split(" | ")[1][:2] for row in rows] == ["00", "05", "Wr"]  # both lessons, then the wrap-up
    with pytest.raises(SystemExit, match="2"):  # argparse's own usage error, as before
        main(["plan", "05", "--nope"])
    assert "unrecognized arguments: --nope" in capsys.readouterr().err


def test_standard_output_on_a_full_disk_is_named_as_standard_output(tmp_path):
    # L4: `verlstudy list > /dev/full` said "disk full while writing ?"
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-c", "import sys; from verlstudy.course import cli; sys.exit(cli.main(['list']))"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert done.returncode == 1
    assert done.stderr == (
        "verlstudy list: disk full while writing standard output: free space and rerun; nothing else was overwritten\n"
    )


def test_a_terminal_that_cannot_show_a_character_gets_it_escaped_not_a_crash(tmp_path):
    # E6: PYTHONIOENCODING=ascii (LANG=C) ended a passing run in a UnicodeEncodeError when it printed its folder
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "LANG": "C", "LC_ALL": "C"}
    code = "import sys; from verlstudy.course import cli; sys.exit(cli.main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", code, "init", str(tmp_path / "é 中")], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "course copied into" in done.stdout and "\\xe9 \\u4e2d" in done.stdout
    assert (tmp_path / "é 中" / "student").is_dir()


def test_a_quoted_tilde_is_the_home_folder_never_a_folder_named_tilde(tmp_path, monkeypatch, capsys):
    # I11: `init '~/verlstudy'` (quoted, or no HOME) made a folder literally named "~" in the current folder
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    assert main(["init", "~/verlstudy"]) == 0
    assert f"course copied into {home / 'verlstudy'}" in capsys.readouterr().out
    assert (home / "verlstudy" / "student").is_dir() and list(work.iterdir()) == []
    assert main(["init", "~nosuchuser123/x"]) == 2
    assert "there is no home folder for '~nosuchuser123'" in capsys.readouterr().err
    assert list(work.iterdir()) == []


def test_a_tilde_with_no_home_variable_is_still_the_users_home(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "HOME"}
    code = "import os.path, sys; from verlstudy.course import cli; a = cli.build_parser().parse_args(sys.argv[1:]); "
    code += "cli._expand_home(a); print(a.folder)"
    done = subprocess.run(
        [sys.executable, "-c", code, "init", "~/verlstudy"], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert not done.stdout.startswith("~") and done.stdout.strip().endswith("/verlstudy")


def test_hub_help_prints_the_hubs_usage(capsys):
    # the top-level help points to `verlstudy hub --help`; it said "unrecognized arguments: --help" (tester case H1)
    with pytest.raises(SystemExit, match="0"):
        main(["hub", "--help"])
    assert capsys.readouterr().out.startswith("usage: verlstudy hub")


def test_a_partial_student_edition_carries_the_glossary_its_links_land_on(tmp_path, capsys):
    # a learner's student edition of 01 and 03 had every glossary link (00_start_here.ipynb#1F1B) dead
    assert main(["student", "03", "--out", str(tmp_path / "s")]) == 0
    assert sorted(p.name for p in (tmp_path / "s").glob("*.ipynb")) == [
        "00_start_here.ipynb",
        "03_router_replay_scoping.ipynb",
    ]
    assert main(["edition", "zh_CN", "03", "--out", str(tmp_path / "zh")]) == 0
    assert (tmp_path / "zh" / "00_start_here.ipynb").is_file()
