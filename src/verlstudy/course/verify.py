"""`verlstudy verify-upstream`: each lesson's helper against upstream's own function, on generated cases.

A lesson re-implements an upstream mechanism in small form; this keeps the two the same as verl
moves. Each lesson provides its comparisons in its own `upstream.py` (`COMPARISONS`, or
`NOT_COMPARABLE` saying why there is no single function to call); this module loops over the
registry, so a new lesson is verified without editing this file.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
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
    except Exception as e:  # an API that changed shape under this verl: a row naming it, not a traceback
        first = (str(e).strip().splitlines() or [""])[0][:200]
        return Comparison(lesson.code, name, _version(), 0, "error", f"{type(e).__name__}: {first}")


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
    return rows


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
