"""The rendered site, two editions from one command: `out/` in full (to project) and `out/student/`.

Every executed lesson becomes a page with a sidebar (index, every lesson, this page's sections),
previous/next links, claims tables as tables and figures at readable size; the student edition
collapses each solution behind "show solution" and moves "after you try" text after its exercise.
No page loads anything from the network: the site works from a USB stick.
"""

from __future__ import annotations

import copy
import html
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import nbformat

from verlstudy.course import plan, registry, student
from verlstudy.course.files import MANIFEST, check_out_dir, is_site_page, write_owned
from verlstudy.course.outcomes import notebook_records
from verlstudy.course.registry import Lesson
from verlstudy.course.site_cells import CLAIMS_HEADER, page_cells, table_html, text_to_html
from verlstudy.course.site_page import PageLink, collapse_cells, page_html
from verlstudy.kit import i18n, records
from verlstudy.kit.i18n import _, pick

EDITIONS = ("full", "student")
STUDENT_DIR = "student"
FACILITATOR_PAGE = "facilitator.html"
# a translated site (issue 45) lives in out/<lang>/ (and out/<lang>/student/), each page linked to its English twin
LANGUAGE_TAGS = {"en": "en", "zh_CN": "zh-CN"}
SWITCH_LABELS = {"en": "English", "zh_CN": "中文"}


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


TEMPLATE_DIR = Path(__file__).with_name("site_template")  # shipped in the wheel (pyproject package-data)


def render_cells_html(nb: nbformat.NotebookNode) -> str:
    """The cells of `nb` as HTML (the site's template, on nbconvert's `basic`: no page shell, no scripts).

    Figures are embedded; cells collapse_cells marked come inside their closed <details>.
    """
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        extra_template_basedirs=[str(TEMPLATE_DIR.parent)],
        template_name=TEMPLATE_DIR.name,
        embed_images=True,
        exclude_input_prompt=True,
    )
    body, _resources = exporter.from_notebook_node(nb)
    return body


def _with_cell_ids(nb: nbformat.NotebookNode) -> None:
    # a solution is collapsed by its cell id: give any cell without one (older notebooks) a stable id
    for i, cell in enumerate(nb.cells):
        if not cell.get("id"):
            cell["id"] = f"cell-{i}"


def collapsed_summaries(nb: nbformat.NotebookNode) -> dict[str, str]:
    """cell id -> the summary it is collapsed behind in the student site (solutions, after-you-try text)."""
    summaries = {}
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        exercise = next((t.removeprefix("exercise-") for t in tags if student.EXERCISE_TAG.match(t)), None)
        if "solution" in tags and exercise:
            summaries[cell["id"]] = f"show solution: exercise {exercise}"
        elif (waiting := student.after_you_try(cell)) is not None:
            summaries[cell["id"]] = f"after you try: exercise {waiting}"
    return summaries


def lesson_body(lesson: Lesson, nb: nbformat.NotebookNode, edition: str) -> str:
    """One lesson's cells as HTML for `edition` ('full' or 'student'); the executed notebook is not changed."""
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {EDITIONS}, got {edition!r}")
    page = page_cells(without_records(nb), claims_rows(nb))
    _with_cell_ids(page)
    if edition == "full":
        return render_cells_html(page)
    student.hold_back_answers(page, lesson)
    return render_cells_html(collapse_cells(page, collapsed_summaries(page)))


def _lesson_links(lessons: Sequence[Lesson], titles: Mapping[str, str] | None = None) -> list[PageLink]:
    titles = titles or {}
    return [
        PageLink(f"{lesson.stem}.html", f"{lesson.code} · {titles.get(lesson.stem, lesson.title)}")
        for lesson in lessons
    ]


def translated_title(nb: nbformat.NotebookNode) -> str | None:
    """A translated lesson's title: its first heading after "NN · " (None when the first cell has none)."""
    first = next((c.source for c in nb.cells if c.cell_type == "markdown"), "")
    heading = first.strip().splitlines()[0] if first.strip() else ""
    return heading.lstrip("#").strip().split(" · ", 1)[-1] if heading.startswith("#") else None


