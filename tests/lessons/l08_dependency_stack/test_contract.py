"""Lesson 08's checkers test a contract: new wrong answers of other classes fail, right ones written otherwise pass.

8.1's classes: names compared loosely (case, blanks, a substring, the last part of a path, the text of the list),
a blank ref taken for no ref, hash tests that let through a sign, blanks, other digits, odd lengths or SHA-256
names, and lists that only work as one container type. Its right answers: other lookups (any(), a dict, a match
statement, branches first), other hash tests (set inclusion, string.hexdigits, a compiled regex).

8.2's classes: what the shell does to a word (an unquoted `name @ url`, `>=` read as a redirection, `||`, a pipe),
what pip does with a requirement (a bound that is not a pin, a false environment marker, `-e NAME`, a plain https
URL, `--dry-run`, `--no-index`, a dangling option, `refs/tags/` on a branch), a local label dropped, and a command
that depends on the calls before it. Its right answers: every spelling pip accepts (blanks around `==` in quotes,
`===`, extras, a true marker, `name @ url` quoted or without blanks, `-e`, `refs/tags/`, shlex quoting, one install
per line, options, sudo's own options, redundant bounds, normalised names).
"""

from __future__ import annotations

import re
import shlex
import string

import pytest

from conftest import Wrong, checker_tests
from verlstudy.kit.exercises import check_exercise, exercise_results
from verlstudy.kit.resources import data_dir
from verlstudy.lessons.l08_dependency_stack.manifests import load_manifest
from verlstudy.lessons.l08_dependency_stack.pip_command import CommandRefused, read_install

MANIFESTS = [load_manifest(data_dir() / "stacks" / f"ascend_megatron_{v}.toml") for v in ("0.18", "0.16")]

# ---------------------------------------------------------------- 8.1

HEX = set("0123456789abcdef")


def _is_hash(ref):
    return 7 <= len(ref) <= 40 and set(ref) <= HEX


def _policy(lookup=lambda ref, names: ref in names, is_hash=_is_hash, empty=lambda ref: not ref):
    def pin_policy(ref, tags, branches):
        if empty(ref):
            return "unpinned"
        if lookup(ref, tags):
            return "tag"
        if lookup(ref, branches):
            return "branch"
        return "commit" if is_hash(ref) else "missing"

    return pin_policy


def _int_hash(ref):
    try:
        int(ref, 16)
    except ValueError:
        return False
    return ref == ref.lower() and 7 <= len(ref.strip()) <= 40


def _fromhex_hash(ref):
    try:
        bytes.fromhex(ref)
    except ValueError:
        return False
    return ref == ref.lower() and 7 <= len(ref) <= 40


def concatenated(ref, tags, branches):
    names = tags + branches
    if not ref:
        return "unpinned"
    if ref in names:
        return "tag" if ref in tags else "branch"
    return "commit" if _is_hash(ref) else "missing"


def by_index(ref, tags, branches):
    if not ref:
        return "unpinned"
    for word, names in (("tag", tags), ("branch", branches)):
        try:
            names.index(ref)
            return word
        except ValueError:
            pass
    return "commit" if _is_hash(ref) else "missing"


def by_match(ref, tags, branches):
    match ref:
        case None | "":
            return "unpinned"
        case _ if ref in frozenset(branches):
            return "branch"
        case _ if any(t == ref for t in tags):
            return "tag"
        case _ if re.compile(r"[0-9a-f]{7,40}").fullmatch(ref):
            return "commit"
    return "missing"


_LOWER_HEX = string.hexdigits[:16]

WRONG_8_1 = [
    Wrong(_policy(lookup=lambda r, ns: r.lower() in {n.lower() for n in ns}), "case", "names compared ignoring case"),
    Wrong(_policy(lookup=lambda r, ns: r.strip() in set(ns)), "blanks", "the ref stripped before the lookup"),
    Wrong(_policy(lookup=lambda r, ns: any(r in n for n in ns)), "whole names", "a substring of a name"),
    Wrong(_policy(lookup=lambda r, ns: r.split("/")[-1] in set(ns)), ("whole names", "neither list"), "last part"),
    Wrong(_policy(lookup=lambda r, ns: r in str(list(ns))), "whole names", "the ref searched in the list's text"),
    Wrong(_policy(empty=lambda r: r is None or not r.strip()), "blank", "a blank ref taken for no ref"),
    Wrong(_policy(is_hash=_int_hash), ("not hex digits", "newline"), "int(ref, 16): signs and blanks pass"),
    Wrong(_policy(is_hash=_fromhex_hash), ("short ones too", "not hex digits"), "bytes.fromhex: odd lengths fail"),
    Wrong(
        _policy(is_hash=lambda r: 7 <= len(r) <= 40 and all(c.isdigit() or c in "abcdef" for c in r)),
        "not hex digits",
        "str.isdigit takes other scripts' digits",
    ),
    Wrong(_policy(is_hash=lambda r: 7 <= len(r) <= 64 and set(r) <= HEX), "too long", "SHA-256 names taken"),
    Wrong(_policy(is_hash=lambda r: len(r) in (7, 40) and set(r) <= HEX), "short ones too", "only 7 or 40 digits"),
    Wrong(concatenated, "concatenate", "tags + branches: only when both are lists"),
    Wrong(by_index, "index", "list.index: no such method on a set"),
]

