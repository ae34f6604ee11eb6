"""`verlstudy progress`: where each learner is, one row per exercise, from their own notebooks.

The notebooks in a learner's folder (or in each learner's subfolder) are executed in fresh kernels with
the course runner into a build folder; nothing in the learner's folder is touched. Each exercise's
verdict is read from the records its checker cell left (kit.records); an exercise the notebook never
reached is "not attempted"; a notebook that cannot run (invalid JSON, a cell that raises outside an
exercise) is reported on its own row and never stops the others.
"""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import nbformat

from verlstudy.course import runner
from verlstudy.course.outcomes import exercise_verdicts
from verlstudy.course.runner import execute_with_papermill
from verlstudy.kit.exercises import registered_exercises
from verlstudy.kit.params import positive_int

LESSON_FILE = re.compile(r"(\d\d)_[A-Za-z0-9_]+\.ipynb")
VERDICTS = ("correct", "not yet right", "not attempted")


@dataclass(frozen=True)
class Row:
    learner: str
    lesson: str  # the notebook's stem
    exercise: str  # "N.M", or "-" for a row about the whole notebook
    verdict: str  # correct | not yet right | not attempted | broken notebook
    message: str = ""


def _holds_lessons(folder: Path) -> bool:
    return any(LESSON_FILE.fullmatch(p.name) for p in folder.iterdir())


def learner_folders(folders: Sequence[Path]) -> dict[str, Path]:
    """{learner: folder}: a folder holding lesson notebooks is one learner; else each such subfolder is."""
    found: dict[str, Path] = {}
    for folder in map(Path, folders):
        if not folder.is_dir():
            raise ValueError(f"{folder} is not a folder of notebooks (a learner's student folder, or one per learner)")
        if _holds_lessons(folder):
            found[folder.name] = folder
            continue
        subs = [
            s
            for s in sorted(folder.iterdir())
            if s.is_dir() and any(LESSON_FILE.fullmatch(p.name) for p in s.iterdir())
        ]
        if not subs:
            raise ValueError(f"{folder} holds no lesson notebooks (NN_name.ipynb), nor folders that do")
        found.update({f"{folder.name}/{s.name}": s for s in subs})
    return found


def _rows_for(learner: str, notebook: Path, build: Path) -> list[Row]:
    lesson = notebook.stem
    expected = registered_exercises(int(notebook.name[:2]))
    target = build / learner.replace("/", "__") / notebook.name
    status, error, _ = execute_with_papermill(notebook, target, {}, target.parent)
    rows: list[Row] = []
    verdicts: dict[str, dict[str, object]] = {}
    if target.exists():
        try:
            verdicts = exercise_verdicts(nbformat.read(target, as_version=4))
        except Exception:  # papermill could not even write a readable notebook
            verdicts = {}
    if status != "passed":
        rows.append(Row(learner, lesson, "-", "broken notebook", error or status))
    for exercise in expected:
        record = verdicts.get(exercise)
        if record is None:
            why = "the notebook stopped before this exercise" if status != "passed" else ""
            rows.append(Row(learner, lesson, exercise, "not attempted", why))
        else:
            rows.append(Row(learner, lesson, exercise, str(record["verdict"]), str(record.get("message", ""))))
    return rows


def collect(folders: Sequence[Path], build: Path, workers: int = 2) -> list[Row]:
    """Execute every learner's lesson notebooks (copies go to `build`) and return one row per exercise."""
    positive_int("workers", workers)
    jobs = [
        (learner, notebook)
        for learner, folder in learner_folders(folders).items()
        for notebook in sorted(folder.glob("*.ipynb"))
        if LESSON_FILE.fullmatch(notebook.name)
    ]
    try:
        chunks = runner.run_pool(jobs, lambda job: _rows_for(job[0], job[1], Path(build)), workers=workers)
    except runner.PoolInterrupted as stop:  # Ctrl-C: the notebooks that finished still count
        done = [row for _, chunk in sorted(stop.finished.items()) for row in chunk]
        raise ProgressInterrupted(done, len(stop.finished), len(jobs)) from None
    return [row for chunk in chunks for row in chunk]


class ProgressInterrupted(KeyboardInterrupt):
    """Ctrl-C during `collect`: the rows of the notebooks that finished, and how many of how many did."""

    def __init__(self, rows: list[Row], finished: int, total: int) -> None:
        super().__init__("interrupted")
        self.rows, self.finished, self.total = rows, finished, total


def table(rows: list[Row]) -> str:
    """Markdown: a row per exercise, then the total per learner and lesson."""
    lines = ["| learner | lesson | exercise | verdict | message |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| {r.learner} | {r.lesson} | {r.exercise} | {r.verdict} | {r.message[:120]} |" for r in rows]
    lines += [
        "",
        "| learner | lesson | correct | not yet right | not attempted |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        if r.exercise != "-":
            groups.setdefault((r.learner, r.lesson), []).append(r)
    for (learner, lesson), mine in groups.items():
        counts = [sum(r.verdict == v for r in mine) for v in VERDICTS]
        lines.append(f"| {learner} | {lesson} | {counts[0]} | {counts[1]} | {counts[2]} |")
    return "\n".join(lines) + "\n"


def to_csv(rows: list[Row]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["learner", "lesson", "exercise", "verdict", "message"])
    writer.writerows([r.learner, r.lesson, r.exercise, r.verdict, r.message] for r in rows)
    return out.getvalue()


def to_junit(rows: list[Row]) -> str:
    """A suite per learner; not yet right and broken are failures, not attempted is skipped."""
    root = ET.Element("testsuites", name="verlstudy progress")
    for learner in dict.fromkeys(r.learner for r in rows):
        suite = ET.SubElement(root, "testsuite", name=learner)
        for r in (r for r in rows if r.learner == learner):
            case = ET.SubElement(suite, "testcase", classname=f"{learner}.{r.lesson}", name=f"exercise {r.exercise}")
            if r.verdict == "not attempted":
                ET.SubElement(case, "skipped", message="not attempted")
            elif r.verdict != "correct":
                ET.SubElement(case, "failure", message=f"{r.verdict}: {r.message}"[:500])
        suite.set("tests", str(len(suite)))
    return ET.tostring(root, encoding="unicode")
