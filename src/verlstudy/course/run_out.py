"""Where `verlstudy run --out` may write: never over a notebook a run did not write, never into a learner's folder.

The folder's manifest (files.Manifest) decides for a folder a run wrote before; a folder without one (an older
verlstudy's, or a learner's) keeps every notebook that is not a run's output of today's course notebook, and every
notebook at all when the learner's attempt log sits beside it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

from verlstudy.course import registry
from verlstudy.course.files import Manifest, WouldOverwriteWork, check_out_dir, check_target, is_run_output
from verlstudy.kit import attempts

ATTEMPT_LOG = Path(attempts.LOG_FOLDER) / attempts.LOG_FILE  # kit.attempts' log: its folder is a learner's


def _code_and_text(path: Path) -> list[tuple[str, str]] | None:
    """(cell type, source) of each cell but papermill's injected parameters, or None when it is no notebook."""
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        return [
            (str(c["cell_type"]), "".join(c["source"]) if isinstance(c["source"], list) else str(c["source"]))
            for c in cells
            if "injected-parameters" not in c.get("metadata", {}).get("tags", [])
        ]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def run_output_of(sources: dict[str, Path]) -> Callable[[Path], bool]:
    """Legacy test for --out without a manifest: a notebook a run wrote (papermill's metadata) whose cells are
    those of the course notebook it came from (`sources`: file name -> course notebook), and no attempt log beside
    it. A learner's notebook run through papermill once, then edited, is not a run's output."""

    def legacy(path: Path) -> bool:
        if (path.parent / ATTEMPT_LOG).exists() or not is_run_output(path):
            return False
        source = sources.get(path.name)
        return source is None or _code_and_text(path) == _code_and_text(source)

    return legacy


def check_run_out(out: Path, notebooks: Iterable[str | Path] = ()) -> Manifest:
    """Refuse an --out folder that is forbidden, or where a run would overwrite a notebook it did not write.

    `notebooks` are the notebooks the run writes (names, or the course notebooks they are executed from). In a
    folder without a manifest a notebook is overwritten only if it is a run's output of today's course notebook
    and no attempt log sits beside it. Returns the folder's manifest, for the run to list what it writes.
    """
    check_target(out, "--out")
    check_out_dir(out)
    manifest = Manifest(out)
    named = [Path(n) for n in notebooks]
    sources = {n.name: n for n in named if n.is_absolute() and n.is_file()}
    targets = {Path(out) / n.name: None for n in named}
    if not manifest.exists and (Path(out) / ATTEMPT_LOG).exists() and any(t.exists() for t in targets):
        raise WouldOverwriteWork(
            f"--out {out} is a learner's folder (it holds their attempt log {ATTEMPT_LOG}) and this run would "
            "overwrite notebooks there: run into another folder"
        )
    manifest.refuse_foreign(targets, "--out", run_output_of(sources))
    return manifest


def learners_work(folder: Path) -> str | None:
    """What in `folder` itself shows it is a learner's working folder (their attempt log, or lesson notebooks that
    are not a run's output), or None."""
    if (folder / ATTEMPT_LOG).exists():
        return f"their attempt log {ATTEMPT_LOG}"
    names = [lesson.notebook.name for lesson in registry.LESSONS]
    mine = [name for name in names if (folder / name).is_file() and not is_run_output(folder / name)]
    return f"lesson notebooks ({mine[0]}{' and more' if len(mine) > 1 else ''})" if mine else None


def refuse_learners_folder(out: Path, flag: str, *, itself: bool = True) -> None:
    """ValueError if a folder `out` is in (below the home folder), or `out` itself when `itself`, is a learner's
    working folder.

    A course copy there (init's notebooks/ and student/, a student edition) nests inside their work, and
    `progress` then takes the new folder for the learner and skips their own notebooks (`student --out` may
    refresh a learner's own folder: its manifest keeps their edits, so only a folder inside one is refused).
    """
    out = Path(out).resolve()
    try:
        home = Path.home().resolve()
    except (RuntimeError, KeyError, OSError):
        home = None
    for folder in [out, *out.parents] if itself else list(out.parents):
        if folder == home or folder == Path(folder.anchor):
            break
        what = learners_work(folder) if folder.is_dir() else None
        if what is not None:
            where = "is" if folder == out else f"is inside {folder}, which is"
            raise ValueError(
                f"{flag} {out} {where} a learner's folder (it holds {what}): a course copy there would mix "
                "with their work; name a folder outside it"
            )
