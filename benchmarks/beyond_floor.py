"""What the lessons pay beyond the floor, and why: upstream machinery timed as ratios to the floor, in one run.

The floor is `twins.FLOOR_SOURCE` (import torch and matplotlib as every set-up cell does). Rows a to f are each timed
in a fresh Python process (IPython imported first, untimed, as a kernel has it), after the floor's source and an untimed
set-up (the imports a lesson's set-up cell makes),
so first-use import costs are real: a jagged tensor, a checkpointed block, a property check, a gloo launch, a
figure, lesson 09's scan of two verl releases. Rows marked `+` are timed right after their row in the same
process: the cost of the next one (a further check, figure or launch; a checkpoint after a jagged tensor).
Row g runs no child: unless --no-notebook-floor, each repeat runs the floor notebook with papermill (as
course_time.py does) and the floor notebook with --cells trivial code cells after its one cell (after one untimed
warm-up run), and g is the difference of their medians per cell: the papermill + kernel round trip every executed
cell pays.
Then the course's own counts (from the notebooks) give the beyond-floor total these costs imply, as a ratio to
floor x lessons: the lowest ratio reachable without removing them (with and without g); and, unless
--no-notebook-floor, the same against the floor notebook that course_time.py divides by. Not part of `make test`.

    .venv/bin/python benchmarks/beyond_floor.py [--repeat 5] [--rows abcdefg] [--cells 100] [--no-notebook-floor]

CPU seconds are the child's `time.process_time()` plus its reaped children's (the gloo ranks); for a notebook run,
this process's (papermill, the kernel client) plus the reaped kernel's. Wall seconds are `time.perf_counter()`.
Each figure is the median over the repeats; the floor cell's is over every child.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import nbformat

CHILD = "--child"

# ---------------------------------------------------------------- what each row runs (exec'd in the child)

JAGGED = """\
values = torch.randn(6, requires_grad=True)
offsets = torch.tensor([0, 2, 6])
_ = torch.nested.nested_tensor_from_jagged(values, offsets).detach()
"""
CHECKPOINT = """\
from torch.utils.checkpoint import checkpoint
block = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())
checkpoint(block, torch.randn(2, 4, requires_grad=True), use_reentrant=False).sum().backward()
"""
# A checker as a lesson's checks.py writes one (a module imported on the first check_exercise), for a trivial
# exercise: named edge cases, then hypothesis-drawn inputs; the learner's answer is a function of their own.
FIRST_CHECK = """\
from hypothesis import strategies as st
from verlstudy.kit.properties import Case, compare_on_inputs

def _reference_total(xs):
    return sum(xs)

@checker("99.1")
def _check_total(fn):
    cases = [Case(([],), "no items"), Case(([3],), "one item")]
    inputs = st.tuples(st.lists(st.integers(-9, 9), max_size=8))
    return compare_on_inputs(fn, _reference_total, inputs=inputs, edge_cases=cases, name="total")

def total(xs):
    s = 0
    for x in xs:
        s += x
    return s

check_exercise("99.1", total)
assert exercise_results()["99.1"] == "correct"
"""
NEXT_CHECK = """\
def _reference_largest(xs):
    return max(xs) if xs else None

@checker("99.2")
def _check_largest(fn):
    inputs, cases = st.tuples(st.lists(st.integers(-9, 9), max_size=8)), [Case(([],), "no items")]
    return compare_on_inputs(fn, _reference_largest, inputs=inputs, edge_cases=cases, name="largest")

def largest(xs):
    return sorted(xs)[-1] if xs else None

