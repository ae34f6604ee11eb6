"""Pins as data, and the naming rules a ref must follow (lessons 05, 06 and 08; verl #7604, #7827, #7886).

A `Pin` is one place that pins a repository or package to a ref. Repositories name their release
refs differently: NVIDIA Megatron-LM tags `core_vX.Y.Z` and also keeps `core_rX.Y.Z` release branches, the
Ascend repos branch `core_rX.Y.Z`. `ref_naming_problem` says when a ref is a name its repository never uses
(MindSpeed `core_v0.18.0`); `ref_policy_note` when it is a real but movable release branch where a tag exists
(Megatron-LM `core_r0.18.0`, as #7604 pinned it): a policy question, not a slip.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REF_KINDS: tuple[str, ...] = ("tag", "branch", "commit", "version")
COMMIT_HASH = re.compile(r"^[0-9a-f]{7,40}$")


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
    release_branch: str | None = None  # the repo also keeps release branches named so (movable: a policy matter)


# Repository name (last path component, lower-case) -> how its release refs are named.
NAMING_SCHEMES: dict[str, NamingScheme] = {
    "megatron-lm": NamingScheme("tag", r"core_v\d+\.\d+\.\d+(rc\d+)?", "core_v0.18.0",
                                "NVIDIA Megatron-LM releases are tags core_vX.Y.Z", r"core_r\d+\.\d+\.\d+"),
    "mindspeed": NamingScheme("branch", r"core_r\d+\.\d+\.\d+", "core_r0.18.0",
                              "the course's rule: every Ascend MindSpeed ref it has seen is a branch core_rX.Y.Z"),
    "megatronadaptor": NamingScheme("branch", r"core_r\d+\.\d+\.\d+", "core_r0.18.0",
                                    "the course's rule: every MegatronAdaptor ref it has seen is a branch core_rX.Y.Z"),
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
    pin). With `kind` ('tag'/'branch', e.g. from a manifest) the kind must match the scheme too. The slip
    this catches is a name the repository never uses, such as MindSpeed `core_v0.18.0` where its scheme is
    the branch `core_r0.18.0`. Megatron-LM's `core_r0.18.0` is not a slip: it is a real release branch beside
    the tag `core_v0.18.0`, and pinning a movable branch is a policy question (`ref_policy_note`), the one
    position the course takes in lessons 05, 06 and 08. The rule is about naming: it never asks a server.
    """
    if not isinstance(ref, str) or not ref.strip():
        raise TypeError(f"ref must be a non-empty string, got {ref!r}")
    if kind is not None and kind not in REF_KINDS:
        raise ValueError(f"kind={kind!r} is not allowed; choose one of {', '.join(REF_KINDS)} (or None)")
    name = repo_key(repo).split("/")[-1]
    scheme = NAMING_SCHEMES.get(name)
    if scheme is None or kind == "commit" or (kind is None and COMMIT_HASH.fullmatch(ref)):
        return None
    if scheme.release_branch and kind in (None, "branch") and re.fullmatch(scheme.release_branch, ref):
        return None  # a real release branch (Megatron-LM core_r...): a policy question (ref_policy_note), not a slip
    if not re.fullmatch(scheme.pattern, ref):
        swapped = _swap_rv(ref)
        hint = f"; did you mean {swapped!r}?" if swapped and re.fullmatch(scheme.pattern, swapped) else ""
        return f"{name} ref {ref!r} does not follow its naming scheme ({scheme.why}, e.g. {scheme.example}){hint}"
    if kind is not None and kind != scheme.kind:
        return f"{name} ref {ref!r} is recorded as a {kind}, but {scheme.why}"
    return None


FINDING_KINDS: tuple[str, ...] = ("naming", "policy")


@dataclass(frozen=True)
class RefFinding:
    """What is wrong with one ref: `naming` (breaks the repo's scheme: a slip) or `policy` (a real but
    movable release branch where the repo publishes a tag: a choice the course advises against)."""

    kind: str  # one of FINDING_KINDS
    message: str


def ref_policy_note(repo: str, ref: str) -> str | None:
    """Why pinning `ref` is a policy question, or None: a release branch of a repo that also tags its releases.

    Megatron-LM keeps `core_rX.Y.Z` branches beside its `core_vX.Y.Z` tags; the branch exists and builds,
    but it can move after the release. Preferring the tag is the course's advice, not a naming error.
    """
    if not isinstance(ref, str) or not ref.strip():
        raise TypeError(f"ref must be a non-empty string, got {ref!r}")
    scheme = NAMING_SCHEMES.get(repo_key(repo).split("/")[-1])
    if scheme is None or scheme.release_branch is None or not re.fullmatch(scheme.release_branch, ref):
        return None
    tag = _swap_rv(ref)
    return (
        f"{repo_key(repo).split('/')[-1]} ref {ref!r} is a release branch, which can move after the release;"
        f" prefer the tag {tag!r} (policy, not a naming slip)"
    )


def ref_finding(repo: str, ref: str, kind: str | None = None) -> RefFinding | None:
    """`ref_policy_note` as a `policy` finding, else `ref_naming_problem` as a `naming` finding, else None."""
    note = None if kind in ("tag", "commit") else ref_policy_note(repo, ref)
    if note is not None:
        return RefFinding("policy", note)
    problem = ref_naming_problem(repo, ref, kind)
    return RefFinding("naming", problem) if problem else None
