"""The attempt log: one JSON line per `check_exercise` call, in a hidden folder beside the notebook.

A facilitator's `verlstudy progress` reads these lines instead of re-executing anyone's notebooks, and a
learner can see their own history. The format is versioned (`format`); docs/authoring.md documents it.

Where: `$VERLSTUDY_ATTEMPTS_DIR` when set, else `.verlstudy/` in the kernel's working folder (Jupyter
starts a notebook's kernel in the notebook's folder). Never inside the installed package: a notebook
run from site-packages writes no log. `VERLSTUDY_ATTEMPTS=0` turns the log off (the course's own test
runs do, so a checkout collects no logs). Writing never breaks a check: a folder that cannot be written
leaves the log out, says so once in the checker's output and keeps why in `last_log_error()`.

The log is a journal: every record starts on a fresh line whatever the file's tail holds, and is flushed and
fsynced before the check returns. `scan_log` reads it back and names what it could not read (torn lines, records
of another format version, NUL runs) instead of dropping them silently.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import inspect
import json
import os
import re
import sys
import uuid
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = 1
LOG_FOLDER = ".verlstudy"
LOG_FILE = "attempts.jsonl"
DIR_ENV = "VERLSTUDY_ATTEMPTS_DIR"
SWITCH_ENV = "VERLSTUDY_ATTEMPTS"
NOTEBOOK_ENV = "VERLSTUDY_NOTEBOOK"  # the runner names the notebook it executes; Jupyter sets JPY_SESSION_NAME
FIELDS = ("format", "exercise", "verdict", "message", "try", "time", "notebook", "answer_sha256", "kernel")

_KERNEL = uuid.uuid4().hex[:12]  # one id per process: tells two kernel sessions of one notebook apart
_last_error: list[str] = []
_told: list[bool] = []  # the learner has been told, in a checker's output, that attempts are not being recorded
_write = os.write  # the one call that puts bytes on disk (tests put a failing writer here)


def log_path() -> Path | None:
    """The attempt log this process writes to, or None when the log is off or would land in the package."""
    if os.environ.get(SWITCH_ENV, "1").strip().lower() in ("0", "off", "false", "no"):
        return None
    folder = Path(os.environ[DIR_ENV]) if os.environ.get(DIR_ENV) else Path.cwd() / LOG_FOLDER
    package = Path(__file__).resolve().parents[1]
    resolved = folder.resolve()
    if resolved == package or package in resolved.parents or _inside_site_packages(resolved):
        return None
    return folder / LOG_FILE


def _inside_site_packages(folder: Path) -> bool:
    return any(part in ("site-packages", "dist-packages") for part in folder.parts)


def notebook_name() -> str:
    """The notebook this kernel runs, as a file name (no folders): from the runner or Jupyter, else ''."""
    for key in (NOTEBOOK_ENV, "JPY_SESSION_NAME"):
        value = os.environ.get(key, "")
        if value:
            return Path(value).name
    main = sys.modules.get("__main__")
    return Path(getattr(main, "__vsc_ipynb_file__", "") or "").name


def answer_hash(answer: tuple[Any, ...]) -> str:
    """A short hash of the answer's source (or its repr when it has none): tells tries apart, reveals nothing."""
    parts = []
    for part in answer:
        try:
            parts.append(inspect.getsource(part))
        except (TypeError, OSError):
            parts.append(repr(part) if not callable(part) else getattr(part, "__qualname__", type(part).__name__))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def record_attempt(
    exercise_id: str, verdict: str, message: str, try_number: int, answer: tuple[Any, ...]
) -> dict[str, Any] | None:
    """Append one attempt to the log; return the record written, or None when the log is off or unwritable."""
    path = log_path()
    if path is None:
        return None
    record = {
        "format": FORMAT,
        "exercise": exercise_id,
        "verdict": verdict,
        "message": message,
        "try": try_number,
        "time": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "notebook": notebook_name(),
        "answer_sha256": answer_hash(answer),
        "kernel": _KERNEL,
    }
    line = (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _append_line(path, line)
    except OSError as e:
        _last_error[:] = [f"the attempt log {path} could not be written ({e.strerror or e}); checks go on without it"]
        if not _told:  # once per kernel: a line under every check would bury the verdicts
            _told.append(True)
            blocked = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
            remedy = (
                f"{blocked} is a file where the log's folder should be: move it away"  # not a disk or a permission
                if blocked is not None
                else "free disk space or make the folder writable"
            )
            print(
                f"note: your attempts are not being recorded: {path} cannot be written ({e.strerror or e}); "
                f"your checks still work; {remedy} to record them again"
            )
        return None
    _last_error.clear()
    return record


def _append_line(path: Path, line: bytes) -> None:
    """Append `line` (ending in a newline) to `path` as one journal entry; OSError when it cannot be made durable.

    A tail that is not a newline (a record torn by a full disk or a killed kernel, a run of NULs left by a crash)
    gets one before the record, so a new record never glues onto a fragment. A write that fails half-way is cut
    back off when no other kernel appended meanwhile; either way the next append starts on a fresh line.
    """
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o644)
    try:
        start = os.fstat(fd).st_size
        if start and os.lseek(fd, start - 1, os.SEEK_SET) >= 0 and os.read(fd, 1) != b"\n":  # lseek: Windows too
            line = b"\n" + line
        written = 0
        try:
            while written < len(line):
                written += _write(fd, line[written:])
            os.fsync(fd)
        except OSError:
            if written and os.fstat(fd).st_size == start + written:  # only our own bytes after `start`
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, start)
            raise
    finally:
        os.close(fd)


