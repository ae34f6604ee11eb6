"""A class's progress from the attempt logs its learners' checkers wrote: no kernel started, no notebook run.

Every `check_exercise` call appends a line to `.verlstudy/attempts.jsonl` in the learner's folder (kit.attempts).
`read_class` finds the learners under the folders it is given, reads each one's log and checks that each lesson
notebook still opens, in well under a second per learner:

- a learner is a folder that holds lesson notebooks (the registry's `NN_slug.ipynb`) and has no such folder below
  it; learners are named by their path relative to the folders given (the common folder of them all), so
  `room1/student` and `room2/student` stay two learners, and a folder named twice is one;
- a notebook in a learner's folder that is not a lesson (`99_my_extra.ipynb`) is listed as "not a lesson" and
  skipped; a lesson notebook in a folder that also has learners below it is listed as a stray and skipped;
- a lesson notebook that is not valid JSON or not a notebook is "broken" (named, with why); an exercise its
  learner checked before it broke keeps the verdict the log recorded.

Each exercise of each learner is correct, not yet right after N wrong tries, solution shown, not attempted, broken
or without a notebook. A learner is stuck with three or more wrong tries on an exercise not yet right, or with no
attempt for `idle_minutes`. `matrix_text` prints one screen; `to_rows` gives progress.Row for the CSV and JUnit
writers of `verlstudy progress`; class_progress_page renders the same as HTML.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from verlstudy.course import registry
from verlstudy.course.files import MANIFEST, root_or_home
from verlstudy.course.progress import Row
from verlstudy.course.registry import Lesson
from verlstudy.kit import attempts

STUCK_AFTER_WRONG = 3  # wrong tries on one exercise: the third is where the checker's hint gives the method
STATES = ("correct", "not yet right", "solution shown", "not attempted", "broken", "no notebook")
SYMBOLS = {"correct": "ok", "solution shown": "sol", "not attempted": ".", "broken": "BRK", "no notebook": "-"}
AFTER_SOLUTION = "s+ok"  # "sol" then "ok": correct after the solution was shown
SOLUTION_FIRST = "after the solution was shown"
MAX_IDLE = 10**6  # minutes (about two years): above it the idle check means nothing
VERIFY_CACHE = "verified.json"  # progress_verify's cache: with files.MANIFEST beside it, a --verify build folder
SKIPPED_FOLDERS = {"__pycache__", "node_modules", "site-packages"}  # besides hidden ones (.venv, .git, checkpoints)


def lesson_files() -> dict[str, Lesson]:
    """{notebook file name: lesson} for every registered lesson."""
    return {f"{lesson.stem}.ipynb": lesson for lesson in registry.LESSONS}


@functools.cache
def exercises_of(lesson: Lesson) -> tuple[str, ...]:
    """The lesson's exercise ids in notebook order (read once from the course's own notebook, no kernel)."""
    from verlstudy.course import student

    return tuple(student.exercise_ids(lesson))


@dataclass(frozen=True)
class Layout:
    """Who is in the class: learner name -> folder, and the notebooks skipped (with where they are)."""

    root: Path
    learners: dict[str, Path]
    not_lessons: tuple[Path, ...] = ()
    strays: tuple[Path, ...] = ()
    full_editions: tuple[Path, ...] = ()  # `init` copies' notebooks/ folders (the reference answers), skipped
    verify_builds: tuple[Path, ...] = ()  # `progress --verify` build folders: the copies they list are skipped

    def shown(self, path: Path) -> str:
        """`path` relative to the class folder, for a message."""
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)


def find_learners(folders: Sequence[str | Path]) -> Layout:
    """The learners under `folders` (each a class folder or a learner's own folder); ValueError naming a bad one."""
    if not folders:
        raise ValueError("name a class folder (one folder per learner inside) or learners' folders")
    given: list[Path] = []
    for folder in folders:
        path = Path(folder)
        if str(folder).strip() and not path.exists():
            what = "is a link to nothing" if path.is_symlink() else "does not exist"
            raise ValueError(
                f"{folder!s} {what}: check the spelling, and name a class folder (one folder per learner inside) "
                "or a learner's folder"
            )
        if not str(folder).strip() or not path.is_dir():
            raise ValueError(
                f"{folder!s} is not a folder: name a class folder (one folder per learner inside) or a learner's folder"
            )
        resolved = path.resolve()
        where = root_or_home(resolved, True)
        if where is not None:
            raise ValueError(f"{folder!s} is {where}: name the class folder (one folder per learner inside)")
        if resolved not in given:
            given.append(resolved)
    tops = [p for p in given if not any(other in p.parents for other in given)]  # a folder inside another: once
    root = Path(os.path.commonpath(tops))
    lessons = lesson_files()
    holding: dict[Path, list[Path]] = {}  # folder -> its lesson notebooks
    others: dict[Path, list[Path]] = {}  # folder -> its other notebooks
    seen: set[str] = set()  # real folders walked: a symlinked learner is followed once, a link loop never
    full_editions: list[Path] = []
    verify_builds: list[Path] = []
    copies: set[str] = set()  # real paths of the notebooks a --verify build folder's manifest lists
    for top in tops:
        for here, dirs, names in os.walk(top, followlinks=True):
            real = os.path.realpath(here)
            if real in seen:
                dirs[:] = []
                continue
            seen.add(real)
            if VERIFY_CACHE in names and MANIFEST in names:  # `progress --verify`'s build folder
                copies.update(_written_by_verlstudy(Path(here)))
                verify_builds.append(Path(here))
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_FOLDERS)
            if "notebooks" in dirs and "student" in dirs:  # a `verlstudy init` copy: its notebooks/ is no learner
                dirs.remove("notebooks")
                full_editions.append(Path(here) / "notebooks")
            notebooks = sorted(Path(here) / n for n in names if n.endswith(".ipynb") and os.path.isfile(Path(here) / n))
            # its executed copies are nobody's work; a learner's notebook in such a folder still counts
            mine = [nb for nb in notebooks if nb.name in lessons and os.path.realpath(nb) not in copies]
            if mine:
                holding[Path(here)] = mine
                others[Path(here)] = [nb for nb in notebooks if nb.name not in lessons]
    if not holding:
        named = ", ".join(str(f) for f in folders)
        raise ValueError(
            f"{named} holds no lesson notebooks (NN_slug.ipynb, e.g. 00_start_here.ipynb), nor does any folder inside"
        )
    # a folder with learners below holds strays, unless its own checks logged attempts: then it is a learner too
    # (a `verlstudy init` run inside a learner's folder must not make her logged work vanish)
    has_learners_below = {
        f
        for f in holding
        if any(f in other.parents for other in holding) and not (f / attempts.LOG_FOLDER / attempts.LOG_FILE).is_file()
    }
    learners = {
        (folder.relative_to(root).as_posix() if folder != root else folder.name or str(folder)): folder
        for folder in holding
        if folder not in has_learners_below
    }
    strays = tuple(nb for folder in sorted(has_learners_below) for nb in holding[folder])
    not_lessons = tuple(nb for name in sorted(learners) for nb in others[learners[name]])
    return Layout(root, dict(sorted(learners.items())), not_lessons, strays, tuple(full_editions), tuple(verify_builds))