def index_body(
    lessons: Sequence[Lesson],
    executed: dict[str, nbformat.NotebookNode],
    edition: str,
    titles: Mapping[str, str] | None = None,
) -> str:
    """The index: the course map, the day plan, the facilitator guide (full edition) and every claims table.

    Its words, and the claims' names and upstream notes, are in the language `kit.i18n` has chosen; `titles` maps a
    lesson's stem to its title in that language (a translated edition's)."""
    e = html.escape
    titles = dict(titles or {})
    rows = []
    for lesson in lessons:
        prs = ", ".join(f'<a href="{link}">#{n}</a>' for n, link in zip(lesson.prs, lesson.pr_links, strict=True))
        rows.append(
            f'<tr><td>{lesson.code}</td><td><a href="{lesson.stem}.html">{e(titles.get(lesson.stem, lesson.title))}'
            f"</a></td><td>{prs or '-'}</td><td class=num>{lesson.minutes}</td>"
            f"<td>{e(lesson.upstream_verified)}</td></tr>"
        )
    total = sum(lesson.minutes for lesson in lessons)
    codes = {lesson.code for lesson in lessons}
    day = plan.day_plan(lessons=lessons, breaks=[b for b in plan.DAY_BREAKS if b[0] in codes], titles=titles)
    guide = (
        pick('<p>Running a workshop? Read the <a href="{href}">facilitator guide</a>.</p>', href=FACILITATOR_PAGE)
        if edition == "full"
        else _("<p>The student edition: every solution waits behind <em>show solution</em>; try first.</p>")
    )
    claims = "".join(
        f'<h3 id="claims-{lesson.code}">{lesson.code} · {e(titles.get(lesson.stem, lesson.title))}</h3>'
        + table_html(
            [_(h) for h in CLAIMS_HEADER],
            [(_(name), _(up), ours, _(done)) for name, up, ours, done in claims_rows(executed[lesson.stem])],
        )
        for lesson in lessons
    )
    return (
        "<h1>verlstudy</h1>" + _("<p>Runnable lessons from merged verl pull requests.</p>") + guide
        + "<h2 id=course-map>" + _("Course map") + "</h2><table><thead><tr>"
        + _("<th>NN</th><th>lesson</th><th>upstream PR</th><th class=num>minutes</th><th>verified against verl</th>")
        + f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        + pick("<p>{lessons} lessons, {minutes} minutes.</p>", lessons=len(lessons), minutes=total)
        + "<h2 id=day-plan>" + _("The day (<code>verlstudy plan</code>)") + f"</h2>{text_to_html(day)}"
        + "<h2 id=claims>" + _("Claims from the last run") + f"</h2>{claims}"
    )  # fmt: skip


def facilitator_body() -> str | None:
    """docs/facilitator.md as HTML, or None where the guide is not shipped (an installed package without docs)."""
    from nbconvert.filters.markdown import markdown2html

    path = registry.project_root() / "docs" / "facilitator.md"
    return markdown2html(path.read_text()) if path.is_file() else None


def notebook_links_to_pages(body: str, lessons: Sequence[Lesson]) -> str:
    """A lesson's link to another lesson's notebook (`00_start_here.ipynb#1F1B`) points at that lesson's page."""
    stems = {lesson.stem for lesson in lessons}

    def to_page(match: re.Match[str]) -> str:
        stem = match.group(2)
        return f"{match.group(1)}{stem}.html" if stem in stems else match.group(0)

    return re.sub(r'(href=")(?:\./)?(\d\d_[\w-]+)\.ipynb', to_page, body)


def edition_pages(
    lessons: Sequence[Lesson],
    executed: dict[str, nbformat.NotebookNode],
    edition: str,
    *,
    language: str = "en",
    other: tuple[str, str] | None = None,
) -> dict[str, str]:
    """file name -> page HTML for one edition of the site, in `language` (its lessons' notebooks in `executed`).

    `other` is (label, prefix) of the same edition in the other language: each page links to prefix + its name.
    """
    with i18n.held(None if language == "en" else language):  # the page's words in the page's language
        return _edition_pages(lessons, executed, edition, language, other)