def last_log_error() -> str:
    """Why the last attempt was not logged ('' when it was, or when the log is off)."""
    return _last_error[0] if _last_error else ""


@dataclass
class LogScan:
    """What one attempt log holds: its records, oldest first, and one line per kind of thing it could not read."""

    records: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


CHUNK = 1 << 20  # bytes read at a time: a 1 GB log of NULs is scanned without holding it
LONGEST_LINE = 1 << 20  # a longer "line" is not a record of ours; it is measured, never held
_TOKEN = re.compile(rb"[^\n\x00]+|\n|\x00+")


def _is_record(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("exercise"), str) and "format" in value


def _pieces(handle: Any) -> Iterator[tuple[str, int, Any]]:
    """("text", line, bytes), ("long", line, size) or ("nul", line, count) for each run between newlines and NULs."""
    line, held, over = 1, b"", 0  # held: a text piece the chunk ended inside; over: bytes of a long one, dropped
    while chunk := handle.read(CHUNK):
        data, held = held + chunk, b""
        for match in _TOKEN.finditer(data):
            token = match.group()
            if token == b"\n" or token[0] == 0:
                if over:  # a long piece ends here
                    yield "long", line, over
                    over = 0
                if token == b"\n":
                    line += 1
                else:
                    yield "nul", line, len(token)
                continue
            if match.end() == len(data):  # the piece may go on in the next chunk
                if over or len(token) > LONGEST_LINE:
                    over += len(token)
                else:
                    held = token
                continue
            if over:
                yield "long", line, over + len(token)
                over = 0
            else:
                yield "text", line, token
    if held:
        yield "text", line, held
    if over:
        yield "long", line, over


_NOT_JSON = object()  # what _parse gives for a line that is no JSON value at all (a torn record)


def _parse(text: bytes) -> tuple[Any, bool]:
    """The JSON value of one line, or of a whole record glued after a torn one (then True); (_NOT_JSON, False) if
    the line holds neither."""
    decoded = text.decode("utf-8", errors="replace").strip()
    try:
        return json.loads(decoded), False
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    start = decoded.find("{", 1)
    while start > 0:
        try:
            value, end = decoder.raw_decode(decoded, start)
        except ValueError:
            value, end = None, -1
        if end == len(decoded) and _is_record(value):
            return value, True
        start = decoded.find("{", start + 1)
    return _NOT_JSON, False


def _where(lines: list[int]) -> str:
    shown = ", ".join(str(n) for n in lines[:5]) + (", ..." if len(lines) > 5 else "")
    return f"line{'s' if len(lines) > 1 else ''} {shown}"


VERDICTS = ("correct", "not yet right", "not attempted", "solution shown")  # what check_exercise records
EXERCISE_ID = re.compile(r"\d+\.\d+")
FUTURE_SLACK = dt.timedelta(minutes=5)  # a record this far after the reader's clock is not a check that ran


def record_time(record: dict[str, Any]) -> dt.datetime | None:
    """When the record was written (UTC when the text names no zone), or None when its time is not a time."""
    try:
        moment = dt.datetime.fromisoformat(str(record.get("time")))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _record_faults(record: dict[str, Any], exercises: Collection[str] | None) -> list[str]:
    """What in a record of this format is not as a checker writes it ([] when all is)."""
    faults = []
    exercise = record["exercise"]
    if not EXERCISE_ID.fullmatch(exercise) or (exercises is not None and exercise not in exercises):
        faults.append(f"exercise {exercise[:40]!r}" + (" (not in this course)" if exercises is not None else ""))
    if record.get("verdict") not in VERDICTS:
        faults.append(f"verdict {str(record.get('verdict'))[:40]!r}")
    tries = record.get("try", 1)  # try and time are read only when present (a hand-made log may leave them out)
    if not isinstance(tries, int) or isinstance(tries, bool) or tries < 0:  # 0: the solution shown before a try
        faults.append(f"try {str(tries)[:20]!r}")
    if "time" in record and record_time(record) is None:
        faults.append(f"time {str(record.get('time'))[:40]!r}")
    return faults


