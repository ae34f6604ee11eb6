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
from dataclasses import astuple, dataclass
from pathlib import Path

import nbformat

from verlstudy.course import runner
from verlstudy.course.files import Manifest, check_out_dir, check_target, is_run_output
from verlstudy.course.outcomes import exercise_verdicts
from verlstudy.course.runner import NOTEBOOK_TIMEOUT_S, execute_with_papermill
from verlstudy.kit.exercises import registered_exercises
from verlstudy.kit.params import positive_int

LESSON_FILE = re.compile(r"(\d\d)_[A-Za-z0-9_]+\.ipynb")
VERDICTS = ("correct", "not yet right", "not attempted")
STOPPED_BEFORE = "the notebook stopped before this exercise"


@dataclass(frozen=True)
class Row:
    learner: str
    lesson: str  # the notebook's stem
    exercise: str  # "N.M", or "-" for a row about the whole notebook
    verdict: str  # correct | not yet right | not attempted | broken notebook | interrupted
    message: str = ""


def _holds_lessons(folder: Path) -> bool:
    return any(LESSON_FILE.fullmatch(p.name) for p in folder.iterdir())


def learner_folders(folders: Sequence[Path]) -> dict[str, Path]:
    """{learner: folder}: a folder holding lesson notebooks is one learner; else each such subfolder is.

    Two learners are never merged: a name already taken gets its parent folder's name in front, and names that
    still clash are refused, naming both folders.
    """
    found: dict[str, Path] = {}

    def add(name: str, folder: Path) -> None:
        if name in found and found[name].resolve() != folder.resolve():
            longer = f"{folder.resolve().parent.name}/{name}"
            if longer in found or not folder.resolve().parent.name:
                raise ValueError(
                    f"two learners are both called {name!r} ({found[name]} and {folder}): rename one folder"
                )
            name = longer
        found[name] = folder

    for folder in map(Path, folders):
        if not folder.is_dir():
            raise ValueError(f"{folder} is not a folder of notebooks (a learner's student folder, or one per learner)")
        name = folder.resolve().name or str(folder.resolve())  # `.` is the folder's own name, never ''
        if _holds_lessons(folder):
            add(name, folder)
            continue
        subs = [
            s
            for s in sorted(folder.iterdir())
            if s.is_dir() and any(LESSON_FILE.fullmatch(p.name) for p in s.iterdir())
        ]
        if not subs:
            raise ValueError(f"{folder} holds no lesson notebooks (NN_name.ipynb), nor folders that do")
        for sub in subs:
            add(f"{name}/{sub.name}", sub)
    return found


def _target(build: Path, learner: str, notebook: Path) -> Path:
    """Where a learner's executed copy goes: build/<learner as folders>/<notebook> (distinct learners never meet)."""
    return Path(build).joinpath(*learner.split("/"), notebook.name)


def _rows_for(
    learner: str, notebook: Path, build: Path, timeout_s: float = NOTEBOOK_TIMEOUT_S, manifest: Manifest | None = None
) -> list[Row]:
    lesson = notebook.stem
    expected = registered_exercises(int(notebook.name[:2]))
    target = _target(build, learner, notebook)
    if manifest is not None:
        manifest.pending([target])
    try:
        # saved after each cell: a time limit or a dying kernel keeps the verdicts checked before it
        status, error, _ = execute_with_papermill(notebook, target, {}, target.parent, timeout_s, save_each_cell=True)
    finally:
        if manifest is not None:
            manifest.record([target])
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
            why = STOPPED_BEFORE if status != "passed" else ""
            rows.append(Row(learner, lesson, exercise, "not attempted", why))
        else:
            rows.append(Row(learner, lesson, exercise, str(record["verdict"]), str(record.get("message", ""))))
    return rows


