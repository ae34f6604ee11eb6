"""Version refs as data: parse them out of Dockerfiles, shell scripts and CI workflows, and check them.

Lessons 06 and 08 (verl #7827, #7886, #7604). An image build, an install script and a CI workflow
each pin the same repositories by hand, so the pins drift apart, and a ref can follow the wrong
repository's naming scheme (NVIDIA Megatron-LM tags `core_vX.Y.Z`, the Ascend repos branch
`core_rX.Y.Z`). This module finds every pin (`git clone --branch X URL`, `git checkout X`,
`pip install name==v`, `pip install git+URL@ref`, `actions/checkout` with `repository`/`ref`),
reports drift, checks ref naming, diffs two stack manifests and renders every file's pins from one
manifest, so there is a single source of truth.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

import yaml

from verlstudy.common.refs import Drift, EnvSetting, Pin, ref_finding, ref_naming_problem, repo_key
from verlstudy.common.shell_pins import ShellState, expand_vars, logical_lines, run_shell, run_shell_line, shell_tokens
from verlstudy.kit.params import check_instance, check_items, check_path
from verlstudy.kit.resources import check_data_folder, read_data_text
from verlstudy.kit.tables import Table

FileKind = Literal["dockerfile", "shell", "workflow"]
FILE_KINDS: tuple[str, ...] = ("dockerfile", "shell", "workflow")
_A_PIN = "a Pin (from parse_pins or pins_in_files)"


# ---------------------------------------------------------------- file kinds


def file_kind(name: str) -> FileKind:
    """Guess a file's kind from its name: Dockerfile*, *.sh, *.yml/*.yaml."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a file name string, got {name!r}")
    base = name.replace("\\", "/").split("/")[-1].lower()
    if base.startswith("dockerfile") or base.endswith(".dockerfile"):
        return "dockerfile"
    if base.endswith((".sh", ".bash")):
        return "shell"
    if base.endswith((".yml", ".yaml")):
        return "workflow"
    raise ValueError(f"cannot tell the kind of {name!r}: expected Dockerfile*, *.sh or *.yml/*.yaml")


def _check_kind(kind: str) -> str:
    if kind not in FILE_KINDS:
        raise ValueError(f"kind={kind!r} is not allowed; choose one of {', '.join(FILE_KINDS)}")
    return kind


def _dockerfile(text: str, state: ShellState, env_out: list[EnvSetting]) -> None:
    for line, logical in logical_lines(text, drop_comment_lines=True):
        instruction, _, rest = logical.partition(" ")
        instruction = instruction.upper()
        rest = rest.strip()
        if instruction == "ARG":
            name, eq, value = rest.partition("=")
            if eq:
                state.env[name.strip()] = expand_vars(shell_tokens(value)[0] if value.strip() else "", state.env)
        elif instruction == "ENV":
            toks = [expand_vars(t, state.env) for t in shell_tokens(rest)]
            if not toks:
                continue
            # `ENV A=1 B=2` sets pairs; the legacy `ENV NAME value with spaces` sets one variable
            pairs = [t.split("=", 1) for t in toks if "=" in t] if "=" in toks[0] else [[toks[0], " ".join(toks[1:])]]
            for name, value in pairs:
                state.env[name] = value
                env_out.append(EnvSetting(name, value, "image", state.file, line))
        elif instruction == "RUN":
            if rest.startswith("["):  # exec form: a JSON list
                rest = " ".join(shlex.quote(part) for part in json.loads(rest))
            run_shell_line(rest, state, line)


def _line_of(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _mapping(node: yaml.Node | None) -> dict[str, yaml.Node]:
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(k.value): v for k, v in node.value if isinstance(k, yaml.ScalarNode)}


def _scalar(node: yaml.Node | None) -> str | None:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else None