check_exercise("99.2", largest)
assert exercise_results()["99.2"] == "correct"
"""
LAUNCH = "assert [t.tolist() for t in run_local(all_reduce_rank_sum, 2)] == [[3.0, 3.0]] * 2\n"
# kit.plots lays the figure out once; the inline backend then prints it as a PNG with the kit's bbox_inches=None
FIGURE = """\
fig = line_plot({{"y": ([1, 2, 3, 4], [{k}, 4, 9, 16])}}, title="t", xlabel="x", ylabel="y", show=False)
assert print_figure(fig, "png", bbox_inches=None).startswith(b"\\x89PNG")
plt.close("all")
"""
L09_RELEASE = "0.9.0"  # the earlier release notebooks/09's scan_both_releases cell reads besides the installed one
SCAN = f'assert verl_tree.scan_release("{L09_RELEASE}").fields and verl_tree.scan_release().fields\n'

# key -> (row label, untimed set-up after the floor, timed steps: (step key, label, code))
ROWS: dict[str, tuple[str, str, tuple[tuple[str, str, str], ...]]] = {
    "a": (
        "jagged tensor",
        "",
        (("a", "first jagged tensor (imports DTensor, sympy)", JAGGED), ("a+b", "+ checkpoint after it", CHECKPOINT)),
    ),
    "b": ("checkpoint", "", (("b", "first checkpoint, non-reentrant (imports dynamo)", CHECKPOINT),)),
    "c": (
        "property check",
        "from verlstudy.kit.exercises import check_exercise, checker, exercise_results\n",
        (("c", "first property check", FIRST_CHECK), ("c+", "+ each further check", NEXT_CHECK)),
    ),
    "d": (
        "gloo launch",
        "from verlstudy.common.dist import all_reduce_rank_sum, run_local\n",
        (("d", "first 2-rank gloo all_reduce", LAUNCH), ("d+", "+ each further launch", LAUNCH)),
    ),
    "e": (
        "figure",
        "from IPython.core.pylabtools import print_figure\nfrom verlstudy.kit.plots import line_plot\n",
        (
            ("e", "first figure (PNG, inline path)", FIGURE.format(k=1)),
            ("e+", "+ each further figure", FIGURE.format(k=2)),
        ),
    ),
    "f": (
        "lesson 09 scan",
        "from verlstudy.lessons.l09_dead_config import verl_tree\n",
        (("f", f"parse verl {L09_RELEASE} + installed", SCAN),),
    ),
}
STEPS = [step for _, _, steps in ROWS.values() for step in steps]
# Row g: timed by papermill runs of the floor notebook with and without `--cells` of these after its one cell.
CELL_ROW, CELL_LABEL = "g", "an executed cell (papermill + kernel round trip)"
TRIVIAL_CELL = "x{i} = {i}\nprint(x{i})"
KEYS = "".join(ROWS) + CELL_ROW  # every row --rows may name
FLOOR_ONLY = "floor"  # a child that times the floor alone, when no row selected needs a child of its own

# Lessons whose run makes a jagged tensor or checkpoints a block. Not found statically (verl's code or a
# lesson helper makes them): listed by hand, each with where it comes from; `course_counts` checks the codes.
JAGGED_LESSONS = {
    "02": "l02_detach/upstream.py: upstream_check's random trees (verl's detach_tree against ours) hold jagged leaves",
    "03": "l03_router_replay/upstream.py: warm_jagged, and stage_route_map's nested route maps for verl's pp_gather",
    "04": "l04_thd/thd.py: pack_sequences packs the THD batch with nested_tensor_from_jagged",
}
CHECKPOINT_LESSONS = {
    "02": "l02_detach/trees.py: TinyCheckpointedLM in saved_input_lifetime, #6699's regression test",
}

# ---------------------------------------------------------------- the child: floor, set-up, timed steps


def _clock() -> tuple[float, float]:
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)  # forked gloo ranks, once joined
    return time.process_time() + reaped.ru_utime + reaped.ru_stime, time.perf_counter()


def child(row: str, floor_source: str, out: str) -> int:
    """Run the floor, the row's set-up, then its steps, each timed; write {step: [cpu, wall]} as JSON to `out`."""
    import IPython  # noqa: F401  (a kernel has it loaded before its first cell: records and the inline path use it)

    namespace: dict[str, object] = {"__name__": "__main__"}
    times: dict[str, list[float]] = {}
    start = _clock()
    exec(floor_source, namespace)
    end = _clock()
    times["floor"] = [end[0] - start[0], end[1] - start[1]]
    _, setup, steps = ROWS.get(row, ("", "", ()))  # FLOOR_ONLY: the floor and nothing after it
    exec(setup, namespace)
    for key, _, code in steps:
        start = _clock()
        exec(code, namespace)
        end = _clock()
        times[key] = [end[0] - start[0], end[1] - start[1]]
    import json

    with open(out, "w") as f:
        json.dump(times, f)
    return 0


