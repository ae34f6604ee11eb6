"""Writing course files: all at once, never into the course's own folders, never over a user's work.

Every writing command (run, progress, student, init, site) goes through the same two rules: `check_target`
(never an empty path, the current folder, notebooks/, data/, src/, the installed package or a system folder)
and the folder's `Manifest` (a file is overwritten only if verlstudy wrote it and it is unchanged since).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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


def disk_full_message(path: Path | str, kept: str = "nothing else was overwritten") -> str:
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
    out = Path(out)
    if out.is_symlink() and not out.exists():  # a dangling link: mkdir would say "File exists"
        raise ValueError(
            f"output folder {out} is a symbolic link to {os.readlink(out)}, which does not exist: "
            "create that folder or name another"
        )
    if out.exists() and not out.is_dir():
        raise ValueError(f"output folder {out} exists and is a file; name a folder")


def write_all(out: Path, files: dict[str, str]) -> None:
    """Write every file into a temporary folder inside `out`, then move them in: nothing half-written.

    The staging folder sits inside `out` (only `out` need be writable, not its parent); a folder this call
    created is removed again if the write fails or is stopped.
    """
    out = Path(out)
    created = not out.exists()
    out.parent.mkdir(parents=True, exist_ok=True)  # a file in the way is named as itself
    out.mkdir(exist_ok=True)  # a read-only parent: the error names `out`, the folder asked for (not a staging one)
    try:
        staging = Path(tempfile.mkdtemp(prefix=".verlstudy-staging-", dir=out))
        try:
            for name, text in files.items():
                with disk_full_says(out / name, f"nothing in {out} was changed"):  # nothing has reached `out` yet
                    (staging / name).parent.mkdir(parents=True, exist_ok=True)
                    (staging / name).write_text(text)
            for name in files:
                (out / name).parent.mkdir(parents=True, exist_ok=True)
                (staging / name).replace(out / name)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        if created:
            with contextlib.suppress(OSError):  # only if still empty: nothing of anyone's is removed
                out.rmdir()
        raise


class WouldOverwriteWork(ValueError):
    """The output folder holds student notebooks that differ from a fresh edition: a learner's work, maybe."""


# ---------------------------------------------------------------- where `verlstudy run` may write


def is_run_output(path: Path) -> bool:
    """Legacy (a folder without a manifest): a notebook a papermill run wrote carries papermill's metadata."""
    try:
        return "papermill" in json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
    except (OSError, ValueError, AttributeError):
        return False


