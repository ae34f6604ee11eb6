"""Reading upstream's real image and install files (lesson 08): clones with no ref, and version "drift" that is not.

`unpinned_clones` finds `git clone URL` with neither `--branch`/`-b` nor a later `git checkout` in that folder:
the build takes whatever the default branch holds that day (the post-#7604 images clone TransformerEngineNPU,
MindSpeed-Ops and MindSpeed-Bridge so). `split_drift` separates a real disagreement from an architecture
variant: `0.25.0+cpu` is the x86_64 CPU wheel of `0.25.0` (a local version, PEP 440), not another version.
`component_drift` groups pins by the package they install rather than by repository key, so a git checkout of
`huggingface/transformers` at a commit (the pre-#7604 image) and `transformers==5.10.4` from PyPI (the install
script) are compared as one component. `side_by_side` lines up each component's ref across several sets of files;
`pin_lines` prints the file lines a set of pins was read from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from verlstudy.common.pins import Drift
from verlstudy.common.refs import Pin, repo_key
from verlstudy.kit.params import check_instance, check_items
from verlstudy.kit.tables import Table

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


def component_name(repo: str) -> str:
    """The package a pin installs: 'pypi:transformers' and 'huggingface/transformers' are both 'transformers'.

    A PyPI key gives the name after `pypi:`; a git key the repository's own name (its last part). Names are
    compared as pip compares them (PEP 503: lower-case, runs of `-`, `_`, `.` as one `-`).
    """
    if not isinstance(repo, str):
        raise TypeError(f"repo must be a repository key such as 'pypi:transformers', got {type(repo).__name__}")
    name = repo[len("pypi:") :] if repo.startswith("pypi:") else repo.rstrip("/").rsplit("/", 1)[-1]
    return re.sub(r"[-_.]+", "-", name.lower())


def component_drift(pins: Iterable[Pin]) -> list[Drift]:
    """Every component pinned to more than one ref, a git repository and a PyPI package of one name counted as one.

    `ref_drift` keys pins by repository, so `huggingface/transformers` at a commit and `pypi:transformers` at a
    version never meet there. Here they do: the Drift is named '<name> (<key>, <key>)' when several keys merge,
    and by its one key otherwise. A commit and a version cannot be shown to be the same code, so `split_drift`
    counts such a component as a real disagreement.
    """
    pins = list(pins)
    if not all(isinstance(p, Pin) for p in pins):
        raise TypeError("component_drift takes an iterable of Pin")
    keys: dict[str, set[str]] = {}
    places: dict[str, list[tuple[str, str, int]]] = {}
    for p in pins:
        name = component_name(p.repo)
        keys.setdefault(name, set()).add(p.repo)
        places.setdefault(name, []).append((p.ref, p.file, p.line))
    drifts = []
    for name in sorted(places):
        label = next(iter(keys[name])) if len(keys[name]) == 1 else f"{name} ({', '.join(sorted(keys[name]))})"
        drift = Drift(label, tuple(sorted(places[name])))
        if len(drift.refs) > 1:
            drifts.append(drift)
    return drifts


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
) -> Table:
    """A table (show it with `kit.tables.show_table`): one row per repository, one column per set of files, each
    cell the ref(s) pinned there."""
    check_instance("columns", columns, Mapping, what="a mapping {column title: list of Pins}")
    columns = {
        title: check_items(f"columns[{title!r}]", pins, Pin, what="a Pin (from pins_in_files)")
        for title, pins in columns.items()
    }
    check_instance("clones", clones, Mapping, what="a mapping {column title: list of Clones}")
    repos = check_items("repos", repos, str, what="a repository key (a str)")
    header = ["component", *columns]
    rows = []
    for repo in repos:
        cells = []
        for title, pins in columns.items():
            refs = sorted({p.ref for p in pins if p.repo == repo})
            unpinned = any(c.repo == repo for c in clones.get(title, ()))
            cells.append(" / ".join(refs) or ("no ref (default branch)" if unpinned else "-"))
        rows.append([repo, *cells])
    return Table.of(header, rows)


def _line_of(pin: Pin, lines: list[str]) -> int:
    """The line of the pin's command that names its ref (and its repository, when one line does both)."""
    command = [pin.line]
    while lines[command[-1] - 1].rstrip().endswith("\\") and command[-1] < len(lines):
        command.append(command[-1] + 1)
    name = pin.repo.removeprefix("pypi:").rsplit("/", 1)[-1].lower()
    for wanted in (lambda s: pin.ref in s and name in s.lower(), lambda s: pin.ref in s):
        hits = [n for n in command if wanted(lines[n - 1])]
        if hits:
            return hits[0]
    return pin.line


def pin_lines(files: Mapping[str, str], pins: Iterable[Pin]) -> list[str]:
    """'file:line: the line as written' for each pin, in the order given: the real lines a comparison rests on.

    A pin inside a command continued over several lines (`\\` at the end) is reported at the command's first
    line; here the line shown is the one in that command that holds the ref. `files` is {file name: text} as the
    pins were read from; a pin whose file or line is not there raises ValueError (the pins came from other files)."""
    if not isinstance(files, Mapping):
        raise TypeError(f"files must be a mapping of file name to text, got {type(files).__name__}")
    out = []
    for p in pins:
        if not isinstance(p, Pin):
            raise TypeError(f"pin_lines takes Pin objects, got {type(p).__name__}")
        lines = files.get(p.file, "").splitlines()
        if not 1 <= p.line <= len(lines):
            raise ValueError(f"{p.file}:{p.line} is not a line of the files given")
        number = _line_of(p, lines)
        out.append(f"{p.file}:{number}: {lines[number - 1].strip()}")
    return out