def _written_by_verlstudy(folder: Path) -> set[str]:
    """Real paths of the files `folder`'s written-files manifest lists (none when it cannot be read)."""
    try:
        listed = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))["files"]
        return {os.path.realpath(folder / name) for name in listed}
    except (OSError, ValueError, KeyError, TypeError):
        return set()


def notebook_problem(path: Path) -> str | None:
    """Why `path` would not open as a notebook (not JSON, not nbformat 4, malformed cells), or None when it would."""
    try:
        data = json.loads(path.read_bytes())
    except OSError as e:
        return f"unreadable ({e.strerror or e})"  # after "is": "00_x.ipynb is unreadable (Permission denied)"
    except (UnicodeDecodeError, ValueError) as e:
        return f"not valid JSON ({str(e).splitlines()[0][:120]})"
    if not isinstance(data, dict) or data.get("nbformat") != 4 or not isinstance(data.get("metadata"), dict):
        return "not a notebook (no nbformat 4 header)"
    cells = data.get("cells")
    if not isinstance(cells, list):
        return "not a notebook (no list of cells)"
    for i, cell in enumerate(cells):
        if (
            not isinstance(cell, dict)
            or cell.get("cell_type") not in ("code", "markdown", "raw")
            or not isinstance(cell.get("source"), str | list)
        ):
            return f"not a notebook (cell {i} is malformed)"
    return None


