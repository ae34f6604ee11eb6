"""Code on screen: the course's own mechanism (`show_source`), its fix as a change (`show_change`) and verl's
own code (`upstream_source`, `upstream_diff`), read at run time.

Each is displayed as a Markdown code block (highlighted by JupyterLab and by the site's renderer) with a
plain-text twin, and returned as a `CodeView`. The course's code may be stored in a notebook's outputs;
upstream's may not: cells that call `upstream_source` or `upstream_diff` are tagged `upstream-source`,
`verlstudy refresh` clears their outputs and nbval does not compare them, so facts about upstream carry
over while its code never enters the repository. Without verl (or without the earlier release) these
print one skip line and return None.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import textwrap
from dataclasses import dataclass
from pathlib import Path

from verlstudy.kit import upstream
from verlstudy.kit.params import check_int, check_str

UPSTREAM_TAG = "upstream-source"
FENCE = "````"  # four backticks: a shown source may itself hold a ``` fence in a docstring


@dataclass(frozen=True)
class CodeView:
    """A titled piece of code: `text` in `language` ('python' or 'diff'), displayed highlighted."""

    title: str
    text: str
    language: str = "python"

    def _repr_markdown_(self) -> str:
        return f"**{self.title}**\n\n{FENCE}{self.language}\n{self.text.rstrip()}\n{FENCE}\n"

    def __repr__(self) -> str:
        return f"# {self.title}\n{self.text.rstrip()}"

    def lines(self) -> list[str]:
        return self.text.rstrip("\n").splitlines()


def _display(view: CodeView) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # plain Python: print the text
        print(repr(view))
        return
    if get_ipython() is None:
        print(repr(view))
    else:
        display({"text/markdown": view._repr_markdown_(), "text/plain": repr(view)}, raw=True)


# ---------------------------------------------------------------- the course's own code


def _package_relative(path: str) -> str:
    parts = Path(path).parts
    return "/".join(parts[parts.index("verlstudy") :]) if "verlstudy" in parts else Path(path).name


def source_view(obj: object) -> CodeView:
    """The source of a course function or class as a CodeView (no line numbers: they move with every edit)."""
    if not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismethod(obj)):
        raise TypeError(f"show_source takes a function or a class, got {type(obj).__name__}")
    try:
        text = textwrap.dedent(inspect.getsource(obj))
        where = _package_relative(inspect.getsourcefile(obj) or "")
    except (OSError, TypeError) as e:
        raise TypeError(f"{getattr(obj, '__qualname__', obj)!r} has no Python source to show ({e})") from None
    return CodeView(f"{obj.__qualname__}, from {where}", text)


def show_source(obj: object) -> None:
    """Display the source of one of the course's functions or classes, highlighted (`source_view` returns it).

    Returns None, so a cell ending in `show_source(fn)` shows the code once."""
    _display(source_view(obj))


def change_view(before: object, after: object, *, title: str | None = None, context: int = 3) -> CodeView:
    """The unified diff from the source of course function (or class) `before` to that of `after`, as a 'diff'
    CodeView: the toy's fix as a change, the way verl's own diff is shown. The `def` lines are compared as
    written, so a renamed function shows its rename. Raises ValueError when the two sources are the same (a
    diff of nothing would show no fix)."""
    if isinstance(context, bool) or not isinstance(context, int) or context < 0:
        raise ValueError(f"context must be a non-negative int (lines around each change), got {context!r}")
    if title is not None and not isinstance(title, str):
        raise TypeError(f"title must be a str or None, got {type(title).__name__}")
    for name, value in (("before", before), ("after", after)):  # named here, not as source_view's argument
        if not (inspect.isfunction(value) or inspect.isclass(value) or inspect.ismethod(value)):
            raise TypeError(
                f"show_change's {name} must be a function or a class of the course (the toy before and after its "
                f"fix), got {type(value).__name__}"
            )
    old, new = source_view(before), source_view(after)
    old_name = f"{before.__qualname__}"  # type: ignore[attr-defined]
    new_name = f"{after.__qualname__}"  # type: ignore[attr-defined]
    old_lines, new_lines = old.text.rstrip("\n").splitlines(), new.text.rstrip("\n").splitlines()
    diff = list(difflib.unified_diff(old_lines, new_lines, old_name, new_name, lineterm="", n=context))
    if not diff:
        raise ValueError(f"{old_name} and {new_name} have the same source: there is no change to show")
    wheres = dict.fromkeys(view.title.split(", from ", 1)[1] for view in (old, new))
    where = " and ".join(wheres)
    heading = title if title is not None else f"{old_name} -> {new_name}, from {where}"
    return CodeView(heading, "\n".join(diff), language="diff")


def show_change(before: object, after: object, *, title: str | None = None, context: int = 3) -> None:
    """Display the unified diff between two of the course's functions (the toy before and after its fix),
    highlighted as a diff (`change_view` returns it). Returns None, so the cell shows it once."""
    _display(change_view(before, after, title=title, context=context))


# ---------------------------------------------------------------- verl's own code, from the installed releases


def _relative(path: str) -> str:
    if not isinstance(path, str) or not path.endswith(".py"):
        raise ValueError(
            f"path must be a .py file inside the verl package, like 'workers/engine/utils.py', got {path!r}"
        )
    return path.removeprefix("verl/")


def _root_for(release: str | None) -> str | None:
    """None for the installed verl (also when `release` names its version), else the fetched release."""
    if release is None:
        return None
    if upstream.verl_available() and upstream.verl_version() == release:
        return None
    return release


def _find_symbol(tree: ast.Module, symbol: str) -> ast.AST | None:
    node: ast.AST = tree
    for part in symbol.split("."):
        body = getattr(node, "body", [])
        found = None
        for child in body:
            names = [getattr(child, "name", None)]
            if isinstance(child, (ast.Assign, ast.AnnAssign)):
                targets = child.targets if isinstance(child, ast.Assign) else [child.target]
                names = [t.id for t in targets if isinstance(t, ast.Name)]
            if part in names:
                found = child
        if found is None:
            return None
        node = found
    return node


def symbol_lines(
    source: str, symbol: str | None, *, contains: str | None = None, context: int = 8
) -> tuple[int, list[str]]:
    """(first line number, lines) of `symbol` ('func', 'Class.method', a top-level name; None: the whole
    file) in `source`, decorators included; with `contains`, only `context` lines around the one line holding
    that text. Raises LookupError when the symbol or the text is not there, or when the text is on more than one
    line (the window would silently centre on the first: a cell would show code its prose does not describe)."""
    check_str("source", source, what="Python source text (a str)")
    if symbol is not None:
        check_str("symbol", symbol, what="a name like 'func' or 'Class.method', or None for the whole file")
    if contains is not None:
        check_str("contains", contains, what="the text of one line (a str) or None")
    check_int("context", context, minimum=0, kind="argument")
    lines = source.splitlines()
    start, end = 1, len(lines)
    if symbol:
        node = _find_symbol(ast.parse(source), symbol)
        if node is None:
            raise LookupError(f"no {symbol!r} in this file")
        decorators = getattr(node, "decorator_list", [])
        start = min([node.lineno, *(d.lineno for d in decorators)])
        end = node.end_lineno or node.lineno
    if contains is not None:
        hits = [i for i in range(start, end + 1) if contains in lines[i - 1]]
        if not hits:
            raise LookupError(f"no line holding {contains!r} in {symbol or 'the file'}")
        if len(hits) > 1:
            where, name = ", ".join(str(i) for i in hits), symbol or "the file"
            raise LookupError(f"{contains!r} is on {len(hits)} lines of {name} ({where}): give a text on one line only")
        start, end = max(start, hits[0] - context), min(end, hits[0] + context)
    return start, lines[start - 1 : end]


def _read(path: str, release: str | None) -> tuple[str, str]:
    """(source, version) of verl/`path` in a release (None: the installed one)."""
    root = _root_for(release)
    text, _ = upstream.upstream_file(_relative(path), root)
    return text, upstream.verl_version(root)


def _available(*releases: str | None) -> bool:
    for release in releases:
        root = _root_for(release)
        if not upstream.verl_available(root):
            print(upstream.skip_line(root))
            return False
    return True


def upstream_view(
    path: str, symbol: str | None = None, *, release: str | None = None, contains: str | None = None, context: int = 8
) -> CodeView:
    """verl's own code of `symbol` in verl/`path` as a CodeView (see `upstream_source`)."""
    text, version = _read(path, release)
    try:
        start, lines = symbol_lines(text, symbol, contains=contains, context=context)
    except LookupError as e:
        raise upstream.UpstreamMoved(f"verl {version}, verl/{_relative(path)}: {e}") from None
    what = f" · {symbol}" if symbol else ""
    return CodeView(
        f"verl {version} · verl/{_relative(path)}{what} · lines {start}-{start + len(lines) - 1}", "\n".join(lines)
    )