def run_child(row: str, floor_source: str) -> dict[str, list[float]]:
    """One fresh process for `row`: its timings (raises with the child's stderr if it failed)."""
    import json
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="beyond-floor-") as tmp:
        out = os.path.join(tmp, "times.json")
        cmd = [sys.executable, os.path.abspath(__file__), CHILD, row, floor_source, out]
        env = {**os.environ, "MPLBACKEND": "agg"}
        done = subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"row {row} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
        with open(out) as f:
            return json.load(f)


# ---------------------------------------------------------------- the course's counts (from its notebooks)


def _cpu_cells(notebook: dict) -> list[dict]:
    """The code cells that run on CPU (cells tagged gpu or npu only print a skip line there)."""
    cells = [c for c in notebook.get("cells", []) if c.get("cell_type") == "code"]
    return [c for c in cells if not set(c.get("metadata", {}).get("tags", [])) & {"gpu", "npu"}]


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def executed_cells(notebook: dict) -> int:
    """How many code cells a run of `notebook` executes beyond the floor's one: all of them, the set-up and parameters
    cells included, less one. Cells tagged gpu or npu count: without the device they still run (a skip line)."""
    return max(0, sum(c.get("cell_type") == "code" for c in notebook.get("cells", [])) - 1)


def _pngs(cells: list[dict]) -> int:
    return sum("image/png" in output.get("data", {}) for cell in cells for output in cell.get("outputs", []))


def course_counts(notebooks: dict[str, dict]) -> dict[str, dict[str, int]]:
    """Per cost, lesson code -> how many times it occurs in that lesson's run (lessons where it never does: absent).

    `notebooks` maps each lesson code ("00") to its notebook as JSON. Checks: `check_exercise(` calls; gloo
    launches: calls of `run_local(` or of lesson 03's `failed_outcomes(` (which wraps it); figures: the PNGs in
    the stored outputs; scans: cells calling `scan_release(`; jagged tensors and checkpoints: the lists above;
    g: `executed_cells`.
    """
    import re

    unknown = sorted((set(JAGGED_LESSONS) | set(CHECKPOINT_LESSONS)) - set(notebooks))
    if unknown:
        raise ValueError(f"JAGGED_LESSONS / CHECKPOINT_LESSONS name lessons the course does not have: {unknown}")
    patterns = {
        "c": r"\bcheck_exercise\(",
        "d": r"\b(?:run_local|failed_outcomes)\(",
        "f": r"\bscan_release\(",
    }
    counts: dict[str, dict[str, int]] = {k: {} for k in KEYS}
    for code, notebook in sorted(notebooks.items()):
        cells = _cpu_cells(notebook)
        found = {k: sum(len(re.findall(p, _source(cell))) for cell in cells) for k, p in patterns.items()}
        found["f"] = min(found["f"], 1)  # one cell scans both releases; later scans reuse its cached parse
        found["e"] = _pngs(cells)
        found["a"], found["b"] = int(code in JAGGED_LESSONS), int(code in CHECKPOINT_LESSONS)
        found[CELL_ROW] = executed_cells(notebook)
        for key, n in found.items():
            if n:
                counts[key][code] = n
    return counts


def occurrence_line(counts: dict[str, dict[str, int]]) -> str:
    parts = []
    for key, label in [(k, label) for k, (label, _, _) in ROWS.items()] + [(CELL_ROW, "executed cell")]:
        lessons = counts.get(key, {})
        parts.append(f"{key} {label} {sum(lessons.values())}x in {len(lessons)} ({', '.join(sorted(lessons))})")
    return "occurs in the course: " + "; ".join(parts)


def beyond_floor_total(counts: dict[str, dict[str, int]], seconds: dict[str, float]) -> float:
    """The course's beyond-floor seconds from these costs: per lesson, a first occurrence then the further ones.

    A lesson with a jagged tensor and a checkpoint pays `a` then `a+b` (they import much the same modules); g is
    paid once per executed cell. Rows missing from `seconds` (not run, skipped) or from `counts` count 0.
    """
    total = 0.0
    for key in KEYS:
        for code, n in counts.get(key, {}).items():
            if key == "b" and code in counts["a"]:
                total += seconds.get("a+b", seconds.get("b", 0.0))
                continue
            total += seconds.get(key, 0.0) + (n - 1) * seconds.get(key + "+", seconds.get(key, 0.0))
    return total


# ---------------------------------------------------------------- the table


