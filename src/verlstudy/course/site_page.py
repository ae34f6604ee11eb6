"""A site page around nbconvert's cells: sidebar, contents, previous/next, collapsed solutions, no scripts.

The site's nbconvert template (site_template/, extending `basic`) gives the cells alone (no <head>, no
require.js/MathJax/jQuery from a CDN) and writes the closed <details> that collapse_cells asks for; this
module wraps them in a page of its own with inline CSS, so the site opens from a USB stick.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import nbformat

from verlstudy.kit.i18n import _

HEADING = re.compile(r'<h2 id="([^"]+)">(.*?)<a class="anchor-link"', re.DOTALL)
TAG = re.compile(r"<[^>]+>")

CSS = """
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d1d1f}
.layout{display:flex;align-items:flex-start}
nav.sidebar{position:sticky;top:0;flex:0 0 17em;height:100vh;overflow:auto;box-sizing:border-box;
 padding:1em;background:#f5f6f8;border-right:1px solid #dde;font-size:13px}
nav.sidebar ol,nav.sidebar ul{padding-left:1.2em;margin:.3em 0}
nav.sidebar .current>a{font-weight:bold}
nav.sidebar ul.lessons{list-style:none;padding-left:0}
nav.sidebar ul.lessons li{margin:.25em 0}
nav.sidebar h2{font-size:13px;text-transform:uppercase;letter-spacing:.05em;color:#667;margin:1em 0 .2em}
main{flex:1;min-width:0;max-width:56em;padding:1em 2em 4em}
.pager{display:flex;justify-content:space-between;gap:1em;margin:.5em 0 1.5em;font-size:14px}
.edition{display:inline-block;font-size:12px;padding:.1em .6em;border-radius:1em;background:#e8eefb;color:#1f5aa6}
.sidebar a.language{font-size:13px;margin-left:.5em}
a{color:#1f5aa6}
pre{overflow-x:auto;font-size:13px;line-height:1.35;margin:.3em 0}
.prompt{display:none}
.input_area{background:#f7f7f9;border:1px solid #e3e3e8;border-radius:4px;padding:.2em .6em;margin:.6em 0 .2em}
.output_area pre{padding:.2em .6em;border-left:3px solid #e3e3e8;white-space:pre-wrap;overflow-wrap:anywhere}
.output_png img,.rendered_html img{max-width:100%;height:auto}
table{border-collapse:collapse;margin:.6em 0;font-size:13px}
td,th{border-bottom:1px solid #ddd;padding:.25em .7em;text-align:left;vertical-align:top}
th{background:#f5f6f8}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
td[style*=right],th[style*=right]{font-variant-numeric:tabular-nums}
details{border:1px solid #dde;border-radius:4px;padding:.2em .8em;margin:.6em 0}
details>summary{cursor:pointer;color:#1f5aa6;font-weight:600}
details.figure-data{border:none;padding:0}
details.figure-data>summary{font-weight:normal;font-size:13px}
.anchor-link{visibility:hidden;margin-left:.3em;text-decoration:none}
h2:hover .anchor-link,h3:hover .anchor-link{visibility:visible}
@media (max-width:800px){.layout{display:block}nav.sidebar{position:static;height:auto;width:auto}}
@media print{nav.sidebar,.pager{display:none}}
:root{color-scheme:light dark}
@media (prefers-color-scheme:dark){
body{color:#e4e4e7;background:#17181c}
nav.sidebar{background:#1f2026;border-right-color:#33343c}
nav.sidebar h2{color:#9a9cab}
a,details>summary{color:#8ab4f8}
.edition{background:#24324d;color:#8ab4f8}
.input_area{background:#1f2026;border-color:#33343c}
.output_area pre{border-left-color:#33343c}
td,th{border-bottom-color:#33343c}
th{background:#1f2026}
details{border-color:#33343c}
.output_png img,.rendered_html img{background:#fff}
}
"""


@dataclass(frozen=True)
class PageLink:
    """A page of the site: its file name (relative to the page's own folder) and its label."""

    href: str
    label: str


SITE_METADATA = "verlstudy_site"  # what the site template reads from a cell (site_template/index.html.j2)


def collapse_cells(
    nb: nbformat.NotebookNode, summaries: Mapping[str, str], css_class: str = "solution"
) -> nbformat.NotebookNode:
    """Mark each cell of `nb` whose id is in `summaries` to go into a closed <details> with that summary.

    The site's nbconvert template writes the <details> (no script needed). Consecutive cells with the same
    summary share one <details>, so a solution and its notes open together. `nb` is a copy the caller owns.
    """
    if not isinstance(nb, nbformat.NotebookNode):
        raise TypeError(f"nb must be the notebook to render, got {type(nb).__name__}")
    unknown = set(summaries) - {cell.get("id") for cell in nb.cells}
    if unknown:
        raise ValueError(f"no cell with id {sorted(unknown)} in the page (ids must come from the rendered notebook)")
    for cell in nb.cells:
        cell.metadata.pop(SITE_METADATA, None)
    groups: list[list[nbformat.NotebookNode]] = []
    open_summary = None
    for cell in nb.cells:
        summary = summaries.get(cell.get("id"))
        if summary is not None and summary == open_summary:
            groups[-1].append(cell)
        elif summary is not None:
            groups.append([cell])
        open_summary = summary
    for group in groups:
        group[0].metadata[SITE_METADATA] = {"details": summaries[group[0]["id"]], "details_class": css_class}
        group[-1].metadata.setdefault(SITE_METADATA, {})["details_end"] = True
    return nb


def contents(body: str) -> list[PageLink]:
    """The page's `##` sections as links to their anchors, in order (nbconvert gives each heading an id)."""
    found = []
    for anchor, inner in HEADING.findall(body):
        label = html.unescape(TAG.sub("", inner)).strip()
        found.append(PageLink(f"#{anchor}", label))
    return found


def _links(items: Sequence[PageLink], current: str | None = None) -> str:
    return "".join(
        f'<li{" class=current" if item.href == current else ""}><a href="{html.escape(item.href)}">'
        f"{html.escape(item.label)}</a></li>"
        for item in items
    )


def page_html(
    title: str,
    body: str,
    *,
    lessons: Sequence[PageLink],
    current: str | None = None,
    index: PageLink = PageLink("index.html", "Course index"),
    extra: Sequence[PageLink] = (),
    edition: str = "",
    language: str = "en",
    switch: PageLink | None = None,
) -> str:
    """A whole page: sidebar (index, lessons, this page's contents), previous/next links, the body, inline CSS.

    `current` is the href of this page among `lessons` (None for the index and other pages); the pager
    links to its neighbours. `language` is the page's HTML language tag; `switch` links the same page in the
    course's other language (issue 45), shown at the top of the sidebar.
    """
    if current is not None and current not in [lesson.href for lesson in lessons]:
        raise ValueError(f"current page {current!r} is not one of the lessons {[item.href for item in lessons]}")
    e = html.escape
    pager = ""
    if current is not None:
        at = [lesson.href for lesson in lessons].index(current)
        before = lessons[at - 1] if at > 0 else None
        after = lessons[at + 1] if at + 1 < len(lessons) else None
        left = f'<a rel="prev" href="{e(before.href)}">&larr; {e(before.label)}</a>' if before else "<span></span>"
        right = f'<a rel="next" href="{e(after.href)}">{e(after.label)} &rarr;</a>' if after else "<span></span>"
        pager = f'<div class="pager">{left}<a href="{e(index.href)}">{e(index.label)}</a>{right}</div>'
    sections = contents(body)
    toc = f"<h2>{e(_('On this page'))}</h2><ul>{_links(sections)}</ul>" if sections else ""
    badge = f' <span class="edition">{e(edition)}</span>' if edition else ""
    if switch is not None:
        badge += f' <a class="language" href="{e(switch.href)}">{e(switch.label)}</a>'
    sidebar = (
        f'<nav class="sidebar"><a href="{e(index.href)}"><strong>verlstudy</strong></a>{badge}'
        f"<h2>{e(_('Lessons'))}</h2><ul class=lessons>{_links(lessons, current)}</ul>"
        + (f"<h2>{e(_('More'))}</h2><ul>{_links(extra)}</ul>" if extra else "")
        + f"{toc}</nav>"
    )
    return (
        f'<!DOCTYPE html>\n<html lang="{e(language)}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{CSS}{pygments_css()}</style></head>\n"
        f'<body><div class="layout">{sidebar}<main>{pager}{body}{pager}</main></div></body></html>\n'
    )


def pygments_css() -> str:
    """Colours for the code cells nbconvert highlighted (its own CSS comes only with its CDN templates)."""
    from pygments.formatters import HtmlFormatter

    light = HtmlFormatter(style="default").get_style_defs(".highlight")
    # the dark scheme's code colours: the light ones are unreadable on a dark cell (CSS only, no toggle script)
    dark = HtmlFormatter(style="monokai").get_style_defs(".highlight")
    return f"{light}\n@media (prefers-color-scheme:dark){{\n{dark}\n}}"
