"""Executing lessons with papermill, in parallel: `verlstudy run`, its report and its JUnit file.

A lesson's parameters are read and checked before any of this starts, in `course.parameters`.
"""

from __future__ import annotations

import itertools
import logging
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import nbformat

from verlstudy.course.files import Manifest, read_notebook
from verlstudy.course.outcomes import count_claims, notebook_records
from verlstudy.course.parameters import check_parameter_names, names_a_parameter, parameters_of
from verlstudy.course.registry import Lesson
from verlstudy.course.stopping import STOP, kill_kernels, kill_tree, killed_recently, stop_exit_code, stop_signals
from verlstudy.course.twins import (
    FLOOR_SOURCE,
    KERNEL_ARGS,
    KERNEL_NAME,
    course_kernel_manager_class,
    log_execution,
    normalise,
    quiet_kernel_env,
)
from verlstudy.kit.params import positive_int
from verlstudy.kit.resources import notebooks_dir

J = TypeVar("J")
R = TypeVar("R")
NOTEBOOK_TIMEOUT_S = 600  # a whole notebook's limit: an endless loop in one notebook holds nothing up longer
# re-exported: tools and tests read notebooks and stop runs through the runner
__all__ = ["kill_kernels", "kill_tree", "read_notebook", "stop_exit_code", "stop_signals"]

# ---------------------------------------------------------------- running with papermill


@dataclass
class RunResult:
    lesson: Lesson | None  # None for the floor notebook
    status: str  # "passed" | "failed" | "bad parameter" | "not run"
    seconds: float
    claims_reproduced: int = 0
    claims_total: int = 0
    error: str = ""
    output: Path | None = None
    failed_cell: int | None = None  # index among the executed notebook's code cells
    claims: list[dict[str, object]] = field(default_factory=list)  # name, ours, expected, reproduced, cell
    exercises: list[dict[str, object]] = field(default_factory=list)  # id, verdict, message, cell

    @property
    def name(self) -> str:
        return self.lesson.stem if self.lesson else "floor"


CLAIM_KEYS = ("name", "ours", "expected", "reproduced", "cell")
EXERCISE_KEYS = ("id", "verdict", "message", "cell")


def floor_notebook() -> nbformat.NotebookNode:
    """The floor: a notebook that only imports torch and matplotlib, as every lesson does (what each pays anyway)."""
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
                    # a bad parameter only when the validation helper's error names one; else a bug in the cell
                    try:
                        names = parameters_of(nb)
                    except (ValueError, SyntaxError):
                        return None
                    return str(out.get("evalue")) if names_a_parameter(str(out.get("evalue")), names) else None
    return None


class _NotebookClock:
    """Kills a notebook's kernel `timeout_s` after it started: a limit on the whole notebook, not on one cell."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s, self.fired = timeout_s, threading.Event()
        self.timers: list[threading.Timer] = []
        clock = self

        class TimedKernelManager(course_kernel_manager_class()):  # type: ignore[misc]
            async def _async_post_start_kernel(self, **kw: object) -> None:
                await super()._async_post_start_kernel(**kw)
                pid = getattr(getattr(self, "provisioner", None), "pid", None)
                timer = threading.Timer(clock.timeout_s, clock.expire, args=(pid,))
                timer.daemon = True
                clock.timers.append(timer)
                timer.start()

        self.manager_class = TimedKernelManager

    def expire(self, pid: int | None) -> None:
        self.fired.set()
        if pid is not None:
            kill_tree(pid)

    def stop(self) -> None:
        for timer in self.timers:
            timer.cancel()


class _PapermillParameterGuesses(logging.Filter):
    """Drops nbclient's kernel-death lines after verlstudy killed a kernel itself, and papermill's guesses about
    the parameters cell: "Unable to parse line" (its line parser gives up on a
    comment holding '=') and "Passed unknown parameter" (a name that parser missed). Names are checked with Python's
    own parser before any kernel starts (check_parameter_names), so those lines could only mislead."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith(("Unable to parse line", "Passed unknown parameter")):
            return False
        # a kernel verlstudy killed (a stop, a notebook's time limit) is no news: its row says what happened
        return not (killed_recently() and any(death in message for death in KERNEL_DEATH_LINES))


