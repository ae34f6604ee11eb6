"""Exercise 8.2's checker and reference: `pip_line(manifest)`, one install command pinning a stack manifest.
Registered by `checks` (import that).

Contract. `pip_line(manifest)` returns a `str`: a shell command that, run by a POSIX shell, runs only pip installs
(`pip`, `pip3`, `python -m pip`, `uv pip`; `NAME=value` or `sudo`/`env` and their options before them allowed;
several joined by `&&`, `;` or new lines, beside commands that install nothing: `cd`, `set`, `echo`, `export`)
and whose requirements, as pip parses them (`packaging`'s
`Requirement`, after the shell has split the words as `shlex` does), pin exactly the manifest's components,
nothing more: a `pypi:` component by its package name (the text after `pypi:`, in any spelling pip normalises to
the same name, extras allowed) at exactly its version (`==`, with blanks around it inside quotes, or other bounds
the version meets; `2.10` equals `2.10.0`, but a local label such as `+cpu` is part of the version; `===` compares
the text, so `===2.10` is not `2.10.0`); a git component by a `git+` URL of the same repository (host and path;
`.git`, case, `https` or `ssh` free) at exactly its ref (`refs/tags/<tag>` or `refs/heads/<branch>` also), written
`git+URL@ref` (optionally `-e`, `#egg=`) or `name @ git+URL@ref` (one shell word: quoted, or with no blanks). A
requirement whose environment marker is false here is skipped, as pip skips it. What the shell or pip refuses
fails: an unquoted `name @ url`, `torch>=2` (a redirection) or `;` marker, a glued comma, several pins in one
quoted word, `||`, a pipe, a variable, a plain `https://` URL, `-e NAME`, an option left without its value, an
install with no requirement, `--dry-run`, `--no-index` without `--find-links`, `--require-hashes` (also set as
`PIP_DRY_RUN`, `PIP_NO_INDEX`, `PIP_REQUIRE_HASHES` in the environment); so does what
the command line does not show (`-r`/`-c` files, local folders and wheels, pins made by `git clone` first). The
manifest is left as it was; a second call installs the same.

Domain: manifests of one to six components drawn from real repositories (GitHub and GitCode, with and without
'.git') at tags, release branches with '/' and commit hashes, and PyPI packages whose names hold capitals, dots,
underscores and dashes, or begin and end with the letters of 'pypi:', at versions with local labels, pre- and
post-releases; plus the lesson's pinned manifest.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection
from typing import Any

from verlstudy.kit import i18n
from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.kit.properties import Case, compare_on_inputs
from verlstudy.lessons.l08_dependency_stack.manifests import (
    Component,
    StackManifest,
    manifest_pins,
    render_install_script,
)
from verlstudy.lessons.l08_dependency_stack.pip_command import (
    CommandRefused,
    package_identity,
    read_install,
    repository_identity,
    version_key,
)

_GIT = (
    ("Megatron-LM", "https://github.com/NVIDIA/Megatron-LM.git", "tag", "core_v0.18.0"),
    ("MindSpeed", "https://gitcode.com/Ascend/MindSpeed.git", "branch", "core_r0.18.0"),
    ("Megatron-Bridge", "https://github.com/NVIDIA-NeMo/Megatron-Bridge", "tag", "v0.5.0"),
    ("vllm-ascend", "https://github.com/vllm-project/vllm-ascend.git", "branch", "releases/v0.23.0"),
    ("transformers", "https://github.com/huggingface/transformers.git", "commit", "cc7ab9be508ce6ed3637bba9e50367b29b742dc6"),  # noqa: E501
    ("TransformerEngineNPU", "https://gitcode.com/Ascend/TransformerEngineNPU.git", "commit", "e40ec34"),
)  # fmt: skip
# (component name, package name as the manifest writes it, version): the component's name may differ from the
# package's; names hold capitals, dots, underscores; some begin or end with p, y or i (the letters of 'pypi:')
_PYPI = (
    ("torch", "torch", "2.10.0+cpu"),
    ("torchvision", "torchvision", "0.25.0"),
    ("FLA", "flash-linear-attention", "0.5.0"),
    ("xgrammar", "xgrammar", "0.1.33rc1"),
    ("setuptools", "setuptools", "80.10.2"),
    ("numpy", "numpy", "1.26.4"),
    ("yaml", "PyYAML", "6.0.2"),
    ("typing-ext", "typing_extensions", "4.12.2"),
    ("zope", "zope.interface", "7.0.post1"),
    ("pip", "pip", "24.0"),
    ("pypiserver", "pypiserver", "2.1.1"),  # a name that begins with "pypi" itself
)


def _component(raw: tuple[str, ...]) -> Component:
    if len(raw) == 4:
        return Component(*raw)
    return Component(raw[0], f"pypi:{raw[1]}", "version", raw[2])


def _manifest(picked: list[tuple[str, ...]] | tuple[tuple[str, ...], ...], name: str = "generated") -> StackManifest:
    return StackManifest(name, tuple(_component(r) for r in picked), {})


def _manifest_inputs() -> Any:
    from hypothesis import strategies as st

    return st.lists(st.sampled_from(_GIT + _PYPI), min_size=1, max_size=6, unique=True).map(
        lambda picked: (_manifest(picked),)
    )


def _identity(c: Component) -> str:
    return package_identity(c.repo[len("pypi:") :]) if c.is_pypi else repository_identity(c.repo)


def _wanted(manifest: StackManifest) -> frozenset[tuple[str, str]]:
    """The pins a right command makes, as `read_install` writes them."""
    return frozenset((_identity(c), version_key(c.ref) if c.is_pypi else c.ref) for c in manifest.components)


def _as_manifest_writes(pin: tuple[str, str], comps: dict[str, Component]) -> tuple[str, str]:
    """A pin in the manifest's spelling where pip reads it as the same: `===6.0.2` for 6.0.2 (pip compares
    arbitrary equality as text, ignoring case), `refs/tags/v0.5.0` for the tag v0.5.0, `refs/heads/X` for a branch."""
    identity, ref = pin
    c = comps.get(identity)
    if c is None:
        return pin
    if c.is_pypi and ref.startswith("===") and ref[3:].lower() == c.ref.lower():
        return identity, version_key(c.ref)
    full = {"tag": f"refs/tags/{c.ref}", "branch": f"refs/heads/{c.ref}"}.get(c.kind)
    return (identity, c.ref) if not c.is_pypi and ref == full else pin


class _Refused(str):
    """'refused: <why>' in English (what the checker compares and reads), carrying the why in the learner's language."""

    why: str

    def __new__(cls, english: str, why: str) -> _Refused:
        made = super().__new__(cls, f"refused: {english}")
        made.why = why
        return made