def _edition_pages(
    lessons: Sequence[Lesson],
    executed: dict[str, nbformat.NotebookNode],
    edition: str,
    language: str,
    other: tuple[str, str] | None,
) -> dict[str, str]:
    titles = {} if language == "en" else {s: t for s, nb in executed.items() if (t := translated_title(nb))}
    links = _lesson_links(lessons, titles)
    guide = facilitator_body() if edition == "full" else None
    extra = [PageLink(FACILITATOR_PAGE, _("Facilitator guide"))] if guide is not None else []
    label = _("student edition") if edition == "student" else ""
    tag = LANGUAGE_TAGS.get(language, language)
    index = PageLink("index.html", _("Course index"))

    def page(title: str, body: str, name: str, current: str | None = None) -> str:
        switch = PageLink(other[1] + name, other[0]) if other else None
        return page_html(
            title, body, lessons=links, current=current, index=index, extra=extra, edition=label, language=tag,
            switch=switch,
        )  # fmt: skip

    pages = {}
    for lesson, link in zip(lessons, links, strict=True):
        body = notebook_links_to_pages(lesson_body(lesson, executed[lesson.stem], edition), lessons)
        pages[link.href] = page(link.label, body, link.href, link.href)
    pages["index.html"] = page("verlstudy", index_body(lessons, executed, edition, titles), "index.html")
    if guide is not None:
        pages[FACILITATOR_PAGE] = page(_("verlstudy · facilitator guide"), guide, FACILITATOR_PAGE)
    return pages


def check_site_out(out: Path) -> None:
    """Refuse an output folder holding anything a site build did not write (the notebooks, a learner's work)."""
    if not out.is_dir():
        return
    foreign = sorted(
        p.name
        for p in out.iterdir()
        if not (
            (p.is_file() and (p.suffix == ".html" or p.name == MANIFEST))
            or (p.is_dir() and (p.name == STUDENT_DIR or p.name in LANGUAGE_TAGS))
        )
    )
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise ValueError(f"{out} holds files a site build did not write ({shown}): choose an empty or a site folder")


def _read_executed(lessons: Sequence[Lesson], executed_dir: Path | None, hint: str) -> dict[str, nbformat.NotebookNode]:
    executed: dict[str, nbformat.NotebookNode] = {}
    for lesson in lessons:
        path = (Path(executed_dir) / lesson.notebook.name) if executed_dir else lesson.notebook
        if not path.exists():
            raise FileNotFoundError(f"no executed notebook for lesson {lesson.code}: {path} (run `{hint}`)")
        try:
            executed[lesson.stem] = nbformat.read(path, as_version=4)
        except (ValueError, OSError) as e:  # a corrupt notebook is named, not a traceback
            raise ValueError(f"{path} is not a readable notebook ({e}); run the lesson again") from e
    return executed


def build_site(
    out: Path,
    executed_dir: Path | None = None,
    lessons: Sequence[Lesson] | None = None,
    translation: tuple[str, Path] | None = None,
) -> list[Path]:
    """Render every executed lesson (from `executed_dir`, default the stored notebooks) in both editions.

    The full edition goes to `out/`, the student edition to `out/student/`; each has its own index. With a
    `translation` (language, folder of that edition's executed notebooks: `verlstudy edition LANG --run --out`),
    the same two editions in that language go to `out/<lang>/`, and every page links to its twin in the other.
    """
    out = Path(out)
    check_out_dir(out)
    check_site_out(out)
    lessons = list(lessons) if lessons else list(registry.LESSONS)
    executed = _read_executed(lessons, executed_dir, "verlstudy run")
    lang = translation[0] if translation else None
    if lang is not None and (lang not in SWITCH_LABELS or lang == "en"):
        raise ValueError(
            f"the site has no language {lang!r}: it has {', '.join(k for k in SWITCH_LABELS if k != 'en')}"
        )
    to_full = (SWITCH_LABELS[lang], f"{lang}/") if lang else None
    to_student = (SWITCH_LABELS[lang], f"../{lang}/student/") if lang else None
    files = edition_pages(lessons, executed, "full", other=to_full)
    student_pages = edition_pages(lessons, executed, "student", other=to_student)
    files |= {f"{STUDENT_DIR}/{name}": text for name, text in student_pages.items()}
    if translation is not None and lang is not None:
        translated = _read_executed(lessons, translation[1], f"verlstudy edition {lang} --run --out DIR")
        for edition, prefix, back in (("full", f"{lang}/", "../"), ("student", f"{lang}/student/", "../../student/")):
            pages = edition_pages(lessons, translated, edition, language=lang, other=(SWITCH_LABELS["en"], back))
            files |= {prefix + name: text for name, text in pages.items()}
    # the guard and manifest of every writing command: a page is replaced only if a site build wrote it, unchanged
    write_owned(out, files, "--out", legacy=is_site_page)
    return [out / name for name in files]
