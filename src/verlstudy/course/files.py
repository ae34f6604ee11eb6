"""Writing a folder of course files all at once, and never over a learner's work."""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})  # "no space left" and "quota exceeded" read the same to a user


class WriteFailed(Exception):
    """The disk filled up (or a write failed) while the course wrote a file: one line for the user, exit code 1."""


def is_disk_full(error: BaseException | None) -> bool:
    """True if `error`, or an error it was raised from, is ENOSPC/EDQUOT (libraries wrap OSError)."""
    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, OSError) and error.errno in DISK_FULL:
            return True
        error, seen = error.__cause__ or error.__context__, seen + 1
    return False


def disk_full_message(path: Path, kept: str = "nothing else was overwritten") -> str:
    return f"disk full while writing {path}: free space and rerun; {kept}"


def _mode_for(path: Path) -> int:
    if path.exists():
        return path.stat().st_mode & 0o7777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextmanager
def disk_full_says(path: Path, kept: str) -> Iterator[None]:
    """Turn a full disk inside the block into WriteFailed naming `path` and what was `kept`; other errors pass."""
    try:
        yield
    except OSError as e:
        if is_disk_full(e):
            raise WriteFailed(disk_full_message(path, kept)) from e
        raise


@contextmanager
def replacing(path: Path, suffix: str = ".partial") -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success it replaces `path` at once (os.replace), else it goes.

    A write that fails halfway (a full disk, Ctrl-C) leaves the file that was there, never half of a new one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=suffix + path.suffix, dir=path.parent)
    os.close(handle)
    temporary = Path(name)
    try:
        with disk_full_says(path, f"{path.name} was left as it was"):
            yield temporary
            os.chmod(temporary, _mode_for(path))  # mkstemp makes 0600; keep what the file had, or the umask's default
            os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def write_text(path: Path, text: str) -> Path:
    """Write a whole file or nothing: through a temporary file beside it, then os.replace."""
    with replacing(Path(path)) as temporary:
        temporary.write_text(text)
    return Path(path)


def check_out_dir(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise ValueError(f"output folder {out} exists and is a file; name a folder")


def write_all(out: Path, files: dict[str, str]) -> None:
    """Write every file into a sibling temporary folder, then move them in: nothing half-written."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        for name, text in files.items():
            with disk_full_says(out / name, f"nothing in {out} was changed"):  # nothing has reached `out` yet
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
