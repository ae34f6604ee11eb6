"""Reading upstream's real image and install files (lesson 08): clones with no ref, and version "drift" that is not.

`unpinned_clones` finds `git clone URL` with neither `--branch`/`-b` nor a later `git checkout` in that folder:
the build takes whatever the default branch holds that day (the post-#7604 images clone TransformerEngineNPU,
MindSpeed-Ops and MindSpeed-Bridge so). `split_drift` separates a real disagreement from an architecture
variant: `0.25.0+cpu` is the x86_64 CPU wheel of `0.25.0` (a local version, PEP 440), not another version.
`side_by_side` lines up each component's ref across several sets of files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from verlstudy.common.pins import Drift
from verlstudy.common.refs import Pin, repo_key

_CLONE = re.compile(
    r"git clone\s+(?P<opts>(?:-[^\s]+(?:\s+[^\s-][^\s]*)?\s+)*)(?P<url>https?://\S+?)(?:\.git)?(?=[\s;&|\\]|$)"
)


@dataclass(frozen=True)
class Clone:
    """A `git clone` with no ref: the repository, the file and line, and the folder it lands in."""

    repo: str
    file: str
    line: int

    def describe(self) -> str:
        return f"{self.repo} cloned with no ref at {self.file}:{self.line}: the default branch, whatever it holds"


def _checked_out(text: str, folder: str) -> bool:
    """Whether the text enters `folder` and runs `git checkout <ref>` there before leaving it."""
    if re.search(rf"git -C {re.escape(folder)} checkout\s+\S", text, re.IGNORECASE):
        return True
    for m in re.finditer(rf"\bcd\s+{re.escape(folder)}\b", text, re.IGNORECASE):
        inside = text[m.end() :].split("cd ..", 1)[0]
        if re.search(r"git checkout\s+\S", inside):
            return True
    return False


def unpinned_clones(files: Mapping[str, str]) -> list[Clone]:
    """Every `git clone` across {file name: text} that names no branch or tag and is never checked out at a ref."""
    if not isinstance(files, Mapping):
        raise TypeError(f"files must be a mapping of file name to text, got {type(files).__name__}")
    found = []
    for name, text in files.items():
        if not isinstance(text, str):
            raise TypeError(f"files[{name!r}] must be text, got {type(text).__name__}")
        for number, line in enumerate(text.splitlines(), start=1):
            for m in _CLONE.finditer(line):
                if re.search(r"(?:^|\s)(?:--branch|-b)(?:\s|=)", m.group("opts")):
                    continue
                folder = m.group("url").rstrip("/").split("/")[-1]
                if not _checked_out(text, folder):
                    found.append(Clone(repo_key(m.group("url")), name, number))
    return found


def _public(version: str) -> str:
    return version.split("+", 1)[0]


def split_drift(drifts: Iterable[Drift]) -> tuple[list[Drift], list[Drift]]:
    """(real disagreements, architecture variants): a variant's refs differ only by a local version (`+cpu`)."""
    real, variants = [], []
    for d in drifts:
        same = d.repo.startswith("pypi:") and len({_public(r) for r in d.refs}) == 1
        (variants if same else real).append(d)
    return real, variants


def side_by_side(
    columns: Mapping[str, Iterable[Pin]], clones: Mapping[str, Sequence[Clone]], repos: Sequence[str]
) -> str:
    """A Markdown table: one row per repository, one column per set of files, each cell the ref(s) pinned there."""
    header = ["component", *columns]
    rows = []
    for repo in repos:
        cells = []
        for title, pins in columns.items():
            refs = sorted({p.ref for p in pins if p.repo == repo})
            unpinned = any(c.repo == repo for c in clones.get(title, ()))
            cells.append(" / ".join(refs) or ("no ref (default branch)" if unpinned else "-"))
        rows.append([repo, *cells])
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
