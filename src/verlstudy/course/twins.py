"""Notebooks and their jupytext twins, executing in place, and `refresh` (a lesson's reference outputs).

Kernels get a quiet, deterministic environment (no progress bars, no torch log lines, one thread)
so that what nbval compares is the lesson's own output.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat

from verlstudy.course.files import read_notebook, write_text
from verlstudy.course.registry import Lesson
from verlstudy.kit.records import RECORD_MIME
from verlstudy.kit.resources import cache_root
from verlstudy.kit.show import UPSTREAM_TAG

KERNEL_NAME = "python3"
KERNELSPEC = {"name": KERNEL_NAME, "display_name": "Python 3 (ipykernel)", "language": "python"}
QUIET_ENV = {
    "TQDM_DISABLE": "1",
    "TORCH_CPP_LOG_LEVEL": "ERROR",
    "OMP_NUM_THREADS": "1",
    "PYTHONHASHSEED": "0",
    "PYTHONWARNINGS": "ignore::DeprecationWarning",
    "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    "VERLSTUDY_ATTEMPTS": "0",  # the course's own executions are not a learner's attempts (kit.attempts)
}
CELL_METADATA_DROP = ("execution", "papermill", "collapsed", "scrolled", "jp-MarkdownHeadingCollapsed")
# ipykernel 7 warns on every start that loopback TCP is unencrypted; it is noise on a local run
KERNEL_ARGS = ["--IPKernelApp.log_level=ERROR"]
# The floor imports torch and matplotlib exactly as every lesson's set-up cell does (collector paused while they
# load, their heap frozen after), so no lesson is measured as cheaper than the floor by the way it imports.
FLOOR_SOURCE = "import gc\ngc.disable()\nimport torch\nimport matplotlib.pyplot as plt\ngc.freeze(); gc.enable()"


EXECUTION_LOG_ENV = "VERLSTUDY_EXECUTION_LOG"


def log_execution(name: str) -> None:
    """Append one line naming an executed notebook to $VERLSTUDY_EXECUTION_LOG (how `make test` counts runs)."""
    log = os.environ.get(EXECUTION_LOG_ENV)
    if log:
        with open(log, "a") as f:
            f.write(f"{name}\n")


class BadKernelSpec(ValueError):
    """The lessons' kernel.json cannot be read: one line naming the file and how to register the kernel again."""


def course_kernel_manager_class() -> type:
    """A kernel manager that starts lessons on this interpreter's own kernel, whatever else is on the Jupyter path.

    Kernel specs are looked up in sys.prefix only (where `make setup` registers `python3`), falling back to
    this interpreter itself: a stale `python3` in the user's home or in $JUPYTER_PATH cannot capture a lesson.
    """
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    class CourseKernelSpecs(KernelSpecManager):
        @default("kernel_dirs")
        def _course_kernel_dirs(self) -> list[str]:
            return [str(Path(sys.prefix) / "share" / "jupyter" / "kernels")]

        def get_kernel_spec(self, kernel_name: str) -> object:
            try:
                return super().get_kernel_spec(kernel_name)
            except (ValueError, TypeError) as e:  # not JSON, not UTF-8 (a ValueError too), or not a spec's fields
                spec = Path(self.kernel_dirs[0]) / kernel_name / "kernel.json"
                why = str(e).strip().splitlines()[0][:120] if str(e).strip() else type(e).__name__
                raise BadKernelSpec(
                    f"{spec} is not a valid kernel spec ({why}); "
                    f"register it again with `{sys.executable} -m ipykernel install --sys-prefix --name {kernel_name}`"
                ) from e

    class CourseKernelManager(AsyncKernelManager):
        @default("kernel_spec_manager")
        def _course_kernel_spec_manager(self) -> KernelSpecManager:
            return CourseKernelSpecs(parent=self)

    return CourseKernelManager


# caches libraries would put in the home or the system temp folder go under the course's build folder instead
# (kit.resources.cache_root: build/ in a checkout, the user's cache folder when installed; never the current folder)
CACHE_ENV = {
    "MPLCONFIGDIR": "matplotlib",
    # torch._dynamo makes $TMPDIR/torchinductor_$USER when it is imported (a jagged nested tensor imports it)
    "TORCHINDUCTOR_CACHE_DIR": "torchinductor",
    "TRITON_CACHE_DIR": "triton",
    "IPYTHONDIR": "ipython",  # the kernel's profile folder: never ~/.ipython (a read-only home would fail)
}