@dataclass(frozen=True)
class Status:
    """One learner's state on one exercise, as their checker recorded it."""

    state: str  # one of STATES
    wrong: int = 0  # "not yet right" checks so far
    message: str = ""  # the last wrong check's message, or why broken / without a notebook
    solution_first: bool = False  # correct, after the learner looked at the solution: stays visible in every view

    @property
    def symbol(self) -> str:
        if self.state == "not yet right":
            return f"{self.wrong}x"
        if self.solution_first:
            return AFTER_SOLUTION
        return SYMBOLS[self.state]


@dataclass(frozen=True)
class LearnerProgress:
    name: str
    folder: Path
    statuses: dict[str, Status]  # exercise id -> status, for every column of the class
    broken: dict[str, str] = field(default_factory=dict)  # notebook name -> why it does not open
    last_attempt: dt.datetime | None = None
    log_problems: tuple[str, ...] = ()  # what the attempt log held that could not be read (attempts.scan_log)

    @property
    def correct(self) -> int:
        return sum(s.state == "correct" for s in self.statuses.values())


def exercise_statuses(records: Sequence[dict[str, object]], exercise: str) -> Status:
    """What the log's records say of one exercise: correct once is correct (marked when the solution was shown
    before it); else shown, wrong tries, nothing."""
    mine = [r for r in records if r.get("exercise") == exercise]
    verdicts = [str(r.get("verdict", "")) for r in mine]
    if "correct" in verdicts:
        looked = "solution shown" in verdicts[: verdicts.index("correct")]
        return Status("correct", message=SOLUTION_FIRST if looked else "", solution_first=looked)
    wrong = [r for r in mine if r.get("verdict") == "not yet right"]
    last = str(wrong[-1].get("message", "")) if wrong else ""
    if "solution shown" in verdicts:
        return Status("solution shown", len(wrong), last)
    if wrong:
        return Status("not yet right", len(wrong), last)
    return Status("not attempted")


@functools.cache
def course_exercises() -> frozenset[str]:
    """Every exercise id of every registered lesson: a logged record naming another is not this course's."""
    return frozenset(e for lesson in registry.LESSONS for e in exercises_of(lesson))


def read_learner(
    name: str, folder: Path, columns: dict[Lesson, tuple[str, ...]], now: dt.datetime | None = None
) -> LearnerProgress:
    """One learner's statuses from their attempt log and lesson notebooks (nothing executed, nothing written)."""
    now = now or dt.datetime.now(dt.UTC)
    log = folder / attempts.LOG_FOLDER / attempts.LOG_FILE
    scan = attempts.scan_log(log, exercises=course_exercises(), now=now)
    records = scan.records
    broken: dict[str, str] = {}
    statuses: dict[str, Status] = {}
    for lesson, exercises in columns.items():
        notebook = folder / f"{lesson.stem}.ipynb"
        problem = notebook_problem(notebook) if notebook.exists() else None
        if problem:
            broken[notebook.name] = problem
        for exercise in exercises:
            status = exercise_statuses(records, exercise)
            if status.state == "not attempted" and problem:
                status = Status("broken", message=f"{notebook.name} is {problem}")
            elif status.state == "not attempted" and not notebook.exists():
                status = Status("no notebook", message=f"no {notebook.name} in this folder")
            statuses[exercise] = status
    latest = now + attempts.FUTURE_SLACK  # a record dated later (a wrong clock) would hide an idle learner
    times = [t for t in map(attempts.record_time, records) if t is not None and t <= latest]
    return LearnerProgress(name, folder, statuses, broken, max(times) if times else None, tuple(scan.problems))


