"""The class progress matrix as one self-contained HTML page to project: inline CSS, no scripts, nothing fetched.

`verlstudy progress CLASS --html FILE --watch SECONDS` rewrites the page every SECONDS and the page reloads itself
at the same pace (a meta refresh), so a browser left open on it follows the room.
"""

from __future__ import annotations

import html
from pathlib import Path

from verlstudy.course.class_progress import STUCK_AFTER_WRONG, ClassProgress, legend, notes

GENERATOR = "verlstudy progress"  # the meta tag that marks a page this module wrote (files.Manifest's legacy test)

CSS = """
body{margin:1em 2em;font:15px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d1d1f}
h1{font-size:20px;margin:.2em 0}
p.when{color:#556;margin:.2em 0 1em}
table{border-collapse:collapse;font-size:14px}
th,td{border:1px solid #d5d7de;padding:.2em .45em;text-align:center;white-space:nowrap}
th.learner,td.learner{text-align:left;font-weight:600}
thead th{background:#f1f2f6;position:sticky;top:0}
td.correct{background:#cfeccf}
td.not-yet-right{background:#fde3b4}
td.stuck{background:#f6b3ad;font-weight:700}
td.solution-shown{background:#dcd6f7}
td.not-attempted{color:#889}
td.broken{background:#1d1d1f;color:#fff;font-weight:700}
td.no-notebook{color:#bbb}
ul.notes{margin:1em 0;padding-left:1.2em}
ul.notes li.stuck{color:#a4271b;font-weight:600}
.legend{font-size:13px;color:#445}
:root{color-scheme:light dark}
@media (prefers-color-scheme:dark){
body{color:#e4e4e7;background:#17181c}
p.when,.legend{color:#a0a2ad}
th,td{border-color:#3a3b44}
thead th{background:#24252c}
td.correct{background:#1f4d2a}
td.not-yet-right{background:#5a4214}
td.stuck{background:#6e211b}
td.solution-shown{background:#3b335f}
td.not-attempted{color:#8b8d99}
td.broken{background:#e4e4e7;color:#17181c}
td.no-notebook{color:#5c5e69}
ul.notes li.stuck{color:#ff8a7d}
}
"""


def page_html(progress: ClassProgress, refresh_s: float | None = None) -> str:
    """The page: title, time, the matrix (cells coloured by state, stuck cells red), the legend and the notes."""
    exercises = progress.exercises
    head = "".join(f"<th>{html.escape(e)}</th>" for e in exercises)
    rows = []
    for learner in progress.learners:
        cells = []
        for exercise in exercises:
            status = learner.statuses[exercise]
            kind = status.state.replace(" ", "-")
            if status.state == "not yet right" and status.wrong >= STUCK_AFTER_WRONG:
                kind += " stuck"
            title = html.escape(f"{exercise}: {status.state}" + (f": {status.message}" if status.message else ""))
            cells.append(f'<td class="{kind}" title="{title}">{html.escape(status.symbol)}</td>')
        rows.append(
            f'<tr><td class="learner">{html.escape(learner.name)}</td>{"".join(cells)}'
            f"<td>{learner.correct}/{len(exercises)}</td></tr>"
        )
    items = []
    for line in notes(progress):
        kind = ' class="stuck"' if line.startswith("  ") else ""
        items.append(f"<li{kind}>{html.escape(line.strip())}</li>")
    refresh = f'<meta http-equiv="refresh" content="{refresh_s:g}">' if refresh_s else ""
    when = f"{progress.now:%Y-%m-%d %H:%M:%S} UTC"
    again = f"; this page reloads every {refresh_s:g} s" if refresh_s else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="generator" content="{GENERATOR}">{refresh}'
        f"<title>verlstudy progress: {len(progress.learners)} learners</title><style>{CSS}</style></head><body>"
        f"<h1>verlstudy progress: {len(progress.learners)} learners, {len(exercises)} exercises</h1>"
        f'<p class="when">from the learners\' attempt logs at {when} (nothing executed){again}</p>'
        f'<table id="matrix"><thead><tr><th class="learner">learner</th>{head}<th>correct</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        f'<p class="legend">{html.escape(legend())}</p>'
        f'<ul class="notes">{"".join(items)}</ul>'
        "</body></html>\n"
    )


def is_progress_page(path: Path) -> bool:
    """Legacy (a folder without a manifest): an HTML file this module wrote carries its generator tag."""
    try:
        head = Path(path).read_text(encoding="utf-8", errors="replace")[:400]
    except OSError:
        return False
    return f'<meta name="generator" content="{GENERATOR}">' in head