def _env_block(node: yaml.Node | None, scope: str, file: str, out: list[EnvSetting]) -> dict[str, str]:
    values: dict[str, str] = {}
    for name, value in _mapping(node).items():
        text = _scalar(value) or ""
        values[name] = text
        out.append(EnvSetting(name, text, scope, file, _line_of(value)))
    return values


def _workflow(text: str, state: ShellState, env_out: list[EnvSetting]) -> None:
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as e:
        raise ValueError(f"{state.file}: not valid YAML: {e}") from e
    top = _mapping(root)
    base_env = _env_block(top.get("env"), "workflow", state.file, env_out)
    for job_id, job in _mapping(top.get("jobs")).items():
        job_map = _mapping(job)
        job_env = {**base_env, **_env_block(job_map.get("env"), f"job {job_id}", state.file, env_out)}
        steps = job_map.get("steps")
        for step in steps.value if isinstance(steps, yaml.SequenceNode) else []:
            fields = _mapping(step)
            label = _scalar(fields.get("name")) or _scalar(fields.get("uses")) or "run"
            step_env = {**job_env, **_env_block(fields.get("env"), f"step {label}", state.file, env_out)}
            uses = _scalar(fields.get("uses")) or ""
            with_ = {k: _scalar(v) for k, v in _mapping(fields.get("with")).items()}
            if uses.startswith("actions/checkout") and with_.get("repository") and with_.get("ref"):
                ref = expand_vars(str(with_["ref"]), step_env)
                line = _line_of(_mapping(fields.get("with"))["ref"])
                state.pins.append(Pin(repo_key(str(with_["repository"])), ref, "actions/checkout", state.file, line))
            run = fields.get("run")
            if isinstance(run, yaml.ScalarNode):
                state.env = dict(step_env)
                offset = 1 if run.style in ("|", ">") else 0  # a block scalar starts on the next line
                run_shell(str(run.value), state, _line_of(run) + offset)


def _parse(text: str, kind: str, file: str) -> ShellState:
    if not isinstance(text, str):
        raise TypeError(f"text must be the file's contents as a string, got {type(text).__name__}")
    _check_kind(kind)
    state = ShellState(file=file)
    env_out: list[EnvSetting] = []
    if kind == "dockerfile":
        _dockerfile(text, state, env_out)
    elif kind == "workflow":
        _workflow(text, state, env_out)
    else:
        run_shell(text, state)
    state.exports = sorted(env_out + state.exports, key=lambda e: e.line)
    return state


def parse_pins(text: str, kind: str, file: str = "<text>") -> list[Pin]:
    """Every pin in one file's text, in file order. `kind` is 'dockerfile', 'shell' or 'workflow'.

    Handles quotes, backslash continuations, comments (not '#egg=' in URLs), several commands per
    line (&&, ;, |), variables set by ARG/ENV/assignments/`env:` blocks, and `git checkout` after a
    clone (which replaces the clone's --branch as the effective ref). A pin's `line` is the line where
    its command starts (the first line of a continued command).
    """
    return [p for p in _parse(text, kind, file).pins if p is not None]


def env_settings(text: str, kind: str, file: str = "<text>") -> list[EnvSetting]:
    """Environment variables a file sets for the processes after it: Dockerfile ENV (every container
    of the image), exported shell variables, and workflow/job/step `env:` entries."""
    return list(_parse(text, kind, file).exports)


def pins_in_files(files: Mapping[str, str]) -> list[Pin]:
    """Pins of several files, given as {file name: text}; each file's kind comes from its name."""
    if not isinstance(files, Mapping) or not files:
        raise ValueError("files must be a non-empty mapping of file name -> text")
    pins: list[Pin] = []
    for name, text in files.items():
        pins.extend(parse_pins(text, file_kind(name), name))
    return pins