def upstream_source(
    path: str, symbol: str | None = None, *, release: str | None = None, contains: str | None = None, context: int = 8
) -> None:
    """Display verl's own `symbol` from verl/`path` (release None: the installed verl; '0.9.0': the fetched
    earlier release), named by file, symbol, version and lines (`upstream_view` returns it). One skip line
    without verl."""
    if _available(release):
        _display(upstream_view(path, symbol, release=release, contains=contains, context=context))


def _hunks(diff: list[str]) -> list[list[str]]:
    hunks: list[list[str]] = []
    for line in diff[2:]:  # after the ---/+++ headers
        if line.startswith("@@"):
            hunks.append([])
        hunks[-1].append(line)
    return hunks


def diff_view(
    path: str, symbol: str | None, old: str, new: str | None = None, *, contains: str | None = None, context: int = 3
) -> CodeView:
    """The unified diff of `symbol` (None: the whole file) in verl/`path` from release `old` to `new` (None:
    the installed verl); with `contains`, only the hunks holding that text."""
    new_text, new_version = _read(path, new)
    old_text, old_version = _read(path, old)
    relative = _relative(path)
    try:
        _, new_lines = symbol_lines(new_text, symbol)
    except LookupError as e:
        raise upstream.UpstreamMoved(f"verl {new_version}, verl/{relative}: {e}") from None
    try:
        _, old_lines = symbol_lines(old_text, symbol)
        note = ""
    except LookupError:
        old_lines, note = [], f" (not in verl {old_version}: added)"
    what = f" · {symbol}" if symbol else ""
    title = f"verl/{relative}{what}: {old_version} -> {new_version}{note}"
    files = {"fromfile": f"verl-{old_version}/{relative}", "tofile": f"verl-{new_version}/{relative}"}
    diff = list(difflib.unified_diff(old_lines, new_lines, lineterm="", n=context, **files))
    if not diff:
        return CodeView(title + " (unchanged)", "\n".join(new_lines))
    hunks = _hunks(diff)
    if contains is not None:
        hunks = [h for h in hunks if any(contains in line for line in h)]
        if not hunks:
            raise upstream.UpstreamMoved(
                f"verl/{relative}{what}: no change between {old_version} and {new_version} holds {contains!r}"
            )
    return CodeView(title, "\n".join(diff[:2] + [line for h in hunks for line in h]), language="diff")


def upstream_diff(
    path: str,
    symbol: str | None,
    old: str = "0.9.0",
    new: str | None = None,
    *,
    contains: str | None = None,
    context: int = 3,
) -> None:
    """Display what changed in verl's `symbol` (verl/`path`) between two releases, as a unified diff.

    `old` is an earlier release fetched by `make setup`; `new` None is the installed verl. A symbol
    absent from `old` shows as added; an unchanged one is shown whole with "(unchanged)" in its title;
    `contains` keeps only the hunks holding that text (a big function's one changed store line).
    One skip line when either release is absent. Returns None (`diff_view` returns the diff).
    """
    if _available(new, old):
        _display(diff_view(path, symbol, old, new, contains=contains, context=context))
