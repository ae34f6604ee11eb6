"""`verlstudy verify-upstream`: each lesson's helper against upstream's own function, on generated cases.

A lesson re-implements an upstream mechanism in small form; this keeps the two the same as verl
moves. Each lesson provides its comparisons in its own `upstream.py` (`COMPARISONS`, or
`NOT_COMPARABLE` saying why there is no single function to call); this module loops over the
registry, so a new lesson is verified without editing this file.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib.metadata
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from verlstudy.course import registry
from verlstudy.course.files import write_text
from verlstudy.kit import upstream
from verlstudy.kit.upstream import Comparison

STATUSES = ("agree", "differ", "moved", "error", "not comparable")  # a row's status, in the summary's order
MAX_CASES = 100_000  # generated inputs per comparison: 300 by default; more only slows the run, it checks no more


def lesson_rows(lesson: registry.Lesson, cases: int = 300, seed: int = 0) -> list[Comparison]:
    """The comparison rows of one lesson (a 'not comparable' row where it has no upstream function)."""
    part = lesson.import_part("upstream")
    if part is None:
        raise LookupError(f"lesson {lesson.code} has no upstream.py: add COMPARISONS or NOT_COMPARABLE to it")
    comparisons = getattr(part, "COMPARISONS", ())
    if comparisons:
        return [_compared(lesson, compare, cases, seed) for compare in comparisons]
    not_comparable = getattr(part, "NOT_COMPARABLE", None)
    if not_comparable is None:
        raise LookupError(f"{part.__name__} defines neither COMPARISONS nor NOT_COMPARABLE")
    return [not_comparable.row(upstream.verl_version())]


_CITED = re.compile(r"(verl(?:-[\d.]+)?/[\w/.-]+\.py)(?: defines no top-level ([\w, ]+))?")


def _moved_what(message: str, fallback: str) -> str:
    """`file::function` the UpstreamMoved message names (or the file), else `fallback`."""
    found = _CITED.search(message)
    if found is None:
        return fallback
    return found.group(1) + (f"::{found.group(2)}" if found.group(2) else "")


def _compared(lesson: registry.Lesson, compare: Callable[[int, int], Comparison], cases: int, seed: int) -> Comparison:
    """One comparison's row; a function upstream moved is a "moved" row and one that cannot be compared under
    this verl an "error" row (one line each), so the other comparisons still run."""
    name = getattr(compare, "__name__", "comparison")
    try:
        return compare(cases, seed)
    except upstream.UpstreamMoved as e:
        return Comparison(lesson.code, _moved_what(str(e), name), _version(), 0, "moved", str(e))
    except upstream.VerlNotInstalled:
        raise
    except SyntaxError as e:  # a verl file that does not parse: the row names the file (ast.parse may not)
        return Comparison(lesson.code, name, _version(), 0, "error", _syntax_error_line(e))
    except Exception as e:  # an API that changed shape under this verl: a row naming it, not a traceback
        first = (str(e).strip().splitlines() or [""])[0][:200]
        return Comparison(lesson.code, name, _version(), 0, "error", f"{type(e).__name__}: {first}")


def _syntax_error_line(error: SyntaxError) -> str:
    """One line naming the verl file that does not parse, found in the tree read when the error does not name it."""
    where = error.filename if error.filename and not error.filename.startswith("<") else None
    if where is None:
        found = [
            f
            for f, line, msg in _unparsable_files(str(upstream.verl_root()))
            if (line, msg) == (error.lineno, error.msg)
        ]
        where = found[0] if found else None
    if where is None:
        return f"SyntaxError: {error.msg} (line {error.lineno} of a verl file)"
    return f"SyntaxError: {error.msg} (line {error.lineno}) in {where}: this verl does not parse; is it a verl release?"


@functools.lru_cache(maxsize=4)
def _unparsable_files(root: str) -> tuple[tuple[str, int | None, str], ...]:
    """(file, line, message) of each .py file under `root` that Python cannot parse (one scan per verl tree)."""
    bad = []
    for path in sorted(Path(root).rglob("*.py")):
        try:
            ast.parse(path.read_bytes(), filename=str(path))
        except SyntaxError as e:
            bad.append((str(path), e.lineno, e.msg))
        except (OSError, ValueError):  # unreadable, or a NUL byte: not the error being looked for
            continue
    return tuple(bad)


@dataclass(frozen=True)
class VerlRead:
    """The verl tree verify-upstream reads, and the installed verl it may differ from (PYTHONPATH, the cwd)."""

    root: Path
    version: str  # what the tree itself says (verl/version/version or __version__), else the installed version
    installed: str | None  # the installed distribution's version (None: no metadata)
    installed_root: Path | None

    @property
    def shadowed(self) -> bool:
        """True when the tree read is not the installed verl's (another copy comes first on sys.path)."""
        return self.installed_root is not None and self.root.resolve() != self.installed_root.resolve()

    def line(self) -> str:
        if not self.shadowed:
            return f"verify-upstream: verl {self.version} from {self.root}"
        return (
            f"verify-upstream: reading verl from {self.root} (it says {self.version}), not the installed verl "
            f"{self.installed} in {self.installed_root}: PYTHONPATH or the current folder puts that copy first"
        )


