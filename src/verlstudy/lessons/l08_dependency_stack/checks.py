"""Exercise checkers and reference answers for lesson 08 (judged by property: `verlstudy.kit.properties`).

8.1 asks what a pin *is* (a tag, a branch that can move, a commit, nothing at all), decided from the refs a
repository really has, never from the letters of its name. 8.2 asks for one `pip install` command pinning a
manifest. A wrong answer's message names the mistake; where to look and the method come on later tries.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from verlstudy.common.pins import parse_pins
from verlstudy.common.refs import COMMIT_HASH, repo_key
from verlstudy.common.shell_pins import pip_installs
from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.kit.properties import Case, compare_on_inputs
from verlstudy.lessons.l08_dependency_stack.manifests import (
    Component,
    StackManifest,
    manifest_pins,
    render_install_script,
)

# ---------------------------------------------------------------- 8.1 pin_policy

POLICIES = ("unpinned", "tag", "branch", "commit", "missing")


def _reference_policy(ref: str | None, tags: Collection[str], branches: Collection[str]) -> str:
    if not ref:
        return "unpinned"
    if ref in set(tags):
        return "tag"
    if ref in set(branches):
        return "branch"
    return "commit" if COMMIT_HASH.fullmatch(ref) else "missing"


# Names that follow no scheme, and names that look like another scheme's (a 'core_v' branch, a 'core_r' tag)
# and names that are themselves 7 or more lower-case hex digits (a tag called 'deadbeef' is a tag, not a commit)
_NAMES = ("core_r0.18.0", "core_v0.18.0", "core_r0.16.0", "core_v0.16.0", "main", "master", "v0.5.0", "v0.5",
          "releases/v0.23.0", "v0.23.0", "release-1.2", "stable", "dev", "deadbeef", "c0ffee1", "2024101")  # fmt: skip


def _policy_inputs() -> Any:
    from hypothesis import strategies as st

    hexes = st.text("0123456789abcdef", min_size=7, max_size=40)
    # refs that look like a hash and are not one: too short or too long, upper-case, a 0x or an underscore,
    # other letters after the hex digits, letters and digits that are not hex
    near = st.one_of(
        st.text("0123456789abcdef", min_size=1, max_size=6),
        st.text("0123456789abcdef", min_size=41, max_size=48),
        st.text("0123456789ABCDEF", min_size=7, max_size=40).filter(lambda r: r != r.lower()),
        hexes.map(lambda r: "0x" + r[:38]),
        hexes.map(lambda r: r[:4] + "_" + r[4:]),
        st.tuples(hexes, st.text("ghxyz", min_size=1, max_size=3)).map(lambda t: t[0][:38] + t[1]),
        st.text("0123456789abcdefghijklmnopqrstuvwxyz", min_size=7, max_size=12),
        hexes.map(lambda r: r + "\n"),  # a hash read from a file with its line end
    )
    ref = st.one_of(st.sampled_from(_NAMES), hexes, near, st.sampled_from([None, ""]))

    def split(names: list[str]) -> Any:
        return st.lists(st.booleans(), min_size=len(names), max_size=len(names)).map(
            lambda flags: (
                [n for n, f in zip(names, flags, strict=True) if f],
                [n for n, f in zip(names, flags, strict=True) if not f],
            )
        )

    repo_refs = st.lists(st.sampled_from(_NAMES), unique=True, max_size=6).flatmap(split)
    return st.tuples(ref, repo_refs).map(lambda t: (t[0], t[1][0], t[1][1]))


POLICY_CASES = [
    Case(("core_v0.18.0", ["core_v0.18.0", "core_v0.16.0"], ["core_r0.18.0", "main"]), "Megatron-LM's release tag"),
    Case(("core_r0.18.0", ["core_v0.18.0"], ["core_r0.18.0", "main"]), "Megatron-LM's release branch (it exists)"),
    Case((None, ["v1.0.0"], ["main"]), "`git clone --depth 1` with no --branch: the default branch"),
    Case(("", [], ["master"]), "an empty ref is no pin either"),
    Case(("core_v0.18.0", [], ["core_v0.18.0"]), "a branch whose name looks like a tag"),
    Case(("core_r0.18.0", ["core_r0.18.0"], []), "a tag whose name looks like a branch"),
    Case(("ba7b5eb", ["v0.5.0"], ["main"]), "a short commit hash (7 hex digits)"),
    Case(("ba7b5ebce12af60627a80985792a1449ce45f46c", [], ["main"]), "a full commit hash"),
    Case(("v0.5", ["v0.5.0"], ["main"]), "a prefix of a tag is not that tag"),
    Case(("main", ("v0.5.0",), frozenset({"main"})), "tags as a tuple, branches as a frozenset"),
    Case(("core_v0.19.0", ["core_v0.18.0"], ["core_r0.18.0"]), "a ref the repository does not have"),
    Case(("deadbeef", ["deadbeef", "v1.0"], ["main"]), "a tag whose name is all hex digits"),
    Case(("c0ffee1", [], ["main", "c0ffee1"]), "a branch whose name is all hex digits"),
    Case(("DEADBEEF", [], ["main"]), "upper-case hex digits"),
    Case(("abcdef", [], ["main"]), "six hex digits: one too few"),
    Case(("a" * 41, [], ["main"]), "41 hex digits: one too many"),
    Case(("deadbeefzz", [], ["main"]), "hex digits, then other letters"),
    Case(("0xabcdef1", [], ["main"]), "hex written with a 0x in front"),
    Case(("dead_beef", [], ["main"]), "hex digits with an underscore"),
    Case(("release1", [], ["main"]), "letters and digits, not all hex"),
    Case(("deadbeef\n", [], ["main"]), "a hash read from a file, its newline kept"),
]


def _policy_mistake(args: tuple[Any, ...], got: object, want: str) -> str | None:
    ref, tags, branches = args
    if not isinstance(got, str) or got not in POLICIES:
        return f"return one of the words {', '.join(repr(p) for p in POLICIES)}"
    if want == "missing" and got == "commit" and isinstance(ref, str):
        return _not_a_hash(ref)
    if want in ("tag", "branch") and got == "commit":
        where = "branches" if want == "branch" else "tags"
        return (
            f"{ref!r} is in the repository's {where}: a name the repository has is that {want}, however much it "
            "looks like a hash; only a ref in neither list can be a commit"
        )
    if want == "unpinned":
        return "no ref at all (None or an empty string) means the clone takes whatever the default branch holds"
    if want == "missing" and got == "unpinned":
        return f"{ref!r} is a ref, so the pin is not empty; it is one the repository does not have"
    longer = [n for n in (*tags, *branches) if n != ref and n.startswith(ref)]
    if want == "missing" and got in ("tag", "branch") and longer:
        return f"{ref!r} is not in either list, though {longer[0]!r} starts with it: compare whole names"
    name_says = "tag" if ref.startswith(("core_v", "v")) else "branch" if ref.startswith("core_r") else None
    if got == name_says and got != want:
        return "you decided by the letters of the name; what it is depends on which list of the repository holds it"
    if want == "commit":
        return f"{ref!r} is a commit hash: hashes of 7 to 40 hex digits count, short ones too"
    if want == "branch":
        return f"{ref!r} is in the repository's branches: is the branches argument read?"
    if want == "tag":
        return f"{ref!r} is in the repository's tags"
    return None


def _not_a_hash(ref: str) -> str:
    """Why `ref` is not a commit hash, in words."""
    if ref != ref.lower() and all(ch in "0123456789abcdef" for ch in ref.lower()):
        return f"{ref!r} has upper-case letters: git writes a hash in lower-case hex digits, as the text asks"
    odd = sorted({ch for ch in ref if ch not in "0123456789abcdef"})
    if odd == ["\n"] and ref.endswith("\n") and ref.count("\n") == 1:
        return (
            f"{ref!r} ends with a newline, and your hash test let it through: the newline is a character of the "
            "ref too (a regex's `$` also matches just before a final newline)"
        )
    if odd:
        return (
            f"{ref!r} holds characters that are not hex digits ({', '.join(map(repr, odd))}): every character of "
            "a hash is one of 0-9 and a-f (no 0x, no underscore, nothing after the digits)"
        )
    too = "short" if len(ref) < 7 else "long"
    return f"{ref!r} has {len(ref)} hex digits: a hash has 7 to 40 of them, so it is too {too}"


@checker(
    "8.1",
    library_answers=[_reference_policy],
    where=(
        "the paragraph under 'Predict first: exercise 8.1' and the section 'Before and after: upstream's real "
        "files, side by side': Megatron-LM has both a release branch and a release tag for one version, and the "
        "after-files clone three repositories with no ref at all"
    ),
    method=(
        "Deal first with a missing or empty ref. Then ask which of the repository's own lists holds the ref as "
        "a whole name: its tags, then its branches. Only a ref in neither list may still be a commit hash (7 to "
        "40 lower-case hex digits); anything else the repository does not have. Never look at the letters of "
        "the name to guess."
    ),
    reveals=["7 <= len(ref) <= 40"],
)
def check_pin_policy(fn: Callable[[str | None, Collection[str], Collection[str]], str]) -> str:
    """Exercise 8.1: pin_policy(ref, tags, branches) says what a pin is, from the repository's own refs."""
    return compare_on_inputs(
        fn,
        _reference_policy,
        inputs=_policy_inputs(),
        edge_cases=POLICY_CASES,
        mistakes=_policy_mistake,
        name="pin_policy",
        strict_types=True,
    )


