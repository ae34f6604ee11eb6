"""Every accepted value runs: each lesson's claims on parameter sets drawn from its validated space (issue 43).

    .venv/bin/python tools/extremes.py [LESSON ...] [--cases 12] [--workers 2]   (make extremes CASES=12; weekly in CI)

The space is read from each lesson's validation (the cell after `parameters`, or the lesson helper it imports):
`check_int`/`check_float` with both bounds, literal or computed from other parameters (lesson 03's topk is at most
num_experts - 1), `check_choice` with a literal tuple, a list checked item by item (`check_int("NAME[i]", ...)`, its
length where the validation compares `len(NAME)`: lesson 03's pp_layer_counts), and the seed (0 to 2**32 - 1,
start_lesson's range). For each lesson `--cases` sets are drawn, the same ones every run (`SWEEP_SEED`): first the
corners at seed 0 (every parameter at its minimum, every one at its maximum, and the mixed corners of a bound that
depends on another parameter), then, alternating, a random draw over the whole space (each bound an eighth of the
time, the seed half the time one of 0-9, log-uniform over a range spanning more than 16x) and the next corner at
seeds 1-9.

A lesson whose claims have a mechanism to call (`MECHANISMS`: lesson 07's bandit) is checked through it on every
set, in seconds, and executed as a notebook on its first sets only; every other lesson is executed as a notebook
(papermill, about 10 s a set). Each run prints one line; each failure is one line naming the lesson, the
parameters and the claims that failed (or the error), and the exit code is 1. A set the validation refuses is a
failure too: the generator drew it from the validated space. Not part of `make test`.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import functools
import importlib.util
import math
import random
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verlstudy.course import parameters, registry, runner
from verlstudy.kit.lesson_start import SEED_MAXIMUM

CHECKS = ("check_int", "check_float")


def parameter_ranges(lesson: registry.Lesson) -> dict[str, tuple[object, object]]:
    """{name: (minimum, maximum)} for the lesson's parameters whose validation (the cell after `parameters`, or
    the lesson helper it calls) gives both as literals."""
    declared = _declared(lesson)
    ranges: dict[str, tuple[object, object]] = {}
    nodes = [node for tree in _validation_trees(lesson) for node in ast.walk(tree)]
    for node in nodes:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CHECKS):
            continue
        if not node.args or not isinstance(node.args[0], ast.Constant) or node.args[0].value not in declared:
            continue
        bounds = {k.arg: k.value for k in node.keywords if k.arg in ("minimum", "maximum")}
        try:
            low, high = (ast.literal_eval(bounds[k]) for k in ("minimum", "maximum"))
        except (KeyError, ValueError):
            continue  # open-ended or computed from another parameter: the default stands
        if node.args[0].value != "seed":
            ranges[node.args[0].value] = (low, high)
    return ranges


@functools.cache
def _declared(lesson: registry.Lesson) -> dict[str, object]:
    return parameters.notebook_parameters(lesson.notebook)


@functools.cache
def _validation_trees(lesson: registry.Lesson) -> list[ast.AST]:
    """The validation cell, and the lesson modules it imports (where a helper such as check_parameters lives)."""
    nb = runner.read_notebook(lesson.notebook)
    code = [c for c in nb.cells if c.cell_type == "code"]
    index = next(i for i, c in enumerate(code) if "parameters" in c.metadata.get("tags", []))
    cell = ast.parse(code[index + 1].source)
    trees: list[ast.AST] = [cell]
    for node in ast.walk(cell):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("verlstudy.lessons."):
            spec = importlib.util.find_spec(node.module)
            if spec is not None and spec.origin:
                trees.append(ast.parse(Path(spec.origin).read_text(encoding="utf-8")))
    return trees


def parameter_bounds(lesson: registry.Lesson) -> dict[str, tuple[ast.expr, ast.expr, dict[str, str]]]:
    """{name: (minimum expr, maximum expr, {variable: parameter})} for every bounded parameter but the seed.

    A bound may be a literal or an expression of other parameters (`maximum=num_experts - 1`, or through a
    local such as `experts = check_int("num_experts", ...)`); the variable map turns locals into parameters.
    """
    declared = _declared(lesson)
    found: dict[str, tuple[ast.expr, ast.expr, dict[str, str]]] = {}
    for tree in _validation_trees(lesson):
        variables = {name: name for name in declared}
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name)
                and node.value.func.id in CHECKS
                and node.value.args
                and isinstance(node.value.args[0], ast.Constant)
            ):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        variables[target.id] = str(node.value.args[0].value)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CHECKS):
                continue
            if not node.args or not isinstance(node.args[0], ast.Constant) or node.args[0].value not in declared:
                continue
            bounds = {k.arg: k.value for k in node.keywords if k.arg in ("minimum", "maximum")}
            if len(bounds) == 2 and node.args[0].value != "seed":
                found[str(node.args[0].value)] = (bounds["minimum"], bounds["maximum"], variables)
    return found


def _depends_on(bound: tuple[ast.expr, ast.expr, dict[str, str]]) -> set[str]:
    low, high, variables = bound
    names = {n.id for expr in (low, high) for n in ast.walk(expr) if isinstance(n, ast.Name)}
    return {variables[n] for n in names if n in variables}


def _evaluate(expr: ast.expr, variables: dict[str, str], values: dict[str, object]) -> object:
    namespace = {var: values[param] for var, param in variables.items() if param in values}
    return eval(compile(ast.Expression(expr), "<bound>", "eval"), {"__builtins__": {"max": max, "min": min}}, namespace)


def corners(lesson: registry.Lesson) -> list[tuple[str, dict[str, object]]]:
    """(label, parameters) to run: every parameter at its minimum, every one at its maximum, and for each
    bound that depends on other parameters, the two mixed corners (they high and it low, they low and it high).

    Dependent bounds are evaluated at the corner (topk's maximum is num_experts - 1 where num_experts is 64).
    """
    bounds = parameter_bounds(lesson)
    independent = [n for n in bounds if not _depends_on(bounds[n])]
    dependent = [n for n in bounds if _depends_on(bounds[n])]

    def corner(levels: dict[str, int]) -> dict[str, object]:
        values: dict[str, object] = {}
        for name in [*independent, *dependent]:
            low, high, variables = bounds[name]
            values[name] = _evaluate((low, high)[levels.get(name, 0)], variables, values)
        return values

    found = [("minimum", corner(dict.fromkeys(bounds, 0))), ("maximum", corner(dict.fromkeys(bounds, 1)))]
    for name in dependent:
        others = _depends_on(bounds[name])
        for mine, theirs, label in ((0, 1, "low"), (1, 0, "high")):
            levels = {**dict.fromkeys(others, theirs), name: mine}
            values = corner(levels)
            shown = {k: values[k] for k in [*sorted(others), name]}
            if all(shown != dict((k, v) for k, v in c.items() if k in shown) for _, c in found):
                found.append((f"{name} {label}, {', '.join(sorted(others))} {'high' if theirs else 'low'}", shown))
    return found


# ---------------------------------------------------------------- the generated sweep (issue 43 item 3)

SWEEP_SEED = 43  # the draws are the same on every run: a failure found once is found again
SEEDS = range(10)  # every corner runs with each of these seeds once the budget allows


@dataclass(frozen=True)
class Spec:
    """One validated parameter: an int or float range (bounds as expressions of other parameters where they
    depend on them) or a set of choices."""

    name: str
    kind: str  # "int" | "float" | "choice" | "list" (of ints: low/high bound each element)
    low: ast.expr | None = None
    high: ast.expr | None = None
    variables: tuple[tuple[str, str], ...] = ()
    choices: tuple[object, ...] = ()
    length: tuple[int, int] = (0, 0)  # a list's shortest and longest length

    def bounds(self, values: dict[str, object]) -> tuple[Any, Any]:
        """(minimum, maximum) at `values` (the parameters this bound depends on must be in it)."""
        assert self.low is not None and self.high is not None
        variables = dict(self.variables)
        return _evaluate(self.low, variables, values), _evaluate(self.high, variables, values)

    def depends_on(self) -> set[str]:
        if self.kind in ("choice", "list"):
            return set()
        assert self.low is not None and self.high is not None
        return _depends_on((self.low, self.high, dict(self.variables)))


def parameter_space(lesson: registry.Lesson) -> dict[str, Spec]:
    """Every parameter the lesson's validation bounds: check_int/check_float with both bounds (literal or computed
    from other parameters), check_choice with a literal tuple, and the seed (start_lesson's 0..SEED_MAXIMUM).
    Parameters listed in the order they can be drawn (a bound's parameters before it)."""
    declared = _declared(lesson)
    kinds: dict[str, str] = {}
    choices: dict[str, tuple[object, ...]] = {}
    lists: dict[str, Spec] = {}
    for tree in _validation_trees(lesson):
        for node in ast.walk(tree):
            found = _list_spec(node, declared, tree)
            if found is not None:
                lists[found.name] = found
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args):
                continue
            if not isinstance(node.args[0], ast.Constant) or node.args[0].value not in declared:
                continue
            name = str(node.args[0].value)
            if node.func.id in CHECKS:
                kinds[name] = "int" if node.func.id == "check_int" else "float"
            elif node.func.id == "check_choice" and len(node.args) >= 3:
                try:
                    choices[name] = tuple(ast.literal_eval(node.args[2]))
                except ValueError:
                    continue
    space: dict[str, Spec] = {}
    bounds = parameter_bounds(lesson)
    pending = dict(bounds)
    while pending:  # a bound's own parameters first
        ready = [n for n, b in pending.items() if not (_depends_on(b) - set(space) - {n})]
        if not ready:
            raise ValueError(f"lesson {lesson.code}: the bounds of {sorted(pending)} depend on each other")
        for name in ready:
            low, high, variables = pending.pop(name)
            space[name] = Spec(name, kinds[name], low, high, tuple(sorted(variables.items())))
    for name, allowed in choices.items():
        space[name] = Spec(name, "choice", choices=allowed)
    space.update(lists)
    if "seed" in declared:
        space["seed"] = Spec("seed", "int", _literal(0), _literal(SEED_MAXIMUM))
    return space


def _list_spec(node: ast.AST, declared: dict[str, object], tree: ast.AST) -> Spec | None:
    """A list parameter whose items are checked one by one, `check_int("NAME[i]", c, minimum=.., maximum=..)`, and
    whose length is bounded where the validation compares `lo <= len(NAME) <= hi` (else the default's length)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "check_int"):
        return None
    if not (node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return None
    name = node.args[0].value.split("[", 1)[0]
    if not node.args[0].value.endswith("]") or name not in declared:
        return None
    bounds = {k.arg: k.value for k in node.keywords if k.arg in ("minimum", "maximum")}
    if len(bounds) != 2:
        return None
    default = declared[name]
    length = (len(default), len(default)) if isinstance(default, list) else (1, 1)
    for compare in ast.walk(tree):
        if (
            isinstance(compare, ast.Compare)
            and len(compare.comparators) == 2
            and isinstance(compare.comparators[0], ast.Call)
            and isinstance(compare.comparators[0].func, ast.Name)
            and compare.comparators[0].func.id == "len"
            and any(isinstance(a, ast.Name) and a.id == name for a in compare.comparators[0].args)
        ):
            with contextlib.suppress(ValueError):
                length = (int(ast.literal_eval(compare.left)), int(ast.literal_eval(compare.comparators[1])))
    return Spec(name, "list", bounds["minimum"], bounds["maximum"], length=length)


def _list_value(spec: Spec, length: int, items: list[int]) -> list[int]:
    """`items` cut or padded to `length`; a list with every item at its minimum gets its last item raised by one
    (lesson 03 refuses a pipeline whose stages all hold no MoE layer: the one list the course has)."""
    low, _ = spec.bounds({})
    out = (items + [low] * length)[:length]
    if all(v == low for v in out):
        out[-1] = low + 1
    return out


def _literal(value: int) -> ast.expr:
    return ast.parse(repr(value), mode="eval").body


def _draw(spec: Spec, values: dict[str, object], rng: random.Random) -> object:
    """One value of `spec`, given the parameters drawn before it: the bounds themselves a quarter of the time,
    else uniform (log-uniform over a range spanning more than 16x), seeds mostly small."""
    if spec.kind == "choice":
        return rng.choice(spec.choices)
    if spec.kind == "list":
        shortest, longest = spec.length
        item = Spec(spec.name, "int", spec.low, spec.high)
        length = rng.randint(shortest, longest)
        return _list_value(spec, length, [int(_draw(item, values, rng)) for _ in range(length)])  # type: ignore[call-overload]
    low, high = spec.bounds(values)
    if spec.name == "seed" and rng.random() < 0.5:
        return rng.choice(list(SEEDS))
    roll = rng.random()
    if roll < 0.125:
        return low
    if roll < 0.25:
        return high
    wide = low > 0 and high / low > 16
    if spec.kind == "int":
        if wide:
            return min(high, max(low, round(math.exp(rng.uniform(math.log(low), math.log(high + 1))))))
        return rng.randint(int(low), int(high))
    x = math.exp(rng.uniform(math.log(low), math.log(high))) if wide else rng.uniform(low, high)
    return min(high, max(low, float(f"{x:.4g}")))  # a short literal on the command line, still in range


def _corner(space: dict[str, Spec], level: int, seed: int) -> dict[str, object]:
    values: dict[str, object] = {}
    for name, spec in space.items():
        if name == "seed":
            values[name] = seed
        elif spec.kind == "choice":
            values[name] = spec.choices[-level]  # the first choice at the minimum corner, the last at the maximum
        elif spec.kind == "list":  # the fewest items, each at its minimum; the most items, each at its maximum
            low, high = spec.bounds(values)
            values[name] = _list_value(spec, spec.length[level], [(low, high)[level]] * spec.length[level])
        else:
            values[name] = spec.bounds(values)[level]
    return values


@dataclass(frozen=True)
class Case:
    lesson: registry.Lesson
    label: str
    params: dict[str, object]

    def shown(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.params.items())


def draw_cases(lesson: registry.Lesson, n: int, sweep_seed: int = SWEEP_SEED) -> list[Case]:
    """`n` parameter sets for `lesson`, each inside its validated space, the same ones on every call.

    First the corners (every parameter at its minimum, then at its maximum, then the mixed corners of bounds that
    depend on other parameters) at seed 0; then, alternating, a random draw over the whole space (each bound
    drawn an eighth of the time, the seed half the time one of 0-9) and the next corner at the next seed (1-9, so
    a budget of about 2 x corners x 10 runs every corner at every seed 0-9).
    """
    space = parameter_space(lesson)
    rng = random.Random(f"{sweep_seed}-{lesson.code}")
    if list(space) == ["seed"]:  # nothing but the seed: seeds 0-9, then drawn ones (the largest among them)
        seeds = [Case(lesson, f"seed {s}", {"seed": s}) for s in SEEDS]
        draws = [Case(lesson, f"draw {i + 1}", {"seed": _draw(space["seed"], {}, rng)}) for i in range(max(n - 10, 0))]
        return [*seeds, *draws][: max(n, 0)]
    if not space:
        return []
    base = [(label, {k: v for k, v in params.items()}) for label, params in corners(lesson)]
    full_corners: list[tuple[str, dict[str, object]]] = []
    for label, partial in base:
        levels = 0 if label != "maximum" else 1
        values = _corner(space, levels, 0)
        for name in partial:  # a mixed corner: its own values, the rest re-evaluated around them
            values[name] = partial[name]
        values = _reclamp(space, values)
        full_corners.append((label, values))
    cases = [Case(lesson, f"{label} seed 0", params) for label, params in full_corners]
    seeded = ((label, params, s) for s in list(SEEDS)[1:] for label, params in full_corners)
    draws = 0
    while len(cases) < n:
        draws += 1
        values: dict[str, object] = {}
        for name, spec in space.items():
            values[name] = _draw(spec, values, rng)
        cases.append(Case(lesson, f"draw {draws}", values))
        nxt = next(seeded, None)
        if nxt is not None and len(cases) < n:
            label, params, s = nxt
            cases.append(Case(lesson, f"{label} seed {s}", {**params, "seed": s}))
    return cases[: max(n, 0)]


def _reclamp(space: dict[str, Spec], values: dict[str, object]) -> dict[str, object]:
    """Re-evaluate dependent bounds around a mixed corner's own values (a value outside its new range moves to
    the nearest bound)."""
    out: dict[str, object] = {}
    for name, spec in space.items():
        value = values[name]
        if spec.kind not in ("choice", "list"):
            low, high = spec.bounds(out)
            value = min(max(value, low), high)  # type: ignore[type-var]
        out[name] = value
    return out


# A lesson's claims checked by calling its mechanism directly (seconds for many seeds); the notebook still runs at
# the corners. Each returns the claims that failed (empty: all held), worded as the notebook words them.


def lesson_07_bandit(params: dict[str, object]) -> list[str]:
    """Section 6's bandit claims (clip-higher keeps entropy, reward about equal, holds on further seeds), as the
    notebook computes them."""
    from verlstudy.lessons.l07_grpo_recipe.bandit import steps_until_below, train_clip_bandits

    seed, steps, prompts = int(params["seed"]), int(params["bandit_steps"]), int(params["bandit_prompts"])  # type: ignore[call-overload]
    extra = int(params["robustness_seeds"])  # type: ignore[call-overload]
    bandit = dict(prompts=prompts, arms=8, correct=4, success=0.7, n=8, epochs=4, steps=steps)
    settings = [(0.2, 0.2, 10.0), (0.2, 0.28, 10.0)]
    runs = train_clip_bandits(settings, range(seed, seed + 1 + extra), **bandit)  # type: ignore[arg-type]
    symmetric, higher = runs[seed]
    failed = []
    ends = symmetric.entropy[-1], higher.entropy[-1]
    if not ends[1] > ends[0] + 0.03:
        failed.append(f"final entropy: clip-higher {ends[1]:.3f} > symmetric {ends[0]:.3f} + 0.03 nats")
    lasts = steps_until_below(symmetric.entropy, 0.5), steps_until_below(higher.entropy, 0.5)
    if not lasts[1] > lasts[0]:
        failed.append(f"steps until entropy < 0.5: clip-higher {lasts[1]} > symmetric {lasts[0]}")
    rewards = [sum(run.reward[-10:]) / 10 for run in (symmetric, higher)]
    if not abs(rewards[1] - rewards[0]) < 0.02:
        failed.append(f"reward over the last 10 steps: {rewards[0]:.3f} vs {rewards[1]:.3f} (gap < 0.02)")
    finals = {s: (r[0].entropy[-1], r[1].entropy[-1]) for s, r in runs.items() if s != seed}
    if not all(h > s for s, h in finals.values()):
        failed.append(f"clip-higher ends with more entropy on all {extra} further seeds")
    return failed


MECHANISMS: dict[int, Callable[[dict[str, object]], list[str]]] = {7: lesson_07_bandit}
NOTEBOOK_CASES = 4  # with a mechanism, the notebook itself runs only the first cases (the corners at seed 0)


@dataclass
class Outcome:
    case: Case
    how: str  # "notebook" | "mechanism"
    ok: bool
    detail: str  # the failed claims or the error, one line


def run_notebook(case: Case, out_dir: Path) -> Outcome:
    folder = out_dir / f"{case.lesson.code}-{abs(hash(case.label)) % 10**8}"
    result = runner.run_one(case.lesson, folder, {**case.params, "device": "cpu"})
    if result.status == "passed":
        return Outcome(case, "notebook", True, f"passed in {result.seconds:.0f} s")
    failed = [str(c.get("name")) for c in result.claims if not c.get("reproduced")]
    detail = "; ".join(failed) if failed else " ".join(str(result.error).split())
    if result.status == "bad parameter":
        detail = f"the validation refused a value drawn from its own range: {detail}"
    return Outcome(case, "notebook", False, f"{result.status}: {detail}")


def run_mechanism(case: Case, check: Callable[[dict[str, object]], list[str]]) -> Outcome:
    try:
        failed = check(case.params)
    except Exception as e:  # a mechanism that raises on an accepted value is a failure of that value
        return Outcome(case, "mechanism", False, f"{type(e).__name__}: {' '.join(str(e).split())}")
    return Outcome(case, "mechanism", not failed, "; ".join(failed) or "claims held")


def plan(lessons: list[registry.Lesson], n: int) -> list[tuple[Case, str]]:
    """(case, how) for every lesson: `n` cases each; a lesson with a mechanism checks all of them through it and
    runs the notebook on its first NOTEBOOK_CASES."""
    jobs: list[tuple[Case, str]] = []
    for lesson in lessons:
        cases = draw_cases(lesson, n)
        if lesson.number in MECHANISMS:
            jobs += [(c, "mechanism") for c in cases] + [(c, "notebook") for c in cases[:NOTEBOOK_CASES]]
        else:
            jobs += [(c, "notebook") for c in cases]
    return jobs


def sweep(
    jobs: list[tuple[Case, str]],
    out_dir: Path,
    workers: int = 2,
    mechanisms: dict[int, Callable[[dict[str, object]], list[str]]] | None = None,
    say: Callable[[str], object] = print,
) -> list[Outcome]:
    """Run every job, `workers` at a time (a notebook in a kernel of its own, a mechanism in a thread of this
    process); print a line per job as it ends; return the outcomes in job order."""
    mechanisms = MECHANISMS if mechanisms is None else mechanisms

    def one(job: tuple[Case, str]) -> Outcome:
        case, how = job
        if how == "mechanism":
            outcome = run_mechanism(case, mechanisms[case.lesson.number])
        else:
            outcome = run_notebook(case, out_dir)
        mark = "ok  " if outcome.ok else "FAIL"
        say(f"{mark} {case.lesson.code} {how} {case.label} ({case.shown()}): {outcome.detail}")
        return outcome

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:  # torch and papermill's waits release the GIL
        return list(pool.map(one, jobs))


def failure_lines(outcomes: list[Outcome]) -> list[str]:
    """One line per failed case: lesson, how it ran, the parameters, what failed."""
    return [
        f"FAILED lesson {o.case.lesson.code} ({o.how}, {o.case.label}) at {o.case.shown()}: {o.detail}"
        for o in outcomes
        if not o.ok
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", help="lesson numbers (default: every lesson)")
    parser.add_argument("--cases", type=int, default=12, help="parameter sets per lesson (default 12)")
    parser.add_argument("--workers", type=int, default=2, help="notebooks executed at once")
    args = parser.parse_args(argv)
    if args.cases < 1 or args.workers < 1:
        parser.error(f"--cases and --workers must be at least 1, got {args.cases} and {args.workers}")
    lessons = registry.select_lessons(args.lessons)
    jobs = plan(lessons, args.cases)
    print(f"sweep: {len(jobs)} runs over {len(lessons)} lessons ({args.cases} parameter sets each)", flush=True)
    with tempfile.TemporaryDirectory(prefix="verlstudy-extremes-") as tmp:
        outcomes = sweep(jobs, Path(tmp), args.workers, say=lambda line: print(line, flush=True))
    failures = failure_lines(outcomes)
    for line in failures:
        print(line, file=sys.stderr)
    print(f"sweep: {len(outcomes) - len(failures)} of {len(outcomes)} runs held every claim")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