def read_files(folder: str | Path, names: Sequence[str] | None = None) -> dict[str, str]:
    """{name: text} for the Dockerfiles, scripts and workflows in `folder` (names relative to it).

    A file that is not UTF-8, or missing (a course data folder is checked against data/FILES first), is a
    DataFileError (a ValueError) naming it and what to do."""
    root = check_path("folder", folder, what="a folder's path (str or Path)")
    if names is not None:
        names = check_items("names", names, str, what="a file name (a str)")
    if not root.is_dir():
        raise ValueError(f"folder {str(root)!r} does not exist or is not a directory")
    check_data_folder(root)
    chosen = names if names is not None else sorted(p.name for p in root.iterdir() if _known_kind(p.name))
    return {name: read_data_text(root / name) for name in chosen}


def _known_kind(name: str) -> bool:
    try:
        file_kind(name)
    except ValueError:
        return False
    return True


def ref_drift(source: Mapping[str, str] | Iterable[Pin]) -> list[Drift]:
    """Every repository pinned to more than one ref, across files given as {name: text} or as pins."""
    pins = pins_in_files(source) if isinstance(source, Mapping) else list(source)
    if not all(isinstance(p, Pin) for p in pins):
        raise TypeError("ref_drift takes {file name: text} or an iterable of Pin")
    by_repo: dict[str, list[tuple[str, str, int]]] = {}
    for p in pins:
        by_repo.setdefault(p.repo, []).append((p.ref, p.file, p.line))
    drifts = [Drift(repo, tuple(sorted(places))) for repo, places in sorted(by_repo.items())]
    return [d for d in drifts if len(d.refs) > 1]


def naming_problems(pins: Iterable[Pin]) -> list[str]:
    """`ref_naming_problem` for each pin, with where it is: 'file:line: problem'."""
    pins = check_items("pins", pins, Pin, what=_A_PIN)
    out = []
    for p in pins:
        problem = ref_naming_problem(p.repo, p.ref)
        if problem:
            out.append(f"{p.file}:{p.line}: {problem}")
    return out


def ref_findings(pins: Iterable[Pin], kind: str | None = None) -> list[str]:
    """'file:line: message' for each pin with a finding; `kind` 'naming' or 'policy' keeps only that kind.

    Unlike `naming_problems`, a real release branch where a tag exists (Megatron-LM `core_r0.16.0`) is a
    `policy` finding here, kept apart from `naming` slips such as MindSpeed `core_v0.18.0`.
    """
    if kind not in (None, "naming", "policy"):
        raise ValueError(f"kind={kind!r} is not allowed; choose 'naming', 'policy' or None (both)")
    pins = check_items("pins", pins, Pin, what=_A_PIN)
    out = []
    for p in pins:
        found = ref_finding(p.repo, p.ref)
        if found is not None and kind in (None, found.kind):
            out.append(f"{p.file}:{p.line}: {found.kind}: {found.message}")
    return out


def unpinned_installs(files: Mapping[str, str]) -> list[Pin]:
    """`pip install name` with no version at all, across {file name: text}: each as a Pin whose ref is ''."""
    if not isinstance(files, Mapping) or not files:
        raise ValueError("files must be a non-empty mapping of file name -> text")
    return [p for name, text in files.items() for p in _parse(text, file_kind(name), name).unpinned]


def pins_table(pins: Iterable[Pin]) -> Table:
    """A table of pins (show it with `kit.tables.show_table`): repo, ref, how, where."""
    pins = check_items("pins", pins, Pin, what=_A_PIN)
    return Table.of(["repo", "ref", "pinned by", "where"], [[p.repo, p.ref, p.via, f"{p.file}:{p.line}"] for p in pins])


def image_env_settings(files: Mapping[str, str], name: str) -> list[EnvSetting]:
    """Where Dockerfiles among `files` bake the variable `name` into an image (`ENV`): every container gets it."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be an environment variable name, got {name!r}")
    check_instance("files", files, Mapping, what="a mapping of file name to text")
    found = []
    for file, text in files.items():
        if file_kind(file) == "dockerfile":
            found += [s for s in env_settings(text, "dockerfile", file) if s.name == name]
    return found
