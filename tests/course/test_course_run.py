"""The whole course, executed the way `verlstudy run` and a team's CI do it.

Marked `course_run`. `make test` first runs `verlstudy run --results build/run.json` (the same execution
that writes the report and the JUnit file) and points VERLSTUDY_COURSE_RESULTS at it, so these tests
check that run instead of executing every notebook again; run alone, they execute the course themselves.
Timing here only catches a hang or a lesson three times slower than it should be: budgets are flagged
in the report, and enforced in benchmarks/course_time.py, never by a test that load alone could fail.
"""

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from verlstudy.course import registry, reports, runner

pytestmark = pytest.mark.course_run
SLOWDOWN = 3.0  # a lesson may take this many times (floor + budget) before the test calls it broken


@pytest.fixture(scope="module")
def course_run(tmp_path_factory):
    recorded = os.environ.get("VERLSTUDY_COURSE_RESULTS")
    if recorded:
        results, floor = reports.read_results(Path(recorded))
        return results, floor, None
    out = tmp_path_factory.mktemp("executed")
    results, floor = runner.run_lessons(list(registry.LESSONS), out, {"device": "cpu"}, workers=2)
    return results, floor, out


def test_the_run_covers_every_lesson(course_run):
    results, _, _ = course_run
    assert [r.lesson.number for r in results] == [lesson.number for lesson in registry.LESSONS]


def test_every_lesson_passes_with_injected_parameters(course_run):
    results, _, _out = course_run
    failed = {r.name: r.error for r in results if r.status != "passed"}
    assert not failed
    for r in results:
        nb = nbformat.read(r.output, as_version=4)
        injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
        assert len(injected) == 1 and 'device = "cpu"' in injected[0].source


def test_every_exercise_of_the_full_edition_is_correct(course_run):
    results, _, _ = course_run
    for r in results:
        assert len(r.exercises) >= 2, r.name
        assert {e["verdict"] for e in r.exercises} == {"correct"}, (r.name, r.exercises)


def test_every_claim_is_reproduced(course_run):
    results, _, _ = course_run
    for r in results:
        assert r.claims_total >= 3 and r.claims_reproduced == r.claims_total, r.name


def test_no_lesson_hangs_or_runs_three_times_slower_than_its_budget(course_run):
    results, floor, _ = course_run
    assert floor is not None and floor.status == "passed"
    print(reports.report_markdown(results, floor))
    slow = {r.name: round(r.seconds, 1) for r in results if r.seconds > SLOWDOWN * (floor.seconds + r.lesson.budget_s)}
    assert not slow, f"lessons over {SLOWDOWN}x (floor {floor.seconds:.1f} s + budget): {slow}"


def test_no_lesson_finishes_suspiciously_fast(course_run):
    # every lesson imports torch, so one faster than half the floor did not really run
    results, floor, _ = course_run
    assert all(r.seconds > 0.5 * floor.seconds for r in results)


def test_a_bad_parameter_value_fails_with_one_clear_line_and_exit_2(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "verlstudy",
            "run",
            "00",
            "--no-floor",
            "--out",
            str(tmp_path),
            "--report",
            str(tmp_path / "report.md"),
            "-p",
            "n_draws=0",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "verlstudy run: bad parameter for lesson 00: parameter n_draws=0 is out of range; allowed: 1 <= n_draws <= 1000"
    ]