def format_table(floor: tuple[float, float], medians: dict[str, tuple[float, float]], skipped: dict[str, str]) -> str:
    """One line per step (in ROWS order, then g): CPU and wall seconds added, each over the floor cell's."""
    lines = [f"{'row':<6}{'what':<50}{'cpu s':>8}{'/floor':>8}{'wall s':>8}{'/floor':>8}"]
    lines.append(f"{'floor':<6}{'import torch + matplotlib (FLOOR_SOURCE)':<50}" + _cells(floor, floor))
    for row, (_, _, steps) in ROWS.items():
        if row in skipped:
            lines.append(f"{row:<6}skipped: {skipped[row]}")
            continue
        for key, label, _ in steps:
            if key in medians:
                lines.append(f"{key:<6}{label:<50}" + _cells(medians[key], floor))
    if CELL_ROW in skipped:
        lines.append(f"{CELL_ROW:<6}skipped: {skipped[CELL_ROW]}")
    elif CELL_ROW in medians:
        lines.append(f"{CELL_ROW:<6}{CELL_LABEL:<50}" + _cells(medians[CELL_ROW], floor, digits=4))  # a few ms
    return "\n".join(lines)


def _cells(value: tuple[float, float], floor: tuple[float, float], digits: int = 3) -> str:
    return "".join(
        f"{v:>8.{digits}f}{v / f if f > 0 else float('nan'):>8.{digits - 1}f}"
        for v, f in zip(value, floor, strict=True)
    )


# ---------------------------------------------------------------- main


def _skip_reason(row: str) -> str | None:
    if row != "f":
        return None
    from verlstudy.kit.upstream import verl_available

    for release in (L09_RELEASE, None):
        if not verl_available(release):
            return f"verl {release or '(installed)'} source not found (`make setup` fetches it)"
    return None


def floor_notebook_with_cells(extra: int) -> nbformat.NotebookNode:
    """The floor notebook (runner.floor_notebook: FLOOR_SOURCE in one cell) with `extra` trivial code cells after it."""
    import nbformat

    from verlstudy.course import runner
    from verlstudy.course.twins import normalise

    nb = runner.floor_notebook()
    nb.cells += [nbformat.v4.new_code_cell(TRIVIAL_CELL.format(i=i)) for i in range(extra)]
    return normalise(nb)


def run_notebook(extra: int) -> tuple[float, float]:
    """One papermill run of the floor notebook with `extra` trivial cells, as runner.run_one runs the floor:
    (cpu, wall) seconds, cpu being this process's (papermill, the kernel client) plus the reaped kernel's."""
    import tempfile
    from pathlib import Path

    import nbformat
    import papermill  # noqa: F401  (imported before the clock starts: the course's runner has it loaded once)

    from verlstudy.course import runner

    with tempfile.TemporaryDirectory(prefix="verlstudy-floor-") as tmp:
        source = Path(tmp) / "floor_input.ipynb"
        nbformat.write(floor_notebook_with_cells(extra), source)
        start = _clock()[0]
        status, error, wall = runner.execute_with_papermill(source, Path(tmp) / "floor.ipynb", {}, Path(tmp))
        cpu = _clock()[0] - start
    if status != "passed":
        raise RuntimeError(f"the floor notebook with {extra} extra cells failed: {error}")
    return cpu, wall


def per_cell(
    plain: list[tuple[float, float]], with_cells: list[tuple[float, float]], extra: int
) -> tuple[float, float]:
    """Row g: the median run with `extra` cells less the median plain run, per cell (cpu, wall)."""
    import statistics

    cpu, wall = (
        (statistics.median(w[i] for w in with_cells) - statistics.median(p[i] for p in plain)) / extra for i in (0, 1)
    )
    return cpu, wall


def reachable_line(
    totals: tuple[float, float], without_g: tuple[float, float] | None, floor: tuple[float, float], n: int, note: str
) -> str:
    """The lowest ratio these costs allow, 1 + total / (floor x lessons), cpu and wall; and without g when it ran."""
    ratios = [1 + t / (f * n) for t, f in zip(totals, floor, strict=True)]
    line = (
        f"reachable{note}: {totals[0]:.2f} s cpu beyond floor x {n} lessons = {floor[0] * n:.2f} s: "
        f"lowest ratio {ratios[0]:.2f} cpu, {ratios[1]:.2f} wall"
    )
    if without_g is not None:
        rest = [1 + t / (f * n) for t, f in zip(without_g, floor, strict=True)]
        line += f"; without g {rest[0]:.2f} cpu, {rest[1]:.2f} wall"
    return line


