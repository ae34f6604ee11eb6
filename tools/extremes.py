"""Run every lesson at the edges of its allowed parameters: a validated value must also be a runnable one.

    .venv/bin/python tools/extremes.py [LESSON ...] [--workers 2]   (make extremes; the weekly CI job runs it)

For each lesson, the ranges are read from its validation cell (`check_int`/`check_float` calls with
literal `minimum=`/`maximum=`), and the lesson runs twice: every bounded parameter at its minimum, then
every one at its maximum (the seed stays at its default: its range only guards numpy). A failed run
names the lesson, the edge and the first error; the exit code is 1 if any edge fails. A corner the
validation itself refuses (a range coupled to another, like topk < num_experts) is printed, not failed. Not part of
`make test`: it executes each lesson twice more, and a push runs each notebook at most twice.
"""

from __future__ import annotations

import argparse
import ast
import sys
import tempfile
from pathlib import Path

from verlstudy.course import registry, runner

CHECKS = ("check_int", "check_float")


def parameter_ranges(lesson: registry.Lesson) -> dict[str, tuple[object, object]]:
    """{name: (minimum, maximum)} for the lesson's parameters whose validation gives both as literals."""
    nb = runner.read_notebook(lesson.notebook)
    code = [c for c in nb.cells if c.cell_type == "code"]
    index = next(i for i, c in enumerate(code) if "parameters" in c.metadata.get("tags", []))
    declared = runner.notebook_parameters(lesson.notebook)
    ranges: dict[str, tuple[object, object]] = {}
    for node in ast.walk(ast.parse(code[index + 1].source)):
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    lessons = registry.select_lessons(args.lessons)
    failures = []
    with tempfile.TemporaryDirectory(prefix="verlstudy-extremes-") as tmp:
        for edge, pick in (("minimum", 0), ("maximum", 1)):
            for lesson in lessons:
                params = {name: bounds[pick] for name, bounds in parameter_ranges(lesson).items()}
                if not params:
                    print(f"{lesson.code} {edge}: no bounded parameters")
                    continue
                result = runner.run_one(lesson, Path(tmp) / edge, {**params, "device": "cpu"})
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
