"""Writing a folder of course files all at once, and never over a learner's work."""

from __future__ import annotations

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
