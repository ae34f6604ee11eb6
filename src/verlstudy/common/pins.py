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
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import yaml

FileKind = Literal["dockerfile", "shell", "workflow"]
FILE_KINDS: tuple[str, ...] = ("dockerfile", "shell", "workflow")
REF_KINDS: tuple[str, ...] = ("tag", "branch", "commit", "version")

_OPERATORS = {";", "&&", "||", "|", "&", "(", ")", ";;"}
_VAR = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}|\$(\w+)")
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^;,\s]+)$")
_ASSIGN = re.compile(r"^([A-Za-z_]\w*)=(.*)$", re.S)
_HEX = re.compile(r"^[0-9a-f]{7,40}$")
# git clone options that take a value (the next token) when not written as --opt=value
_CLONE_VALUE_OPTS = {
    "-b", "--branch", "--depth", "-o", "--origin", "-c", "--config", "--reference", "--separate-git-dir",
    "-j", "--jobs", "--filter", "-u", "--upload-pack", "--template", "--shallow-since", "--shallow-exclude",
}  # fmt: skip


@dataclass(frozen=True)
class Pin:
    """One place that pins a repository or package to a ref."""

    repo: str  # identity: "nvidia/megatron-lm" for a git repository, "pypi:transformers" for a package
    ref: str
    via: str  # how it was pinned: "git clone --branch", "git checkout", "pip ==", "pip git+", "actions/checkout"
    file: str
    line: int


@dataclass(frozen=True)
class EnvSetting:
    """An environment variable set by a file, and how far it reaches."""

    name: str
    value: str
    scope: str  # "image" (every container), "script export", "workflow", "job <id>", "step <name>"
    file: str
    line: int


@dataclass(frozen=True)
class Drift:
    """A repository pinned to different refs in different places."""

    repo: str
    places: tuple[tuple[str, str, int], ...]  # (ref, file, line), sorted

    @property
    def refs(self) -> tuple[str, ...]:
        return tuple(sorted({ref for ref, _, _ in self.places}))

    def describe(self) -> str:
        groups = []
        for ref in self.refs:
            sites = ", ".join(f"{file}:{line}" for r, file, line in self.places if r == ref)
            groups.append(f"{ref} at {sites}")
        return f"{self.repo} is pinned {len(self.refs)} ways: {'; '.join(groups)}"


# ---------------------------------------------------------------- identities and naming rules


def repo_key(repo: str) -> str:
    """Identity of a repository or package: 'owner/name' lower-case for git, 'pypi:<normalized>' for pip.

    Hosts and a trailing '.git' are dropped, so a GitHub and a GitCode mirror of Ascend/MindSpeed
    compare equal; a bare name ('Megatron-LM') is kept as its lower-case self.
    """
    if not isinstance(repo, str) or not repo.strip():
        raise TypeError(f"repo must be a non-empty string (a git URL, owner/name or 'pypi:<name>'), got {repo!r}")
    text = repo.strip()
    if text.lower().startswith("pypi:"):
        return "pypi:" + re.sub(r"[-_.]+", "-", text[5:].strip()).lower()
    text = re.sub(r"^git\+", "", text)
    text = re.sub(r"^[a-z+]+://", "", text)  # scheme
    text = re.sub(r"^[^/@]+@", "", text)  # user@ of ssh URLs
    text = text.replace(":", "/").rstrip("/")
    text = re.sub(r"\.git$", "", text)
    parts = [p for p in text.split("/") if p]
    if len(parts) >= 3 and "." in parts[0]:  # host/owner/name
        parts = parts[1:]
    return "/".join(parts[-2:]).lower()


@dataclass(frozen=True)
class NamingScheme:
    kind: str  # "tag" or "branch"
    pattern: str
    example: str
    why: str