def main() -> int:
    import argparse
    import json
    import statistics

    from verlstudy.course import registry
    from verlstudy.course.twins import FLOOR_SOURCE, quiet_kernel_env

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="fresh processes (and notebook runs) per row; medians")
    parser.add_argument("--rows", default=KEYS, help=f"which rows to time, a subset of {KEYS}")
    parser.add_argument("--cells", type=int, default=100, help="row g: trivial cells added to the floor notebook")
    parser.add_argument("--no-notebook-floor", action="store_true", help="skip the papermill runs (and so row g)")
    args = parser.parse_args()
    if args.repeat < 1 or args.cells < 1 or not args.rows or set(args.rows) - set(KEYS):
        parser.error(f"--repeat and --cells must be at least 1 and --rows letters from {KEYS}")
    rows = [r for r in ROWS if r in args.rows]
    quiet_kernel_env()  # the kernels' environment: one OpenMP thread, quiet logs, caches under build/cache
    skipped = {r: why for r in rows if (why := _skip_reason(r))}
    if CELL_ROW in args.rows and args.no_notebook_floor:
        skipped[CELL_ROW] = "--no-notebook-floor: it is timed by papermill runs of the floor notebook"
    notebooks = not args.no_notebook_floor
    samples: dict[str, list[list[float]]] = {}
    plain: list[tuple[float, float]] = []
    with_cells: list[tuple[float, float]] = []
    if notebooks:
        run_notebook(0)  # untimed: this process's first papermill run pays first-use costs (~0.1 s here) no other does
    timed = [row for row in rows if row not in skipped] or [FLOOR_ONLY]  # every child times the floor first
    for i in range(args.repeat):
        for row in timed:  # rows interleaved, so a drift of the machine's load spreads over all of them
            for key, value in run_child(row, FLOOR_SOURCE).items():
                samples.setdefault(key, []).append(value)
        if notebooks:  # the plain floor notebook and, for g, the one with cells; which goes first alternates
            first_plain = i % 2 == 0 or CELL_ROW not in args.rows
            if first_plain:
                plain.append(run_notebook(0))
            if CELL_ROW in args.rows:
                with_cells.append(run_notebook(args.cells))
            if not first_plain:
                plain.append(run_notebook(0))
    medians = {
        k: (statistics.median(v[0] for v in vs), statistics.median(v[1] for v in vs)) for k, vs in samples.items()
    }
    floor = medians.pop("floor") if "floor" in medians else (float("nan"), float("nan"))
    if with_cells:
        medians[CELL_ROW] = per_cell(plain, with_cells, args.cells)
    lessons = list(registry.LESSONS)
    counts = course_counts({ls.code: json.loads(ls.notebook.read_text(encoding="utf-8")) for ls in lessons})
    runs = f"{args.repeat} fresh process(es) per row"
    if with_cells:
        runs += f", {args.repeat} papermill run(s) of the floor notebook with and without {args.cells} trivial cells"
    print(f"{runs}; medians; load average {os.getloadavg()[0]:.2f}")
    print(format_table(floor, medians, skipped))
    print(occurrence_line(counts))
    rest = {k: v for k, v in medians.items() if k != CELL_ROW}
    totals, without_g = (
        (
            beyond_floor_total(counts, {k: v[0] for k, v in m.items()}),
            beyond_floor_total(counts, {k: v[1] for k, v in m.items()}),
        )
        for m in (medians, rest)
    )
    missing = [r for r in KEYS if r not in args.rows or r in skipped]
    note = f" (without rows {', '.join(missing)})" if missing else ""
    n = len(lessons)
    print(reachable_line(totals, without_g if with_cells else None, floor, n, note))
    if plain:
        notebook = statistics.median(p[1] for p in plain)
        ratio = f"lowest ratio {1 + totals[1] / (notebook * n):.2f}"
        if with_cells:
            ratio += f", without g {1 + without_g[1] / (notebook * n):.2f}"
        print(
            f"against the floor notebook as course_time.py measures it ({notebook:.2f} s wall, kernel start "
            f"included, median of {len(plain)}): {ratio}"
        )
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == CHILD:
        raise SystemExit(child(*sys.argv[2:]))
    raise SystemExit(main())
