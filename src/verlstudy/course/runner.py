"""Executing lessons with papermill, in parallel: `verlstudy run`, its report and its JUnit file."""

from __future__ import annotations

import ast
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from verlstudy.course.outcomes import count_claims
from verlstudy.course.registry import Lesson
from verlstudy.course.twins import (
    FLOOR_SOURCE,
    KERNEL_ARGS,
    KERNEL_NAME,
    normalise,
    quiet_kernel_env,
)
from verlstudy.kit.params import positive_int

# ---------------------------------------------------------------- parameters


def notebook_parameters(path: Path) -> dict[str, object]:
    """Names and default values assigned in the notebook's cell tagged `parameters`."""
    nb = nbformat.read(path, as_version=4)
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    if len(cells) != 1:
        raise ValueError(f"{path.name} must have exactly one cell tagged 'parameters', found {len(cells)}")
    params: dict[str, object] = {}
    for node in ast.parse(cells[0].source).body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    try:
                        params[target.id] = ast.literal_eval(node.value) if node.value is not None else None
                    except ValueError:
                        params[target.id] = None
    return params


def parse_parameter(text: str) -> tuple[str, object]:
    """Parse `name=value` from the command line; the value as a Python literal where it is one."""
    if "=" not in text:
        raise ValueError(f"parameter {text!r} must look like name=value (e.g. seed=1 or device=cpu)")
    name, raw = (part.strip() for part in text.split("=", 1))
    if not name.isidentifier():
        raise ValueError(f"parameter name {name!r} is not a valid Python name")
    try:
        value: object = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        value = raw
    return name, value


def check_parameter_names(lesson: Lesson, params: Mapping[str, object]) -> None:
    """Reject parameter names the lesson does not declare, listing the ones it does."""
    known = notebook_parameters(lesson.notebook)
    for name in params:
        if name not in known:
            raise ValueError(
                f"lesson {lesson.code} has no parameter {name!r}; its parameters are: {', '.join(sorted(known))}"
            )


# ---------------------------------------------------------------- running with papermill


@dataclass
class RunResult:
    lesson: Lesson | None  # None for the floor notebook
    status: str  # "passed" | "failed" | "bad parameter"
    seconds: float
    claims_reproduced: int = 0
    claims_total: int = 0
    error: str = ""
    output: Path | None = None
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.lesson.stem if self.lesson else "floor"


def floor_notebook() -> nbformat.NotebookNode:
    """The floor: a notebook that only imports torch and matplotlib (what every lesson pays anyway)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(FLOOR_SOURCE)]
    return normalise(nb)


def _bad_parameter_message(nb: nbformat.NotebookNode) -> str | None:
    """If execution failed in the cell validating parameters, its ValueError/TypeError message."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    for i, cell in enumerate(code):
        if "parameters" in cell.metadata.get("tags", []):
            following = [c for c in code[i + 1 :] if "injected-parameters" not in c.metadata.get("tags", [])]
            if not following:
                return None
            for out in following[0].get("outputs", []):
                if out.get("output_type") == "error" and out.get("ename") in ("ValueError", "TypeError"):
                    return str(out.get("evalue"))
    return None


def execute_with_papermill(
    source: Path, target: Path, parameters: Mapping[str, object], cwd: Path, timeout_s: int = 600
) -> tuple[str, str, float]:
    """Execute `source` into `target` in a fresh kernel; (status, error, seconds)."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    quiet_kernel_env()
    target.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    status, error = "passed", ""
    try:
        # Lessons run in threads: papermill's `cwd=` would chdir the whole process, so another thread
        # could read or write relative paths, or start its kernel, in the wrong folder. Absolute paths,
        # and the kernel's folder given to nbclient directly, keep each run to itself.
        papermill.execute_notebook(
            str(Path(source).resolve()),
            str(Path(target).resolve()),
            parameters=dict(parameters),
            kernel_name=KERNEL_NAME,
            progress_bar=False,
            log_output=False,
            resources={"metadata": {"path": str(Path(cwd).resolve())}},
            execution_timeout=timeout_s,
            request_save_on_cell_execute=False,
            extra_arguments=KERNEL_ARGS,
            shutdown_kernel="immediate",
        )
    except PapermillExecutionError as e:
        status, error = "failed", f"{e.ename}: {e.evalue}"
    return status, error, time.perf_counter() - start


def run_one(
    lesson: Lesson | None, out_dir: Path, parameters: Mapping[str, object] | None = None, timeout_s: int = 600
) -> RunResult:
    """Execute one lesson (or the floor, for lesson=None) with papermill into out_dir."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if lesson is None:
        source = out_dir / "_floor_input.ipynb"
        nbformat.write(floor_notebook(), source)
        target, params, cwd = out_dir / "floor.ipynb", {}, out_dir
    else:
        source, target = lesson.notebook, out_dir / lesson.notebook.name
        # the kernel runs in the output folder: an installed course's notebooks sit in read-only site-packages
        params, cwd = dict(parameters or {}), out_dir
    status, error, seconds = execute_with_papermill(source, target, params, cwd, timeout_s)
    result = RunResult(lesson, status, seconds, error=error, output=target)
    if target.exists():
        nb = nbformat.read(target, as_version=4)
        result.claims_reproduced, result.claims_total = count_claims(nb)
        if status == "failed":
            bad = _bad_parameter_message(nb)
            if bad is not None:
                result.status, result.error = "bad parameter", bad
    return result