RIGHT_8_1 = [
    _policy(lookup=lambda r, ns: any(n == r for n in ns)),
    _policy(is_hash=lambda r: 7 <= len(r) <= 40 and all(c in _LOWER_HEX for c in r)),
    by_match,
    _policy(lookup=lambda r, ns: r in dict.fromkeys(ns), empty=lambda r: r in (None, "")),
]

# ---------------------------------------------------------------- 8.2


def _words(m, pypi="{name}=={version}", git="git+{url}@{ref}"):
    """One word per component, as the learner's template writes it."""
    out = []
    for c in m.components:
        if c.is_pypi:
            out.append(pypi.format(name=c.repo[5:], version=c.ref, component=c.name))
        else:
            out.append(git.format(url=c.repo, ref=c.ref, component=c.name, kind=c.kind))
    return out


def _line(words, quote=""):
    return "pip install " + " ".join(f"{quote}{w}{quote}" for w in words)


def unquoted_name_at_url(m):
    return _line(_words(m, git="{component} @ git+{url}@{ref}"))


def unquoted_lower_bound(m):
    return _line(_words(m, pypi="{name}>={version}"))


def quoted_lower_bound(m):
    return _line(_words(m, pypi="{name}>={version}"), quote="'")


def compatible_release(m):
    return _line(_words(m, pypi="{name}~={version}"), quote='"')


def wildcard(m):
    return _line(_words(m, pypi="{name}=={version}.*"), quote='"')


def local_label_dropped(m):
    return _line([w.split("+")[0] if "==" in w else w for w in _words(m)])


def marker_false_here(m):
    return _line(_words(m, pypi="{name}=={version}; sys_platform == 'win32'"), quote='"')


def editable_everything(m):
    return "pip install " + " ".join(f"-e {w}" for w in _words(m))


def https_without_git_plus(m):
    return _line(_words(m, git="{url}@{ref}"))


def dry_run(m):
    return _line(_words(m)).replace("pip install", "pip install --dry-run")


def downloads(m):
    return _line(_words(m)).replace("pip install", "pip download")


def no_index(m):
    return _line(_words(m)).replace("pip install", "pip install --no-index")


def dangling_index_option(m):
    return _line(_words(m)) + " --index-url"


def or_chain(m):
    return " || ".join(f"pip install {w}" for w in _words(m))


def piped(m):
    return "yes | " + _line(_words(m))


def every_ref_a_tag(m):
    return _line(_words(m, git="git+{url}@refs/tags/{ref}"))


def egg_instead_of_ref(m):
    return _line(_words(m, git="git+{url}#egg={component}"))


def requirements_then_file(m):
    return "printf '%s\\n' " + " ".join(_words(m)) + " > req.txt && pip install -r req.txt"


def constraints_file(m):
    return _line([w.split("==")[0] if "==" in w else w for w in _words(m)]) + " -c constraints.txt"


_CALLS: list[str] = []


def remembers_earlier_calls(m):
    """Keeps every word it ever made in a module-level list: the second call installs the first manifest too."""
    _CALLS.extend(w for w in _words(m) if w not in _CALLS)
    return _line(_CALLS)


def upgrades_pip_first(m):
    return "pip install -U pip && " + _line(_words(m))


def conflicting_pins(m):
    return _line(_words(m) + [f"{c.repo[5:]}==0.0.1" for c in m.components[:1] if c.is_pypi])


def folder_of_the_clone(m):
    return _line(_words(m, git="./{component}"))


def full_refs(m):
    """A tag as refs/tags/<tag>, a branch as refs/heads/<branch>: git resolves them to the same commit."""
    full = {"tag": "refs/tags/", "branch": "refs/heads/", "commit": ""}
    return "pip install " + " ".join(
        f"{c.repo[5:]}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{full[c.kind]}{c.ref}" for c in m.components
    )


