"""`verlstudy progress --verify`: confirm what the attempt logs say by re-executing the learners' notebooks.

The re-execution is progress.py's (each notebook run in a fresh kernel into the build folder, verdicts read from
the records its checkers left), with three things around it:

- only the notebooks whose content changed since their last verification run: the verdicts of each one are
  cached in `BUILD/verified.json` under the hash of the notebook, of the course's sources and the timeout;
- the notebooks run in parallel, interleaved over learners (the first `workers` notebooks are different
  learners'), each stopped after `timeout_s` in all: an endless loop costs its own row, never the table;
- `--build` may never be, or be inside, a learner's folder or a folder given on the command line (nor the course's
  notebooks/ or data/: files.check_target).
"""

from __future__ import annotations

import itertools
import json
import os
import warnings
from collections.abc import Callable
from dataclasses import astuple, dataclass
from pathlib import Path

from nbformat.warnings import MissingIDFieldWarning

from verlstudy.course import progress, runner
from verlstudy.course.class_progress import VERIFY_CACHE, Layout, lesson_files, notebook_problem
from verlstudy.course.files import (
    Manifest,
    check_out_dir,
    check_target,
    content_hash,
    is_run_output,
    write_file_owned,
    write_text,
)
from verlstudy.course.fingerprint import course_sources_hash
from verlstudy.course.progress import Row
from verlstudy.kit import attempts
from verlstudy.kit.exercises import registered_exercises

CACHE = VERIFY_CACHE
CACHE_FORMAT = 1
NOT_OPENED = "the notebook does not open"  # an exercise of a notebook that is not one: confirms nothing


@dataclass(frozen=True)
class Verified:
    rows: list[Row]  # every notebook's rows, learner by learner, in lesson order
    executed: list[str]  # "learner/notebook" of each notebook run this time
    cached: list[str]  # those whose verdicts came from the cache


def check_build(build: Path | str, layout: Layout, given: list[Path]) -> Path:
    """`build` if it may hold the executed copies; ValueError naming it and what it lies in otherwise.

    Never the root or home folder, never in this class, and never in or over any learner's folder, of any class:
    copies there would be counted as that learner's work, or as a new learner, by the next `progress`.
    """
    build = check_target(build, "--build")
    check_out_dir(build)
    resolved = build.resolve()  # check_target has refused the root and home folders
    for what, folder in [*((f"the class folder {f}", Path(f)) for f in given), *layout.learners.items()]:
        folder = folder.resolve()
        if resolved == folder or folder in resolved.parents:
            where = what if what.startswith("the class") else f"{what}'s folder {folder}"
            raise ValueError(f"--build {build} lies inside {where}: executed copies go elsewhere; name another folder")
    for folder in (resolved, *resolved.parents):
        if _is_learners_folder(folder):
            raise ValueError(
                f"--build {build} lies inside {folder}, a learner's folder (it holds lesson notebooks or an attempt "
                "log): copies there would mix with their work; name another folder"
            )
    foreign = _learners_notebooks_below(build)
    if foreign:
        raise ValueError(
            f"--build {build} holds lesson notebooks verlstudy did not put there ({foreign}): a class or a "
            "learner's work? Copies there would be counted as learners; name another folder"
        )
    return build


def _is_learners_folder(folder: Path) -> bool:
    """True when `folder` holds a lesson notebook or an attempt log (a build folder's top never does)."""
    lessons = lesson_files()
    log = folder / attempts.LOG_FOLDER / attempts.LOG_FILE
    try:
        return log.exists() or any(child.name in lessons for child in folder.iterdir())
    except OSError:  # a folder we cannot list is no learner's we could read
        return False


def _learners_notebooks_below(build: Path) -> str:
    """The first lesson notebook under `build` that no verlstudy command wrote there (relative), or ''."""
    if not build.is_dir():
        return ""
    lessons = lesson_files()
    manifest = Manifest(build)
    for here, dirs, names in os.walk(build):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in (n for n in names if n in lessons):
            path = Path(here) / name
            if not (manifest.lists(path) or (not manifest.exists and is_run_output(path))):  # legacy: no manifest
                return path.relative_to(build).as_posix()
    return ""


