"""Lesson 09's workspace: edit a temporary copy of a config package and import that copy afresh."""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path
from types import ModuleType

from verlstudy.kit.params import check_path, check_str


def import_fresh(package_dir: str | Path) -> ModuleType:
    """Import the package in `package_dir` under its own name, dropping any cached copy first, so
    that `_target_` paths resolve to this copy's classes (e.g. after editing a temporary copy)."""
    package_dir = check_path("package_dir", package_dir, what="a package folder's path (str or Path)")
    if not (package_dir / "__init__.py").is_file():
        raise ValueError(f"{package_dir.name!r} is not a package folder (no __init__.py)")
    name = package_dir.name
    for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[mod]
    importlib.invalidate_caches()
    sys.path.insert(0, str(package_dir.parent))
    # no __pycache__ in the fixture folders
    old_flag, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        return importlib.import_module(name)
    finally:
        sys.dont_write_bytecode = old_flag
        sys.path.remove(str(package_dir.parent))


def copy_package(package_dir: str | Path, dest_parent: str | Path) -> Path:
    """Copy a package folder into `dest_parent` (same folder name); return the copy's path."""
    package_dir = check_path("package_dir", package_dir, what="a package folder's path (str or Path)")
    dest_parent = check_path("dest_parent", dest_parent, what="a folder's path (str or Path)")
    if not package_dir.is_dir():
        raise ValueError(f"no package folder {package_dir.name!r}")
    dest = dest_parent / package_dir.name
    shutil.copytree(package_dir, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def replace_once(path: str | Path, old: str, new: str) -> None:
    """Edit a file by replacing text that must occur exactly once (an edit that cannot half-apply)."""
    path = check_path("path", path, what="a file's path (str or Path)")
    if not isinstance(old, str) or not old:
        raise ValueError("old must be a non-empty string")
    check_str("new", new, what="the replacement text (a str)")
    text = path.read_text(encoding="utf-8")
    count = text.count(old)
    if count != 1:
        raise ValueError(f"{path.name}: expected the text to replace exactly once, found it {count} times: {old!r}")
    path.write_text(text.replace(old, new), encoding="utf-8")
