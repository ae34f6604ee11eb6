"""What a lesson page shows in place of raw text outputs: Markdown tables as tables, figure data collapsed.

The stored notebooks stay as they are (nbval compares their text); only the copy rendered for the
site is changed, output by output, before nbconvert turns it into HTML.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

import nbformat

from verlstudy.course.twins import coalesce_streams
from verlstudy.kit.tables import split_row

SEPARATOR = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$")
CLAIMS_HEADER = ("claim", "upstream", "ours", "reproduced")


# a backslash before any ASCII punctuation makes Markdown print it as it is: no emphasis, no links, no HTML,
# and a "|" inside a cell stays in that cell
MARKDOWN_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
RULES = {"": "---", "left": ":---", "right": "---:", "center": ":---:"}


def _cells(line: str) -> list[str]:
    return split_row(line)  # "\\|" (a kit.tables cell's own pipe) stays inside its cell


def _literal(text: object) -> str:
    """`text` as one Markdown table cell that nbconvert's Markdown filter renders as the text itself."""
    return MARKDOWN_PUNCTUATION.sub(r"\\\1", " ".join(str(text).split()))


def _markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]], rules: Sequence[str]) -> str:
    """HTML of a Markdown pipe table (cells taken literally) from nbconvert's Markdown filter (mistune)."""
    from nbconvert.filters.markdown import markdown2html

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cells) + " |"

    text = [line([_literal(c) for c in header]), line(rules), *(line([_literal(c) for c in row]) for row in rows)]
    return markdown2html("\n".join(text) + "\n")


def table_html(header: Sequence[str], rows: Sequence[Sequence[str]], align: Sequence[str] = ()) -> str:
    """An HTML table of plain-text cells (taken literally); `align` holds '', 'left', 'right' or 'center' per column.

    nbconvert's Markdown filter writes the table: the same renderer as the notebooks' Markdown cells.
    """
    if not header:
        raise ValueError("a table needs at least one header cell")
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"table row {list(row)!r} has {len(row)} cells; the header has {len(header)}")
    unknown = sorted(set(align) - set(RULES))
    if unknown:
        raise ValueError(f"alignment must be one of {sorted(RULES)}, got {unknown}")
    aligns = list(align)[: len(header)] + [""] * (len(header) - len(align))
    return _markdown_table(header, rows, [RULES[a] for a in aligns])


ROW = re.compile(r"^\s*\|.*\|\s*$")


def _pipe_table(lines: list[str]) -> str:
    """A table from printed Markdown pipe lines; the separator line (if any) keeps its alignment."""
    header, *rows = (_cells(line) for line in lines)
    width = len(header)
    rules = ["---"] * width
    if len(lines) > 1 and SEPARATOR.match(lines[1]):
        rules = (rows.pop(0) + rules)[:width]
    # Markdown drops a table whose rows differ in width: a row with a stray "|" inside a cell keeps its text
    # (the extra cells join the last column), a short row gets empty cells
    body = [
        [*c[: width - 1], " | ".join(c[width - 1 :])] if len(c) > width else c + [""] * (width - len(c)) for c in rows
    ]
    return _markdown_table(header, body, rules)


