"""Where the course's notebooks and data are: a checkout's own folders, or the copies shipped in the wheel.

In a checkout (an editable install, or running from `src/`) the folders at the repository root are the
course. A normal `pip install` ships them as package data under `verlstudy/_course/`; they are read
through importlib.resources, so lessons find their fixtures from any working directory.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

BUNDLE_PACKAGE = "verlstudy._course"  # the wheel's copy: notebooks/ and data/ as package data


def checkout_root() -> Path | None:
    """The repository root when this package runs from a checkout's `src/`, else None."""
    root = Path(__file__).resolve().parents[3]
    looks_like_checkout = (root / "pyproject.toml").is_file() and (root / "src" / "verlstudy").is_dir()
    return root if looks_like_checkout and (root / "notebooks").is_dir() and (root / "data").is_dir() else None


def course_root() -> Path:
    """The folder holding `notebooks/` and `data/`: the checkout, or the installed package's bundle."""
    root = checkout_root()
    if root is not None:
        return root
    bundle = resources.files("verlstudy") / "_course"
    path = Path(str(bundle))
    if not (path / "notebooks").is_dir():
        raise FileNotFoundError(
            f"the course's notebooks are neither in a checkout nor in the installed package ({path}); "
            "reinstall verlstudy from its source folder or wheel"
        )
    return path


def notebooks_dir() -> Path:
    """The course's notebooks (read-only when installed: `verlstudy init DIR` makes a learner's copy)."""
    return course_root() / "notebooks"


def data_dir() -> Path:
    """The fixtures the lessons read (`data/`)."""
    return course_root() / "data"