WRONG = {
    "8.1": WRONG_8_1,
    "8.2": [
        Wrong(unquoted_name_at_url, "three words", "name @ url unquoted (issue 39)"),
        Wrong(unquoted_lower_bound, "redirection", ">= unquoted: the shell redirects"),
        Wrong(quoted_lower_bound, "not pinned", ">= quoted: a bound, not a pin"),
        Wrong(compatible_release, "not pinned", "~= compatible release"),
        Wrong(wildcard, "not pinned", "== X.* wildcard"),
        Wrong(local_label_dropped, "local label", "+cpu dropped"),
        Wrong(marker_false_here, ("not in the command", "not pinned"), "a marker false on this machine"),
        Wrong(editable_everything, "editable", "-e before a package name"),
        Wrong(https_without_git_plus, "plain URL", "https URL without git+"),
        Wrong(dry_run, "installs nothing", "--dry-run"),
        Wrong(downloads, "no install command", "pip download"),
        Wrong(no_index, "no-index", "--no-index with no --find-links"),
        Wrong(dangling_index_option, "no value", "an option left without its value"),
        Wrong(or_chain, "||", "installs joined by ||"),
        Wrong(piped, "|", "a pipe into pip"),
        Wrong((every_ref_a_tag, MANIFESTS), ("not to the manifest's ref", "pinned to"), "refs/tags/ on a branch too"),
        Wrong(egg_instead_of_ref, "default branch", "#egg= in place of @ref"),
        Wrong(requirements_then_file, ("printf", "redirection"), "a requirements file written, then -r"),
        Wrong(constraints_file, "file the command does not show", "pins in a constraints file"),
        Wrong(remembers_earlier_calls, ("second call", "does not hold"), "state kept between calls"),
        Wrong(upgrades_pip_first, "does not hold", "an unpinned pip upgrade first"),
        Wrong(conflicting_pins, "pinned to", "a second version for one package"),
        Wrong((folder_of_the_clone, MANIFESTS), "local file or folder", "installs a folder, not the repository"),
        Wrong(lambda m: "PIP_DRY_RUN=1 " + _line(_words(m)), "environment", "pip's --dry-run set in the environment"),
        Wrong(lambda m: "export PIP_NO_INDEX=1\n" + _line(_words(m)), "environment", "no index, from the environment"),
    ],
}

RIGHT = {
    "8.1": RIGHT_8_1,
    "8.2": [
        lambda m: _line(_words(m, pypi="{name} == {version}"), quote='"'),
        lambda m: _line(_words(m, pypi="{name}==={version}"), quote="'"),
        lambda m: _line(_words(m, pypi="{name}[extra]=={version}"), quote="'"),
        lambda m: _line(_words(m, pypi="{name}=={version} ; python_version >= '3'"), quote='"'),
        lambda m: _line(_words(m, git="{component} @ git+{url}@{ref}"), quote="'"),
        lambda m: _line(_words(m, git="{component}@git+{url}@{ref}")),
        lambda m: "pip install " + " ".join(f"-e {w}#egg=pkg" if w.startswith("git+") else w for w in _words(m)),
        full_refs,
        lambda m: "pip install " + " ".join(map(shlex.quote, _words(m))),
        lambda m: " && ".join(f"pip install {w}" for w in _words(m)),
        lambda m: "\n".join(f"python3 -m pip install --no-deps {w}" for w in _words(m)),
        lambda m: "sudo -H " + _line(_words(m)).replace("install", "install -U --extra-index-url https://example.org"),
        lambda m: _line(_words(m, pypi="{name}>=0,=={version}"), quote='"'),
        lambda m: _line(_words(m)).replace("PyYAML", "pyyaml").replace("typing_extensions", "Typing.Extensions"),
        lambda m: _line(_words(m)).replace(".git@", "@"),
        lambda m: "set -e\ncd /tmp && export PIP_DISABLE_PIP_VERSION_CHECK=1 && " + _line(_words(m)),
    ],
}

test_wrong_answers_fail_naming_the_mistake, test_right_answers_written_differently_pass = checker_tests(WRONG, RIGHT)


@pytest.mark.parametrize(
    ("line", "pins"),
    [
        ('pip install "torch == 2.10.0"', {("pypi:torch", "2.10")}),  # issue 39: a valid pin that was rejected
        ("pip install 'torch[cuda]==2.10.0;python_version>\"3\"'", {("pypi:torch", "2.10")}),
        ("pip install torch===2.10", {("pypi:torch", "===2.10")}),  # text equality: not 2.10.0
        ("pip install 'x @ git+https://github.com/A/B.git@v1'", {("github.com/a/b", "v1")}),
        ("pip install \"torch==2.10.0 ; sys_platform == 'win32'\"", set()),  # pip skips it on Linux
    ],
)
def test_read_install_reads_what_pip_installs(line, pins):
    assert read_install(line).pins == pins


@pytest.mark.parametrize(
    "line",
    [
        "pip install x @ git+https://github.com/A/B.git@v1",  # issue 39: passed, though pip refuses it
        "pip install torch>=2",
        "pip install torch ==2.10.0",
        "pip install 'torch==2.10.0 numpy==1.26.4'",
        "pip install 'torch<2,==2.10.0'",
        "pip install -r requirements.txt",
        "pip install --require-hashes torch==2.10.0",
        "pip install torch==$V",
    ],
)
def test_read_install_refuses_what_the_shell_or_pip_refuses(line):
    with pytest.raises(CommandRefused):
        read_install(line)


def test_8_2_the_lesson_manifests_and_a_second_check_agree():
    from verlstudy.lessons.l08_dependency_stack.checks import check_pip_line  # noqa: F401 (registers 8.2)

    answer = RIGHT["8.2"][0]
    check_exercise("8.2", answer, MANIFESTS)
    check_exercise("8.2", answer, MANIFESTS)
    assert exercise_results()["8.2"] == "correct"