def verl_read() -> VerlRead:
    """Which verl the comparisons read (raises upstream.VerlNotInstalled as verl_root does)."""
    root = upstream.verl_root()
    try:
        dist = importlib.metadata.distribution("verl")
        installed, installed_root = dist.version, Path(str(dist.locate_file("verl")))
    except importlib.metadata.PackageNotFoundError:
        installed, installed_root = None, None
    return VerlRead(root, _tree_version(root) or installed or "?", installed, installed_root)


def _tree_version(root: Path) -> str | None:
    """The version a verl tree declares itself (verl keeps it in verl/version/version), or None."""
    try:
        return (root / "version" / "version").read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        pass
    try:
        found = re.search(r"""^__version__\s*=\s*["']([^"']+)["']""", (root / "__init__.py").read_text(), re.M)
    except (OSError, UnicodeDecodeError):
        return None
    return found.group(1) if found else None


def as_read(rows: list[Comparison], read: VerlRead) -> list[Comparison]:
    """Rows naming the verl actually read: a shadowing copy's own version, not the installed one's."""
    if not read.shadowed or read.installed is None or read.version == read.installed:
        return rows
    said, meant = f"verl {read.installed}", f"verl {read.version} (at {read.root})"
    return [
        dataclasses.replace(
            r,
            version=read.version if r.version == read.installed else r.version,
            detail=r.detail.replace(said, meant),
        )
        for r in rows
    ]


def _version() -> str:
    try:
        return upstream.verl_version()
    except upstream.UpstreamError:
        return "?"


def verify_all(
    cases: int = 300, seed: int = 0, on_lesson: Callable[[registry.Lesson], None] | None = None
) -> list[Comparison]:
    """Every lesson's rows, in course order; `on_lesson` is told before each lesson is compared (a progress line)."""
    if isinstance(cases, bool) or not isinstance(cases, int) or not 1 <= cases <= MAX_CASES:
        raise ValueError(
            f"cases must be an integer from 1 to {MAX_CASES} (generated inputs per comparison), got {cases!r}"
        )
    from verlstudy.course.twins import CACHE_ENV
    from verlstudy.kit.resources import cache_root

    for key, folder in CACHE_ENV.items():  # torch's compile caches go to build/cache, not the system temp folder
        os.environ.setdefault(key, str(cache_root() / folder))
    rows = []
    for lesson in registry.LESSONS:
        if on_lesson is not None:
            on_lesson(lesson)
        rows += lesson_rows(lesson, cases, seed)
    return as_read(rows, verl_read())


def table(rows: list[Comparison]) -> str:
    lines = ["| lesson | upstream | verl | cases | result | detail |", "| --- | --- | --- | ---: | --- | --- |"]
    lines += [f"| {r.lesson} | {r.upstream} | {r.version} | {r.cases} | {r.status} | {r.detail} |" for r in rows]
    return "\n".join(lines)


def record(rows: list[Comparison], path: Path | None = None) -> Path:
    """Write the verified verl version per lesson (every comparable row agreed) to data/upstream_verified.json."""
    if any(r.status != "agree" and r.status != "not comparable" for r in rows):
        raise ValueError("not recording: some lessons differ from upstream, or their functions moved")
    empty = [r for r in rows if r.status == "agree" and r.cases < 1]
    if empty:
        raise ValueError(f"not recording: lesson {empty[0].lesson} agreed on 0 cases, which verifies nothing")
    path = path or registry.data_dir() / "upstream_verified.json"
    data = {}
    for lesson in registry.LESSONS:
        mine = [r for r in rows if r.lesson == lesson.code]
        compared = [r for r in mine if r.status == "agree"]
        declared = [r.how for r in mine if r.how]  # a lesson with nothing to call says how its facts were read
        how = (
            f"compared with verlstudy verify-upstream on {sum(r.cases for r in compared)} cases"
            if compared
            else declared[0]
            if declared
            else "facts read from the verl source (no single upstream function to compare)"
        )
        data[lesson.code] = {
            "verl_version": mine[0].version if mine else upstream.verl_version(),
            "how": how,
            "on": date.today().isoformat(),
        }
    write_text(path, json.dumps(data, indent=2) + "\n")
    return path
