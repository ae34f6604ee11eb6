"""The rendered site: every executed lesson as a standalone HTML page, and an index with the claims."""

from __future__ import annotations

import copy
import html
from collections.abc import Sequence
from pathlib import Path

import nbformat

from verlstudy.course import registry
from verlstudy.course.files import check_out_dir, write_all
from verlstudy.course.outcomes import notebook_records
from verlstudy.course.registry import Lesson
from verlstudy.kit import records


def claims_rows(nb: nbformat.NotebookNode) -> list[tuple[str, str, str, str]]:
    """(claim, upstream, ours, reproduced) of every claim the executed notebook recorded, in order."""
    return [
        (str(r["name"]), str(r["upstream"]), str(r["ours"]), "yes" if r["reproduced"] else "no")
        for r in notebook_records(nb, "claim")
    ]


def without_records(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of `nb` without the record outputs (data for the tools, not for readers)."""
    page = copy.deepcopy(nb)
    for cell in page.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if set(o.get("data", {})) != {records.RECORD_MIME}]
    return page


def render_notebook_html(nb: nbformat.NotebookNode) -> str:
    """A standalone HTML page for an executed notebook, figures embedded as data URIs."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="classic", embed_images=True, exclude_input_prompt=False)
    body, _ = exporter.from_notebook_node(without_records(nb))
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
    check_out_dir(out)
    lessons = list(lessons) if lessons else list(registry.LESSONS)
    executed: dict[str, nbformat.NotebookNode] = {}
    for lesson in lessons:
        path = (Path(executed_dir) / lesson.notebook.name) if executed_dir else lesson.notebook
        if not path.exists():
            raise FileNotFoundError(f"no executed notebook for lesson {lesson.code}: {path} (run `verlstudy run`)")
        executed[lesson.stem] = nbformat.read(path, as_version=4)
    files = {f"{stem}.html": render_notebook_html(nb) for stem, nb in executed.items()}
    files["index.html"] = index_html(lessons, executed)
    write_all(out, files)
    return [out / name for name in files]
