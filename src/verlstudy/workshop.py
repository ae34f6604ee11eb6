"""Workshop editions from the one source the tests check: the student edition and the rendered site.

Student edition: every cell tagged `solution` keeps its function signatures and docstrings, and each
body becomes `raise NotImplementedError("exercise N.M")`; the outputs of solution and checker cells
are cleared; everything else is kept. The checkers then print "not attempted yet".
"""

from __future__ import annotations

import ast
import html
import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import nbformat

from verlstudy import course
from verlstudy.course import Lesson

EXERCISE_TAG = re.compile(r"^exercise-(\d+)\.(\d+)$")
CLAIM_ROW = re.compile(r"^\| (?!claim \|)(?!---)(.+) \| (.+) \| (.+) \| (yes|no) \|$", re.M)


class MalformedExercise(ValueError):
    """A solution cell that the student edition cannot turn into a stub (named, with the reason)."""


def _exercise_id(cell: nbformat.NotebookNode, where: str, lesson: Lesson) -> str:
    tags = cell.metadata.get("tags", [])
    found = [m for t in tags if (m := EXERCISE_TAG.match(t))]
    if len(found) != 1:
        raise MalformedExercise(f"{where}: a 'solution' cell needs exactly one tag 'exercise-N.M', has {tags}")
    number, part = found[0].groups()
    if int(number) != lesson.number:
        raise MalformedExercise(f"{where}: tag exercise-{number}.{part} belongs to lesson {number}, not {lesson.code}")
    return f"{number}.{part}"


def stub_source(source: str, exercise_id: str, where: str = "solution cell") -> str:
    """Keep imports, signatures and docstrings; replace each function body with NotImplementedError."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise MalformedExercise(f"{where}: does not parse ({e.msg}, line {e.lineno})") from e
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    others = [n for n in tree.body if not isinstance(n, ast.FunctionDef | ast.Import | ast.ImportFrom)]
    if not functions or others:
        raise MalformedExercise(f"{where}: a solution cell may only define functions (and import)")
    lines = source.splitlines()
    out: list[str] = []
    cursor = 0
    for fn in functions:
        body_start = fn.body[0].lineno - 1
        doc = ast.get_docstring(fn, clean=False)
        keep_until = fn.body[0].end_lineno if doc is not None else body_start
        out += lines[cursor:keep_until]
        indent = " " * fn.body[0].col_offset
        out.append(f'{indent}raise NotImplementedError("exercise {exercise_id}")')
        cursor = fn.end_lineno or keep_until
    out += [line for line in lines[cursor:] if not line.strip()]
    return "\n".join(out).rstrip() + "\n"


def student_notebook(nb: nbformat.NotebookNode, lesson: Lesson) -> nbformat.NotebookNode:
    """The student edition of one lesson's notebook (a new notebook; the input is not changed)."""
    nb = nbformat.from_dict(nb)
    code_index = 0
    exercises = 0
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        code_index += 1
        tags = cell.metadata.get("tags", [])
        if "solution" not in tags:
            continue
        where = f"{lesson.notebook.name}, code cell {code_index - 1}"
        exercise_id = _exercise_id(cell, where, lesson)
        cell.source = stub_source(cell.source, exercise_id, where)
        cell.metadata["tags"] = ["exercise" if t == "solution" else t for t in tags]
        cell.outputs, cell.execution_count = [], None
        checker = next((c for c in nb.cells[i + 1 :] if c.cell_type == "code"), None)
        if checker is None or f'check_exercise("{exercise_id}"' not in checker.source:
            raise MalformedExercise(f"{where}: exercise {exercise_id} has no checker cell right after it")
        checker.outputs, checker.execution_count = [], None
        exercises += 1
    if exercises == 0:
        raise MalformedExercise(f"{lesson.notebook.name}: no cell tagged 'solution' (every lesson has exercises)")
    return nb


