"""Content hashes of what an execution depends on: a notebook's file, and the course's own sources.

`verlstudy progress --verify` keys its cache on them (a learner's notebook re-executes only when it or the course
changed) and `verlstudy run --if-stale` compares them with the record of the last run (course.run_record).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from verlstudy.kit.resources import data_dir

SKIPPED = {"__pycache__"}


def file_hash(path: Path) -> str:
    """SHA-256 of the file's bytes (hex)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def tree_hash(folder: Path, suffixes: tuple[str, ...] | None = None) -> str:
    """SHA-256 over every file under `folder` (relative name and bytes, in name order; `suffixes` keeps only those)."""
    digest = hashlib.sha256()
    folder = Path(folder)
    if not folder.is_dir():
        return digest.hexdigest()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not SKIPPED.intersection(p.parts)):
        if suffixes is None or path.suffix in suffixes:
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def course_sources_hash() -> str:
    """One hash of the package's Python sources and the course's data/: what every lesson's run reads."""
    import verlstudy

    package = Path(verlstudy.__file__).resolve().parent
    digest = hashlib.sha256()
    digest.update(tree_hash(package, (".py",)).encode())
    digest.update(tree_hash(data_dir()).encode())
    return digest.hexdigest()
