"""Writing a folder of course files all at once, and never over a learner's work."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


def check_out_dir(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise ValueError(f"output folder {out} exists and is a file; name a folder")


def write_all(out: Path, files: dict[str, str]) -> None:
    """Write every file into a sibling temporary folder, then move them in: nothing half-written."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        for name, text in files.items():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_text(text)
        out.mkdir(exist_ok=True)
        for name in files:
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).replace(out / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


class WouldOverwriteWork(ValueError):
    """The output folder holds student notebooks that differ from a fresh edition: a learner's work, maybe."""


# ---------------------------------------------------------------- where `verlstudy run` may write


def _is_run_output(path: Path) -> bool:
    """True for a notebook a papermill run wrote (it carries papermill's metadata)."""
    import json

    try:
        return "papermill" in json.loads(path.read_text()).get("metadata", {})
    except (OSError, ValueError, AttributeError):
        return False


def check_run_out(out: Path, protected: list[Path]) -> None:
    """Refuse an --out folder that is the course's own, or that holds notebooks a run did not write."""
    check_out_dir(out)
    resolved = out.resolve()
    for folder in protected:
        if resolved == folder.resolve() or folder.resolve() in resolved.parents:
            raise ValueError(f"--out {out} is the course's own {folder.name}/ folder: the run would overwrite lessons")
    if out.is_dir():
        foreign = sorted(p.name for p in out.glob("*.ipynb") if not _is_run_output(p))
        if foreign:
            raise ValueError(
                f"--out {out} holds notebooks a run did not write ({', '.join(foreign[:3])}"
                f"{', ...' if len(foreign) > 3 else ''}): a learner's work? Choose an empty or a build folder"
            )


REPORT_STARTS = {".md": "# Course run", ".xml": "<testsuites", ".json": "{", ".csv": "learner,"}


def check_report_paths(named: dict[str, Path | None]) -> None:
    """Each report path (flag -> path) names a new file or a report a run wrote, and no two are the same."""
    seen: dict[Path, str] = {}
    for flag, path in named.items():
        if path is None:
            continue
        if path.suffix == ".ipynb":
            raise ValueError(f"{flag} {path} is a notebook: reports are .md, .xml, .json or .csv files")
        if path.is_dir():
            raise ValueError(f"{flag} {path} is a folder: name a file inside it")
        resolved = path.resolve()
        if resolved in seen:
            raise ValueError(f"{flag} and {seen[resolved]} name the same file {path}: give each its own")
        seen[resolved] = flag
        if path.exists():
            start = REPORT_STARTS.get(path.suffix)
            head = path.read_text(errors="replace")[:40].lstrip()
            if start is None or not head.startswith(start):
                raise ValueError(f"{flag} {path} exists and is not a report a run wrote: choose another file")
        parent = path.parent if str(path.parent) else Path(".")
        existing = next((p for p in [parent, *parent.parents] if p.exists()), Path("."))
        if not existing.is_dir():
            raise ValueError(f"{flag} {path}: {existing} is a file, not a folder")
        if not os.access(existing, os.W_OK):
            raise ValueError(f"{flag} {path}: {existing} is not writable")
