"""How long a learner waits for a verdict: each exercise's first check in a fresh process, then a second one.

A right answer a learner wrote (tests/answer_sets/heldout_2026_12, RIGHT) is checked twice with `check_exercise`;
both times are wall-clock seconds. Issue 39 asks every check under 0.5 s on 2 cores, the first one too.

Two ways to start the process (each exercise in a fresh interpreter):
- by default the lesson's checks module is imported (`find_checker`) and nothing else: the harsher measure, where
  the first check also pays hypothesis's and torch's first-use costs;
- `--as-notebook` first runs what the lesson notebook's set-up runs (its parameters cell with device "cpu", the
  set-up cell after it, which calls `start_lesson` directly or through the lesson's own set-up function, and every
  top-level import of the notebook's code cells): what a learner sees, whose set-up has paid the one-off costs.
  The set-up's own time is reported in its own column.

usage: python benchmarks/check_latency.py [EXERCISE ...] [--as-notebook] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETS = ROOT / "tests" / "answer_sets" / "heldout_2026_12"
LIMIT_S = 0.5
MARK = "@@latency@@"


def exercises() -> list[str]:
    """Every exercise with a held-out right answer, in course order."""
    ids = [p.stem[3:].replace("_", ".") for p in SETS.glob("ex_*.py")]
    return sorted(ids, key=lambda i: tuple(int(n) for n in i.split(".")))


def _notebook(exercise: str) -> Path:
    lesson = int(exercise.split(".")[0])
    found = sorted((ROOT / "notebooks").glob(f"{lesson:02d}_*.ipynb"))
    if len(found) != 1:
        raise LookupError(f"expected one notebook for lesson {lesson:02d}, found {[p.name for p in found]}")
    return found[0]


def notebook_setup_code(exercise: str) -> str:
    """What the lesson notebook runs before its exercises' checks need it: the parameters cell (device "cpu"),
    the set-up cell (the code cell after it, which calls `start_lesson`) and every top-level import statement
    of its code cells, in the notebook's order."""
    import ast

    cells = [c for c in json.loads(_notebook(exercise).read_text())["cells"] if c["cell_type"] == "code"]
    sources = ["".join(c["source"]) for c in cells]
    tagged = ["parameters" in c.get("metadata", {}).get("tags", []) for c in cells]
    if True not in tagged or tagged.index(True) + 1 >= len(cells):
        raise LookupError(f"{_notebook(exercise).name} has no parameters cell followed by a set-up cell")
    first = tagged.index(True)
    parts = [sources[first], 'device = "cpu"', sources[first + 1]]
    for source in sources:
        text = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        parts += [ast.unparse(node) for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    return "\n".join(parts)


def measure_one(exercise: str, *, as_notebook: bool = False) -> dict[str, object]:
    """In this process: set up as a notebook does (or only import the checks), then time two checks of the first
    held-out right answer."""
    import importlib.util

    setup_s = None
    if as_notebook:
        with contextlib.suppress(ImportError):
            import IPython  # noqa: F401  (a kernel has it before any cell runs; the first check's record looks for it)
        code = notebook_setup_code(exercise)
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(code, _notebook(exercise).name, "exec"), {"__name__": "__main__"})
        setup_s = round(time.perf_counter() - start, 3)

    from verlstudy.kit.exercises import check_exercise, exercise_results, find_checker

    if not as_notebook:
        find_checker(exercise)
    spec = importlib.util.spec_from_file_location("answers", SETS / f"ex_{exercise.replace('.', '_')}.py")
    assert spec is not None and spec.loader is not None
    answers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(answers)
    label, args = next(iter(answers.RIGHT.items()))
    times = []
    for _ in range(2):
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            check_exercise(exercise, *args)
        times.append(round(time.perf_counter() - start, 3))
    return {
        "exercise": exercise,
        "answer": label,
        "verdict": exercise_results()[exercise],
        "first_s": times[0],
        "second_s": times[1],
        "setup_s": setup_s,
    }


def measure(exercise: str, *, as_notebook: bool = False) -> dict[str, object]:
    """`measure_one` in a fresh interpreter (no attempt log, run from the checkout)."""
    env = {**os.environ, "VERLSTUDY_ATTEMPTS": "0", "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1"}
    command = [sys.executable, __file__, "--one", exercise] + ["--as-notebook"] * as_notebook
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    line = next((x for x in done.stdout.splitlines() if x.startswith(MARK)), None)
    if done.returncode or line is None:
        raise RuntimeError(f"exercise {exercise}: the measuring process failed: {done.stderr.strip()[-400:]}")
    return json.loads(line[len(MARK) :])


def table(rows: list[dict[str, object]]) -> str:
    """A Markdown table of the rows, each time over the limit marked, and a count of the checks over it."""
    setup = any(r.get("setup_s") is not None for r in rows)
    lines = ["| exercise | first check (s) | second check (s) |" + " notebook set-up (s) |" * setup]
    lines.append("| --- | ---: | ---: |" + " ---: |" * setup)
    for r in rows:
        first, second = (
            f"{r[k]:.2f}" + (" **over**" if float(r[k]) > LIMIT_S else "") for k in ("first_s", "second_s")
        )
        lines.append(f"| {r['exercise']} | {first} | {second} |" + f" {r.get('setup_s') or 0:.2f} |" * setup)
    over = sum(float(r["first_s"]) > LIMIT_S for r in rows)
    lines.append(f"\n{over} of {len(rows)} first checks over {LIMIT_S} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("exercise", nargs="*", help="exercise ids (default: every one)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument(
        "--as-notebook", action="store_true", help="run the lesson notebook's set-up (start_lesson, its imports) first"
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(MARK + json.dumps(measure_one(args.one, as_notebook=args.as_notebook)))
        return 0
    unknown = sorted(set(args.exercise) - set(exercises()))
    if unknown:
        parser.error(f"no held-out answers for {', '.join(unknown)}; exercises: {' '.join(exercises())}")
    rows = [measure(e, as_notebook=args.as_notebook) for e in (args.exercise or exercises())]
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