def quiet_kernel_env() -> None:
    """Set the kernel environment in this process; kernels started from here inherit it.

    Besides quieting logs, library caches (matplotlib's font cache, torch's compile caches) go to
    cache_root() (build/cache/ in a checkout), so a read-only home or a shared temp folder never breaks or
    collects a lesson run.
    """
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    for key, folder in CACHE_ENV.items():
        if key not in os.environ:
            path = cache_root() / folder
            path.mkdir(parents=True, exist_ok=True)
            os.environ[key] = str(path)


# ---------------------------------------------------------------- notebooks <-> twins


def read_twin(path: Path) -> nbformat.NotebookNode:
    """Read a jupytext py:percent twin as a notebook with stable cell ids and our kernelspec."""
    import jupytext

    try:
        nb = jupytext.read(path)
    except FileNotFoundError as e:
        raise ValueError(f"{path} does not exist") from e
    except (UnicodeDecodeError, SyntaxError, ValueError) as e:  # not UTF-8, or not py:percent jupytext can read
        why = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        raise ValueError(
            f"{path} cannot be read as a py:percent twin ({why}); restore it, e.g. with git checkout"
        ) from e
    return normalise(nb)


def normalise(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Drop run-to-run metadata (papermill, timings), set the kernelspec, number cell ids stably.

    Cells tagged `upstream-source` (verl's own code, shown by kit.show) lose their outputs and carry
    `nbval-ignore-output`: upstream's code is read at run time and never stored in the repository.
    """
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
            if UPSTREAM_TAG in tags:  # upstream's code is shown at run time, never stored, never compared
                cell.outputs = []
                tags += ["nbval-ignore-output"] * ("nbval-ignore-output" not in tags)
            if tags:
                cell.metadata["tags"] = tags
            else:
                cell.metadata.pop("tags", None)
            cell.outputs = coalesce_streams(cell.get("outputs", []))
            for out in cell.outputs:
                out.get("metadata", {}).pop("execution", None)
    nb.nbformat, nb.nbformat_minor = 4, 5
    return nb


def coalesce_streams(outputs: list) -> list[nbformat.NotebookNode]:
    """Consecutive stdout (or stderr) chunks as one, text a carriage return overwrote dropped: nbconvert's own
    CoalesceStreamsPreprocessor (how a print is split depends on flush timing). New outputs; the given ones stay."""
    import copy

    from nbconvert.preprocessors import CoalesceStreamsPreprocessor

    cell = nbformat.from_dict({"cell_type": "code", "metadata": {}, "source": "", "outputs": copy.deepcopy(outputs)})
    cell, _ = CoalesceStreamsPreprocessor().preprocess_cell(cell, {}, 0)
    return list(cell.outputs)


def twin_text(nb: nbformat.NotebookNode) -> str:
    """The py:percent text jupytext writes for a notebook (what the twin must contain)."""
    import jupytext

    # no header: the jupytext version and kernelspec would make the twin differ between machines
    return jupytext.writes(nb, fmt={"extension": ".py", "format_name": "percent", "notebook_metadata_filter": "-all"})


# ---------------------------------------------------------------- executing


def execute_in_place(
    nb: nbformat.NotebookNode, cwd: Path, timeout_s: int = 600, name: str = "notebook"
) -> nbformat.NotebookNode:
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
        kernel_manager_class=course_kernel_manager_class(),
    )
    log_execution(name)
    client.execute()
    return nb


def _output_text(cell: nbformat.NotebookNode) -> str:
    parts = []
    for out in coalesce_streams(list(cell.get("outputs", []))):
        if "text" in out:
            parts.append(out["text"])
        for mime, value in sorted(out.get("data", {}).items()):
            if mime.startswith("text/") or mime in ("application/json", RECORD_MIME):
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


class WouldDropCells(ValueError):
    """The .ipynb holds cells its twin lacks: building it from the twin would lose them (whichever file is newer)."""


def cells_only_in(nb: nbformat.NotebookNode, other: nbformat.NotebookNode) -> list[str]:
    """One line per cell of `nb` whose source `other` lacks (what building `other` would drop)."""
    kept = {(c.cell_type, c.source.strip()) for c in other.cells}
    lines = []
    for i, cell in enumerate(nb.cells):
        if (cell.cell_type, cell.source.strip()) not in kept:
            first = cell.source.strip().splitlines()[0] if cell.source.strip() else "(empty)"
            lines.append(f"{cell.cell_type} cell {i}: {first[:70]}")
    return lines


def cells_without_counterpart(nb: nbformat.NotebookNode, other: nbformat.NotebookNode) -> list[str]:
    """One line per cell of `nb` that `other` neither holds nor holds an edited version of, by alignment: a cell
    added to `nb` (or removed from `other`), not one `other` rewrote."""
    import difflib

    def key(cell: nbformat.NotebookNode) -> tuple[str, str]:
        return cell.cell_type, cell.source.strip()

    mine, theirs = [key(c) for c in nb.cells], [key(c) for c in other.cells]
    alone: list[int] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, mine, theirs, autojunk=False).get_opcodes():
        if op == "delete":
            alone += range(i1, i2)
        elif op == "replace" and i2 - i1 > j2 - j1:  # more cells here than there: the least alike are the extra
            likeness = {
                i: max(difflib.SequenceMatcher(None, mine[i][1], theirs[j][1]).ratio() for j in range(j1, j2))
                for i in range(i1, i2)
            }
            alone += sorted(sorted(likeness, key=likeness.__getitem__)[: (i2 - i1) - (j2 - j1)])
    lines = []
    for i in alone:
        first = mine[i][1].splitlines()[0] if mine[i][1] else "(empty)"
        lines.append(f"{mine[i][0]} cell {i}: {first[:70]}")
    return lines


def cells_refresh_would_drop(lesson: Lesson) -> list[str]:
    """What a refresh from the twin would drop of the .ipynb: every cell the twin lacks if the .ipynb is the newer
    file; if the twin is newer (its edits are meant), the cells it has no version of at all (added in Jupyter)."""
    if not (lesson.notebook.exists() and lesson.twin.exists()):
        return []
    nb, twin = read_notebook(lesson.notebook), read_twin(lesson.twin)
    if lesson.notebook.stat().st_mtime > lesson.twin.stat().st_mtime:
        return cells_only_in(nb, twin)
    return cells_without_counterpart(nb, twin)


def would_drop_message(lesson: Lesson, dropped: list[str]) -> str:
    """Why refresh stopped: the cells it would drop, and the two ways on (which depend on the newer file)."""
    cells = "\n  ".join(dropped)
    if lesson.notebook.stat().st_mtime > lesson.twin.stat().st_mtime:
        return (
            f"{lesson.notebook.name} was edited after its twin; refreshing from the twin would drop:\n  {cells}"
            "\nKeep them with `--source ipynb`, or drop them with `--force`"
        )
    return (
        f"{lesson.twin.name} is newer, but {lesson.notebook.name} holds cells it lacks; refreshing would drop:\n  "
        f"{cells}\nRemoved from the twin on purpose? `--force`. Else add them to the twin first"
    )


def refresh(lesson: Lesson, source: str = "py", *, force: bool = False) -> list[str]:
    """Re-execute a lesson in a fresh kernel, write its .ipynb (outputs kept) and normalised twin.

    `source="py"` builds the cells from the jupytext twin (the file people edit); `source="ipynb"`
    from the notebook (after editing in Jupyter without jupytext). Returns the list of changes.
    """
    if source not in ("py", "ipynb"):
        raise ValueError(f"source must be 'py' or 'ipynb', got {source!r}")
    path = lesson.twin if source == "py" else lesson.notebook
    if not path.exists():
        raise FileNotFoundError(f"lesson {lesson.code} has no {source} source yet: {path.name} is missing")
    try:  # a corrupt .ipynb is one line naming it; `--force` rebuilds it from its twin
        old = read_notebook(lesson.notebook) if lesson.notebook.exists() else None
    except ValueError as e:
        if source == "ipynb" or not force:
            raise ValueError(f"{e}, or rebuild it from its twin with `--force`" if source == "py" else str(e)) from e
        old = None
    if source == "py" and not force:
        dropped = cells_refresh_would_drop(lesson)
        if dropped:
            raise WouldDropCells(would_drop_message(lesson, dropped))
    nb = read_twin(path) if source == "py" else normalise(read_notebook(path))
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    execute_in_place(nb, lesson.notebook.parent, name=lesson.stem)
    nb = normalise(nb)
    nbformat.validate(nb)
    text = nbformat.writes(nb)
    write_text(lesson.notebook, text if text.endswith("\n") else text + "\n")  # a full disk leaves it whole
    write_text(lesson.twin, twin_text(nb))
    return changed_cells(old, nb)
