"""A site page around nbconvert's cells: sidebar, contents, previous/next, collapsed solutions, no scripts.

nbconvert's `basic` template gives the cells alone (no <head>, no require.js/MathJax/jQuery from a CDN);
this module wraps them in a page of its own with inline CSS, so the site opens from a USB stick.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# Every cell nbconvert's basic template writes starts like this, and carries the notebook cell's id
# (a tagged cell's class list goes on with celltag_<tag> classes)
CELL_START = re.compile(r'(?=<div class="cell border-box-sizing [a-z_]+ rendered[^"]*" id="cell-id=)')
CELL_ID = re.compile(r'^<div class="cell border-box-sizing [a-z_]+ rendered[^"]*" id="cell-id=([^"]+)"')
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
details{border:1px solid #dde;border-radius:4px;padding:.2em .8em;margin:.6em 0}
details>summary{cursor:pointer;color:#1f5aa6;font-weight:600}
details.figure-data{border:none;padding:0}
details.figure-data>summary{font-weight:normal;font-size:13px}
.anchor-link{visibility:hidden;margin-left:.3em;text-decoration:none}
h2:hover .anchor-link,h3:hover .anchor-link{visibility:visible}
@media (max-width:800px){.layout{display:block}nav.sidebar{position:static;height:auto;width:auto}}
@media print{nav.sidebar,.pager{display:none}}
"""


@dataclass(frozen=True)
class PageLink:
    """A page of the site: its file name (relative to the page's own folder) and its label."""

    href: str
    label: str


def split_cells(body: str) -> tuple[str, list[tuple[str, str]]]:
    """(text before the first cell, [(cell id, the cell's HTML)]) of nbconvert's basic-template body."""
    if not isinstance(body, str):
        raise TypeError(f"body must be the HTML string nbconvert wrote, got {type(body).__name__}")
    head, *chunks = CELL_START.split(body)
    cells = []
    for chunk in chunks:
        match = CELL_ID.match(chunk)
        if match is None:  # the split only cuts where CELL_ID matches
            raise ValueError(f"not a cell of nbconvert's basic template: {chunk[:80]!r}")
        cells.append((match.group(1), chunk))
    return head, cells


def collapse_cells(body: str, summaries: Mapping[str, str], css_class: str = "solution") -> str:
    """Wrap each cell whose id is in `summaries` in a closed <details> with that summary (no script needed).

    Consecutive cells with the same summary share one <details>, so a solution and its notes open together.
    """
    head, cells = split_cells(body)
    unknown = set(summaries) - {cell_id for cell_id, _ in cells}
    if unknown:
        raise ValueError(f"no cell with id {sorted(unknown)} in the page (ids must come from the rendered notebook)")
    parts, open_summary = [head], None
    for cell_id, chunk in cells:
        summary = summaries.get(cell_id)
        if summary != open_summary:
            if open_summary is not None:
                parts.append("</details>\n")
            if summary is not None:
                parts.append(f'<details class="{css_class}"><summary>{html.escape(summary)}</summary>\n')
            open_summary = summary
        parts.append(chunk)
    if open_summary is not None:
        parts.append("</details>\n")
    return "".join(parts)


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
) -> str:
    """A whole page: sidebar (index, lessons, this page's contents), previous/next links, the body, inline CSS.

    `current` is the href of this page among `lessons` (None for the index and other pages); the pager
    links to its neighbours.
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
    toc = f"<h2>On this page</h2><ul>{_links(sections)}</ul>" if sections else ""
    badge = f' <span class="edition">{e(edition)}</span>' if edition else ""
    sidebar = (
        f'<nav class="sidebar"><a href="{e(index.href)}"><strong>verlstudy</strong></a>{badge}'
        f"<h2>Lessons</h2><ul class=lessons>{_links(lessons, current)}</ul>"
        + (f"<h2>More</h2><ul>{_links(extra)}</ul>" if extra else "")
        + f"{toc}</nav>"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{CSS}{pygments_css()}</style></head>\n"
        f'<body><div class="layout">{sidebar}<main>{pager}{body}{pager}</main></div></body></html>\n'
    )


def pygments_css() -> str:
    """Colours for the code cells nbconvert highlighted (its own CSS comes only with its CDN templates)."""
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(style="default").get_style_defs(".highlight")