# ---------------------------------------------------------------- 8.2 pip_line

_GIT_REPOS = (
    ("Megatron-LM", "https://github.com/NVIDIA/Megatron-LM.git", "tag", "core_v0.18.0"),
    ("MindSpeed", "https://gitcode.com/Ascend/MindSpeed.git", "branch", "core_r0.18.0"),
    ("Megatron-Bridge", "https://github.com/NVIDIA-NeMo/Megatron-Bridge.git", "tag", "v0.5.0"),
    ("vllm-ascend", "https://github.com/vllm-project/vllm-ascend.git", "branch", "releases/v0.23.0"),
    (
        "transformers",
        "https://github.com/huggingface/transformers.git",
        "commit",
        "cc7ab9be508ce6ed3637bba9e50367b29b742dc6",
    ),
)
# component name differs from the package name on purpose (the package name is what pip wants)
_PYPI = (
    ("torch", "torch", "2.10.0"),
    ("torchvision", "torchvision", "0.25.0"),
    ("FLA", "flash-linear-attention", "0.5.0"),
    ("xgrammar", "xgrammar", "0.1.33"),
    ("setuptools", "setuptools", "80.10.2"),
    # names that begin or end with letters of the prefix 'pypi:' (p, y, i): cutting it off letter by letter eats them
    ("numpy", "numpy", "1.26.4"),
    ("PyYAML", "pyyaml", "6.0.2"),
)