def _missing_log_problem(path: Path) -> str | None:
    """Why there is no log at `path` when its folder is in the way (a file named .verlstudy): the checks cannot
    log there; None when the log is simply not written yet."""
    for folder in (path.parent, path):
        if folder.is_symlink() and not folder.exists():
            return f"{folder.name} is a link to nothing: this learner's checks cannot record attempts; remove it"
    if path.parent.exists() and not path.parent.is_dir():
        return (
            f"{path.parent.name} is a file, not a folder: this learner's checks cannot record attempts; "
            "move that file away"
        )
    return None


def scan_log(path: Path, *, exercises: Collection[str] | None = None, now: dt.datetime | None = None) -> LogScan:
    """Read one attempt log: its records of this format, and a line naming each kind of thing skipped.

    Torn lines (a record cut short), JSON lines that are no record, records of another format version, records
    not as a checker writes them (an unknown verdict or, given `exercises`, exercise; a try or time of the wrong
    kind), NUL runs and overlong lines are named with their line numbers and skipped; a record dated after `now`
    is kept and named. A whole record glued after a torn one (logs written before records began on a fresh line)
    is read. A missing log is empty, unless a file is where its folder should be; one that cannot be read is named
    with why.
    """
    scan = LogScan()
    if not path.exists():
        problem = _missing_log_problem(path)
        if problem:
            scan.problems.append(problem)
        return scan
    torn: list[int] = []
    shapeless: list[int] = []
    malformed: list[tuple[int, list[str]]] = []
    future: list[tuple[int, str]] = []
    glued: list[int] = []
    long: list[int] = []
    foreign: dict[str, list[int]] = {}
    nul_lines: list[int] = []
    nul_bytes = 0
    try:
        with path.open("rb") as handle:
            for kind, line, value in _pieces(handle):
                if kind == "nul":
                    nul_bytes += value
                    if line not in nul_lines:
                        nul_lines.append(line)
                    continue
                if kind == "long":
                    long.append(line)
                    continue
                record, was_glued = _parse(value)
                if not _is_record(record):
                    (torn if record is _NOT_JSON else shapeless).append(line)
                    continue
                if record["format"] != FORMAT:
                    foreign.setdefault(repr(record["format"]), []).append(line)
                    continue
                faults = _record_faults(record, exercises)
                if faults:
                    malformed.append((line, faults))
                    continue
                if was_glued:
                    glued.append(line)
                moment = record_time(record)
                if now is not None and moment is not None and moment > now + FUTURE_SLACK:
                    future.append((line, str(record["time"])[:40]))
                scan.records.append(record)
    except OSError as e:
        scan.problems.append(f"cannot be read ({e.strerror or e})")
        return scan
    if torn:
        scan.problems.append(
            f"{len(torn)} torn line{'s' if len(torn) > 1 else ''} skipped ({_where(torn)}): "
            "a record cut short by a full disk or a stopped kernel"
        )
    if shapeless:
        scan.problems.append(
            f"{len(shapeless)} line{'s' if len(shapeless) > 1 else ''} skipped ({_where(shapeless)}): JSON, but "
            "not an attempt record (no exercise and format): written by something other than a check"
        )
    if malformed:
        shown = "; ".join(f"line {line}: {', '.join(faults)}" for line, faults in malformed[:3])
        more = f"; and {len(malformed) - 3} more" if len(malformed) > 3 else ""
        many = len(malformed) > 1
        scan.problems.append(
            f"{len(malformed)} record{'s' if many else ''} not as a check writes {'them' if many else 'it'}, "
            f"skipped ({shown}{more}): edited by hand?"
        )
    if future:
        shown = ", ".join(f"line {line}: {when}" for line, when in future[:3]) + (", ..." if len(future) > 3 else "")
        scan.problems.append(
            f"{len(future)} record{'s' if len(future) > 1 else ''} dated in the future ({shown}): a wrong clock or "
            "an edit by hand; kept, but not counted as a recent attempt"
        )
    if glued:
        scan.problems.append(f"a whole record glued after a torn one read ({_where(glued)})")
    for version, lines in foreign.items():
        scan.problems.append(
            f"{len(lines)} record{'s' if len(lines) > 1 else ''} of format {version} skipped ({_where(lines)}): "
            f"written by another verlstudy version; this one reads format {FORMAT}, so update verlstudy to read them"
        )
    if nul_bytes:
        scan.problems.append(
            f"{nul_bytes} NUL bytes skipped ({_where(nul_lines)}): left by a crash or a full disk, not by a check"
        )
    if long:
        scan.problems.append(f"{len(long)} line(s) over {LONGEST_LINE} bytes skipped ({_where(long)}): not records")
    return scan
