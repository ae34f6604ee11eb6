"""Run every lesson at the edges of its allowed parameters: a validated value must also be a runnable one.

    .venv/bin/python tools/extremes.py [LESSON ...] [--workers 2]   (make extremes; the weekly CI job runs it)

For each lesson, the ranges are read from its validation cell (`check_int`/`check_float` calls with
literal `minimum=`/`maximum=`), and the lesson runs twice: every bounded parameter at its minimum, then
every one at its maximum (the seed stays at its default: its range only guards numpy). A failed run
names the lesson, the edge and the first error; the exit code is 1 if any edge fails. A corner the
validation itself refuses is printed, not failed. A bound computed from another parameter (topk's maximum is
num_experts - 1) is evaluated at each corner, and each such bound adds its two mixed corners (num_experts at
its maximum with topk at its minimum, and the reverse); the ranges may sit in a helper the validation cell
imports from the lesson's package (lesson 03's check_parameters). Not part of
`make test`: it executes each lesson twice more, and a push runs each notebook at most twice.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import sys
import tempfile
from pathlib import Path

from verlstudy.course import parameters, registry, runner

CHECKS = ("check_int", "check_float")


def parameter_ranges(lesson: registry.Lesson) -> dict[str, tuple[object, object]]:
    """{name: (minimum, maximum)} for the lesson's parameters whose validation (the cell after `parameters`, or
    the lesson helper it calls) gives both as literals."""
    declared = parameters.notebook_parameters(lesson.notebook)
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
    declared = parameters.notebook_parameters(lesson.notebook)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    lessons = registry.select_lessons(args.lessons)
    failures = []
    with tempfile.TemporaryDirectory(prefix="verlstudy-extremes-") as tmp:
        for lesson in lessons:
            for edge, params in corners(lesson):
                if not params:
                    print(f"{lesson.code} {edge}: no bounded parameters")
                    continue
                result = runner.run_one(lesson, Path(tmp) / edge.replace(" ", "_"), {**params, "device": "cpu"})
                shown = ", ".join(f"{k}={v}" for k, v in params.items())
                print(f"{lesson.code} {edge} ({shown}): {result.status} in {result.seconds:.0f} s {result.error}")
                if result.status == "bad parameter":  # a range coupled to another one refused this corner
                    continue
                if result.status != "passed":
                    failures.append(f"{lesson.code} at its {edge}: {result.error}")
    for line in failures:
        print(f"FAILED {line}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