def _component(raw: tuple[str, ...]) -> Component:
    if len(raw) == 4:
        return Component(raw[0], raw[1], raw[2], raw[3])
    return Component(raw[0], f"pypi:{raw[1]}", "version", raw[2])


def _manifest(picked: list[tuple[str, ...]], name: str = "generated") -> StackManifest:
    return StackManifest(name, tuple(_component(r) for r in picked), {})


def _manifest_inputs() -> Any:
    from hypothesis import strategies as st

    return st.lists(st.sampled_from(_GIT_REPOS + _PYPI), min_size=1, max_size=6, unique=True).map(
        lambda picked: (_manifest(picked),)
    )


PIP_CASES = [
    Case((_manifest([_PYPI[0]], "one package"),), "a manifest of one PyPI package"),
    Case((_manifest([_GIT_REPOS[4]], "one commit"),), "a repository pinned to a commit hash"),
    Case((_manifest([_GIT_REPOS[0]], "one repository"),), "a manifest of one git repository"),
    Case((_manifest([_PYPI[2], _GIT_REPOS[4]], "names differ"),), "a component whose name is not its package name"),
    Case((_manifest([*_GIT_REPOS[:3], *_PYPI[:2]], "mixed"),), "tags, a branch and packages together"),
    Case((_manifest([_PYPI[5], _PYPI[6]], "p, y, i"),), "package names that begin or end with p, y or i"),
]


# Only pins the install command itself makes count: a `git clone --branch X` (or a checkout) before it pins outside
# pip, and `--branch` refuses a commit hash, so such a command fails on a manifest with a commit pin.
_PIP_VIAS = ("pip ==", "pip git+")


def _pins_of(fn: Callable[[StackManifest], object]) -> Callable[[StackManifest], object]:
    """The learner's command read back as pins: what the checker compares with the manifest."""

    def read(manifest: StackManifest) -> object:
        text = fn(manifest)
        if not isinstance(text, str):
            return text
        try:
            return {(p.repo, p.ref) for p in parse_pins(text, "shell", "pip_line") if p.via in _PIP_VIAS}
        except ValueError as e:
            return f"unparsable: {e}"

    read.__name__ = "pip_line"
    return read


def _shape_mistake(text: str, got: set[tuple[str, str]], missing: set[tuple[str, str]]) -> str | None:
    """A mistake in the command's shape (pins outside the install, no install, glued or merged arguments)."""
    pins = parse_pins(text, "shell", "pip_line")
    outside = [p for p in pins if p.via not in _PIP_VIAS and (p.repo, p.ref) in missing]
    if outside:
        hashes = [p.ref for p in outside if p.via == "git clone --branch" and COMMIT_HASH.fullmatch(p.ref)]
        refuse = (
            f"; and git refuses the commit hash {hashes[0][:12]!r}... after `--branch`, which takes a branch or a tag"
            if hashes
            else " (and `git clone --branch` takes only a branch or a tag: a commit pin would fail there)"
        )
        return (
            f"your command pins {sorted(p.repo for p in outside)} with `{outside[0].via}` and installs what was "
            f"cloned: that pin is outside the install command, where the exercise asks for every pin{refuse}"
        )
    installs = pip_installs(text)
    if not installs:
        return "your text has no install command (pip install, pip3 install or python -m pip install) to read pins from"
    before, args = installs[0]
    if before and not got:  # the reader took no pin from it: it does not start with pip
        return (
            f"your install starts with {' '.join(before)!r}: the checker reads a command that starts with pip, pip3 or "
            "python -m pip, the forms the exercise lists"
        )
    merged = [a for a in args if any(ch.isspace() for ch in a.strip()) and a.count("==") + a.count("git+") > 1]
    if merged:
        word = merged[0] if len(merged[0]) <= 60 else merged[0][:60] + "..."
        return f"the quotes make {word!r} one argument: several pins reach pip as a single word"
    glued = [a for a in args if a.endswith(",") or a.startswith(",")]
    if glued:
        return f"a comma is glued to {glued[0]!r}: the shell splits arguments at blanks only, so it is part of the pin"
    return None


