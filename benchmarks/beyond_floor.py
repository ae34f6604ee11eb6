"""What the lessons pay beyond the floor, and why: upstream machinery timed as ratios to the floor, in one run.

The floor is `twins.FLOOR_SOURCE` (import torch and matplotlib as every set-up cell does). Each row is timed in a
fresh Python process (IPython imported first, untimed, as a kernel has it), after the floor's source and an untimed
set-up (the imports a lesson's set-up cell makes),
so first-use import costs are real: a jagged tensor, a checkpointed block, a property check, a gloo launch, a
figure, lesson 09's scan of two verl releases. Rows marked `+` are timed right after their row in the same
process: the cost of the next one (a further check, figure or launch; a checkpoint after a jagged tensor).
Then the course's own counts (from the notebooks) give the beyond-floor total these costs imply, as a ratio to
floor x lessons: the lowest ratio reachable without removing them; and, unless --no-notebook-floor, the same
against the floor notebook that course_time.py divides by (one papermill run). Not part of `make test`.

    .venv/bin/python benchmarks/beyond_floor.py [--repeat 5] [--rows abcdef] [--no-notebook-floor]

CPU seconds are the child's `time.process_time()` plus its reaped children's (the gloo ranks); wall seconds are
`time.perf_counter()`. Each figure is the median over the repeats; the floor's is over every child.
"""

from __future__ import annotations

import os
import resource
import sys
import time

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
    _, setup, steps = ROWS[row]
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


def _pngs(cells: list[dict]) -> int:
    return sum("image/png" in output.get("data", {}) for cell in cells for output in cell.get("outputs", []))


def course_counts(notebooks: dict[str, dict]) -> dict[str, dict[str, int]]:
    """Per cost, lesson code -> how many times it occurs in that lesson's run (lessons where it never does: absent).

    `notebooks` maps each lesson code ("00") to its notebook as JSON. Checks: `check_exercise(` calls; gloo
    launches: calls of `run_local(` or of lesson 03's `failed_outcomes(` (which wraps it); figures: the PNGs in
    the stored outputs; scans: cells calling `scan_release(`; jagged tensors and checkpoints: the lists above.
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
    counts: dict[str, dict[str, int]] = {k: {} for k in "abcdef"}
    for code, notebook in sorted(notebooks.items()):
        cells = _cpu_cells(notebook)
        found = {k: sum(len(re.findall(p, _source(cell))) for cell in cells) for k, p in patterns.items()}
        found["f"] = min(found["f"], 1)  # one cell scans both releases; later scans reuse its cached parse
        found["e"] = _pngs(cells)
        found["a"], found["b"] = int(code in JAGGED_LESSONS), int(code in CHECKPOINT_LESSONS)
        for key, n in found.items():
            if n:
                counts[key][code] = n
    return counts


def occurrence_line(counts: dict[str, dict[str, int]]) -> str:
    parts = []
    for key, (label, _, _) in ROWS.items():
        lessons = counts[key]
        parts.append(f"{key} {label} {sum(lessons.values())}x in {len(lessons)} ({', '.join(sorted(lessons))})")
    return "occurs in the course: " + "; ".join(parts)


def beyond_floor_total(counts: dict[str, dict[str, int]], seconds: dict[str, float]) -> float:
    """The course's beyond-floor seconds from these costs: per lesson, a first occurrence then the further ones.

    A lesson with a jagged tensor and a checkpoint pays `a` then `a+b` (they import much the same modules).
    Rows missing from `seconds` (not run, skipped) count 0.
    """
    total = 0.0
    for key in "abcdef":
        for code, n in counts[key].items():
            if key == "b" and code in counts["a"]:
                total += seconds.get("a+b", seconds.get("b", 0.0))
                continue
            total += seconds.get(key, 0.0) + (n - 1) * seconds.get(key + "+", seconds.get(key, 0.0))
    return total


# ---------------------------------------------------------------- the table


def format_table(floor: tuple[float, float], medians: dict[str, tuple[float, float]], skipped: dict[str, str]) -> str:
    """One line per step (in ROWS order): CPU and wall seconds added, each over the floor's."""
    lines = [f"{'row':<6}{'what':<50}{'cpu s':>8}{'/floor':>8}{'wall s':>8}{'/floor':>8}"]
    lines.append(f"{'floor':<6}{'import torch + matplotlib (FLOOR_SOURCE)':<50}" + _cells(floor, floor))
    for row, (_, _, steps) in ROWS.items():
        if row in skipped:
            lines.append(f"{row:<6}skipped: {skipped[row]}")
            continue
        for key, label, _ in steps:
            if key in medians:
                lines.append(f"{key:<6}{label:<50}" + _cells(medians[key], floor))
    return "\n".join(lines)


