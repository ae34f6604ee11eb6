"""What a `pip install` command line installs, read as a POSIX shell splits it and as pip parses each argument.

Exercise 8.2's checker reads a learner's command with `read_install`: the shell's view first (quotes join words,
blanks split them, `>`/`<` redirect, `&&`/`;`/a new line chain commands, `||`/`|`/`&` do something else, `$` and
backquotes expand), then pip's view of each argument: a PEP 508 requirement (the `packaging` library's
`Requirement`, `name==version`, `name @ url`) or a VCS URL (`git+https://host/owner/repo.git@ref`). A command
pip or the shell would refuse, or whose pins the reader cannot know, raises `CommandRefused` saying why.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from urllib.parse import urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, canonicalize_version

from verlstudy.common.shell_pins import logical_lines
from verlstudy.kit import i18n

# options of `pip install` whose value is the next word (or follows '=')
_VALUE_OPTIONS = {
    "-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-t", "--target", "--prefix", "--root",
    "--src", "--platform", "--python-version", "--implementation", "--abi", "--upgrade-strategy", "-C",
    "--config-settings", "--no-binary", "--only-binary", "--trusted-host", "--progress-bar", "--log", "--cache-dir",
    "--proxy", "--retries", "--timeout", "--exists-action", "--cert", "--client-cert", "--report",
    "--root-user-action", "--python", "--keyring-provider", "--global-option", "--build-option", "--group",
}  # fmt: skip
_FILE_OPTIONS = {"-r", "--requirement", "-c", "--constraint"}  # pins in a file the command line does not show
_NO_INSTALL = {"--dry-run", "-h", "--help", "-V", "--version"}
_WRAPPER_VALUE_OPTIONS = {"-u", "--user", "-g", "--group", "-C", "-D", "--chdir", "-U", "--other-user", "-p", "-S"}
_WRAPPERS = {"sudo", "env", "command", "exec", "nohup", "time"}
# words that open or continue a compound command (`if true; then pip install ...; fi`), and commands that do nothing
_KEYWORDS = {"if", "then", "else", "elif", "fi", "do", "done", "{", "}", "!"}
_NO_OPS = {"true", ":", "cd", "set", "echo"}  # commands that install nothing and change no pin
_FROM_ENV = "{word} sets a pip option from the environment: "
_PIP_ENV_REFUSED = {  # what each variable makes of the install, a whole sentence each (for translation)
    "PIP_DRY_RUN": _FROM_ENV + "pip installs nothing",
    "PIP_NO_INDEX": _FROM_ENV + "pip has no index to find a package in",
    "PIP_REQUIRE_HASHES": _FROM_ENV + "pip refuses every requirement given without a hash",
    "PIP_CONSTRAINT": _FROM_ENV + "pins in a file the command does not show",
    "PIP_REQUIREMENT": _FROM_ENV + "pins in a file the command does not show",
}
_ASSIGN = re.compile(r"[A-Za-z_]\w*=")


class CommandRefused(ValueError):
    """The shell or pip would refuse the command, or it installs something the command line does not show.

    Its message is English (what the checker reads and compares); `in_language()` is the same message in the
    learner's language, from the English template and its fields."""

    def __init__(self, template: str, **fields: object) -> None:
        super().__init__(template.format(**fields))
        self.template, self.fields = template, fields

    def in_language(self) -> str:
        return i18n.pick(self.template, **self.fields)


@dataclass(frozen=True)
class Installed:
    """What the command installs: (identity, ref) for each exact pin; identities installed with no exact pin."""

    pins: frozenset[tuple[str, str]]
    unpinned: tuple[str, ...]