# Repository name (last path component, lower-case) -> how its release refs are named.
NAMING_SCHEMES: dict[str, NamingScheme] = {
    "megatron-lm": NamingScheme("tag", r"core_v\d+\.\d+\.\d+(rc\d+)?", "core_v0.18.0",
                                "NVIDIA Megatron-LM releases are tags core_vX.Y.Z"),
    "mindspeed": NamingScheme("branch", r"core_r\d+\.\d+\.\d+", "core_r0.18.0",
                              "Ascend MindSpeed follows Megatron on branches core_rX.Y.Z"),
    "megatronadaptor": NamingScheme("branch", r"core_r\d+\.\d+\.\d+", "core_r0.18.0",
                                    "Ascend MegatronAdaptor follows Megatron on branches core_rX.Y.Z"),
    "megatron-bridge": NamingScheme("tag", r"v\d+\.\d+\.\d+", "v0.5.0", "Megatron-Bridge releases are tags vX.Y.Z"),
}  # fmt: skip


def _swap_rv(ref: str) -> str | None:
    m = re.fullmatch(r"core_([rv])(\d+\.\d+\.\d+)", ref)
    if not m:
        return None
    return f"core_{'v' if m.group(1) == 'r' else 'r'}{m.group(2)}"


def ref_naming_problem(repo: str, ref: str, kind: str | None = None) -> str | None:
    """Why `ref` does not fit `repo`'s naming scheme, or None when it fits (or the repo has no scheme).

    `repo` may be a URL, 'owner/name' or a bare name. A commit hash always passes (it is the strictest
    pin). With `kind` ('tag'/'branch', e.g. from a manifest) the kind must match the scheme too. The
    classic slip this catches is the r/v swap: Megatron-LM `core_r0.18.0` (its release branch, which
    can move) where the tag `core_v0.18.0` was meant, or MindSpeed `core_v0.18.0` where its scheme is the
    branch `core_r0.18.0`. The rule is about naming, not existence: it never asks a server.
    """
    if not isinstance(ref, str) or not ref.strip():
        raise TypeError(f"ref must be a non-empty string, got {ref!r}")
    if kind is not None and kind not in REF_KINDS:
        raise ValueError(f"kind={kind!r} is not allowed; choose one of {', '.join(REF_KINDS)} (or None)")
    name = repo_key(repo).split("/")[-1]
    scheme = NAMING_SCHEMES.get(name)
    if scheme is None or kind == "commit" or (kind is None and _HEX.fullmatch(ref)):
        return None
    if not re.fullmatch(scheme.pattern, ref):
        swapped = _swap_rv(ref)
        hint = f"; did you mean {swapped!r}?" if swapped and re.fullmatch(scheme.pattern, swapped) else ""
        return f"{name} ref {ref!r} does not follow its naming scheme ({scheme.why}, e.g. {scheme.example}){hint}"
    if kind is not None and kind != scheme.kind:
        return f"{name} ref {ref!r} is recorded as a {kind}, but {scheme.why}"
    return None


# ---------------------------------------------------------------- shell-level parsing