def run_lessons(
    lessons: list[Lesson],
    out_dir: Path,
    parameters: Mapping[str, object] | None = None,
    *,
    workers: int = 2,
    with_floor: bool = True,
    on_done: Callable[[RunResult], None] | None = None,
) -> tuple[list[RunResult], RunResult | None]:
    """Execute lessons in parallel fresh kernels; also the floor notebook when `with_floor`.

    Returns (lesson results in course order, floor result). Parameters go to every lesson; a name a
    lesson does not declare is rejected up front.
    """
    positive_int("workers", workers)
    parameters = dict(parameters or {})
    for lesson in lessons:
        if not lesson.notebook.exists():
            raise FileNotFoundError(f"lesson {lesson.code}: {lesson.notebook.name} does not exist")
        check_parameter_names(lesson, parameters)
    jobs: list[Lesson | None] = list(lessons)
    if with_floor:
        jobs.insert(0, None)  # first, so it runs while the machine is as busy as for the lessons
    results: dict[str, RunResult] = {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(run_one, job, out_dir, parameters): job for job in jobs}
        for future in as_completed(futures):
            result = future.result()
            results[result.name] = result
            if on_done:
                on_done(result)
    floor = results.pop("floor", None)
    ordered = [results[lesson.stem] for lesson in lessons]
    return ordered, floor


def report_markdown(results: list[RunResult], floor: RunResult | None) -> str:
    """The run's report: one row per lesson with status, seconds, seconds beyond the floor, claims."""
    lines = ["# Course run", ""]
    if floor is not None:
        lines.append(f"Floor (a notebook importing torch and matplotlib): {floor.seconds:.1f} s")
        lines.append("")
    lines += [
        "| lesson | status | seconds | beyond floor | budget | claims reproduced |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for r in results:
        beyond = f"{r.seconds - floor.seconds:+.1f}" if floor else "-"
        budget = f"{r.lesson.budget_s:.0f}" if r.lesson else "-"
        claims = f"{r.claims_reproduced}/{r.claims_total}" if r.claims_total else "-"
        lines.append(f"| {r.name} | {r.status} | {r.seconds:.1f} | {beyond} | {budget} | {claims} |")
    failed = [r for r in results if r.status != "passed"]
    lines += ["", f"{len(results) - len(failed)} passed, {len(failed)} failed"]
    for r in failed:
        lines.append(f"- {r.name}: {r.error}")
    return "\n".join(lines) + "\n"


def junit_xml(results: list[RunResult]) -> str:
    """JUnit XML with one test case per lesson, for CI systems that collect test reports."""
    import xml.etree.ElementTree as ET

    suite = ET.Element(
        "testsuite",
        name="verlstudy",
        tests=str(len(results)),
        failures=str(sum(r.status != "passed" for r in results)),
        time=f"{sum(r.seconds for r in results):.3f}",
    )
    for r in results:
        case = ET.SubElement(suite, "testcase", classname="verlstudy.lessons", name=r.name, time=f"{r.seconds:.3f}")
        if r.status != "passed":
            failure = ET.SubElement(case, "failure", message=r.error[:500] or r.status)
            failure.text = r.error
        ET.SubElement(case, "system-out").text = f"claims reproduced: {r.claims_reproduced}/{r.claims_total}"
    return ET.tostring(suite, encoding="unicode")
