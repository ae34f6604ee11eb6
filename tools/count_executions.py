"""How many times `make test` executed each lesson notebook (the goal: at most twice per push).

    python tools/count_executions.py build/executions.log build/junit-tests.xml

Counts nbval's run of each notebook from pytest's JUnit file (one execution per notebook collected) and
every papermill or nbclient run the course's own code made from the execution log
($VERLSTUDY_EXECUTION_LOG, one line per run). Exits 1 when a lesson ran more than `--most` times.
"""

from __future__ import annotations

import argparse
import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

LESSON_STEM = re.compile(r"\d\d_[a-z0-9_]+")


def nbval_runs(junit: Path) -> Counter[str]:
    """Notebooks nbval executed: each contributes its cells as test cases, so count notebooks, not cases."""
    stems = set()
    for case in ET.parse(junit).getroot().iter("testcase"):
        where = f"{case.get('classname', '')} {case.get('file', '')}"
        match = re.search(r"(\d\d_[a-z0-9_]+)\.ipynb", where)
        if match:
            stems.add(match.group(1))
    return Counter(stems)


def logged_runs(log: Path) -> Counter[str]:
    lines = log.read_text().split() if log.exists() else []
    return Counter(line for line in lines if LESSON_STEM.fullmatch(line))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("junit", type=Path)
    parser.add_argument("--most", type=int, default=2)
    args = parser.parse_args(argv)
    nbval, logged = nbval_runs(args.junit), logged_runs(args.log)
    total = nbval + logged
    print("| notebook | nbval | course runs | executions |\n| --- | ---: | ---: | ---: |")
    for stem in sorted(total):
        print(f"| {stem} | {nbval[stem]} | {logged[stem]} | {total[stem]} |")
    over = sorted(stem for stem, n in total.items() if n > args.most)
    if over:
        print(f"executed more than {args.most} times: {', '.join(over)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