def _load_cache(path: Path) -> dict[str, dict]:
    """The cached verdicts, keeping every well-formed entry of a damaged cache ({} when none can be read)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT or not isinstance(data.get("notebooks"), dict):
        return {}
    return {
        key: entry
        for key, entry in data["notebooks"].items()
        if isinstance(entry, dict)
        and isinstance(entry.get("fingerprint"), str)
        and isinstance(entry.get("rows"), list)
        and all(isinstance(row, list) and len(row) == 5 for row in entry["rows"])
    }


def _interleaved(layout: Layout) -> list[tuple[str, Path]]:
    """(learner, notebook) jobs, first notebook of each learner, then the second of each, and so on."""
    lessons = lesson_files()
    per_learner = [
        [(name, nb) for nb in sorted(folder.glob("*.ipynb")) if nb.name in lessons and nb.is_file()]
        for name, folder in layout.learners.items()
    ]
    return [job for round_ in itertools.zip_longest(*per_learner) for job in round_ if job is not None]


def verify(
    layout: Layout,
    given: list[Path],
    build: Path | str,
    *,
    workers: int = 2,
    timeout_s: float = runner.NOTEBOOK_TIMEOUT_S,
    on_done: Callable[[list[Row]], None] | None = None,
) -> Verified:
    """Re-execute the learners' changed notebooks (cached verdicts for the rest); progress.ProgressInterrupted on
    Ctrl-C, with the rows so far (what finished is cached)."""
    build = check_build(build, layout, given)
    jobs = _interleaved(layout)
    cache_path = build / CACHE
    cache = _load_cache(cache_path)
    course = course_sources_hash()

    def key(learner: str, notebook: Path) -> str:
        return f"{learner}/{notebook.name}"

    def fingerprint(notebook: Path) -> str:
        return content_hash(f"{content_hash(notebook.read_bytes())} {course} {timeout_s:g}")

    # a notebook that cannot be read, or is no notebook, is not executed: its row says why in the words of the log
    # mode (class_progress.notebook_problem), never a papermill exception
    unreadable: dict[str, list[Row]] = {}
    for learner, notebook in list(jobs):
        problem = notebook_problem(notebook)
        if problem:
            why = f"{notebook.name} is {problem}"
            unreadable[key(learner, notebook)] = [
                Row(learner, notebook.stem, "-", "broken notebook", why),
                *(
                    Row(learner, notebook.stem, exercise, "not attempted", NOT_OPENED)
                    for exercise in registered_exercises(int(notebook.name[:2]))
                ),
            ]
    jobs = [job for job in jobs if key(*job) not in unreadable]
    prints = {key(*job): fingerprint(job[1]) for job in jobs}
    todo = [job for job in jobs if cache.get(key(*job), {}).get("fingerprint") != prints[key(*job)]]
    manifest = Manifest(build)
    manifest.refuse_foreign({progress._target(build, lr, nb): None for lr, nb in todo}, "--build", is_run_output)

    def save(done: dict[int, list[Row]]) -> None:
        for i, rows in done.items():
            cache[key(*todo[i])] = {"fingerprint": prints[key(*todo[i])], "rows": [list(astuple(r)) for r in rows]}
        known = {k: v for k, v in cache.items() if k in prints}  # learners who left drop out
        text = json.dumps({"format": CACHE_FORMAT, "notebooks": known}, indent=1, sort_keys=True) + "\n"
        if cache_path.is_file() and not cache_path.is_symlink() and manifest.lists(cache_path):
            write_text(cache_path, text)  # our own cache, even damaged since: repaired, not refused
            manifest.record([cache_path])
        else:
            write_file_owned(cache_path, text, "--build")

    try:
        chunks = runner.run_pool(
            todo,
            lambda job: progress._rows_for(job[0], job[1], build, timeout_s, manifest),
            workers=workers,
            on_done=on_done,
        )
    except runner.PoolInterrupted as stop:
        save(dict(stop.finished))
        done = [row for _, chunk in sorted(stop.finished.items()) for row in chunk]
        for i in sorted(stop.cut):
            learner, notebook = todo[i]
            done.append(Row(learner, notebook.stem, "-", "interrupted", runner.STOPPED_WHILE_RUNNING))
        raise progress.ProgressInterrupted(done, len(stop.finished), len(todo)) from None
    save(dict(enumerate(chunks)))
    broken = [row for rows in unreadable.values() for row in rows]
    rows = [Row(*row) for job in jobs for row in cache[key(*job)]["rows"]] + broken
    todo_keys = {key(*job) for job in todo}
    return Verified(rows, sorted(todo_keys), sorted(set(prints) - todo_keys))


def disagreements(logged: list[Row], verified: list[Row]) -> list[str]:
    """One line per exercise whose re-executed verdict differs from what the log says (a log edited by hand,
    a notebook changed since its checks, or a check run in another notebook)."""
    seen = {(r.learner, r.exercise): r.verdict for r in verified if r.exercise != "-"}
    # an exercise its notebook never reached (a time limit, a kernel that died) confirms nothing either way
    cut = {
        (r.learner, r.exercise)
        for r in verified
        if r.exercise != "-" and r.message in (progress.STOPPED_BEFORE, NOT_OPENED)
    }
    lines = []
    for row in logged:
        again = seen.get((row.learner, row.exercise))
        if row.verdict in ("broken notebook", "solution shown"):  # the log has no verdict to confirm
            continue
        stopped = (row.learner, row.exercise) in cut
        if row.exercise != "-" and again is not None and again != row.verdict and not stopped:
            lines.append(f"{row.learner} {row.exercise}: the log says {row.verdict}, re-executed it is {again}")
    return lines


def collect(
    folders: list[Path], build: Path | str, *, workers: int = 2, timeout_s: float = runner.NOTEBOOK_TIMEOUT_S
) -> list[Row]:
    """progress.collect's contract (rows of the re-executed notebooks) with the cache, the interleaving and the
    class layout of course.class_progress; says on stderr how many ran, how many came from the cache, and where
    the re-execution disagrees with the attempt logs."""
    import sys

    from verlstudy.course.class_progress import find_learners, read_class, to_rows

    layout = find_learners(folders)
    check_build(build, layout, [Path(f) for f in folders])  # a refused --build is one line, before the banner
    print(
        f"verlstudy progress --verify: executes the learners' notebooks (their code, with your rights) in fresh "
        f"kernels, {workers} at a time; copies go to {build}",
        file=sys.stderr,
        flush=True,
    )
    finished: list[int] = []

    def said(rows: list[Row]) -> None:  # a line per finished notebook: a long class shows where it is
        finished.append(1)
        first = rows[0] if rows else None
        if first is not None:
            broken = [r for r in rows if r.exercise == "-"]
            correct = sum(r.verdict == "correct" for r in rows)
            how = f"{broken[0].verdict}: {broken[0].message[:100]}" if broken else f"{correct} correct"
            print(f"[{len(finished)}] {first.learner}/{first.lesson}: {how}", file=sys.stderr, flush=True)

    with warnings.catch_warnings():  # a learner's cell without an id is nbformat's future concern, not theirs
        warnings.simplefilter("ignore", MissingIDFieldWarning)
        done = verify(layout, [Path(f) for f in folders], build, workers=workers, timeout_s=timeout_s, on_done=said)
    print(
        f"verlstudy progress --verify: {len(done.executed)} notebook(s) executed, {len(done.cached)} unchanged since "
        f"their last verification (cached in {Path(build) / CACHE})",
        file=sys.stderr,
    )
    for line in disagreements(to_rows(read_class(folders)), done.rows):
        print(f"  {line}", file=sys.stderr)
    return done.rows