def collect(folders: Sequence[Path], build: Path, workers: int = 2, timeout_s: float = NOTEBOOK_TIMEOUT_S) -> list[Row]:
    """Execute every learner's lesson notebooks (copies go to `build`) and return one row per exercise.

    `build` passes the same guard and manifest as every writing command (files.check_target, files.Manifest):
    a copy there is replaced only if progress wrote it and nobody changed it since. Each notebook is stopped
    after `timeout_s` in all, so one learner's endless loop holds up nobody.
    """
    positive_int("workers", workers)
    jobs = [
        (learner, notebook)
        for learner, folder in learner_folders(folders).items()
        for notebook in sorted(folder.glob("*.ipynb"))
        if LESSON_FILE.fullmatch(notebook.name)
    ]
    build = check_target(build, "--build")
    check_out_dir(build)
    for folder in folders:  # executed copies never land in a learner's folder
        if build.resolve() == Path(folder).resolve() or Path(folder).resolve() in build.resolve().parents:
            raise ValueError(f"--build {build} lies inside {folder}: choose a build folder elsewhere")
    manifest = Manifest(build)
    manifest.refuse_foreign({_target(build, learner, nb): None for learner, nb in jobs}, "--build", is_run_output)
    try:
        chunks = runner.run_pool(
            jobs, lambda job: _rows_for(job[0], job[1], build, timeout_s, manifest), workers=workers
        )
    except runner.PoolInterrupted as stop:  # Ctrl-C: the notebooks that finished still count
        done = [row for _, chunk in sorted(stop.finished.items()) for row in chunk]
        for i in sorted(stop.cut):  # in flight: stopped, not broken
            learner, notebook = jobs[i]
            done.append(Row(learner, notebook.stem, "-", "interrupted", runner.STOPPED_WHILE_RUNNING))
        raise ProgressInterrupted(done, len(stop.finished), len(jobs)) from None
    return [row for chunk in chunks for row in chunk]


class ProgressInterrupted(KeyboardInterrupt):
    """Ctrl-C during `collect`: the rows of the notebooks that finished, and how many of how many did."""

    def __init__(self, rows: list[Row], finished: int, total: int) -> None:
        super().__init__("interrupted")
        self.rows, self.finished, self.total = rows, finished, total


def _md(text: str) -> str:
    """`text` as one Markdown table cell: a '|' or a line break in a folder name or message cannot split the row,
    an escape sequence cannot act on the terminal it is printed on."""
    return _xml(" ".join(text.replace("|", "\\|").splitlines()))


def _xml(text: str) -> str:
    """`text` with what XML 1.0 cannot hold (control characters in a folder name) shown as escapes."""
    return _NOT_XML.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def table(rows: list[Row]) -> str:
    """Markdown: a row per exercise, then the total per learner and lesson."""
    lines = ["| learner | lesson | exercise | verdict | message |", "| --- | --- | --- | --- | --- |"]
    lines += [
        f"| {_md(r.learner)} | {_md(r.lesson)} | {r.exercise} | {r.verdict} | {_md(r.message[:120])} |" for r in rows
    ]
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
        lines.append(f"| {_md(learner)} | {_md(lesson)} | {counts[0]} | {counts[1]} | {counts[2]} |")
    return "\n".join(lines) + "\n"


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet reads as the start of a formula


def csv_cell(value: str) -> str:
    """`value` safe to open in a spreadsheet: a cell that would start a formula gets a leading quote (shown as
    text); the bare "-" placeholder of a whole-notebook row is no formula and stays as it is."""
    return f"'{value}" if value.startswith(FORMULA_STARTS) and value != "-" else value


def to_csv(rows: list[Row]) -> str:
    """The rows as CSV; every cell (learner folder names, checkers' messages) is kept from running as a formula."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["learner", "lesson", "exercise", "verdict", "message"])
    writer.writerows([csv_cell(str(cell)) for cell in astuple(r)] for r in rows)
    return out.getvalue()


def to_junit(rows: list[Row]) -> str:
    """A suite per learner; not yet right and broken are failures, not attempted is skipped."""
    root = ET.Element("testsuites", name="verlstudy progress")
    for learner in dict.fromkeys(r.learner for r in rows):
        suite = ET.SubElement(root, "testsuite", name=_xml(learner))
        for r in (r for r in rows if r.learner == learner):
            classname = _xml(f"{learner}.{r.lesson}")
            case = ET.SubElement(suite, "testcase", classname=classname, name=f"exercise {r.exercise}")
            if r.verdict == "not attempted":
                ET.SubElement(case, "skipped", message="not attempted")
            elif r.verdict != "correct":
                ET.SubElement(case, "failure", message=_xml(f"{r.verdict}: {r.message}"[:500]))
        suite.set("tests", str(len(suite)))
    return ET.tostring(root, encoding="unicode")