KERNEL_DEATH_LINES = ("Kernel died", "Error occurred while starting new kernel client")


PAPERMILL_QUIET = _PapermillParameterGuesses()


def papermill_quiet() -> None:
    """Install the filter on the loggers papermill and nbclient write those lines to (adding it again is a no-op)."""
    for name in ("papermill", "papermill.translators", "traitlets", "nbclient"):
        logging.getLogger(name).addFilter(PAPERMILL_QUIET)


def literal_path(path: Path) -> str:
    """`path` as papermill must be given it: papermill formats paths with the parameters (`{seed}`), so a brace
    in a folder's name is doubled to stay a brace."""
    return str(path).replace("{", "{{").replace("}", "}}")


def execute_with_papermill(
    source: Path,
    target: Path,
    parameters: Mapping[str, object],
    cwd: Path,
    timeout_s: float = NOTEBOOK_TIMEOUT_S,
    save_each_cell: bool = False,
) -> tuple[str, str, float]:
    """Execute `source` into `target` in a fresh kernel, stopped after `timeout_s` in all; (status, error, seconds).

    `save_each_cell` writes `target` after every cell, so a notebook stopped by its time limit or a dying kernel
    keeps the outputs (and verdicts) of the cells that finished."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    quiet_kernel_env()
    papermill_quiet()
    course_notebook = Path(source).resolve().parent == notebooks_dir().resolve()
    log_execution(Path(source).stem if course_notebook else f"other:{Path(source).stem}")
    target.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    status, error = "passed", ""
    clock = _NotebookClock(timeout_s)
    try:
        # Lessons run in threads: papermill's `cwd=` would chdir the whole process, so another thread
        # could read or write relative paths, or start its kernel, in the wrong folder. Absolute paths,
        # and the kernel's folder given to nbclient directly, keep each run to itself.
        papermill.execute_notebook(
            literal_path(Path(source).resolve()),
            literal_path(Path(target).resolve()),
            parameters=dict(parameters),
            kernel_name=KERNEL_NAME,
            progress_bar=False,
            log_output=False,
            resources={"metadata": {"path": str(Path(cwd).resolve())}},
            execution_timeout=max(1, int(timeout_s)),
            request_save_on_cell_execute=save_each_cell,
            extra_arguments=KERNEL_ARGS,
            shutdown_kernel="immediate",
            kernel_manager_class=clock.manager_class,
        )
    except PapermillExecutionError as e:
        status, error = "failed", f"{e.ename}: {e.evalue}"
    except Exception as e:  # the kernel died, a cell timed out, or the kernel never started: a row, not a crash
        status, error = "failed", _execution_failure(e, timeout_s, clock.fired.is_set())
    finally:
        clock.stop()
    return status, error, time.perf_counter() - start


def _execution_failure(error: Exception, timeout_s: float, notebook_timed_out: bool = False) -> str:
    """One line saying how a run failed outside the notebook's own code."""
    name = type(error).__name__
    if notebook_timed_out or name == "CellTimeoutError" or isinstance(error, TimeoutError):
        return (
            f"the notebook ran longer than {timeout_s:g} s and was stopped (an endless loop? --timeout sets the limit)"
        )
    if name == "DeadKernelError":
        return "the kernel died (a cell exited the process, or it ran out of memory)"
    return f"{name}: {error}"