def text_to_html(text: str) -> str | None:
    """Text with its pipe tables (two or more lines `| ... |`) rendered as tables, the rest in <pre>; None if none."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    lines = text.rstrip("\n").split("\n")
    parts: list[str] = []
    plain: list[str] = []
    i, found = 0, False
    while i < len(lines):
        j = i
        while j < len(lines) and ROW.match(lines[j]):
            j += 1
        if j - i >= 2:
            if plain:
                parts.append(f"<pre>{html.escape(chr(10).join(plain))}</pre>")
                plain = []
            parts.append(_pipe_table([ln.strip() for ln in lines[i:j]]))
            i, found = j, True
            continue
        plain.append(lines[i])
        i += 1
    if not found:
        return None
    if any(p.strip() for p in plain):
        parts.append(f"<pre>{html.escape(chr(10).join(plain))}</pre>")
    return "".join(parts)


def split_figure_data(text: str) -> tuple[str, str] | None:
    """(text before, data dump) when `text` ends with what kit.plots prints beside a figure, else None.

    The dump is a title line ending in ':' followed by indented lines (one per series or bar).
    """
    lines = text.rstrip("\n").split("\n")
    i = len(lines)
    while i > 0 and lines[i - 1].startswith("  "):
        i -= 1
    if i == len(lines) or i == 0 or not lines[i - 1].rstrip().endswith(":") or lines[i - 1].startswith(" "):
        return None
    before = "\n".join(lines[: i - 1])
    return (before + "\n" if before else ""), "\n".join(lines[i - 1 :]) + "\n"


def _html_output(fragment: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_output("display_data", data={"text/html": fragment})


def _is_figure(output: nbformat.NotebookNode) -> bool:
    return output.get("output_type") in ("display_data", "execute_result") and any(
        k.startswith("image/") for k in output.get("data", {})
    )


def _collapse_figure_data(outputs: list[nbformat.NotebookNode]) -> list[nbformat.NotebookNode]:
    """Each figure first, then its printed data in a closed <details>: the numbers stay one click away."""
    result: list[nbformat.NotebookNode] = []
    for output in outputs:
        prev = result[-1] if result else None
        if _is_figure(output) and prev is not None and prev.get("output_type") == "stream":
            split = split_figure_data(prev.get("text", ""))
            if split is not None:
                before, dump = split
                result.pop()
                if before.strip():
                    result.append(nbformat.v4.new_output("stream", name=prev.get("name", "stdout"), text=before))
                result.append(output)
                result.append(
                    _html_output(
                        f'<details class="figure-data"><summary>figure data</summary><pre>{html.escape(dump)}</pre>'
                        "</details>"
                    )
                )
                continue
        result.append(output)
    return result


def claims_cell_html(text: str, rows: Sequence[Sequence[str]]) -> str:
    """The claims_table() output as an HTML table built from the claim records, its summary lines kept."""
    rest = [ln for ln in text.rstrip("\n").split("\n") if ln.strip() and not ln.lstrip().startswith("|")]
    summary = f"<pre>{html.escape(chr(10).join(rest))}</pre>" if rest else ""
    return f'<div class="claims">{table_html(CLAIMS_HEADER, rows)}{summary}</div>'


def _table_text(output: nbformat.NotebookNode) -> str:
    """The text that may hold a pipe table: a stream's text, or a display's `text/markdown` (kit.tables.Table)."""
    if output.get("output_type") == "stream":
        return output.get("text", "")
    if output.get("output_type") in ("display_data", "execute_result"):
        markdown = output.get("data", {}).get("text/markdown", "")
        text = "".join(markdown) if isinstance(markdown, list) else markdown
        if not text.startswith("| "):  # a table's Markdown opens with its header; a code view is left to nbconvert
            return ""
        return "\n".join(line for line in text.split("\n") if line.strip())  # notes are paragraphs: one a line
    return ""


def _is_claims_cell(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and cell.source.strip() == "claims_table()"


# "#6699's test" at the start of a line is a PR number to Jupyter, but a heading to nbconvert's Markdown
PR_AT_LINE_START = re.compile(r"^#(?=\d)", re.MULTILINE)


def page_cells(nb: nbformat.NotebookNode, claims: Sequence[Sequence[str]]) -> nbformat.NotebookNode:
    """Rewrite the outputs of `nb` (a copy the caller owns) for reading on the site; returns it."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = PR_AT_LINE_START.sub(r"\\#", cell.source)
        if cell.cell_type != "code":
            continue
        outputs = _collapse_figure_data(coalesce_streams(list(cell.get("outputs", []))))
        shown: list[nbformat.NotebookNode] = []
        for output in outputs:
            text = _table_text(output)
            if _is_claims_cell(cell) and "| claim |" in text and claims:
                shown.append(_html_output(claims_cell_html(text, claims)))
                continue
            fragment = text_to_html(text) if text else None
            shown.append(_html_output(fragment) if fragment is not None else output)
        cell.outputs = shown
    return nb
