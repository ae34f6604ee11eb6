"""How long the whole course takes, as a ratio to the floor measured in the same run.

The floor is an empty notebook importing torch and matplotlib: what any lesson pays before it
teaches anything. The ideal course time is floor x lessons / workers; the goal is a ratio <= 1.5.
With `--repeat N` the floor and the course are each measured N times and the median ratio is reported.

    .venv/bin/python benchmarks/course_time.py [--workers 2] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from verlstudy.course import registry, runner


def measure(lessons: list, workers: int) -> tuple[float, float, list]:
    """One measurement: (floor seconds alone, course wall seconds, the lessons' results)."""
    with tempfile.TemporaryDirectory() as tmp:
        floor = runner.run_one(None, Path(tmp) / "floor")  # alone, on an idle machine
        start = time.perf_counter()
        results, _ = runner.run_lessons(lessons, Path(tmp) / "run", workers=workers, with_floor=False)
        wall = time.perf_counter() - start
    return floor.seconds, wall, results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1, help="measure this many times and report the median ratio")
    args = parser.parse_args()
    if args.workers < 1 or args.repeat < 1:
        parser.error("--workers and --repeat must be at least 1")
    lessons = list(registry.LESSONS)
    runs = [measure(lessons, args.workers) for _ in range(args.repeat)]
    ratios = [wall / (floor * len(lessons) / args.workers) for floor, wall, _ in runs]
    median = statistics.median(ratios)
    floor, wall, results = runs[ratios.index(sorted(ratios)[(len(ratios) - 1) // 2])]  # the median run's details
    ideal = floor * len(lessons) / args.workers
    failed = [r.name for _, _, rs in runs for r in rs if r.status != "passed"]
    print(f"floor notebook: {floor:.1f} s; {len(lessons)} lessons on {args.workers} workers")
    print(f"course wall time: {wall:.1f} s; ideal (floor x lessons / workers): {ideal:.1f} s")
    print(f"ratios: {', '.join(f'{r:.2f}' for r in ratios)}; median {median:.2f} (goal <= 1.5)")
    for r in results:
        print(f"  {r.name:<32} {r.seconds:5.1f} s  ({r.seconds / floor:.2f} x floor)  {r.status}")
    if failed:
        print(f"failed: {', '.join(sorted(set(failed)))}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