def _failed_cell(nb: nbformat.NotebookNode) -> int | None:
    """The index (among code cells) of the first cell with an error output."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    failing = (i for i, c in enumerate(code) if any(o.get("output_type") == "error" for o in c.get("outputs", [])))
    return next(failing, None)


def run_one(
    lesson: Lesson | None,
    out_dir: Path,
    parameters: Mapping[str, object] | None = None,
    timeout_s: float = NOTEBOOK_TIMEOUT_S,
    manifest: Manifest | None = None,
) -> RunResult:
    """Execute one lesson (or the floor, for lesson=None) with papermill into out_dir.

    With a `manifest` (of out_dir), the executed notebook is listed as pending before papermill writes it and
    with its hash after: a rerun may replace it (even a half-written one), nothing else.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    if lesson is None:  # the floor runs in a folder of its own: build/executed holds lessons only
        with tempfile.TemporaryDirectory(prefix="verlstudy-floor-") as tmp:
            source = Path(tmp) / "floor_input.ipynb"
            nbformat.write(floor_notebook(), source)
            status, error, seconds = execute_with_papermill(source, Path(tmp) / "floor.ipynb", {}, Path(tmp), timeout_s)
        return RunResult(None, status, seconds, error=error)
    target = out_dir / lesson.notebook.name
    if manifest is not None:
        manifest.pending([target])
    # the kernel runs in the output folder: an installed course's notebooks sit in read-only site-packages
    try:
        status, error, seconds = execute_with_papermill(
            lesson.notebook, target, dict(parameters or {}), out_dir, timeout_s
        )
    finally:
        if manifest is not None:
            manifest.record([target])
    result = RunResult(lesson, status, seconds, error=error, output=target)
    if target.exists():
        try:
            nb = nbformat.read(target, as_version=4)
        except Exception as e:  # a run killed while papermill wrote it
            result.error = result.error or f"the executed notebook {target.name} cannot be read: {e}"
            return result
        result.claims_reproduced, result.claims_total = count_claims(nb)
        result.claims = [{k: c[k] for k in CLAIM_KEYS} for c in notebook_records(nb, "claim")]
        result.exercises = [{k: e[k] for k in EXERCISE_KEYS} for e in notebook_records(nb, "exercise")]
        if status == "failed":
            result.failed_cell = _failed_cell(nb)
            bad = _bad_parameter_message(nb)
            if bad is not None:
                result.status, result.error = "bad parameter", bad
    if result.status == "failed":
        result.error = (result.error or "failed") + verl_note(lesson)
    return result


def verl_note(lesson: Lesson) -> str:
    """A clause for a failing row run under a verl other than the one the lesson was verified with ('' when the
    same, when verl is absent, or when the lesson records no verified version)."""
    from verlstudy.course.registry import upstream_verified_versions
    from verlstudy.kit import upstream

    try:
        active = upstream.verl_version()
        verified = upstream_verified_versions().get(lesson.code, "")
    except (upstream.UpstreamError, OSError, ValueError, AttributeError):
        return ""
    if not verified or verified == active or not verified[:1].isdigit():
        return ""
    return f" (run under verl {active}; lesson {lesson.code} was verified with verl {verified}: that may be the cause)"


STOPPED_WHILE_RUNNING = "stopped while it ran (Ctrl-C or SIGTERM)"


def run_lessons(
    lessons: list[Lesson],
    out_dir: Path,
    parameters: Mapping[str, object] | None = None,
    *,
    workers: int = 2,
    with_floor: bool = True,
    on_done: Callable[[RunResult], None] | None = None,
    timeout_s: float = NOTEBOOK_TIMEOUT_S,
    manifest: Manifest | None = None,
) -> tuple[list[RunResult], RunResult | None]:
    """Execute lessons in parallel fresh kernels; also the floor notebook when `with_floor`.

    Lessons start longest budget first (ties in course order); results come back in course order, with the floor
    result. Parameters go to every lesson; a name a lesson does not declare is rejected up front. Each notebook
    is stopped after `timeout_s` in all.
    """
    positive_int("workers", workers)
    parameters = dict(parameters or {})
    for lesson in lessons:
        if not lesson.notebook.exists():
            raise FileNotFoundError(f"lesson {lesson.code}: {lesson.notebook.name} does not exist")
        check_parameter_names(lesson, parameters)
    # the longest (by budget) start first, so the last lesson to finish is a short one and the workers end together
    jobs: list[Lesson | None] = sorted(lessons, key=lambda lesson: -lesson.budget_s)
    if with_floor:
        jobs.insert(0, None)  # first, so it runs while the machine is as busy as for the lessons

    def work(job: Lesson | None) -> RunResult:
        return run_one(job, out_dir, parameters, timeout_s=timeout_s, manifest=manifest)

    try:
        done = run_pool(jobs, work, workers=workers, on_done=on_done)
    except PoolInterrupted as stop:
        finished: dict[str, RunResult] = {r.name: r for r in stop.finished.values()}  # type: ignore[attr-defined]
        for r in stop.cut.values():  # in flight when the stop came: their kernels were killed, not dead
            r.status, r.error, r.failed_cell = "interrupted", STOPPED_WHILE_RUNNING, None  # type: ignore[attr-defined]
            finished[r.name] = r  # type: ignore[attr-defined]
        raise Interrupted(_ordered(lessons, finished), finished.get("floor")) from None
    results = {r.name: r for r in done}
    floor = results.pop("floor", None)
    return _ordered(lessons, results), floor


