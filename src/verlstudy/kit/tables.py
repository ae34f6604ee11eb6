"""Tables as display objects: rendered as a table in JupyterLab and on the site, compared as stable text by nbval.

A `Table` displays with two representations: `text/markdown` (a pipe table, then its notes as paragraphs), which
JupyterLab and the site render, and a deterministic `text/plain` (the same pipe lines, then the notes), which nbval
compares and a plain Python session prints. Build one from cells (`Table.of`) or from pipe lines a helper already
writes (`Table.from_text`), and show it with `show_table`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from verlstudy.kit.params import check_str

_SEPARATOR = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$")
_RULES = {"": "---", "left": ":---", "right": "---:", "center": ":---:"}


def _cell(value: object) -> str:
    """One cell's Markdown: on one line, its backslashes and pipes escaped so the cell reads back as it was."""
    text = " ".join(str(value).split())
    return text.replace("\\", "\\\\").replace("|", "\\|")


def split_row(line: str) -> list[str]:
    """The cells of one pipe line `| a | b \\| c |`, unescaped (an escaped pipe or backslash stays in its cell)."""
    text = check_str("line", line, what="one pipe line like '| a | b |' (a str)").strip()
    cells, current, escaped, closed = [], [], False, False
    for char in text:
        closed = False
        if escaped:
            current.append(char if char in "\\|" else "\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "|":
            cells.append("".join(current))
            current, closed = [], True
        else:
            current.append(char)
    cells.append("".join(current) + "\\" * escaped)
    # the line's own outer pipes leave an empty first and last piece (an escaped closing pipe is not one)
    if text.startswith("|"):
        cells = cells[1:]
    if closed and len(cells) > 1:
        cells = cells[:-1]
    return [c.strip() for c in cells]


def _iterable(name: str, value: object, what: str) -> Iterable[object]:
    """`value` if it can be iterated over (a str counts, as before), else a one-line TypeError naming `name`."""
    if not isinstance(value, Iterable):
        raise TypeError(f"argument {name} must be {what}, got {type(value).__name__} {value!r:.60}")
    return value


@dataclass(frozen=True)
class Table:
    """A table of text cells with notes after it (summary lines), displayed as Markdown with a plain-text twin."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...] = ()
    align: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        header: Sequence[object],
        rows: Iterable[Sequence[object]],
        notes: Iterable[str] = (),
        align: Sequence[str] = (),
    ) -> Table:
        """A Table from cells of any type (each shown as str); rows must be as wide as the header.

        `align` holds '', 'left', 'right' or 'center' per column. Raises ValueError naming a bad row or alignment."""
        head = tuple(str(h) for h in _iterable("header", header, "a list of column names"))
        if not head:
            raise ValueError("a table needs at least one header cell")
        rows = _iterable("rows", rows, "a list of rows (each a list of cells)")
        body = tuple(
            tuple(str(c) for c in _iterable(f"rows[{i}]", row, "a list of cells")) for i, row in enumerate(rows)
        )
        for row in body:
            if len(row) != len(head):
                raise ValueError(f"table row {list(row)!r} has {len(row)} cells; the header has {len(head)}")
        align = [
            check_str(f"align[{i}]", a, what=f"one of {sorted(_RULES)}")
            for i, a in enumerate(_iterable("align", align, "a list of alignments"))
        ]
        unknown = sorted(set(align) - set(_RULES))
        if unknown:
            raise ValueError(f"alignment must be one of {sorted(_RULES)}, got {unknown}")
        if len(align) > len(head):
            raise ValueError(f"align has {len(align)} entries; the header has {len(head)} columns")
        if isinstance(notes, str):
            raise TypeError("notes must be a list of lines, not one str")
        notes = _iterable("notes", notes, "a list of lines")
        aligns = tuple(align) + ("",) * (len(head) - len(align))  # one per column: equal tables compare equal
        return cls(head, body, tuple(str(n) for n in notes), aligns)

    @classmethod
    def from_text(cls, text: str) -> Table:
        """A Table from printed pipe lines: a header line, an optional `| --- |` separator, rows; any lines after
        the last row become notes. Raises ValueError when `text` holds no pipe line or has lines before the table."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        lines = text.strip("\n").split("\n")
        n = 0
        while n < len(lines) and lines[n].strip().startswith("|"):
            n += 1
        if n == 0:
            raise ValueError(f"no table: the text must start with a pipe line '| a | b |', got {lines[0]!r}")
        table_lines, notes = lines[:n], [ln for ln in lines[n:] if ln.strip()]
        header = split_row(table_lines[0])
        align: list[str] = []
        rows = table_lines[1:]
        if rows and _SEPARATOR.match(rows[0].strip()):
            by_rule = {v: k for k, v in _RULES.items()}
            align = [by_rule.get(c.replace(" ", ""), "") for c in split_row(rows.pop(0))]
        width = len(header)
        # a row wider than the header keeps its text in the last column; a short one is padded
        body = []
        for line in rows:
            cells = split_row(line)
            cells = [*cells[: width - 1], " | ".join(cells[width - 1 :])] if len(cells) > width else cells
            body.append(cells + [""] * (width - len(cells)))
        return cls.of(header, body, notes, align[:width])

    def _lines(self) -> list[str]:
        lines = ["| " + " | ".join(_cell(h) for h in self.header) + " |"]
        lines.append("| " + " | ".join(_RULES[a] for a in self.align) + " |")
        lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in self.rows]
        return lines

    def markdown(self) -> str:
        """The table as Markdown: a pipe table, then each note as its own paragraph."""
        return "\n".join(self._lines()) + "".join(f"\n\n{n}" for n in self.notes) + "\n"

    def text(self) -> str:
        """The plain-text twin nbval compares: the pipe lines, then the notes, one a line (no trailing newline)."""
        return "\n".join(self._lines() + list(self.notes))

    def _repr_markdown_(self) -> str:
        return self.markdown()

    def __repr__(self) -> str:
        return self.text()

    __str__ = text


def show_table(table: Table | str) -> None:
    """Display a Table (or printed pipe lines, read with `Table.from_text`): a table in JupyterLab and on the site,
    its `text/plain` twin for nbval; a plain Python session prints the text. Returns None."""
    if isinstance(table, str):
        table = Table.from_text(table)
    if not isinstance(table, Table):
        raise TypeError(f"show_table takes a Table or its pipe text, got {type(table).__name__}")
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # plain Python: print the text
        print(table.text())
        return
    if get_ipython() is None:
        print(table.text())
    else:
        display({"text/markdown": table.markdown(), "text/plain": table.text()}, raw=True)
