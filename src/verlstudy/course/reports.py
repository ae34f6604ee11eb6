"""What a course run leaves behind: the Markdown report, the JUnit file a CI can act on, and a results file.

The learner's report says how each lesson went and what to do next (no timing alarms: a busy laptop is slow);
with VERLSTUDY_TIMING=1 it is the maintainers' report, explaining its terms (floor, budget); the JUnit file has one case
per claim and per exercise, grouped by lesson, and a failure names the cell, the claim and the executed
notebook; the results file lets the course_run tests check this run instead of executing the course again.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

from verlstudy.course import registry
from verlstudy.course.runner import RunResult
from verlstudy.kit import resources

TIMING_ENV = "VERLSTUDY_TIMING"  # set to 1: the report adds the maintainers' floor and budget columns
FLOOR_TEXT = (
    "The **floor** is a notebook that only imports torch and matplotlib, run in the same pool: what any "
    "lesson pays before it teaches anything. A lesson's **budget** is the seconds it may take beyond the floor "
    "(the registry's `budget_s`). Over budget is flagged here; `benchmarks/course_time.py` is where timing fails. "
    f"This report shows timing only when asked ({TIMING_ENV}=1)."
)


EXECUTED_IN = "- the executed notebooks are in "  # the report's line naming its run folder (`relocated` finds it)
NEVER_STARTED = "never started: the run was stopped first"


def beyond_floor(result: RunResult, floor: RunResult | None) -> float | None:
    return None if floor is None else result.seconds - floor.seconds


def over_budget(result: RunResult, floor: RunResult | None) -> bool:
    beyond = beyond_floor(result, floor)
    return bool(result.lesson and beyond is not None and beyond > result.lesson.budget_s)


def timing_wanted(timing: bool | None = None) -> bool:
    """Whether the report shows floor and budget figures: `timing` if given, else the VERLSTUDY_TIMING variable."""
    if timing is not None:
        return bool(timing)
    return os.environ.get(TIMING_ENV, "").strip().lower() in ("1", "true", "yes")


def report_markdown(
    results: list[RunResult],
    floor: RunResult | None,
    *,
    interrupted: bool = False,
    out: Path | None = None,
    timing: bool | None = None,
) -> str:
    """The run's report: one row per lesson with status, seconds, claims and exercises.

    Timing on a busy laptop is noise, not news: the learner's report (what `make course` and `make site` print)
    carries no floor, budget or "over budget". With `timing` (or VERLSTUDY_TIMING=1) it is the maintainers'
    report: the floor explained, seconds beyond it, each lesson's budget, and the lessons over it flagged."""
    timed = timing_wanted(timing)
    lines = ["# Course run" + (" (interrupted: partial)" if interrupted else ""), ""]
    if timed and floor is not None:
        lines += [f"Floor: {floor.seconds:.1f} s. {FLOOR_TEXT}", ""]
    if timed:
        lines += [
            "| lesson | status | seconds | beyond floor | budget | claims reproduced | exercises correct |",
            "| --- | --- | ---: | ---: | ---: | --- | --- |",
        ]
    else:
        lines += [
            "| lesson | status | seconds | claims reproduced | exercises correct |",
            "| --- | --- | ---: | --- | --- |",
        ]
    for r in results:
        claims = f"{r.claims_reproduced}/{r.claims_total}" if r.claims_total else "-"
        correct = sum(e["verdict"] == "correct" for e in r.exercises)
        exercises = f"{correct}/{len(r.exercises)}" if r.exercises else "-"
        if not timed:
            lines.append(f"| {r.name} | {r.status} | {r.seconds:.1f} | {claims} | {exercises} |")
            continue
        beyond = beyond_floor(r, floor)
        shown = "-" if beyond is None else f"{beyond:+.1f}" + (" **over budget**" if over_budget(r, floor) else "")
        budget = f"{r.lesson.budget_s:g}" if r.lesson else "-"
        lines.append(f"| {r.name} | {r.status} | {r.seconds:.1f} | {shown} | {budget} | {claims} | {exercises} |")
    # a lesson a stop left unexecuted has not failed: it is counted apart, so "N failed" is only what ran and failed
    unrun = [r for r in results if r.status in ("not run", "interrupted")]
    failed = [r for r in results if r.status != "passed"]
    counts = f"{len(results) - len(failed)} passed, {len(failed) - len(unrun)} failed"
    lines += ["", counts + (f", {len(unrun)} not run" if unrun else "")]
    for r in failed:
        where = f" (code cell {r.failed_cell})" if r.failed_cell is not None else ""
        why = NEVER_STARTED if r.status == "not run" else r.error or r.status
        lines.append(f"- {r.name}: {why}{where}")
    over = [r.name for r in results if over_budget(r, floor)]
    if timed and over:
        lines.append(f"\nOver budget (flagged, not failed): {', '.join(over)}")
    if out is not None:
        lines += ["", "Next:"]
        if interrupted:  # a stopped run sends nobody to the lab: it says how to finish, and where what ran is
            written = [r for r in results if r.output is not None and Path(r.output).is_file()]
            if written:
                lines.append(f"- {len(written)} executed notebook(s) are in `{out}`")
            lines.append("- run the same command again to execute the lessons that did not finish")
        else:
            lines += [f"{EXECUTED_IN}`{out}`", *next_steps()]
    return "\n".join(lines) + "\n"


