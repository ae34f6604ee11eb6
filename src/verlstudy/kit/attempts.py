"""The attempt log: one JSON line per `check_exercise` call, in a hidden folder beside the notebook.

A facilitator's `verlstudy progress` reads these lines instead of re-executing anyone's notebooks, and a
learner can see their own history. The format is versioned (`format`); docs/authoring.md documents it.

Where: `$VERLSTUDY_ATTEMPTS_DIR` when set, else `.verlstudy/` in the kernel's working folder (Jupyter
starts a notebook's kernel in the notebook's folder). Never inside the installed package: a notebook
run from site-packages writes no log. `VERLSTUDY_ATTEMPTS=0` turns the log off (the course's own test
runs do, so a checkout collects no logs). Writing never breaks a check: a folder that cannot be written
leaves the log out and says why in `last_log_error()`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import inspect
import json
import os
import sys
import uuid
from collections.abc import Iterator
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
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as log:
            log.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
    except OSError as e:
        _last_error[:] = [f"the attempt log {path} could not be written ({e.strerror or e}); checks go on without it"]
        return None
    _last_error.clear()
    return record


def last_log_error() -> str:
    """Why the last attempt was not logged ('' when it was, or when the log is off)."""
    return _last_error[0] if _last_error else ""


def read_attempts(path: Path) -> Iterator[dict[str, Any]]:
    """The attempts of one log file, oldest first; a line that is not a record of a known format is skipped."""
    if not path.is_file():
        return
    with path.open(encoding="utf-8", errors="replace") as log:
        for line in log:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a full disk or a killed kernel
            if isinstance(record, dict) and record.get("format") == FORMAT and isinstance(record.get("exercise"), str):
                yield record