def _check_out_dir(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise ValueError(f"output folder {out} exists and is a file; name a folder")


def _write_all(out: Path, files: dict[str, str]) -> None:
    """Write every file into a sibling temporary folder, then move them in: nothing half-written."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        for name, text in files.items():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_text(text)
        out.mkdir(exist_ok=True)
        for name in files:
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).replace(out / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


class WouldOverwriteWork(ValueError):
    """The output folder holds student notebooks that differ from a fresh edition: a learner's work, maybe."""


def write_student_edition(out: Path, lessons: Sequence[Lesson] | None = None, *, force: bool = False) -> list[Path]:
    """Write the student edition of the lessons (default: all) into `out`; return the written paths.

    A notebook already in `out` that differs from what would be written (a learner ran or edited it)
    is never overwritten silently: without `force` nothing is written and the error names the files.
    """
    out = Path(out)
    _check_out_dir(out)
    lessons = list(lessons) if lessons else list(course.LESSONS)
    files = {}
    for lesson in lessons:
        nb = student_notebook(nbformat.read(lesson.notebook, as_version=4), lesson)
        files[lesson.notebook.name] = nbformat.writes(nb)
    edited = sorted(name for name, text in files.items() if (out / name).exists() and (out / name).read_text() != text)
    if edited and not force:
        raise WouldOverwriteWork(
            f"{out} already holds {len(edited)} notebook(s) that differ from a fresh student edition "
            f"({', '.join(edited)}): a learner's work? Choose another --out, or pass --force to overwrite them"
        )
    _write_all(out, files)
    return [out / name for name in files]


# ---------------------------------------------------------------- the site


def claims_rows(nb: nbformat.NotebookNode) -> list[tuple[str, str, str, str]]:
    """(claim, upstream, ours, reproduced) rows of the claims table a lesson's last cell printed."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    if not code:
        return []
    text = "".join(o.get("text", "") for o in code[-1].get("outputs", []))
    return [tuple(m.groups()) for m in CLAIM_ROW.finditer(text)]  # type: ignore[misc]


def render_notebook_html(nb: nbformat.NotebookNode) -> str:
    """A standalone HTML page for an executed notebook, figures embedded as data URIs."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="classic", embed_images=True, exclude_input_prompt=False)
    body, _ = exporter.from_notebook_node(nb)
    return body


def index_html(lessons: Sequence[Lesson], executed: dict[str, nbformat.NotebookNode]) -> str:
    """The site's index: the course map (links, PRs, minutes) and each lesson's claims table."""
    e = html.escape
    rows, sections = [], []
    for lesson in lessons:
        prs = ", ".join(f'<a href="{link}">#{n}</a>' for n, link in zip(lesson.prs, lesson.pr_links, strict=True))
        rows.append(
            f'<tr><td>{lesson.code}</td><td><a href="{lesson.stem}.html">{e(lesson.title)}</a></td>'
            f"<td>{prs or '-'}</td><td>{lesson.minutes}</td><td>{e(lesson.upstream_verified)}</td></tr>"
        )
        claims = claims_rows(executed[lesson.stem])
        body = "".join(
            f"<tr><td>{e(c)}</td><td>{e(u)}</td><td>{e(o)}</td><td>{e(r)}</td></tr>" for c, u, o, r in claims
        )
        sections.append(
            f'<h3 id="claims-{lesson.code}">{lesson.code} · {e(lesson.title)}</h3>'
            "<table><tr><th>claim</th><th>upstream</th><th>ours</th><th>reproduced</th></tr>"
            f"{body}</table>"
        )
    total = sum(lesson.minutes for lesson in lessons)
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>verlstudy</title>"
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}"
        "td,th{border-bottom:1px solid #ddd;padding:.2em .6em;text-align:left}</style></head><body>"
        "<h1>verlstudy</h1><p>Runnable lessons from merged verl pull requests.</p>"
        "<h2>Course map</h2><table><tr><th>NN</th><th>lesson</th><th>upstream PR</th><th>minutes</th>"
        f"<th>verified against verl</th></tr>{''.join(rows)}</table><p>{len(lessons)} lessons, {total} minutes.</p>"
        f"<h2>Claims from the last run</h2>{''.join(sections)}</body></html>\n"
    )


