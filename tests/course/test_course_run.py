"""The whole course, executed the way `verlstudy run` and a team's CI do it, with time budgets.

Marked `course_run`: `make test` runs it alone after the parallel tests, so that the timings are
measured on an otherwise idle machine. Budgets are seconds *beyond* the floor notebook (imports only)
run in the same pool, so the check holds on slow and fast machines alike.
"""

import subprocess
import sys

import nbformat
import pytest

from verlstudy.course import registry, runner

pytestmark = pytest.mark.course_run
SLACK_S = 1.5  # scheduling noise with two kernels on two cores; the budget itself is the registry's


@pytest.fixture(scope="module")
def course_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("executed")
    results, floor = runner.run_lessons(list(registry.LESSONS), out, {"device": "cpu"}, workers=2)
    return results, floor, out


def test_every_lesson_passes_with_injected_parameters(course_run):
    results, _, _out = course_run
    failed = {r.name: r.error for r in results if r.status != "passed"}
    assert not failed
    for r in results:
        nb = nbformat.read(r.output, as_version=4)
        injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
        assert len(injected) == 1 and 'device = "cpu"' in injected[0].source


def test_every_claim_is_reproduced(course_run):
    results, _, _ = course_run
    for r in results:
        assert r.claims_total >= 3 and r.claims_reproduced == r.claims_total, r.name


def test_each_lesson_stays_within_its_budget_beyond_the_floor(course_run):
    results, floor, _ = course_run
    assert floor is not None and floor.status == "passed"
    print(runner.report_markdown(results, floor))
    over = {
        r.name: round(r.seconds - floor.seconds, 1)
        for r in results
        if r.seconds - floor.seconds > r.lesson.budget_s + SLACK_S
    }
    assert not over, f"seconds beyond the floor ({floor.seconds:.1f} s) over budget: {over}"


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