def _installed(fn: Callable[[StackManifest], object]) -> Callable[[StackManifest], object]:
    """The learner's command read back: its pins (unpinned installs as (identity, '')), or why it is refused."""

    def once(manifest: StackManifest) -> object:
        text = fn(manifest)
        if not isinstance(text, str):
            return text
        try:
            found = read_install(text)
        except CommandRefused as e:
            return _Refused(str(e), e.in_language())
        comps = {_identity(c): c for c in manifest.components}
        return {_as_manifest_writes(p, comps) for p in found.pins} | {(identity, "") for identity in found.unpinned}

    def read(manifest: StackManifest) -> object:
        first = once(manifest)
        second = once(copy.deepcopy(manifest))  # the same manifest again: a command may not depend on the call
        if first != second and isinstance(first, set):
            differs = "a second call on the same manifest installs {second}, the first {first}"
            with i18n.held(None):
                english = differs.format(second=_shown(second), first=_shown(first))
            return _Refused(english, i18n.pick(differs, second=_shown(second), first=_shown(first)))
        return first

    read.__name__ = "pip_line"
    return read


PIP_CASES = [
    Case((_manifest([_PYPI[1]], "one package"),), "a manifest of one PyPI package"),
    Case((_manifest([_GIT[4]], "one commit"),), "a repository pinned to a commit hash"),
    Case((_manifest([_PYPI[2], _GIT[0]], "names differ"),), "a component whose name is not its package name"),
    Case((_manifest([_GIT[3], _PYPI[0]], "slash and local"),), "a branch with '/', a version with '+cpu'"),
    Case((_manifest([_PYPI[5], _PYPI[6]], "p, y, i"),), "package names that begin or end with p, y or i"),
]


