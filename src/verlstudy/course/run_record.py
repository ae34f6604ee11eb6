"""The record of a course run (`OUT/run-record.json`): what it executed, so a later run can skip a fresh one.

`verlstudy run` writes "running" before its first kernel starts and, when it ends, each lesson's status with the
hash of the lesson's .ipynb and of what it executed into OUT, the hash of the course's sources (the package's
Python files and data/), the parameters, whether the floor ran, the Python, torch and verl versions. `verlstudy run
--if-stale` (what `make course` and so `make site` use) executes nothing when that record matches today's files
and every lesson passed; otherwise it names why (a partial or interrupted run, a failed lesson, a changed notebook
or source, a missing report) and runs.
"""

from __future__ import annotations

import json
import platform
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path

from verlstudy.course.files import Manifest, write_file_owned, write_text
from verlstudy.course.fingerprint import course_sources_hash, file_hash
from verlstudy.course.registry import Lesson
from verlstudy.course.usage import UsageError

RECORD = "run-record.json"
FORMAT = 1


def _installed(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def _environment() -> dict[str, str]:
    """What a lesson's outcome depends on besides the course: Python, torch, and verl (its upstream cells)."""
    return {"python": platform.python_version(), "torch": _installed("torch"), "verl": _installed("verl")}


def _params(params: Mapping[str, object]) -> dict[str, str]:
    return {str(k): repr(v) for k, v in sorted(params.items())}


def damage(path: Path) -> str:
    """Why the record at `path` is not one (not JSON, not this format), or '' when it reads as a run record."""
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        return f"it is not a readable JSON file ({str(e).splitlines()[0][:120] if str(e) else type(e).__name__})"
    if not isinstance(record, dict) or record.get("format") != FORMAT or "state" not in record:
        return f"it is not a run record of format {FORMAT}"
    return ""


def mark_running(out: Path) -> None:
    """Say a run has started in `out` (a run killed before it ends leaves this, so the next one reruns).

    A record this folder's manifest lists (verlstudy wrote it) is replaced even when damaged since: it holds the
    last run's bookkeeping, nobody's work. One it does not list stops the run with one line saying what to do.
    """
    path = Path(out) / RECORD
    text = json.dumps({"format": FORMAT, "state": "running"}) + "\n"
    manifest = Manifest(Path(out)) if Path(out).is_dir() else None
    if path.exists() and manifest is not None and not manifest.may_overwrite(path, text):
        if path.is_file() and not path.is_symlink() and manifest.lists(path):
            why = damage(path) or "it changed since verlstudy wrote it"
            print(f"verlstudy run: {path} was damaged ({why}); a new one replaces it", file=sys.stderr)
            write_text(path, text)
            manifest.record([path])
            return
        why = damage(path) or "verlstudy did not write it"
        raise UsageError(
            f"{path} is in the way ({why}): if it is a damaged run record, delete it and rerun; "
            "else choose another --out"
        )
    write_file_owned(path, text, "--out")


def write(
    out: Path,
    results: Sequence[object],
    floor: object | None,
    params: Mapping[str, object],
    *,
    with_floor: bool,
    interrupted: bool = False,
) -> Path:
    """Record what the run executed (results are runner.RunResult); returns the record's path."""
    lessons = {}
    for result in results:
        lesson: Lesson | None = getattr(result, "lesson", None)
        if lesson is None:
            continue
        executed = Path(out) / lesson.notebook.name
        lessons[lesson.code] = {
            "status": getattr(result, "status", "not run"),
            "notebook_sha256": file_hash(lesson.notebook),
            "executed_sha256": file_hash(executed) if executed.is_file() else None,
        }
    record = {
        "format": FORMAT,
        "state": "interrupted" if interrupted else "complete",
        "sources_sha256": course_sources_hash(),
        "environment": _environment(),
        "params": _params(params),
        "floor": getattr(floor, "status", None) if with_floor else "not run",
        "lessons": lessons,
    }
    path = Path(out) / RECORD
    write_file_owned(path, json.dumps(record, indent=1, sort_keys=True) + "\n", "--out")
    return path


def stale_reasons(
    out: Path,
    lessons: Sequence[Lesson],
    params: Mapping[str, object],
    *,
    with_floor: bool,
    reports: Sequence[Path] = (),
) -> list[str]:
    """Why the run recorded in `out` cannot stand for a run of `lessons` with `params` today ([] when fresh)."""
    path = Path(out) / RECORD
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return [f"no record of an earlier run in {out}"]
    except (OSError, ValueError) as e:
        return [f"{path} cannot be read ({e})"]
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return [f"{path} is not a run record of format {FORMAT}"]
    if record.get("state") != "complete":
        return [f"the last run in {out} did not finish ({record.get('state', 'unknown')}): it was partial"]
    reasons = []
    if record.get("sources_sha256") != course_sources_hash():
        reasons.append("the course's sources (the verlstudy package or data/) changed since the last run")
    then, now = record.get("environment"), _environment()
    if then != now:
        then = then if isinstance(then, dict) else {}
        changed = [f"{k} {then.get(k, 'not recorded')} -> {v}" for k, v in now.items() if then.get(k) != v]
        reasons.append(f"the environment changed since the last run ({'; '.join(changed) or then})")
    if record.get("params") != _params(params):
        reasons.append(f"the last run had other parameters ({record.get('params')} -> {_params(params)})")
    if with_floor and record.get("floor") != "passed":
        reasons.append(f"the floor notebook {record.get('floor')} in the last run")
    recorded = record.get("lessons") if isinstance(record.get("lessons"), dict) else {}
    for lesson in lessons:
        mine = recorded.get(lesson.code)
        executed = Path(out) / lesson.notebook.name
        if not isinstance(mine, dict):
            reasons.append(f"lesson {lesson.code} was not in the last run (a partial run)")
        elif mine.get("status") != "passed":
            reasons.append(f"lesson {lesson.code} {mine.get('status')} in the last run")
        elif mine.get("notebook_sha256") != file_hash(lesson.notebook):
            reasons.append(f"lesson {lesson.code}'s notebook {lesson.notebook.name} changed since the last run")
        elif not executed.is_file() or mine.get("executed_sha256") != file_hash(executed):
            reasons.append(f"{executed} is missing or changed since the last run")
    reasons += [f"{report} is missing" for report in reports if not Path(report).is_file()]
    return reasons
