"""Where a lesson's time goes: each code cell's share of one execution, slowest first.

The course's goal is a run within 1.5x the floor (see course_time.py); this says which cells to shrink.
Cell times are reported as fractions of the whole execution (they move with the machine; the ranking
does not), plus the seconds for orientation. Not part of `make test`.

    .venv/bin/python benchmarks/lesson_profile.py 03 [--top 8]
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import tempfile
from pathlib import Path

import nbformat

from verlstudy.course import registry
from verlstudy.course.twins import KERNEL_ARGS, KERNEL_NAME, course_kernel_manager_class, quiet_kernel_env


def cell_seconds(nb: nbformat.NotebookNode, cwd: Path) -> list[tuple[int, float, str]]:
    """(code cell index, seconds, first line) for each code cell of one execution of `nb`."""
    from nbclient import NotebookClient

    quiet_kernel_env()
    nb = copy.deepcopy(nb)
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name=KERNEL_NAME,
        resources={"metadata": {"path": str(cwd)}},
        record_timing=True,
        shutdown_kernel="immediate",
        extra_arguments=KERNEL_ARGS,
        kernel_manager_class=course_kernel_manager_class(),
    )
    client.execute()
    rows = []
    code = [c for c in nb.cells if c.cell_type == "code"]
    for i, cell in enumerate(code):
        timing = cell.metadata.get("execution", {})
        start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
        if start and end:
            seconds = (
                dt.datetime.fromisoformat(end.rstrip("Z")) - dt.datetime.fromisoformat(start.rstrip("Z"))
            ).total_seconds()
            first = next((line for line in cell.source.splitlines() if line.strip() and not line.startswith("#")), "")
            rows.append((i, seconds, first[:70]))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lesson", help="a lesson code, e.g. 03")
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args()
    (lesson,) = registry.select_lessons([args.lesson])
    nb = nbformat.read(lesson.notebook, as_version=4)
    with tempfile.TemporaryDirectory() as tmp:
        rows = cell_seconds(nb, Path(tmp))
    total = sum(s for _, s, _ in rows) or 1.0
    print(f"lesson {lesson.code}: {total:.1f} s in {len(rows)} code cells")
    for i, seconds, first in sorted(rows, key=lambda r: -r[1])[: args.top]:
        print(f"  cell {i:>3}  {seconds / total:6.1%}  {seconds:5.2f} s  {first}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