def relocated(report: str, out: Path) -> str:
    """`report` (a stored report) naming `out` as where its executed notebooks are: a run folder copied or moved
    since it ran keeps a report naming the folder it ran in."""
    lines = report.split("\n")
    return "\n".join(f"{EXECUTED_IN}`{out}`" if line.startswith(EXECUTED_IN) else line for line in lines)


def next_steps(checkout: bool | None = None) -> list[str]:
    """Where a learner goes after a run: `make` targets in a checkout, `verlstudy init` for an installed package."""
    if checkout is None:
        checkout = resources.checkout_root() is not None
    if checkout:
        return [
            "- start with `make lab`: JupyterLab on the student edition (`student/`), lesson 00 first",
            "- `notebooks/` is the full edition, every solution in place: open it after you have tried",
        ]
    return [
        "- copy the course with `verlstudy init DIR`, then start with `jupyter lab DIR/student`: the student "
        'edition, lesson 00 first (`pip install "verlstudy[lab]"` for JupyterLab)',
        "- `DIR/notebooks` is the full edition, every solution in place: open it after you have tried",
    ]


def _case(suite: ET.Element, classname: str, name: str, seconds: float = 0.0) -> ET.Element:
    return ET.SubElement(suite, "testcase", classname=classname, name=name, time=f"{seconds:.3f}")


def _lesson_suite(root: ET.Element, r: RunResult, floor: RunResult | None) -> None:
    classname = f"verlstudy.lessons.{r.name}"
    where = f"executed notebook: {r.output}" if r.output else "no executed notebook was written"
    suite = ET.SubElement(root, "testsuite", name=r.name)
    run = _case(suite, classname, "execution", r.seconds)
    if r.status != "passed":
        cell = f"code cell {r.failed_cell}: " if r.failed_cell is not None else ""
        failure = ET.SubElement(run, "failure", message=f"{r.status}: {cell}{r.error}"[:500])
        failure.text = f"{cell}{r.error}\n{where}"
    beyond = beyond_floor(r, floor)
    budget_note = ""
    if beyond is not None and r.lesson is not None:
        budget_note = f"{beyond:+.1f} s beyond the floor, budget {r.lesson.budget_s:g} s"
    if over_budget(r, floor):
        budget_note += " (over budget: flagged; benchmarks/course_time.py fails on it)"
    ET.SubElement(run, "system-out").text = f"{where}\n{budget_note}".strip()
    for c in r.claims:
        case = _case(suite, classname, f"claim: {c['name']}")
        if not c["reproduced"]:
            message = f"claim {c['name']!r} not reproduced (code cell {c['cell']})"
            failure = ET.SubElement(case, "failure", message=message)
            failure.text = f"ours {c['ours']}, expected {c['expected']}\n{where}"
    for e in r.exercises:
        case = _case(suite, classname, f"exercise {e['id']}")
        if e["verdict"] == "not attempted":
            ET.SubElement(case, "skipped", message="not attempted")
        elif e["verdict"] != "correct":
            message = f"exercise {e['id']}: {e['verdict']} (code cell {e['cell']})"
            failure = ET.SubElement(case, "failure", message=message)
            failure.text = f"{e['message']}\n{where}"
    suite.set("tests", str(len(suite.findall("testcase"))))
    suite.set("failures", str(len(suite.findall("testcase/failure"))))
    suite.set("skipped", str(len(suite.findall("testcase/skipped"))))


def junit_xml(results: list[RunResult], floor: RunResult | None = None) -> str:
    """JUnit XML: a suite per lesson with an execution case, a case per claim and a case per exercise."""
    root = ET.Element("testsuites", name="verlstudy course")
    for r in results:
        _lesson_suite(root, r, floor)
    for key in ("tests", "failures", "skipped"):
        root.set(key, str(sum(int(s.get(key, "0")) for s in root.findall("testsuite"))))
    return ET.tostring(root, encoding="unicode")


# ---------------------------------------------------------------- the results file the course_run tests read


def _as_dict(r: RunResult) -> dict[str, object]:
    return {
        "lesson": r.lesson.number if r.lesson else None,
        "status": r.status,
        "seconds": r.seconds,
        "claims_reproduced": r.claims_reproduced,
        "claims_total": r.claims_total,
        "error": r.error,
        "output": str(r.output) if r.output else None,
        "failed_cell": r.failed_cell,
        "claims": r.claims,
        "exercises": r.exercises,
    }


def results_json(results: list[RunResult], floor: RunResult | None, *, interrupted: bool = False) -> str:
    data = {"floor": _as_dict(floor) if floor else None, "lessons": [_as_dict(r) for r in results]}
    return json.dumps({**data, "interrupted": interrupted}, indent=1)


def read_results(path: Path) -> tuple[list[RunResult], RunResult | None]:
    """(lesson results, floor) from a file `verlstudy run --results` wrote."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path} is not a results file written by `verlstudy run --results`: {e}") from e

    def load(d: dict) -> RunResult:
        lesson = registry.get_lesson(d["lesson"]) if d["lesson"] is not None else None
        output = Path(d["output"]) if d["output"] else None
        fields = {k: d[k] for k in ("claims_reproduced", "claims_total", "error", "failed_cell", "claims", "exercises")}
        return RunResult(lesson, d["status"], d["seconds"], output=output, **fields)

    try:
        floor = load(data["floor"]) if data.get("floor") else None
        return [load(d) for d in data["lessons"]], floor
    except (KeyError, TypeError, AttributeError, ValueError, LookupError) as e:  # JSON, but not this file's shape
        raise ValueError(
            f"{path} is not a results file written by `verlstudy run --results` (no {e}): run the course again"
        ) from e
