"""`verlstudy init DIR`: the course copied into a folder a learner owns, never over their edits.

An installed package keeps its notebooks read-only inside site-packages; a learner works on a copy.
DIR gets `notebooks/` (the full edition, with stored outputs), `student/` (the student edition) and a
short README. The lessons read their fixtures from the package itself, so no data is copied. A file
already in DIR that differs from what would be written is left alone and reported; an identical one
is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from verlstudy.course import registry
from verlstudy.course.files import check_out_dir, write_all
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
        nb = nbformat.read(lesson.notebook, as_version=4)
        files[f"notebooks/{lesson.notebook.name}"] = nbformat.writes(nb)
        files[f"student/{lesson.notebook.name}"] = nbformat.writes(student_notebook(nb, lesson))
    return files


def init_course(out: Path) -> CopyReport:
    """Copy the course into `out` (created if needed); return what was written, kept and left alone."""
    if not isinstance(out, str | Path) or not str(out).strip():
        raise ValueError(f"init needs a folder name, got {out!r}")
    out = Path(out)
    check_out_dir(out)
    report = CopyReport()
    to_write = {}
    for name, text in course_files(out.name or str(out)).items():
        target = out / name
        if not target.exists():
            to_write[name] = text
            report.written.append(target)
        elif target.read_text() == text:
            report.unchanged.append(target)
        else:
            report.kept_edits.append(target)
    if to_write:
        write_all(out, to_write)
    return report