def _shown(pins: object) -> str:
    """Read-back pins as the learner reads them: identity at ref, or why the line installs nothing."""
    if isinstance(pins, str) and pins.startswith("refused: "):
        return i18n._("nothing (the shell or pip refuses the line)")
    if isinstance(pins, (set, frozenset)):
        return "{" + ", ".join(_pin_shown(identity, ref) for identity, ref in sorted(pins)) + "}"
    return repr(pins)


def _pin_shown(identity: str, ref: str) -> str:
    if ref:
        return i18n.pick("{identity} at {ref}", identity=identity, ref=repr(ref))
    return i18n.pick("{identity} unpinned", identity=identity)


def _named(manifest: StackManifest, got: object, want: frozenset[tuple[str, str]]) -> str | None:
    if isinstance(got, str) and got.startswith("refused: "):
        why = got[len("refused: ") :]  # English: what the tests below read
        shown = getattr(got, "why", why)  # in the learner's language
        if "no package name" in why and any(c.repo[5:].strip("pyi:") != c.repo[5:] for c in manifest.components):
            return i18n.pick("{why}: the package's name lost letters along with the prefix 'pypi:'", why=shown)
        if "no requirement" in why:  # nothing to install: say what the command leaves out
            return i18n.pick("{why}; {mistake}", why=shown, mistake=_named(manifest, set(), want))
        return shown
    if not isinstance(got, (set, frozenset)):
        return i18n._("return the command as one string")
    missing, extra = sorted(want - got), sorted(got - want)
    comps = {_identity(c): c for c in manifest.components}
    unpinned = [identity for identity, ref in extra if ref == "" and identity in comps]
    if unpinned and not unpinned[0].startswith("pypi:"):
        return i18n.pick(
            "{repository}: a git URL without '@<ref>' installs whatever the default branch holds",
            repository=repr(unpinned[0]),
        )
    if unpinned:
        return i18n.pick(
            "the PyPI packages {packages} are not pinned to their version: pip installs whichever it picks",
            packages=unpinned,
        )
    comps = {
        (package_identity(c.repo[5:]) if c.is_pypi else repository_identity(c.repo)): c for c in manifest.components
    }
    by_name = {package_identity(c.name): c for c in manifest.components if c.is_pypi}
    if extra and extra[0][0] in by_name and extra[0][0] not in comps:
        c = by_name[extra[0][0]]
        return i18n.pick(
            "you wrote the component's name {name} where pip needs the package name {package}: a component is named "
            "in the manifest, a package on PyPI",
            name=repr(c.name),
            package=repr(c.repo[5:]),
        )
    stripped = lambda name: {name.strip("pyi"), name.lstrip("pyi"), name.rstrip("pyi")} - {name}  # noqa: E731
    packages = [(i, e) for i, _ in missing for e, _ in extra if i.startswith("pypi:") and e.startswith("pypi:")]
    cut = [(i, e) for i, e in packages if e[5:] in stripped(i[5:])]
    if cut:
        return i18n.pick(
            "the package {package} came out as {written}: your command lost letters of its name along with the prefix "
            "'pypi:'",
            package=repr(cut[0][0][5:]),
            written=repr(cut[0][1][5:]),
        )
    not_held = "the command installs {name}, which the manifest does not hold"
    elsewhere = "the command installs the repository {name}, which is not where the manifest's URL points"
    foreign = [i for i, _ in extra if i not in comps and i not in by_name]
    if foreign and not missing:
        return i18n.pick(not_held, name=repr(foreign[0]))
    if foreign and not foreign[0].startswith("pypi:") and all(not i.startswith("pypi:") for i, _ in missing):
        return i18n.pick(elsewhere, name=repr(foreign[0]))
    if foreign:
        return i18n.pick(not_held, name=repr(foreign[0]))
    wrong_ref = [(i, r) for i, r in extra if i in comps]
    if wrong_ref:
        identity, ref = wrong_ref[0]
        c = comps[identity]
        if c.is_pypi and "+" in c.ref and version_key(ref) == version_key(c.ref.split("+")[0]):
            return i18n.pick(
                "{component}'s version is {version}: the local label {label} is part of it",
                component=c.name,
                version=repr(c.ref),
                label=f"'+{c.ref.split('+')[1]}'",
            )
        return i18n.pick("{component} is pinned to {ref}, not to the manifest's ref", component=c.name, ref=repr(ref))
    if missing and extra and not extra[0][0].startswith("pypi:"):
        return i18n.pick(elsewhere, name=repr(extra[0][0]))
    if missing and all(i.startswith("pypi:") for i, _ in missing):
        return i18n.pick("the PyPI packages {packages} are not in the command", packages=[i[5:] for i, _ in missing])
    if missing and not any(i.startswith("pypi:") for i, _ in missing):
        return i18n.pick(
            "the git repositories are not pinned in the command: {repositories}", repositories=[i for i, _ in missing]
        )
    if missing:
        return i18n.pick(
            "{n} component(s) of the manifest are not in the command: {name} first",
            n=len(missing),
            name=repr(missing[0][0]),
        )
    if extra:
        return i18n.pick(not_held, name=repr(extra[0][0]))
    return None