class PoolInterrupted(KeyboardInterrupt):
    """A stop during `run_pool`: `finished` maps each job finished before it to its result, `cut` each job
    that was running and was stopped (its kernel killed)."""

    def __init__(self, finished: dict[int, object], cut: dict[int, object] | None = None) -> None:
        super().__init__("interrupted")
        self.finished, self.cut = finished, dict(cut or {})


def import_papermill() -> None:
    """papermill, nbclient and jupyter_client imported in the calling thread, before any worker starts: two threads
    importing them at once can meet a partly initialised `jupyter_client.manager` (an ImportError that failed a CI
    run), and Python's import lock does not order two threads through a circular import."""
    import papermill  # noqa: F401


def run_pool(
    jobs: Sequence[J], work: Callable[[J], R], *, workers: int, on_done: Callable[[R], None] | None = None
) -> list[R]:
    """`work(job)` for every job in `workers` threads (each job runs notebooks in kernels); results in job order.

    Ctrl-C (or SIGTERM, under `stop_signals`) drops the queue and kills the kernels until the running jobs end
    (they fail fast), then raises PoolInterrupted with what finished and what was cut short, so the caller can
    still report it: a stop within seconds, never after the whole queue. A second signal while it stops is
    ignored.
    """
    positive_int("workers", workers)
    import_papermill()
    pool = ThreadPoolExecutor(max_workers=workers)
    queue = iter(enumerate(jobs))
    futures: dict[Future[R], int] = {}
    running: set[Future[R]] = set()

    def start_next() -> None:  # only the main thread starts jobs: after a stop, nothing new starts
        for i, job in itertools.islice(queue, 1):
            future = pool.submit(work, job)
            futures[future] = i
            running.add(future)

    results: dict[int, R] = {}
    try:
        for _ in range(workers):
            start_next()
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=futures.__getitem__):
                running.discard(future)
                results[futures[future]] = future.result()
                if on_done:
                    on_done(results[futures[future]])
                start_next()
    except KeyboardInterrupt:
        STOP.stopping = True
        pool.shutdown(wait=False, cancel_futures=True)
        while not all(f.done() for f in futures):
            kill_kernels()
            wait(futures, timeout=0.5)
        cut = {
            i: future.result()
            for future, i in futures.items()
            if i not in results and future.done() and not future.cancelled() and future.exception() is None
        }
        raise PoolInterrupted(dict(results), cut) from None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return [results[i] for i in range(len(jobs))]


def _ordered(lessons: list[Lesson], results: Mapping[str, RunResult]) -> list[RunResult]:
    """Results in course order; a lesson that never finished is "not run"."""
    never = "never started: the run was stopped first"
    return [results.get(lesson.stem) or RunResult(lesson, "not run", 0.0, error=never) for lesson in lessons]


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a run: carries the results so far so the caller can write a partial report."""

    def __init__(self, results: list[RunResult], floor: RunResult | None) -> None:
        super().__init__("interrupted")
        self.results, self.floor = results, floor
