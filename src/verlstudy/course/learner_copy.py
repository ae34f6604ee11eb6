"""`verlstudy init DIR`: the course copied into a folder a learner owns, never over their edits.

An installed package keeps its notebooks read-only inside site-packages; a learner works on a copy.
DIR gets `notebooks/` (the full edition, with stored outputs), `student/` (the student edition) and a
short README. The lessons read their fixtures from the package itself, so no data is copied. A file
already in DIR that differs from what would be written is left alone and reported, unless `init` wrote
it and nobody changed it since (the folder's manifest): then it is brought up to date.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from verlstudy.course import registry
from verlstudy.course.files import Manifest, check_out_dir, check_target, read_notebook, write_all
from verlstudy.course.run_out import refuse_learners_folder
from verlstudy.course.student import student_notebook

README = """verlstudy: your copy of the course

notebooks/  the full edition (reference answers and stored outputs): read it, run it
student/    the student edition: solutions replaced by stubs; work here
            each exercise's checker cell says "correct", "not yet right" or "not attempted"

Open with:  jupyter lab student/      (pip install "verlstudy[lab]" for JupyterLab)
Run again:  verlstudy init {folder}   (adds lessons that are new; never touches files you changed)
"""


@dataclass
class CopyReport:
    written: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)
    kept_edits: list[Path] = field(default_factory=list)  # a learner's changed files, left as they are

    def summary(self) -> str:
        lines = [f"{len(self.written)} written, {len(self.unchanged)} already up to date"]
        if self.kept_edits:
            lines.append(f"{len(self.kept_edits)} kept as you changed them (not overwritten):")
            lines += [f"  {p}" for p in self.kept_edits]
        return "\n".join(lines)


def course_files(folder_name: str) -> dict[str, str]:
    """Relative path -> text of everything `init` writes."""
    files = {"README.txt": README.format(folder=folder_name)}
    for lesson in registry.LESSONS:
        nb = read_notebook(lesson.notebook)
        files[f"notebooks/{lesson.notebook.name}"] = nbformat.writes(nb)
        files[f"student/{lesson.notebook.name}"] = nbformat.writes(student_notebook(nb, lesson))
    return files


def init_course(out: Path) -> CopyReport:
    """Copy the course into `out` (created if needed); return what was written, kept and left alone.

    `out` passes the guard of every writing command (files.check_target: never the course's own folders, the
    current folder or an empty name). A file `init` wrote before and nobody changed is brought up to date; a
    file that differs and is not one `init` wrote unchanged (files.Manifest) is the learner's: kept, reported.
    """
    if not isinstance(out, str | Path):
        raise ValueError(f"init needs a folder name, got {out!r}")
    out = check_target(out, "init")
    check_out_dir(out)
    refuse_learners_folder(out, "init")
    manifest = Manifest(out)
    report = CopyReport()
    to_write = {}
    for name, text in course_files(out.resolve().name or str(out)).items():
        target = out / name
        if target.is_file() and target.read_bytes() == text.encode():
            report.unchanged.append(target)
        elif manifest.may_overwrite(target, text):
            to_write[name] = text
            report.written.append(target)
        else:
            report.kept_edits.append(target)
    if to_write:
        write_all(out, to_write)
    manifest.record(out / name for name in [*to_write, *(p.relative_to(out).as_posix() for p in report.unchanged)])
    return report