def is_site_page(path: Path) -> bool:
    """Legacy (a folder without a manifest): an HTML page a site build wrote (its sidebar names the course)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return path.suffix == ".html" and '<nav class="sidebar">' in text and "<strong>verlstudy</strong>" in text


# files verlstudy keeps for itself in a folder it writes: a report named like one would replace it
BOOKKEEPING = {
    ".verlstudy-written.json": "verlstudy's list of the files it wrote in that folder",
    "run-record.json": "the record `verlstudy run` keeps of its run (run-record.json)",
}
REPORT_STARTS = {".md": "# Course run", ".xml": "<testsuites", ".json": "{", ".csv": "learner,"}


def _looks_like_report(path: Path) -> bool:
    """Legacy (a folder without a manifest): the file starts the way a report of its kind does."""
    start = REPORT_STARTS.get(path.suffix)
    try:
        with path.open("rb") as f:  # only regular files get here: a pipe or a device is refused before
            head = f.read(64).decode("utf-8", errors="replace").lstrip()
    except OSError:
        return False
    return start is not None and head.startswith(start)


def check_report_paths(named: dict[str, Path | None]) -> None:
    """Each report path (flag -> path) is allowed, names a new file or a report verlstudy wrote, and no two match.

    Nothing here opens a pipe, a device or a /proc entry (that could block): they are refused by what they are.
    """
    seen: dict[Path, str] = {}
    for flag, path in named.items():
        if path is None:
            continue
        path = check_target(path, flag, folder=False)
        if path.suffix == ".ipynb":
            raise ValueError(f"{flag} {path} is a notebook: reports are .md, .xml, .json or .csv files")
        if path.name in BOOKKEEPING:
            raise ValueError(f"{flag} {path} is {BOOKKEEPING[path.name]}: name another file for the report")
        if path.is_dir():
            raise ValueError(f"{flag} {path} is a folder: name a file inside it")
        if path.exists() and not stat.S_ISREG(path.stat().st_mode):
            raise ValueError(
                f"{flag} {path} is not a regular file (a pipe, socket or device): name a file; the report is "
                "printed on screen anyway"
            )
        resolved = path.resolve()
        if resolved in seen:
            raise ValueError(f"{flag} and {seen[resolved]} name the same file {path}: give each its own")
        seen[resolved] = flag
        parent = path.parent if str(path.parent) else Path(".")
        existing = next((p for p in [parent, *parent.parents] if p.exists()), Path("."))
        if not existing.is_dir():
            raise ValueError(f"{flag} {path}: {existing} is a file, not a folder")
        if not os.access(existing, os.W_OK):
            raise ValueError(f"{flag} {path}: {existing} is not writable")
        if path.exists() and not Manifest(parent).may_overwrite(path, legacy=_looks_like_report):
            raise ValueError(
                f"{flag} {path} exists and verlstudy did not write it (or it changed since): choose another file"
            )


# ---------------------------------------------------------------- what a writing command may never write into


def _package_dir() -> Path:
    import verlstudy

    return Path(verlstudy.__file__).resolve().parent


def forbidden_folders() -> dict[Path, str]:
    """Folder -> what it is, for every folder no writing command may write into (nor into anything below it)."""
    from verlstudy.kit.resources import checkout_root, course_root

    found: dict[Path, str] = {_package_dir(): "the installed verlstudy package"}
    try:
        course = course_root().resolve()
        found[course / "notebooks"] = "the course's own notebooks/ folder"
        found[course / "data"] = "the course's own data/ folder"
    except FileNotFoundError:  # a broken install: the package folder above still covers the bundle
        pass
    root = checkout_root()
    if root is not None:
        found[root.resolve() / "src"] = "the checkout's src/ folder"
    return found


# the kernel's folders and the system's own (programs, libraries, settings, boot): no course file belongs there
SYSTEM_FOLDERS = tuple(Path(p) for p in ("/proc", "/sys", "/dev", "/etc", "/bin", "/sbin", "/boot", "/lib", "/lib64"))


def root_or_home(resolved: Path, folder: bool) -> str | None:
    """What `resolved` is if a command must not scatter its files there: the root folder, or (a folder) home."""
    anchor = Path(resolved.anchor)
    if resolved == anchor or (not folder and resolved.parent == anchor):
        return "the root folder" if folder else "in the root folder"
    try:
        home = Path.home().resolve()
    except (RuntimeError, KeyError, OSError):  # no HOME and no passwd entry: there is no home to guard
        return None
    return "your home folder" if folder and resolved == home else None


def check_target(path: str | Path | None, flag: str, *, folder: bool = True) -> Path:
    """The one guard of every writing command: `path` (a --out folder, or a file when `folder=False`) is allowed.

    Never an empty path, the current folder, the root or home folder itself (for a folder; a file not directly in
    the root folder), the checkout's own root, notebooks/, data/ or src/, the installed package, or a system folder
    (/proc, /sys, /dev, /etc, ...). Returns the path; raises ValueError with one line naming it.
    """
    kind = "folder" if folder else "file"
    if path is None or not str(path).strip():
        raise ValueError(f"{flag} is empty: name a {kind}")
    path = Path(path)
    resolved = path.resolve()
    if folder and resolved == Path.cwd().resolve():
        raise ValueError(f"{flag} {path} is the current folder: name a new folder for what this writes")
    where = root_or_home(resolved, folder)
    if where is not None:  # `init /` wrote README.txt, notebooks/ and student/ into the filesystem's root
        fix = "name a new folder inside it, e.g. ~/verlstudy" if folder else "name a file in a folder of your own"
        raise ValueError(f"{flag} {path} is {where}: {fix}")
    for system in SYSTEM_FOLDERS:  # as named (/dev/stdout) and as resolved (it may point into /proc or a tmp file)
        if any(p == system or system in p.parents for p in (Path(os.path.abspath(path)), resolved)):
            raise ValueError(f"{flag} {path} is in {system}, a system folder: name a {kind} of your own")
    from verlstudy.kit.resources import checkout_root

    root = checkout_root()
    if folder and root is not None and resolved == root.resolve():
        raise ValueError(f"{flag} {path} is the course checkout itself: name a folder inside it, e.g. build/")
    for forbidden, what in forbidden_folders().items():
        if resolved == forbidden or forbidden in resolved.parents:
            raise ValueError(f"{flag} {path} is in {what}: the course must not write there; name another {kind}")
    return path


# ---------------------------------------------------------------- the written-files manifest

MANIFEST = ".verlstudy-written.json"
_MANIFEST_LOCK = threading.Lock()


def content_hash(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


class Manifest:
    """The files a verlstudy command wrote into one folder, with their content hashes (`.verlstudy-written.json`).

    A command may overwrite a file only if it is missing, identical to what would be written, or listed here
    with the hash it has now (unchanged since it was written). A file listed as pending (hash None) is one a
    command started writing and never finished (a full disk, a kill): it is the command's own. In a folder
    with no manifest (written by an older verlstudy), `legacy` decides per file.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / MANIFEST
        self.exists = self.path.is_file()
        self.files: dict[str, str | None] = {}
        if self.exists:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                if not isinstance(data, dict) or "files" not in data:  # D4: '[]' was named by a Python TypeError
                    raise ValueError("not a JSON object with a 'files' map")
                files = data["files"]
                if not isinstance(files, dict) or not all(isinstance(v, str | None) for v in files.values()):
                    raise ValueError("'files' is not a map of names to hashes")
            except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
                raise ValueError(
                    f"{self.path} is not a readable list of written files ({e}); delete it and rerun "
                    f"(files already in {self.folder} are then kept unless identical to what is written)"
                ) from e
            self.files = dict(files)

    def _key(self, path: Path) -> str:
        """`path` relative to the folder; its last part not resolved (a link is named as itself, not its target)."""
        path = Path(path)
        try:
            return (path.parent.resolve() / path.name).relative_to(self.folder.resolve()).as_posix()
        except ValueError:  # a path through a link that leaves the folder: its own name, as given
            return path.name

    def lists(self, path: Path) -> bool:
        """True if this manifest lists `path` (a verlstudy command wrote it here, whatever it holds now)."""
        return self._key(path) in self.files

    def may_overwrite(
        self, path: Path, new: str | bytes | None = None, legacy: Callable[[Path], bool] | None = None
    ) -> bool:
        """True if writing `path` loses nothing: missing, identical to `new`, or written by us and unchanged."""
        path = Path(path)
        if not path.exists() and not path.is_symlink():
            return True
        if not path.is_file() or path.is_symlink():
            return False
        data = path.read_bytes()
        if new is not None and data == (new.encode() if isinstance(new, str) else new):
            return True
        key = self._key(path)
        if key in self.files:
            return self.files[key] is None or self.files[key] == content_hash(data)
        return not self.exists and legacy is not None and legacy(path)

    def refuse_foreign(
        self,
        paths: dict[Path, str | bytes | None],
        flag: str,
        legacy: Callable[[Path], bool] | None = None,
    ) -> None:
        """Raise WouldOverwriteWork naming every path a write would overwrite that is not ours, unchanged.

        A folder or a link where a file goes is named as what it is: verlstudy never writes into or through one.
        """
        refused = [Path(p) for p, new in paths.items() if not self.may_overwrite(p, new, legacy)]
        folders = sorted(self._key(p) + "/" for p in refused if p.is_dir() and not p.is_symlink())
        if folders:
            raise WouldOverwriteWork(
                f"{flag} {self.folder} has a folder where this writes a file ({', '.join(folders[:3])}): "
                f"move it away or choose another {flag}"
            )
        links = sorted(f"{self._key(p)} -> {os.readlink(p)}" for p in refused if p.is_symlink())
        if links:
            raise WouldOverwriteWork(
                f"{flag} {self.folder} has a link where this writes a file ({', '.join(links[:3])}): verlstudy "
                f"never writes through a link; remove the link (its target is kept) or choose another {flag}"
            )
        foreign = sorted(self._key(p) for p in refused)
        if foreign:
            shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            raise WouldOverwriteWork(
                f"{flag} {self.folder} holds {len(foreign)} file(s) this would overwrite that verlstudy did not "
                f"write, or that changed since ({shown}): a learner's work? Move them away or choose another {flag}"
            )

    def _save(self) -> None:
        text = json.dumps({"written_by": "verlstudy", "files": dict(sorted(self.files.items()))}, indent=1) + "\n"
        with replacing(self.path) as temporary:
            temporary.write_text(text)
        self.exists = True

    def pending(self, paths: Iterable[Path]) -> None:
        """List `paths` as being written (before a tool that writes them itself, such as papermill, starts)."""
        with _MANIFEST_LOCK:
            for path in paths:
                self.files[self._key(path)] = None
            self._save()

    def record(self, paths: Iterable[Path]) -> None:
        """List `paths` with the hash of what they hold now (after they were written)."""
        with _MANIFEST_LOCK:
            for path in paths:
                path = Path(path)
                if path.is_file():
                    self.files[self._key(path)] = content_hash(path.read_bytes())
            self._save()