def package_identity(name: str) -> str:
    """A PyPI package as pip names it: 'pypi:' and its PEP 503 name."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a package name such as 'torch', got {type(name).__name__} {name!r:.60}")
    return "pypi:" + canonicalize_name(name)


def version_key(version: str) -> str:
    """A version as pip compares it: `2.10` is `2.10.0`; a local label (`+cpu`) stays part of it."""
    try:
        return canonicalize_version(version)
    except Exception:  # not PEP 440: compared as written (=== pins such a string)
        return version


def repository_identity(url: str) -> str:
    """A git repository as pip clones it: host and path, case folded, without `git+`, user, '.git' or '/'."""
    if not isinstance(url, str):
        raise TypeError(f"url must be a repository URL such as 'git+https://host/owner/repo', got {type(url).__name__}")
    parts = urlsplit(url.removeprefix("git+"))
    host = parts.netloc.rpartition("@")[2].lower()
    return f"{host}/{parts.path.strip('/').lower().removesuffix('.git')}"


def _vcs(url: str, arg: str) -> tuple[str, str]:
    """(identity, ref) of a VCS URL pip accepts; ref '' when it names none."""
    if not url.startswith("git+"):
        raise CommandRefused(
            "{arg} is a plain URL: pip installs a git repository from a 'git+' URL only", arg=repr(arg)
        )
    parts = urlsplit(url)
    if parts.scheme not in ("git+https", "git+ssh", "git+http", "git+git", "git+file") or not parts.netloc:
        raise CommandRefused("pip cannot read {arg} as a git URL (it wants git+https://host/owner/repo)", arg=repr(arg))
    if "subdirectory=" in parts.fragment:
        raise CommandRefused("{arg} installs a subdirectory of the repository, not the repository", arg=repr(arg))
    path, _, ref = parts.path.rpartition("@") if "@" in parts.path else (parts.path, "", "")
    return repository_identity(f"{parts.scheme}://{parts.netloc}{path}"), ref


def _merged(arg: str) -> bool:
    """Whether `arg`, which pip refuses, is several requirements that quotes joined into one word."""
    parts = arg.split()
    return len(parts) > 1 and all(_one_requirement(part) for part in parts)


def _one_requirement(word: str) -> bool:
    if word.startswith("git+"):
        return True
    try:
        return bool(Requirement(word).specifier)
    except InvalidRequirement:
        return False


def _looks_local(arg: str) -> bool:
    """A path pip installs from (a folder, a wheel or an sdist): what it holds the command line does not show."""
    return arg.startswith(("./", "../", "/", "~", "file:")) or arg.endswith((".whl", ".tar.gz", ".zip", ".tgz"))


def _exact(req: Requirement, arg: str) -> str:
    """The one version `req` allows ('' when several may be installed); `===v` kept as written, since pip
    compares arbitrary equality as text (`===2.10` is not `2.10.0`)."""
    specs = list(req.specifier)
    exact = [s for s in specs if s.operator in ("==", "===") and not s.version.endswith(".*")]
    if not exact:
        return ""
    keys = {version_key(s.version) if s.operator == "==" else "===" + s.version for s in exact}
    if len(keys) > 1:
        raise CommandRefused("{arg} asks for two different exact versions: no version satisfies it", arg=repr(arg))
    (key,) = keys
    version = exact[0].version
    try:
        allowed = req.specifier.contains(version, prereleases=True)
    except Exception:  # an arbitrary (non PEP 440) version: only === can name it
        allowed = True
    if not allowed:
        raise CommandRefused(
            "{arg}: version {version} does not satisfy its own other bounds, so pip finds none",
            arg=repr(arg),
            version=version,
        )
    return key


def _requirement(arg: str) -> tuple[str, str] | None:
    """(identity, exact ref or '') of one requirement argument; None where pip skips it (its marker is false)."""
    scheme = arg.strip().split("://", 1)[0] if "://" in arg else ""
    if scheme and not any(ch.isspace() or ch == "@" for ch in scheme):  # a bare URL; `name @ URL` goes to packaging
        return _vcs(arg.strip(), arg)
    if _looks_local(arg.strip()):
        raise CommandRefused(
            "{arg} installs a local file or folder: what it holds the command does not show", arg=repr(arg)
        )
    if arg.rstrip().endswith(",") or arg.lstrip().startswith(","):  # packaging 26 allows it; pip's 23.x does not
        raise CommandRefused(
            "a comma is glued to {arg}: the shell splits at blanks only, so pip gets it too", arg=repr(arg)
        )
    try:
        req = Requirement(arg)
    except InvalidRequirement as e:
        if _merged(arg):
            raise CommandRefused(
                "the quotes make {arg} one argument: several pins reach pip as a single word", arg=repr(arg[:60])
            ) from None
        if arg == "@":
            raise CommandRefused("an unquoted `name @ url` is three words to the shell, and pip refuses '@'") from None
        if arg.lstrip().startswith(("==", "===", "<", ">", "~=", "!=")):
            raise CommandRefused("{arg} has no package name before its version", arg=repr(arg)) from None
        raise CommandRefused(
            "pip refuses the argument {arg}: {error}", arg=repr(arg), error=str(e).splitlines()[0]
        ) from None
    if req.marker is not None and not req.marker.evaluate():
        return None
    if req.url:
        return _vcs(req.url, arg)
    return package_identity(req.name), _exact(req, arg)


def _install_args(words: list[str]) -> list[str] | None:
    """The arguments after `install` of one simple command; None for one that runs nothing; CommandRefused naming
    what it runs instead of an install."""
    if words[:1] == ["export"]:
        words = [*words[1:], "true"]  # the assignments are checked below; export itself installs nothing
    while words and (_ASSIGN.match(words[0]) or words[0] in _WRAPPERS or words[0] in _KEYWORDS):
        refused = _PIP_ENV_REFUSED.get(words[0].split("=", 1)[0]) if _ASSIGN.match(words[0]) else None
        if refused:  # pip reads PIP_<OPTION> from the environment
            raise CommandRefused(refused, word=repr(words[0]))
        wrapper, words = words[0] in _WRAPPERS, words[1:]
        while wrapper and words and words[0].startswith("-"):  # `sudo -H`, `sudo -u user`, `env -i`
            words = words[2:] if words[0] in _WRAPPER_VALUE_OPTIONS else words[1:]
    if not words or words[0] in _NO_OPS:
        return None  # `NAME=value` alone, `true`, a keyword: nothing runs
    head = words[:4]
    if len(head) >= 2 and re.fullmatch(r"pip3?(\.\d+)?", head[0]) and head[1] == "install":
        return words[2:]
    if len(head) >= 4 and re.fullmatch(r"python[\d.]*", head[0]) and head[1:4] == ["-m", "pip", "install"]:
        return words[4:]
    if head[:3] == ["uv", "pip", "install"]:
        return words[3:]
    if words and words[0][:1] in "!%":
        raise CommandRefused("{word} is notebook syntax, not a shell command", word=repr(words[0]))
    shown = " ".join(words[:3])
    if words[0] == "git":
        raise CommandRefused(
            "your command pins outside the install command with {command}, where the exercise asks for every pin in "
            "the install; and git refuses the commit hash a manifest may pin after `--branch`, which takes a branch "
            "or a tag",
            command=repr(shown),
        )
    raise CommandRefused(
        "the command runs {command}: no install command (pip install, pip3 install, python -m pip)", command=repr(shown)
    )


def _commands(text: str) -> list[list[str]]:
    """Simple commands as the shell splits them: one per line or per `;`/`&&`; CommandRefused for other shapes."""
    quote = ""
    for ch in text:  # a $ or a backquote outside single quotes is expanded: the reader cannot know to what
        if quote:
            quote = "" if ch == quote else quote
            if quote == '"' and ch in "$`":
                raise CommandRefused("the command expands a variable or a command ($, `): its value is unknown here")
        elif ch in "'\"":
            quote = ch
        elif ch in "$`":
            raise CommandRefused("the command expands a variable or a command ($, `): its value is unknown here")
    out: list[list[str]] = []
    for _, line in logical_lines(text):
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split, lexer.commenters = True, ""
        try:
            tokens = list(lexer)
        except ValueError as e:
            raise CommandRefused("the command does not parse as shell: {error}", error=e) from None
        words: list[str] = []
        for i, tok in enumerate(tokens):
            if tok in (";", "&&"):
                out.append(words)
                words = []
            elif tok[0] in "<>" or tok in (">&", "&>"):
                after = tokens[i + 1] if i + 1 < len(tokens) else ""
                raise CommandRefused(
                    "the shell reads {token} as a redirection: pip gets {word} and the output goes to a file {file}; "
                    "a requirement holding {token} must be quoted",
                    token=repr(tok),
                    word=repr(words[-1] if words else ""),
                    file=repr(after),
                )
            elif tok[0] in ";&|()":
                raise CommandRefused(
                    "the shell reads {token} between commands: it does not run an install chain", token=repr(tok)
                )
            else:
                words.append(tok)
        out.append(words)
    return [w for w in out if w]


def read_install(text: str) -> Installed:
    """What `text`, run by a POSIX shell, installs with pip: every install command's requirements."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a shell command, got {type(text).__name__}")
    commands = _commands(text)
    if not commands:
        raise CommandRefused("the text holds no command")
    pins: set[tuple[str, str]] = set()
    unpinned: list[str] = []

    def _add(found: tuple[str, str] | None, arg: str, *, editable: bool) -> None:
        if found is None:  # a requirement whose marker is false here: pip skips it
            return
        if editable and found[0].startswith("pypi:"):
            raise CommandRefused(
                "-e {arg}: pip installs in editable mode only a folder or a VCS URL, not a name", arg=repr(arg)
            )
        (pins.add(found) if found[1] else unpinned.append(found[0]))

    installs = [args for args in map(_install_args, commands) if args is not None]
    if not installs:
        raise CommandRefused("the text runs no install command (pip install, pip3 install, python -m pip)")
    for args in installs:
        options = {a.split("=", 1)[0] for a in args if a.startswith("-")}
        if "--require-hashes" in options:
            raise CommandRefused("with --require-hashes pip refuses every requirement given without a --hash")
        if "--no-index" in options and not options & {"-f", "--find-links"}:
            raise CommandRefused("with --no-index and no --find-links pip has nowhere to find a package")
        value_of, options_done, given = None, False, 0
        for arg in args:
            if value_of is not None:
                if value_of in ("-e", "--editable"):
                    given += 1
                    _add(_requirement(arg), arg, editable=True)
                value_of = None
            elif arg.startswith("-") and not options_done:
                name = arg.split("=", 1)[0]
                if arg == "--":
                    options_done = True
                elif name in _FILE_OPTIONS:
                    raise CommandRefused(
                        "{option} reads requirements from a file the command does not show", option=name
                    )
                elif name in _NO_INSTALL:
                    raise CommandRefused("with {option}, pip installs nothing", option=name)
                elif "=" not in arg and name in (*_VALUE_OPTIONS, "-e", "--editable"):
                    value_of = name
                elif name in ("-e", "--editable"):  # -e=URL, --editable=URL
                    given += 1
                    _add(_requirement(arg.split("=", 1)[1]), arg, editable=True)
            else:
                given += 1
                _add(_requirement(arg), arg, editable=False)
        if value_of is not None:
            raise CommandRefused(
                "the option {option} at the end of the command has no value: pip refuses it", option=value_of
            )
        if not given:
            raise CommandRefused("an install command with no requirement: pip stops with 'You must give at least one'")
    return Installed(frozenset(pins), tuple(unpinned))