@checker(
    "8.2",
    library_answers=[render_install_script, manifest_pins, read_install],
    where=(
        "the section 'The stack as data' (a component is a PyPI package at a version or a repository at a ref) "
        "and the pins table, which shows the two ways pip pins a thing"
    ),
    question=(
        "For a manifest holding the package 'pypi:PyYAML' at '6.0.2' and the repository "
        "'https://github.com/NVIDIA/Megatron-LM.git' at 'core_v0.18.0': after the shell has split your line at its "
        "blanks, which words does pip receive, and would pip read each of them as one requirement?"
    ),
    method=(
        "Go through the manifest's components once and turn each into one word pip reads as a requirement: a PyPI "
        "component by its package name (what follows the 'pypi:' prefix, not the component's own name) held to "
        "exactly its version; a git component by pip's 'git+' form of its URL with the ref attached the way pip "
        "reads a ref. Put the words after one install command, separated by spaces, and quote any word that holds "
        "a blank or a character the shell reads itself."
    ),
    reveals=["git+{c.repo}@{c.ref}", "=={c.ref}"],
)
def check_pip_line(fn: Callable[[StackManifest], str], manifests: Collection[StackManifest] = ()) -> str:
    """Exercise 8.2: `pip_line(manifest)`: the contract is this module's docstring."""
    extra_cases = [Case((m,), i18n.pick("the lesson's manifest {name}", name=repr(m.name))) for m in manifests]
    try:
        return compare_on_inputs(
            _installed(fn),
            _wanted,
            inputs=_manifest_inputs(),
            edge_cases=PIP_CASES + extra_cases,
            mistakes=lambda args, got, want: _named(args[0], got, want),
            describe=lambda got, want: (_shown(got), _shown(want)),
            name="pip_line",
            max_examples=40,
        )
    except ExerciseFailure as e:  # the call shows the read-back pins; say so
        raise ExerciseFailure(_installs(str(e))) from None


# the kit's failing-input line (kit.properties) and 8.2's reading of it: what follows the call is what it installs
_RETURNED = "{call} returned {got}; expected {want} there"
_INSTALLS = "what {call} installs {got}; expected {want} there"


def _around_call(template: str) -> list[str]:
    """What a translated template puts before its {call} and between it and {got} (one item if not in that order)."""
    return i18n._(template).split("{got}")[0].split("{call}")


def _installs(message: str) -> str:
    """The kit's line reworded in the learner's language: 'what pip_line(...) installs' for 'pip_line(...) returned'."""
    if i18n.language() is None:  # English, as it has always read
        return message.replace("pip_line(", "what pip_line(", 1).replace(") returned", ") installs", 1)
    kit, ours = _around_call(_RETURNED), _around_call(_INSTALLS)
    if len(kit) != 2 or len(ours) != 2 or not message.startswith(kit[0] + "pip_line(") or kit[1] not in message:
        return message
    return ours[0] + message[len(kit[0]) :].replace(kit[1], ours[1], 1)
