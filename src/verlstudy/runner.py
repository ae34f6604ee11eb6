"""Executing lessons: `refresh` (make a notebook's reference outputs) and `run` (papermill, in parallel).

Kernels get a quiet, deterministic environment (no progress bars, no torch log lines, one thread)
so that what nbval compares is the lesson's own output.
"""

from __future__ import annotations

import ast
import os
import re
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from verlstudy.course import Lesson, project_root

KERNEL_NAME = "python3"
KERNELSPEC = {"name": KERNEL_NAME, "display_name": "Python 3 (ipykernel)", "language": "python"}
QUIET_ENV = {
    "TQDM_DISABLE": "1",
    "TORCH_CPP_LOG_LEVEL": "ERROR",
    "OMP_NUM_THREADS": "1",
    "PYTHONHASHSEED": "0",
    "PYTHONWARNINGS": "ignore::DeprecationWarning",
    "PYDEVD_DISABLE_FILE_VALIDATION": "1",
}
CELL_METADATA_DROP = ("execution", "papermill", "collapsed", "scrolled", "jp-MarkdownHeadingCollapsed")
CLAIMS_LINE = re.compile(r"^(\d+)/(\d+) claims reproduced$", re.M)
# ipykernel 7 warns on every start that loopback TCP is unencrypted; it is noise on a local run
KERNEL_ARGS = ["--IPKernelApp.log_level=ERROR"]
FLOOR_SOURCE = "import torch\nimport matplotlib.pyplot as plt"


def quiet_kernel_env() -> None:
    """Set the kernel environment in this process; kernels started from here inherit it."""
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)


# ---------------------------------------------------------------- notebooks <-> twins


def read_twin(path: Path) -> nbformat.NotebookNode:
    """Read a jupytext py:percent twin as a notebook with stable cell ids and our kernelspec."""
    import jupytext

    nb = jupytext.read(path)
    return normalise(nb)


