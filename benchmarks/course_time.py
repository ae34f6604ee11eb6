"""How long the whole course takes, as a ratio to the floor measured in the same run.

The floor is an empty notebook importing torch and matplotlib: what any lesson pays before it
teaches anything. The ideal course time is floor x lessons / workers; the goal is a ratio <= 1.5.

    .venv/bin/python benchmarks/course_time.py [--workers 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from verlstudy.course import registry, runner


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    lessons = list(registry.LESSONS)
    with tempfile.TemporaryDirectory() as tmp:
        floor = runner.run_one(None, Path(tmp) / "floor")  # alone, on an idle machine
        start = time.perf_counter()
        results, _ = runner.run_lessons(lessons, Path(tmp) / "run", workers=args.workers, with_floor=False)
        wall = time.perf_counter() - start
    ideal = floor.seconds * len(lessons) / args.workers
    failed = [r.name for r in results if r.status != "passed"]
    print(f"floor notebook: {floor.seconds:.1f} s; {len(lessons)} lessons on {args.workers} workers")
    print(f"course wall time: {wall:.1f} s; ideal (floor x lessons / workers): {ideal:.1f} s")
    print(f"ratio: {wall / ideal:.2f} (goal <= 1.5)")
    for r in results:
        print(f"  {r.name:<32} {r.seconds:5.1f} s  ({r.seconds / floor.seconds:.2f} x floor)  {r.status}")
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
