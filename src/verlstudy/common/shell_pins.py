"""A small shell reader: the pins that `git clone`, `git checkout` and `pip install` lines make.

Used by `verlstudy.common.pins` for shell scripts, Dockerfile RUN lines and workflow `run:` steps, and
(`pip_installs`) by lesson 08's checker, which names an install command that does not start with pip.
It follows `cd`, variables (`$X`, `${X:-default}`), `export`, `&&`/`;` chains and line
continuations; it never runs anything.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from verlstudy.common.refs import EnvSetting, Pin, repo_key
from verlstudy.kit.params import check_instance, check_int, check_str

_OPERATORS = {";", "&&", "||", "|", "&", "(", ")", ";;"}
# words that open or continue a compound command; the command after them still runs (`then pip install ...`)
_KEYWORDS = {"if", "then", "else", "elif", "fi", "while", "until", "do", "done", "{", "}", "!", "time"}
_VAR = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}|\$(\w+)")
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^;,\s]+)$")
_BARE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]]*\])?$")  # a package name with no version at all
# pip install options whose value is the next word (so that word is not a package name)
_PIP_VALUE_OPTS = {
    "-e", "--editable", "-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url",
    "--trusted-host", "-f", "--find-links", "-t", "--target", "--prefix", "--root", "--src", "--platform",
    "--python-version", "--upgrade-strategy", "-C", "--config-settings", "--no-binary", "--only-binary",
}  # fmt: skip
_ASSIGN = re.compile(r"^([A-Za-z_]\w*)=(.*)$", re.S)
# git clone options that take a value (the next token) when not written as --opt=value
_CLONE_VALUE_OPTS = {
    "-b", "--branch", "--depth", "-o", "--origin", "-c", "--config", "--reference", "--separate-git-dir",
    "-j", "--jobs", "--filter", "-u", "--upload-pack", "--template", "--shallow-since", "--shallow-exclude",
}  # fmt: skip


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


def logical_lines(text: str, drop_comment_lines: bool = False) -> list[tuple[int, str]]:
    """Join backslash continuations; return (first physical line number, joined text) pairs."""
    check_str("text", text, what="shell text (a str)")
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if drop_comment_lines and buf and (raw.lstrip().startswith("#") or not raw.strip()):
            continue  # Docker drops comment and empty lines inside a continued instruction
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


def shell_tokens(text: str) -> list[str]:
    check_str("text", text, what="shell text (a str)")  # shlex would read stdin for None
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError as e:  # unbalanced quotes: say where instead of shlex's bare message
        raise ValueError(f"cannot split shell text {text[:60]!r}: {e}") from e


def expand_vars(token: str, env: Mapping[str, str]) -> str:
    check_str("token", token, what="one shell word (a str)")
    check_instance("env", env, Mapping, what="a mapping of variable name to value")

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
class ShellState:
    """What a script has set up so far: variables, cloned checkouts, current directory."""

    file: str
    env: dict[str, str] = field(default_factory=dict)
    clones: dict[str, int] = field(default_factory=dict)  # checkout dir -> index of its pin (or -1)
    clone_repos: dict[str, str] = field(default_factory=dict)  # checkout dir -> repo key
    last_clone: str | None = None
    cwd: str | None = None
    pins: list[Pin | None] = field(default_factory=list)
    exports: list[EnvSetting] = field(default_factory=list)
    unpinned: list[Pin] = field(default_factory=list)  # `pip install name` with no version: ref is ""


def _git_clone(args: list[str], state: ShellState, line: int) -> None:
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


def _git_checkout(args: list[str], state: ShellState, line: int, folder: str | None) -> None:
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


def _pip_install(args: list[str], state: ShellState, line: int) -> None:
    option_value = False  # this word is the value of an option such as -e PATH or --index-url URL
    for arg in args:
        is_value, option_value = option_value, arg in _PIP_VALUE_OPTS
        if "git+" in arg:  # `-e git+URL@ref` pins too
            url = arg[arg.index("git+") + 4 :].split("#", 1)[0]
            head, _, ref = url.rpartition("@")
            # the ref follows the path (refs may hold '/': releases/v0.23.0); in ssh://git@host/o/r '@' is the user's
            if ref and "://" in head and "/" in head.split("://", 1)[1]:
                state.pins.append(Pin(repo_key(head), ref, "pip git+", state.file, line))
            continue
        m = _PIN.match(arg)
        if m:
            state.pins.append(Pin(repo_key("pypi:" + m.group(1)), m.group(2), "pip ==", state.file, line))
        elif _BARE.match(arg) and not is_value:
            name = arg.split("[", 1)[0]
            state.unpinned.append(Pin(repo_key("pypi:" + name), "", "pip (no version)", state.file, line))


def _pip_args(cmd: list[str]) -> list[str] | None:
    """The arguments after `install` for pip/pip3/python -m pip/uv pip; None for other commands."""
    if len(cmd) >= 2 and re.fullmatch(r"pip3?(\.\d+)?", cmd[0]) and cmd[1] == "install":
        return cmd[2:]
    if len(cmd) >= 4 and re.fullmatch(r"python[\d.]*", cmd[0]) and cmd[1:4] == ["-m", "pip", "install"]:
        return cmd[4:]
    if len(cmd) >= 3 and cmd[:3] == ["uv", "pip", "install"]:
        return cmd[3:]
    return None


def _skip_keywords(cmd: list[str]) -> list[str]:
    """The command after the keywords that open or continue a compound one (`if ...; then pip install ...`)."""
    while cmd and cmd[0] in _KEYWORDS:
        cmd = cmd[1:]
    return cmd


def pip_installs(text: str) -> list[tuple[list[str], list[str]]]:
    """Each install command in `text`, in order: (the words before it, its arguments after `install`).

    An install is pip, pip3, python -m pip or uv pip followed by `install`, read as `_pip_args` reads it. Keywords
    (`then`, `do`) and `NAME=value` words at the command's head are skipped, as `run_shell_line` skips them, so the
    words before are what else the command runs first (`sudo`, `echo`): where there are any, `run_shell_line`
    reads no pins from that command. Variables are not expanded.
    """
    check_str("text", text, what="shell text (a str)")
    found: list[tuple[list[str], list[str]]] = []
    for _, logical in logical_lines(text):
        for cmd in _commands(shell_tokens(logical)):
            cmd = _skip_keywords(cmd)
            while cmd and _ASSIGN.match(cmd[0]):
                cmd = cmd[1:]
            for i in range(len(cmd)):
                args = _pip_args(cmd[i:])
                if args is not None:
                    found.append((cmd[:i], args))
                    break
    return found


def run_shell(text: str, state: ShellState, first_line: int = 1, drop_comment_lines: bool = False) -> None:
    check_str("text", text, what="shell text (a str)")
    check_instance("state", state, ShellState, what="a ShellState (ShellState(file=...))")
    check_int("first_line", first_line, minimum=1, kind="argument")
    for line, logical in logical_lines(text, drop_comment_lines):
        run_shell_line(logical, state, first_line + line - 1)


def run_shell_line(logical: str, state: ShellState, line: int) -> None:
    check_str("logical", logical, what="one logical shell line (a str)")
    check_instance("state", state, ShellState, what="a ShellState (ShellState(file=...))")
    check_int("line", line, minimum=1, kind="argument")
    for cmd in _commands(shell_tokens(logical)):
        cmd = _skip_keywords(cmd)  # `if ...; then \` joins onto the next line: skip to the command
        if not cmd:
            continue
        cmd = [expand_vars(tok, state.env) for tok in cmd]
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