def build_site(out: Path, executed_dir: Path | None = None, lessons: Sequence[Lesson] | None = None) -> list[Path]:
    """Render every executed lesson (from `executed_dir`, default the stored notebooks) plus an index."""
    out = Path(out)
    _check_out_dir(out)
    lessons = list(lessons) if lessons else list(course.LESSONS)
    executed: dict[str, nbformat.NotebookNode] = {}
    for lesson in lessons:
        path = (Path(executed_dir) / lesson.notebook.name) if executed_dir else lesson.notebook
        if not path.exists():
            raise FileNotFoundError(f"no executed notebook for lesson {lesson.code}: {path} (run `verlstudy run`)")
        executed[lesson.stem] = nbformat.read(path, as_version=4)
    files = {f"{stem}.html": render_notebook_html(nb) for stem, nb in executed.items()}
    files["index.html"] = index_html(lessons, executed)
    _write_all(out, files)
    return [out / name for name in files]


# ---------------------------------------------------------------- the facilitator's day

# (after lesson, what, minutes): pauses placed where a lesson's ideas need time to settle
DAY_BREAKS: tuple[tuple[str, str, int], ...] = (("01", "Break", 15), ("03", "Lunch", 60), ("06", "Break", 15))
WRAP_UP_MINUTES = 15


def exercise_ids(lesson: Lesson) -> list[str]:
    """The exercise ids ('N.M') of a lesson, in notebook order, read from its solution cells' tags."""
    nb = nbformat.read(lesson.notebook, as_version=4)
    return [
        _exercise_id(cell, f"{lesson.stem} cell {i}", lesson)
        for i, cell in enumerate(nb.cells)
        if "solution" in cell.metadata.get("tags", [])
    ]


def _minutes_of_day(clock: str) -> int:
    match = re.fullmatch(r"(\d{1,2}):(\d{2})", clock) if isinstance(clock, str) else None
    if not match or int(match.group(1)) > 23 or int(match.group(2)) > 59:
        raise ValueError(f"start must be a time of day 'HH:MM' (24-hour), got {clock!r}")
    return int(match.group(1)) * 60 + int(match.group(2))


def day_plan(
    start: str = "09:00",
    breaks: Sequence[tuple[str, str, int]] = DAY_BREAKS,
    wrap_up_minutes: int = WRAP_UP_MINUTES,
    lessons: Sequence[Lesson] | None = None,
) -> str:
    """The workshop day as a markdown table: clock times from the registry's minutes, breaks in between."""
    lessons = list(lessons or course.LESSONS)
    codes = {lesson.code for lesson in lessons}
    for after, what, minutes in breaks:
        if after not in codes:
            raise ValueError(
                f"break {what!r} is placed after lesson {after!r}, which is not in the plan {sorted(codes)}"
            )
        if isinstance(minutes, bool) or not isinstance(minutes, int) or minutes <= 0:
            raise ValueError(f"break {what!r} needs a positive whole number of minutes, got {minutes!r}")
    if isinstance(wrap_up_minutes, bool) or not isinstance(wrap_up_minutes, int) or wrap_up_minutes < 0:
        raise ValueError(f"wrap_up_minutes must be a whole number >= 0, got {wrap_up_minutes!r}")
    now = _minutes_of_day(start)
    rows = ["| time | session | minutes | upstream PR |", "| --- | --- | ---: | --- |"]

    def add(label: str, minutes: int, prs: str = "") -> None:
        nonlocal now
        begin, end = now, now + minutes
        rows.append(
            f"| {begin // 60:02d}:{begin % 60:02d}-{end // 60:02d}:{end % 60:02d} | {label} | {minutes} | {prs} |"
        )
        now = end

    for lesson in lessons:
        add(f"{lesson.code} {lesson.title}", lesson.minutes, ", ".join(f"#{n}" for n in lesson.prs) or "-")
        for after, what, minutes in breaks:
            if after == lesson.code:
                add(what, minutes)
    if wrap_up_minutes:
        add("Wrap-up: questions, what to read next", wrap_up_minutes)
    if now > 24 * 60:
        raise ValueError(f"the plan runs past midnight from {start}; start earlier or split it over two days")
    return "\n".join(rows)