def write_owned(out: Path, files: dict[str, str], flag: str, legacy: Callable[[Path], bool] | None = None) -> None:
    """Write `files` (relative name -> text) into `out`: guarded, never over a file verlstudy did not write.

    The folder is checked (check_target), every file that would be overwritten must be ours and unchanged
    (Manifest), then everything is written at once (write_all) and listed with its hash.
    """
    out = Path(out)
    check_target(out, flag)
    check_out_dir(out)
    manifest = Manifest(out)
    manifest.refuse_foreign({out / name: text for name, text in files.items()}, flag, legacy)
    write_all(out, files)
    manifest.record(out / name for name in files)


def write_file_owned(path: Path, text: str, flag: str, legacy: Callable[[Path], bool] | None = None) -> Path:
    """Write one report-like file through the same guard and manifest (the manifest of its own folder)."""
    path = Path(path)
    check_target(path, flag, folder=False)
    manifest = Manifest(path.parent if str(path.parent) else Path("."))
    manifest.refuse_foreign({path: text}, flag, legacy)
    write_text(path, text)
    manifest.record([path])
    return path


def read_notebook(path: Path) -> Any:
    """Read a notebook, or a ValueError naming the file and what to do (never a bare JSON traceback)."""
    import nbformat

    path = Path(path)
    try:
        return nbformat.read(path, as_version=4)
    except FileNotFoundError as e:
        raise ValueError(f"{path} does not exist") from e
    except OSError as e:
        raise ValueError(f"{path} cannot be read: {e.strerror or e}") from e
    except Exception as e:  # invalid JSON, not UTF-8, or JSON that is not a notebook
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"{path} is not a valid notebook ({first[:200]}); restore it, e.g. with git checkout") from e