def normalise(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Drop run-to-run metadata (papermill, timings), set the kernelspec, number cell ids stably."""
    nb.metadata.pop("papermill", None)
    nb.metadata.pop("widgets", None)
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata.setdefault("language_info", {"name": "python"})
    jt = nb.metadata.get("jupytext")
    if isinstance(jt, dict):
        # the pairing is a repo-wide setting (jupytext.toml); per-notebook copies only drift
        for key in ("text_representation", "formats", "notebook_metadata_filter", "cell_metadata_filter"):
            jt.pop(key, None)
        if not jt:
            nb.metadata.pop("jupytext")
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"c{i:02d}"
        for key in CELL_METADATA_DROP:
            cell.metadata.pop(key, None)
        if cell.cell_type == "code":
            tags = [t for t in cell.metadata.get("tags", []) if t != "injected-parameters"]
            if tags:
                cell.metadata["tags"] = tags
            else:
                cell.metadata.pop("tags", None)
            cell.outputs = coalesce_streams(cell.get("outputs", []))
            for out in cell.outputs:
                out.get("metadata", {}).pop("execution", None)
    nb.nbformat, nb.nbformat_minor = 4, 5
    return nb


def coalesce_streams(outputs: list) -> list:
    """Merge consecutive stdout (or stderr) chunks: how a print is split depends on flush timing."""
    merged: list = []
    for out in outputs:
        prev = merged[-1] if merged else None
        if (
            out.get("output_type") == "stream"
            and prev is not None
            and prev.get("output_type") == "stream"
            and prev.get("name") == out.get("name")
        ):
            prev["text"] = prev["text"] + out["text"]
        else:
            merged.append(out)
    return merged


def twin_text(nb: nbformat.NotebookNode) -> str:
    """The py:percent text jupytext writes for a notebook (what the twin must contain)."""
    import jupytext

    # no header: the jupytext version and kernelspec would make the twin differ between machines
    return jupytext.writes(nb, fmt={"extension": ".py", "format_name": "percent", "notebook_metadata_filter": "-all"})


# ---------------------------------------------------------------- executing


def execute_in_place(nb: nbformat.NotebookNode, cwd: Path, timeout_s: int = 600) -> nbformat.NotebookNode:
    """Execute every cell in a fresh kernel (nbclient, no timing metadata); raise on the first error."""
    from nbclient import NotebookClient

    quiet_kernel_env()
    client = NotebookClient(
        nb,
        timeout=timeout_s,
        kernel_name=KERNEL_NAME,
        resources={"metadata": {"path": str(cwd)}},
        record_timing=False,
        shutdown_kernel="immediate",
        extra_arguments=KERNEL_ARGS,
    )
    client.execute()
    return nb


def _output_text(cell: nbformat.NotebookNode) -> str:
    parts = []
    for out in coalesce_streams([dict(o) for o in cell.get("outputs", [])]):
        if "text" in out:
            parts.append(out["text"])
        for mime, value in sorted(out.get("data", {}).items()):
            if mime.startswith("text/") or mime == "application/json":
                parts.append(f"{mime}:{value}")
            else:
                parts.append(f"{mime}:<binary>")
        if out.get("output_type") == "error":
            parts.append(f"{out.get('ename')}: {out.get('evalue')}")
    return "\n".join(parts)


def changed_cells(old: nbformat.NotebookNode | None, new: nbformat.NotebookNode) -> list[str]:
    """Describe which code cells' text outputs differ between two versions of a notebook."""
    new_code = [c for c in new.cells if c.cell_type == "code"]
    if old is None:
        return [f"new notebook: {len(new_code)} code cells"]
    old_code = [c for c in old.cells if c.cell_type == "code"]
    changes = []
    for i, cell in enumerate(new_code):
        before = old_code[i] if i < len(old_code) else None
        if before is None:
            changes.append(f"code cell {i}: added")
        elif _output_text(before) != _output_text(cell):
            first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
            changes.append(f"code cell {i} ({first[:60]}): output changed")
    if len(old_code) > len(new_code):
        changes.append(f"{len(old_code) - len(new_code)} code cells removed")
    return changes


def refresh(lesson: Lesson, source: str = "py") -> list[str]:
    """Re-execute a lesson in a fresh kernel, write its .ipynb (outputs kept) and normalised twin.

    `source="py"` builds the cells from the jupytext twin (the file people edit); `source="ipynb"`
    from the notebook (after editing in Jupyter without jupytext). Returns the list of changes.
    """
    if source not in ("py", "ipynb"):
        raise ValueError(f"source must be 'py' or 'ipynb', got {source!r}")
    path = lesson.twin if source == "py" else lesson.notebook
    if not path.exists():
        raise FileNotFoundError(f"lesson {lesson.code} has no {source} source yet: {path.name} is missing")
    old = nbformat.read(lesson.notebook, as_version=4) if lesson.notebook.exists() else None
    nb = read_twin(path) if source == "py" else normalise(nbformat.read(path, as_version=4))
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    execute_in_place(nb, lesson.notebook.parent)
    nb = normalise(nb)
    nbformat.validate(nb)
    nbformat.write(nb, lesson.notebook)
    lesson.twin.parent.mkdir(parents=True, exist_ok=True)
    lesson.twin.write_text(twin_text(nb))
    return changed_cells(old, nb)


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


def count_claims(nb: nbformat.NotebookNode) -> tuple[int, int]:
    """(reproduced, total) from the claims table the lesson's last cell prints."""
    for cell in reversed(nb.cells):
        if cell.cell_type != "code":
            continue
        match = CLAIMS_LINE.search(_output_text(cell))
        if match:
            return int(match.group(1)), int(match.group(2))
    return 0, 0


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
        params, cwd = dict(parameters or {}), lesson.notebook.parent
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
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
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


def project_notebooks_dir() -> Path:
    return project_root() / "notebooks"