@dataclass(frozen=True)
class ClassProgress:
    layout: Layout
    columns: dict[Lesson, tuple[str, ...]]  # the lessons any learner holds, with their exercises
    learners: list[LearnerProgress]
    now: dt.datetime
    idle_minutes: float = 0.0  # 0: nobody is stuck for being idle

    @property
    def exercises(self) -> list[str]:
        return [e for exercises in self.columns.values() for e in exercises]

    def stuck(self) -> list[tuple[str, str]]:
        """(learner, why) for each stuck learner, one entry each: 3+ wrong tries on an exercise not yet right
        (the last message shown when there is one such exercise), or no attempt for the idle minutes."""
        found = []
        for learner in self.learners:
            tries = [
                (exercise, status)
                for exercise, status in learner.statuses.items()
                if status.state == "not yet right" and status.wrong >= STUCK_AFTER_WRONG
            ]
            reasons = [f"{status.wrong} wrong tries on {exercise}" for exercise, status in tries]
            if len(tries) == 1 and tries[0][1].message:
                reasons[0] += f' (last: "{tries[0][1].message[:80]}")'
            if self.idle_minutes > 0:
                if learner.last_attempt is None:
                    reasons.append("no attempt logged yet")
                else:
                    minutes = (self.now - learner.last_attempt).total_seconds() / 60
                    if minutes >= self.idle_minutes:
                        reasons.append(f"no attempt for {minutes:.0f} min")
            if reasons:
                found.append((learner.name, "; ".join(reasons)))
        return found


def read_class(
    folders: Sequence[str | Path], *, idle_minutes: float = 0.0, now: dt.datetime | None = None
) -> ClassProgress:
    """Every learner's progress under `folders`, from the attempt logs; ValueError naming a bad folder or value."""
    if not isinstance(idle_minutes, int | float) or isinstance(idle_minutes, bool) or not 0 <= idle_minutes < MAX_IDLE:
        raise ValueError(
            f"idle minutes must be a number >= 0 and under {MAX_IDLE} (0 turns the idle check off), "
            f"got {idle_minutes!r}"
        )
    layout = find_learners(folders)
    held = {nb.name for folder in layout.learners.values() for nb in folder.glob("*.ipynb") if nb.is_file()}
    columns = {lesson: exercises_of(lesson) for name, lesson in lesson_files().items() if name in held}
    now = now or dt.datetime.now(dt.UTC)
    learners = [read_learner(name, folder, columns, now) for name, folder in layout.learners.items()]
    return ClassProgress(layout, columns, learners, now, idle_minutes)


LEGEND = (
    "ok correct · Nx N wrong tries, not yet right · sol solution shown · . not attempted · BRK broken notebook"
    " · - no notebook"
    f" · {AFTER_SOLUTION} correct {SOLUTION_FIRST}"
)


def legend() -> str:
    """LEGEND in the facilitator's language (VERLSTUDY_LANG; kit.i18n), English by default."""
    from verlstudy.kit import i18n

    return i18n._(LEGEND)


def shown_text(text: str) -> str:
    """`text` safe to print on a terminal: control and format characters (an escape sequence, a right-to-left
    override in a learner's folder name) are shown as escapes instead of acting on the screen."""
    return "".join(
        ch.encode("unicode_escape").decode("ascii") if unicodedata.category(ch) in ("Cc", "Cf") else ch for ch in text
    )


def text_width(text: str) -> int:
    """The columns `text` takes on a terminal: a wide character (CJK) two, a combining mark none."""
    return sum(
        0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text
    )


