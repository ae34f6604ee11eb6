"""Where the course's notebooks and data are: a checkout's own folders, or the copies shipped in the wheel.

In a checkout (an editable install, or running from `src/`) the folders at the repository root are the
course. A normal `pip install` ships them as package data under `verlstudy/_course/`; they are read
through importlib.resources, so lessons find their fixtures from any working directory.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources
from pathlib import Path

from verlstudy.kit.params import check_items, check_path

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


def build_root() -> Path:
    """Where `verlstudy run` writes by default and library caches go: the checkout's build/; when installed, the
    user's cache folder (platformdirs: ~/.cache/verlstudy on Linux, honouring XDG_CACHE_HOME), never the current one."""
    root = checkout_root()
    if root is not None:
        return root / "build"
    from platformdirs import user_cache_path

    return user_cache_path("verlstudy", appauthor=False)


def cache_root() -> Path:
    """Where libraries' caches go (matplotlib's fonts, torch's compile caches, hypothesis's Unicode table)."""
    return build_root() / "cache"


def notebooks_dir() -> Path:
    """The course's notebooks (read-only when installed: `verlstudy init DIR` makes a learner's copy)."""
    return course_root() / "notebooks"


def data_dir() -> Path:
    """The fixtures the lessons read (`data/`)."""
    return course_root() / "data"


class DataFileError(ValueError):
    """A data file the lessons read is missing, unreadable, not UTF-8 or not in its format: one line naming it."""


def read_data_text(path: str | Path) -> str:
    """A data file's text (UTF-8), or a DataFileError naming the file and what to do, never a bare decode error."""
    path = check_path("path", path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise DataFileError(f"{path} does not exist; restore it, e.g. with git checkout") from e
    except UnicodeDecodeError as e:
        raise DataFileError(
            f"{path} is not UTF-8 text (byte {e.start} is {e.object[e.start : e.start + 1]!r}); "
            "save it as UTF-8 or restore it, e.g. with git checkout"
        ) from e
    except OSError as e:
        raise DataFileError(f"{path} cannot be read: {e.strerror or e}") from e


DATA_LISTING = "FILES"  # data/FILES: every data file, one path a line


def check_data_folder(folder: str | Path) -> None:
    """DataFileError naming every file data/FILES lists under `folder` that is not there (a lesson that reads a whole
    folder would otherwise read what is left and fail a claim). A folder outside data/, or a copy of data/ without
    the listing, is not checked."""
    folder = check_path("folder", folder)
    root = data_dir()
    try:
        relative = folder.resolve().relative_to(root.resolve())
    except ValueError:
        return
    listing = root / DATA_LISTING
    if not listing.is_file():
        return
    prefix = "" if str(relative) == "." else relative.as_posix() + "/"
    wanted = [
        line.strip()
        for line in listing.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#") and line.strip().startswith(prefix)
    ]
    missing = [name for name in wanted if not (root / name).is_file()]
    if missing:
        shown = ", ".join(f"data/{name}" for name in missing[:3]) + (
            f" and {len(missing) - 3} more" if missing[3:] else ""
        )
        raise DataFileError(
            f"{shown} {'is' if len(missing) == 1 else 'are'} missing from {folder} (data/{DATA_LISTING} lists "
            f"{'it' if len(missing) == 1 else 'them'}); restore {'it' if len(missing) == 1 else 'them'}, e.g. with "
            "git checkout -- data, or reinstall verlstudy"
        )


def read_data_csv(path: str | Path, columns: Iterable[str]) -> list[dict[str, str]]:
    """A CSV data file's rows as dicts, its header row naming every column in `columns`; else a DataFileError
    naming the file (a CSV without its header, a row with too many or too few fields, not UTF-8)."""
    import csv
    import io

    path, columns = check_path("path", path), check_items("columns", columns, str, what="a column name (a str)")
    reader = csv.reader(io.StringIO(read_data_text(path), newline=""))
    header = next(reader, [])
    missing = [c for c in columns if c not in header]
    if missing:
        raise DataFileError(
            f"{path}: the first row must be the header naming {', '.join(columns)}; "
            f"it lacks {', '.join(missing)} (found {', '.join(header) if header else 'an empty file'})"
        )
    rows = []
    for fields in reader:
        if not fields:
            continue  # a blank line, as csv.DictReader skips it
        if len(fields) != len(header):
            raise DataFileError(
                f"{path}: line {reader.line_num} has {len(fields)} fields, the header has {len(header)}"
            )
        rows.append(dict(zip(header, fields, strict=True)))
    return rows