def _cells(value: tuple[float, float], floor: tuple[float, float]) -> str:
    return "".join(f"{v:>8.3f}{v / f if f > 0 else float('nan'):>8.2f}" for v, f in zip(value, floor, strict=True))


# ---------------------------------------------------------------- main


def _skip_reason(row: str) -> str | None:
    if row != "f":
        return None
    from verlstudy.kit.upstream import verl_available

    for release in (L09_RELEASE, None):
        if not verl_available(release):
            return f"verl {release or '(installed)'} source not found (`make setup` fetches it)"
    return None


def main() -> int:
    import argparse
    import json
    import statistics
    import tempfile
    from pathlib import Path

    from verlstudy.course import registry, runner
    from verlstudy.course.twins import FLOOR_SOURCE, quiet_kernel_env

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="fresh processes per row; medians are reported")
    parser.add_argument("--rows", default="".join(ROWS), help=f"which rows to time, a subset of {''.join(ROWS)}")
    parser.add_argument("--no-notebook-floor", action="store_true", help="skip the floor notebook (papermill) run")
    args = parser.parse_args()
    if args.repeat < 1 or not args.rows or set(args.rows) - set(ROWS):
        parser.error(f"--repeat must be at least 1 and --rows letters from {''.join(ROWS)}")
    rows = [r for r in ROWS if r in args.rows]
    quiet_kernel_env()  # the kernels' environment: one OpenMP thread, quiet logs, caches under build/cache
    skipped = {r: why for r in rows if (why := _skip_reason(r))}
    samples: dict[str, list[list[float]]] = {}
    for _ in range(args.repeat):
        for row in rows:  # rows interleaved, so a drift of the machine's load spreads over all of them
            if row not in skipped:
                for key, value in run_child(row, FLOOR_SOURCE).items():
                    samples.setdefault(key, []).append(value)
    medians = {
        k: (statistics.median(v[0] for v in vs), statistics.median(v[1] for v in vs)) for k, vs in samples.items()
    }
    floor = medians.pop("floor")
    lessons = list(registry.LESSONS)
    counts = course_counts({ls.code: json.loads(ls.notebook.read_text(encoding="utf-8")) for ls in lessons})
    print(f"{args.repeat} fresh process(es) per row; medians; load average {os.getloadavg()[0]:.2f}")
    print(format_table(floor, medians, skipped))
    print(occurrence_line(counts))
    cpu = beyond_floor_total(counts, {k: v[0] for k, v in medians.items()})
    wall = beyond_floor_total(counts, {k: v[1] for k, v in medians.items()})
    missing = [r for r in ROWS if r not in rows or r in skipped]
    note = f" (without rows {', '.join(missing)})" if missing else ""
    print(
        f"reachable{note}: {cpu:.2f} s cpu beyond floor x {len(lessons)} lessons = {floor[0] * len(lessons):.2f} s: "
        f"lowest ratio {1 + cpu / (floor[0] * len(lessons)):.2f} cpu, {1 + wall / (floor[1] * len(lessons)):.2f} wall"
    )
    if not args.no_notebook_floor:
        with tempfile.TemporaryDirectory() as tmp:
            notebook = runner.run_one(None, Path(tmp) / "floor").seconds
        print(
            f"against the floor notebook as course_time.py measures it ({notebook:.2f} s wall, kernel start "
            f"included): lowest ratio {1 + wall / (notebook * len(lessons)):.2f}"
        )
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == CHILD:
        raise SystemExit(child(*sys.argv[2:]))
    raise SystemExit(main())