def _left(text: str, width: int) -> str:
    return text + " " * max(0, width - text_width(text))


def matrix_text(progress: ClassProgress) -> str:
    """One screen: a row per learner, a column per exercise, then who is stuck and what was skipped."""
    exercises = progress.exercises
    names = {learner.name: shown_text(learner.name) for learner in progress.learners}
    width = max([len("learner"), *map(text_width, names.values())])
    symbols = [learner.statuses[e].symbol for learner in progress.learners for e in exercises]
    cell = max([3, *map(len, exercises), *map(len, symbols)])
    header = f"{'learner':<{width}} " + " ".join(f"{e:>{cell}}" for e in exercises) + "  correct"
    lines = [
        f"verlstudy progress: {len(progress.learners)} learners, {len(exercises)} exercises, from the attempt logs "
        f"({progress.now:%H:%M} UTC; nothing executed)",
        "",
        header,
    ]
    for learner in progress.learners:
        cells = " ".join(f"{learner.statuses[e].symbol:>{cell}}" for e in exercises)
        lines.append(f"{_left(names[learner.name], width)} {cells}  {learner.correct}/{len(exercises)}")
    lines += ["", legend()]
    lines += map(shown_text, notes(progress))
    return "\n".join(lines) + "\n"


def notes(progress: ClassProgress) -> list[str]:
    """The lines under the matrix: who is stuck, broken notebooks, notebooks skipped."""
    lines: list[str] = []
    stuck = progress.stuck()
    idle = f", or no attempt for {progress.idle_minutes:g} min" if progress.idle_minutes else ""
    lines.append(f"stuck ({STUCK_AFTER_WRONG}+ wrong tries on one exercise{idle}): " + ("" if stuck else "nobody"))
    lines += [f"  {name}: {why}" for name, why in stuck]
    for learner in progress.learners:
        lines += [f"broken: {learner.name}/{nb} is {why}" for nb, why in learner.broken.items()]
        log = f"{learner.name}/{attempts.LOG_FOLDER}/{attempts.LOG_FILE}"
        lines += [f"attempt log {log}: {problem}" for problem in learner.log_problems]
    layout = progress.layout
    lines += [f"not a lesson (skipped): {layout.shown(nb)}" for nb in layout.not_lessons]
    lines += [
        f"outside any learner's folder (skipped): {layout.shown(nb)} (its folder holds learners' folders)"
        for nb in layout.strays
    ]
    lines += [
        f"full edition (skipped): {layout.shown(folder)} (a verlstudy init copy)" for folder in layout.full_editions
    ]
    lines += [
        f"executed copies (skipped): {layout.shown(folder)} (a verlstudy progress --verify build folder)"
        for folder in layout.verify_builds
    ]
    return lines


VERDICT_OF_STATE = {
    "correct": "correct",
    "not yet right": "not yet right",
    "solution shown": "solution shown",
    "not attempted": "not attempted",
    "broken": "broken notebook",
    "no notebook": "not attempted",
}


def to_rows(progress: ClassProgress) -> list[Row]:
    """progress.Row per learner and exercise (and one per broken notebook or damaged log), for CSV and JUnit."""
    rows = []
    for learner in progress.learners:
        log = f"{attempts.LOG_FOLDER}/{attempts.LOG_FILE}"
        rows += [Row(learner.name, "-", "-", "damaged attempt log", f"{log}: {why}") for why in learner.log_problems]
        for lesson, exercises in progress.columns.items():
            why = learner.broken.get(f"{lesson.stem}.ipynb")
            if why:
                rows.append(Row(learner.name, lesson.stem, "-", "broken notebook", f"{lesson.stem}.ipynb is {why}"))
            for exercise in exercises:
                status = learner.statuses[exercise]
                message = status.message
                if status.wrong:
                    message = f"{status.wrong} wrong tries; last: {status.message}"
                rows.append(Row(learner.name, lesson.stem, exercise, VERDICT_OF_STATE[status.state], message))
    return rows
