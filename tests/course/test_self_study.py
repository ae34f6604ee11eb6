"""Self-study starts in the student edition: `make lab`, the README's opening and the run's last lines say so."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from verlstudy.course import reports, student

ROOT = Path(__file__).resolve().parents[2]

needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")


def dry_run(*args: str) -> str:
    # under `make test` the outer make's MAKEFLAGS/MAKELEVEL would add "Entering directory" lines
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    run = subprocess.run(
        ["make", "-n", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True, env=env
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


@needs_make
def test_make_lab_writes_the_student_edition_when_missing_and_opens_lesson_00_there():
    recipe = dry_run("lab", "STAMP=/dev/null")
    assert "verlstudy student --out student" in recipe
    assert recipe.rstrip().endswith("--ServerApp.root_dir=student student/00_start_here.ipynb")
    assert "notebooks/" in recipe  # it says where the full edition is


@needs_make
def test_make_lab_can_still_open_the_full_edition():
    recipe = dry_run("lab", "LAB_DIR=notebooks", "STAMP=/dev/null")
    assert '[ "notebooks" = student ]' in recipe  # the student edition is written only for LAB_DIR=student
    assert recipe.rstrip().endswith("--ServerApp.root_dir=notebooks notebooks/00_start_here.ipynb")


@needs_make
def test_make_students_overwrite_refusal_tells_a_make_user_force_1():
    assert 'VERLSTUDY_FORCE_HINT="run make student FORCE=1"' in dry_run("student", "STAMP=/dev/null")


def test_the_refusal_names_the_make_variable_when_make_runs_it(tmp_path, monkeypatch):
    out = tmp_path / "student"
    student.write_student_edition(out)
    first = sorted(out.glob("*.ipynb"))[0]
    first.write_text(first.read_text().replace("exercise", "exercise (my notes)", 1))
    monkeypatch.setenv("VERLSTUDY_FORCE_HINT", "run make student FORCE=1")
    with pytest.raises(student.WouldOverwriteWork, match="run make student FORCE=1"):
        student.write_student_edition(out)


def test_the_readme_opens_with_where_to_start_and_where_the_solutions_are():
    opening = (ROOT / "README.md").read_text().split("## The course")[0]
    assert "Start with `make lab`" in opening and "student edition" in opening
    assert "`notebooks/` is the\n*full edition*" in opening or "`notebooks/` is the *full edition*" in opening


def test_the_runs_last_lines_send_the_learner_to_the_student_edition():
    text = reports.report_markdown([], None, out=Path("build/executed"))
    assert "student edition" in text and "full edition" in text