def _pip_mistake(fn: Callable[[StackManifest], object]) -> Callable[[tuple[Any, ...], Any, Any], str | None]:
    def name(args: tuple[Any, ...], got: object, want: set[tuple[str, str]]) -> str | None:
        (manifest,) = args
        if isinstance(got, str) and got.startswith("unparsable"):
            return f"the command does not parse as shell ({got[len('unparsable: ') :]})"
        if not isinstance(got, set):
            return "return the command as one string"
        text = fn(manifest)
        missing, extra = want - got, got - want
        shape = _shape_mistake(text, got, missing) if missing else None
        if shape:
            return shape
        comps = {c.key: c for c in manifest.components}
        # a component's own name where its package's name differs (FLA for flash-linear-attention)
        named = {c.name.lower(): c for c in manifest.components if c.is_pypi and repo_key(f"pypi:{c.name}") != c.key}
        if extra and all(r.startswith("pypi:") and r[5:] in named for r, _ in extra):
            wrote = named[sorted(extra)[0][0][5:]]
            return (
                f"you wrote the component's name {wrote.name!r} where pip needs the package name "
                f"{wrote.key[5:]!r}: a component is named in the manifest, a package on PyPI"
            )
        cut = [(r[5:], e[5:]) for r, _ in missing for e, _ in extra
               if r.startswith("pypi:") and e.startswith("pypi:") and e[5:] != r[5:] and e[5:] in r[5:]]  # fmt: skip
        if cut:
            return (
                f"the package {cut[0][0]!r} came out as {cut[0][1]!r}: your command lost letters of its name along "
                "with the prefix 'pypi:'"
            )
        if missing and all(comps[r].is_pypi for r, _ in missing if r in comps):
            return f"the PyPI packages {sorted(r[5:] for r, _ in missing)} are not pinned to their version"
        if missing and all(not comps[r].is_pypi for r, _ in missing if r in comps):
            if "git+" in text and "@" not in text.split("git+", 1)[1].split()[0]:
                return "a git URL without '@<ref>' installs whatever the default branch holds"
            return "the git repositories are not pinned as pip installs a repository at a ref"
        if missing:
            return f"{len(missing)} component(s) of the manifest are not in the command"
        if extra:
            return f"the command pins {sorted(extra)}, which the manifest does not hold"
        return None

    return name


@checker(
    "8.2",
    library_answers=[render_install_script, manifest_pins],
    where=(
        "the section 'The stack as data' (a component is a PyPI package at a version or a repository at a ref) "
        "and the pins table, which shows the two ways pip pins a thing"
    ),
    method=(
        "Go through the manifest's components once. A PyPI component is pinned by its package name (what follows "
        "the 'pypi:' prefix, not the component's own name) and its version, joined by the equality operator pip "
        "uses; a git component by pip's 'git+' form of its URL with the ref after an at sign. Put every pin after "
        "one install command (pip's own name or python's -m form), separated by spaces."
    ),
    reveals=["git+{c.repo}@{c.ref}", "=={c.ref}"],
)
def check_pip_line(fn: Callable[[StackManifest], str], manifests: Collection[StackManifest] = ()) -> str:
    """Exercise 8.2: pip_line(manifest) is one install command whose pins are exactly the manifest's."""
    extra_cases = [Case((m,), f"the lesson's manifest {m.name!r}") for m in manifests]
    try:
        return compare_on_inputs(
            _pins_of(fn),
            manifest_pins,
            inputs=_manifest_inputs(),
            edge_cases=PIP_CASES + extra_cases,
            mistakes=_pip_mistake(fn),
            name="pip_line",
            max_examples=40,
        )
    except ExerciseFailure as e:  # the call shows the read-back pins; say so
        raise ExerciseFailure(str(e).replace("pip_line(", "the pins of pip_line(", 1)) from None