def _strip_comment(line: str) -> str:
    """Drop a shell comment: '#' at the start of a word, outside quotes ('#egg=' inside a URL stays)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t;&|("):
            return line[:i]
    return line


def _logical_lines(text: str, drop_comment_lines: bool = False) -> list[tuple[int, str]]:
    """Join backslash continuations; return (first physical line number, joined text) pairs."""
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if drop_comment_lines and buf and raw.lstrip().startswith("#"):
            continue  # Docker drops comment lines inside a continued instruction
        line = _strip_comment(raw).rstrip()
        if not buf:
            start = number
        if line.endswith("\\"):
            buf.append(line[:-1])
            continue
        buf.append(line)
        joined = " ".join(part.strip() for part in buf).strip()
        buf = []
        if joined:
            out.append((start, joined))
    if buf:
        out.append((start, " ".join(part.strip() for part in buf).strip()))
    return out


def _tokens(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError as e:  # unbalanced quotes: say where instead of shlex's bare message
        raise ValueError(f"cannot split shell text {text[:60]!r}: {e}") from e


def _expand(token: str, env: Mapping[str, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(3)
        if name in env:
            return env[name]
        if m.group(2) is not None:
            return m.group(2)
        return m.group(0)  # unknown variable: keep it visible rather than guessing

    return _VAR.sub(sub, token)


def _commands(tokens: list[str]) -> list[list[str]]:
    commands: list[list[str]] = [[]]
    for tok in tokens:
        if tok in _OPERATORS:
            commands.append([])
        else:
            commands[-1].append(tok)
    return [c for c in commands if c]


@dataclass
class _ShellState:
    """What a script has set up so far: variables, cloned checkouts, current directory."""

    file: str
    env: dict[str, str] = field(default_factory=dict)
    clones: dict[str, int] = field(default_factory=dict)  # checkout dir -> index of its pin (or -1)
    clone_repos: dict[str, str] = field(default_factory=dict)  # checkout dir -> repo key
    last_clone: str | None = None
    cwd: str | None = None
    pins: list[Pin | None] = field(default_factory=list)
    exports: list[EnvSetting] = field(default_factory=list)


def _git_clone(args: list[str], state: _ShellState, line: int) -> None:
    branch = None
    positional: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("--") and "=" in arg:
            opt, value = arg.split("=", 1)
            if opt == "--branch":
                branch = value
        elif arg in _CLONE_VALUE_OPTS:
            if arg in ("-b", "--branch") and i + 1 < len(args):
                branch = args[i + 1]
            i += 1
        elif not arg.startswith("-"):
            positional.append(arg)
        i += 1
    if not positional:
        return
    url = positional[0]
    key = repo_key(url)
    # git names the checkout after the URL's last component (case kept) unless a folder is given
    folder = (positional[1] if len(positional) > 1 else url).rstrip("/").replace(":", "/").split("/")[-1]
    folder = folder.removesuffix(".git")
    index = -1
    if branch:
        state.pins.append(Pin(key, branch, "git clone --branch", state.file, line))
        index = len(state.pins) - 1
    state.clones[folder] = index
    state.clone_repos[folder] = key
    state.last_clone = folder


def _git_checkout(args: list[str], state: _ShellState, line: int, folder: str | None) -> None:
    refs = []
    skip = False
    for a in args:
        if skip or a.startswith("-"):
            skip = a in ("-b", "-B", "-c", "-C", "--orphan")  # these take a new branch name, not a ref
            continue
        refs.append(a)
    if not refs or refs[0] == "." or "--" in args:
        return  # `git checkout -- file` restores files, it pins nothing
    target = folder or state.cwd or state.last_clone
    if target is None or target not in state.clone_repos:
        return
    pin = Pin(state.clone_repos[target], refs[-1], "git checkout", state.file, line)
    index = state.clones[target]
    if index >= 0:
        state.pins[index] = None  # the checkout decides the ref; the clone's --branch no longer counts
    state.pins.append(pin)
    state.clones[target] = len(state.pins) - 1


def _pip_install(args: list[str], state: _ShellState, line: int) -> None:
    for arg in args:
        if "git+" in arg:
            url = arg[arg.index("git+") + 4 :].split("#", 1)[0]
            head, _, ref = url.rpartition("@")
            if head and ref and "/" not in ref and "://" in head:
                state.pins.append(Pin(repo_key(head), ref, "pip git+", state.file, line))
            continue
        m = _PIN.match(arg)
        if m:
            state.pins.append(Pin(repo_key("pypi:" + m.group(1)), m.group(2), "pip ==", state.file, line))


def _pip_args(cmd: list[str]) -> list[str] | None:
    """The arguments after `install` for pip/pip3/python -m pip/uv pip; None for other commands."""
    if len(cmd) >= 2 and re.fullmatch(r"pip3?(\.\d+)?", cmd[0]) and cmd[1] == "install":
        return cmd[2:]
    if len(cmd) >= 4 and re.fullmatch(r"python[\d.]*", cmd[0]) and cmd[1:4] == ["-m", "pip", "install"]:
        return cmd[4:]
    if len(cmd) >= 3 and cmd[:3] == ["uv", "pip", "install"]:
        return cmd[3:]
    return None


def _run_shell(text: str, state: _ShellState, first_line: int = 1, drop_comment_lines: bool = False) -> None:
    for line, logical in _logical_lines(text, drop_comment_lines):
        _run_shell_line(logical, state, first_line + line - 1)


def _run_shell_line(logical: str, state: _ShellState, line: int) -> None:
    for cmd in _commands(_tokens(logical)):
        cmd = [_expand(tok, state.env) for tok in cmd]
        exported = cmd[0] == "export"
        words = cmd[1:] if exported else cmd
        while words and _ASSIGN.match(words[0]):  # NAME=value [NAME2=value2] [command ...]
            name, value = _ASSIGN.match(words[0]).groups()  # type: ignore[union-attr]
            if len(words) == 1 or exported:
                state.env[name] = value
            if exported:
                state.exports.append(EnvSetting(name, value, "script export", state.file, line))
            words = words[1:]
        if not words or exported:
            continue
        if words[0] == "cd" and len(words) > 1:
            state.cwd = words[1].rstrip("/").split("/")[-1] if words[1] not in ("..", "-") else None
        elif words[0] == "git":
            folder = None
            if len(words) > 2 and words[1] == "-C":
                folder = words[2].rstrip("/").split("/")[-1]
                words = ["git", *words[3:]]
            if len(words) > 1 and words[1] == "clone":
                _git_clone(words[2:], state, line)
            elif len(words) > 1 and words[1] in ("checkout", "switch"):
                _git_checkout(words[2:], state, line, folder)
        else:
            pip_args = _pip_args(words)
            if pip_args is not None:
                _pip_install(pip_args, state, line)


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


def _dockerfile(text: str, state: _ShellState, env_out: list[EnvSetting]) -> None:
    for line, logical in _logical_lines(text, drop_comment_lines=True):
        instruction, _, rest = logical.partition(" ")
        instruction = instruction.upper()
        rest = rest.strip()
        if instruction == "ARG":
            name, eq, value = rest.partition("=")
            if eq:
                state.env[name.strip()] = _expand(_tokens(value)[0] if value.strip() else "", state.env)
        elif instruction == "ENV":
            toks = [_expand(t, state.env) for t in _tokens(rest)]
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
            _run_shell_line(rest, state, line)


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


def _workflow(text: str, state: _ShellState, env_out: list[EnvSetting]) -> None:
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
                ref = _expand(str(with_["ref"]), step_env)
                line = _line_of(_mapping(fields.get("with"))["ref"])
                state.pins.append(Pin(repo_key(str(with_["repository"])), ref, "actions/checkout", state.file, line))
            run = fields.get("run")
            if isinstance(run, yaml.ScalarNode):
                state.env = dict(step_env)
                offset = 1 if run.style in ("|", ">") else 0  # a block scalar starts on the next line
                _run_shell(str(run.value), state, _line_of(run) + offset)


def _parse(text: str, kind: str, file: str) -> _ShellState:
    if not isinstance(text, str):
        raise TypeError(f"text must be the file's contents as a string, got {type(text).__name__}")
    _check_kind(kind)
    state = _ShellState(file=file)
    env_out: list[EnvSetting] = []
    if kind == "dockerfile":
        _dockerfile(text, state, env_out)
    elif kind == "workflow":
        _workflow(text, state, env_out)
    else:
        _run_shell(text, state)
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
    """{name: text} for the Dockerfiles, scripts and workflows in `folder` (names relative to it)."""
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"folder {str(root)!r} does not exist or is not a directory")
    chosen = names if names is not None else sorted(p.name for p in root.iterdir() if _known_kind(p.name))
    return {name: (root / name).read_text(encoding="utf-8") for name in chosen}


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
    out = []
    for p in pins:
        problem = ref_naming_problem(p.repo, p.ref)
        if problem:
            out.append(f"{p.file}:{p.line}: {problem}")
    return out


def pins_table(pins: Iterable[Pin]) -> str:
    """A Markdown table of pins: repo, ref, how, where."""
    rows = ["| repo | ref | pinned by | where |", "| --- | --- | --- | --- |"]
    rows += [f"| {p.repo} | {p.ref} | {p.via} | {p.file}:{p.line} |" for p in pins]
    return "\n".join(rows)


def image_env_settings(files: Mapping[str, str], name: str) -> list[EnvSetting]:
    """Where Dockerfiles among `files` bake the variable `name` into an image (`ENV`): every container gets it."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be an environment variable name, got {name!r}")
    found = []
    for file, text in files.items():
        if file_kind(file) == "dockerfile":
            found += [s for s in env_settings(text, "dockerfile", file) if s.name == name]
    return found
