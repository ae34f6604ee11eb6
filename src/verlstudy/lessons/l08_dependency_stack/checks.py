"""Exercise checkers and reference answers for lesson 08 (judged by property: `verlstudy.kit.properties`).

8.1 asks what a pin *is* (a tag, a branch that can move, a commit, nothing at all), decided from the refs a
repository really has, never from the letters of its name. 8.2 asks for one `pip install` command pinning a
manifest. A wrong answer's message names the mistake; where to look and the method come on later tries.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Collection
from typing import Any

from verlstudy.common.refs import COMMIT_HASH
from verlstudy.kit import i18n
from verlstudy.kit.exercises import checker
from verlstudy.kit.properties import Case, compare_on_inputs
from verlstudy.lessons.l08_dependency_stack.check_pip_line import check_pip_line

__all__ = ["check_pin_policy", "check_pip_line"]  # importing this module registers both checkers

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
_HEX = "0123456789abcdef"
# how real repositories name refs: Megatron-LM (core_r/core_v), vllm-ascend (releases/vX, vX.rcN), PyPI-style
# tags (v1.2.3, 1.2.3.post1), release branches (release-1.2, release/1.2), and words (main, dev, HEAD-like names)
_PREFIXES = ("", "v", "core_r", "core_v", "release-", "release/", "releases/v", "r", "V")
_SUFFIXES = ("", "rc1", "-rc1", ".rc2", ".post1", "-beta", "+build.7", ".dev0")
_WORDS = ("main", "master", "dev", "develop", "stable", "nightly", "gh-pages", "feature/thd", "fix_offload")


def _ref_names() -> Any:
    """Ref names as real repositories spell them, hex-looking ones included."""
    from hypothesis import strategies as st

    version = st.lists(st.integers(0, 30), min_size=1, max_size=3).map(lambda ns: ".".join(map(str, ns)))
    scheme = st.tuples(st.sampled_from(_PREFIXES), version, st.sampled_from(_SUFFIXES)).map("".join)
    hexname = st.text(_HEX, min_size=7, max_size=12)  # a tag or branch named like a short hash
    return st.one_of(scheme, st.sampled_from(_WORDS + _NAMES), hexname)


def _near(name: str, pick: int) -> str:
    """A ref the repository does not hold though it resembles `name`: what a loose comparison takes for it."""
    cut = max(1, len(name) // 2)
    variants = (
        name[:-1] or name + "x",  # a prefix
        name[1:] or "x" + name,  # a suffix (the tail of 'core_v0.18.0' is 'v0.18.0'-like)
        name[1:-1] or name + name,  # inside it
        name.upper() if name.upper() != name else name.title() + "X",  # another case
        " " + name,
        name + "\n",
        name + " ",
        "origin/" + name,  # a remote-tracking name: `git clone --branch` does not take it
        name + "^{}",
        name.split("/")[-1] if "/" in name else name + "/" + name[:cut],  # the last part of a path
        name + "," + name,
    )
    return variants[pick % len(variants)]


def _hash_like() -> Any:
    """Lower-case hashes of 7..40 digits, and refs that look like one and are not."""
    from hypothesis import strategies as st

    hexes = st.one_of(st.text(_HEX, min_size=7, max_size=40), st.sampled_from([7, 8, 10, 12, 40]).flatmap(
        lambda n: st.text(_HEX, min_size=n, max_size=n)))  # fmt: skip
    near = st.one_of(
        st.text(_HEX, min_size=1, max_size=6),
        st.text(_HEX, min_size=41, max_size=64),  # 64: a SHA-256 object name, which this contract does not take
        st.text("0123456789ABCDEF", min_size=7, max_size=40).filter(lambda r: r != r.lower()),
        hexes.map(lambda r: r[:-1] + r[-1].upper() if r[-1].isalpha() else r + "A"),  # one capital
        hexes.map(lambda r: "0x" + r[:38]),
        hexes.map(lambda r: r[:4] + "_" + r[4:]),
        hexes.map(lambda r: "+" + r[:39]),
        hexes.map(lambda r: "-" + r[:39]),
        st.tuples(hexes, st.text("ghxyz", min_size=1, max_size=3)).map(lambda t: t[0][:38] + t[1]),
        st.text("0123456789abcdefghijklmnopqrstuvwxyz", min_size=7, max_size=12),
        st.tuples(hexes, st.sampled_from(["\n", " ", "\t", "\r\n"]), st.booleans()).map(
            lambda t: t[1] + t[0] if t[2] else t[0] + t[1]
        ),  # a hash read from a file or a form with its blanks
        hexes.map(lambda r: r[:3] + " " + r[3:]),
        st.text("٠١٢٣٤٥٦٧٨٩", min_size=7, max_size=12),  # digits that str.isdigit takes, not hex
    )
    return hexes, near


def _collection(names: list[str], kind: int) -> Any:
    """The names in one of the collections the exercise allows: a list, a tuple, a set, a frozenset, a deque."""
    return (list, tuple, set, frozenset, deque)[kind](names)


def _policy_inputs() -> Any:
    from hypothesis import strategies as st

    hexes, near = _hash_like()
    names = st.lists(st.one_of(_ref_names(), hexes), unique=True, max_size=8)
    free_ref = st.one_of(hexes, near, st.sampled_from([None, "", " ", "\n"]), _ref_names())
    # (names, which are tags, the two containers, a free ref, how the ref is chosen, which name, which resemblance)
    drawn = st.tuples(names, st.integers(0, 255), st.integers(0, 4), st.integers(0, 4), free_ref,
                      st.integers(0, 3), st.integers(0, 7), st.integers(0, 11))  # fmt: skip

    def build(t: tuple[Any, ...]) -> tuple[Any, Any, Any]:
        held, flags, tag_kind, branch_kind, free, how, which, pick = t
        tags = [n for i, n in enumerate(held) if flags >> i & 1]
        branches = [n for i, n in enumerate(held) if not flags >> i & 1]
        name = held[which % len(held)] if held else None
        # a ref the repository holds, or one resembling such a name, half the time; a free one otherwise
        ref = free if name is None or how < 2 else name if how == 2 else _near(name, pick)
        return ref, _collection(tags, tag_kind), _collection(branches, branch_kind)

    return drawn.map(build)


def _swept_cases(seed: int = 8) -> list[Case]:
    """Every way a ref can resemble a name the repository holds, and every kind of near-hash, each tried on one
    repository drawn at random (seeded): a sweep, so no kind depends on what the random draws happen to reach."""
    rng = random.Random(seed)
    words = [*_WORDS, *_NAMES]
    cases: list[Case] = []
    for pick in range(12):
        version = f"{rng.choice(_PREFIXES)}{rng.randint(0, 30)}.{rng.randint(0, 9)}"
        names = list(dict.fromkeys([*rng.sample(words, 5), version]))
        held = rng.choice(names)
        others = [n for n in names if n != held]
        flags = [rng.random() < 0.5 for _ in others]
        tags = [n for n, f in zip(others, flags, strict=True) if f]
        branches = [n for n, f in zip(others, flags, strict=True) if not f]
        (tags if pick % 2 else branches).append(held)
        kinds = (list, tuple, set, frozenset, deque)
        ref = _near(held, pick)
        named = i18n.pick("generated: {ref}", ref=repr(ref))  # built per check: in the learner's language
        cases.append(Case((ref, kinds[pick % 5](tags), kinds[(pick + 2) % 5](branches)), named))
    digits = "".join(rng.choice(_HEX) for _ in range(64))
    hashes = [digits[:n] for n in (7, 8, 9, 11, 12, 20, 39, 40)]
    near_hashes = [digits[:n] for n in (1, 5, 6, 41, 64)] + [
        digits[:10].upper(), digits[:9] + "A", "0x" + digits[:10], digits[:4] + "_" + digits[4:12], "+" + digits[:9],
        "-" + digits[:9], " " + digits[:9], digits[:9] + " ", digits[:9] + "\t", "\n" + digits[:9],
        digits[:3] + " " + digits[3:10], "٠١٢٣٤٥٦٧", digits[:9] + "g", "\t", " ",
    ]  # fmt: skip
    for i, ref in enumerate(hashes + near_hashes):
        named = i18n.pick("generated: {ref}", ref=repr(ref))
        cases.append(Case((ref, (), deque(rng.sample(words, 2))) if i % 2 else (ref, set(), []), named))
    return cases


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
    shown = repr(ref)
    if not isinstance(got, str) or got not in POLICIES:
        return i18n.pick("return one of the words {words}", words=", ".join(repr(p) for p in POLICIES))
    if want == "missing" and got == "commit" and isinstance(ref, str):
        return _not_a_hash(ref)
    if want == "branch" and got == "commit":
        return i18n.pick(
            "{ref} is in the repository's branches: a name the repository has is that branch, however much it looks "
            "like a hash; only a ref in neither list can be a commit",
            ref=shown,
        )
    if want == "tag" and got == "commit":
        return i18n.pick(
            "{ref} is in the repository's tags: a name the repository has is that tag, however much it looks like a "
            "hash; only a ref in neither list can be a commit",
            ref=shown,
        )
    if want == "unpinned":
        return i18n._("no ref at all (None or an empty string) means the clone takes whatever the default branch holds")
    if want == "missing" and got == "unpinned":
        if not ref.strip():
            return i18n.pick(
                "{ref} is blank, not empty: only None or '' mean no ref; a blank is a ref nobody has", ref=shown
            )
        return i18n.pick("{ref} is a ref, so the pin is not empty; it is one the repository does not have", ref=shown)
    if want == "missing" and got in ("tag", "branch"):
        return _loose_match(ref, [*tags, *branches])
    name_says = "tag" if ref.startswith(("core_v", "v")) else "branch" if ref.startswith("core_r") else None
    if got == name_says and got != want:
        return i18n._(
            "you decided by the letters of the name; what it is depends on which list of the repository holds it"
        )
    if want == "commit":
        return i18n.pick("{ref} is a commit hash: hashes of 7 to 40 hex digits count, short ones too", ref=shown)
    if want == "branch":
        return i18n.pick("{ref} is in the repository's branches: is the branches argument read?", ref=shown)
    if want == "tag":
        return i18n.pick("{ref} is in the repository's tags", ref=shown)
    return None


def _loose_match(ref: str, names: list[str]) -> str:
    """Why a ref the repository does not hold was taken for one it holds."""
    shown = repr(ref)
    if any(n.lower() == ref.lower() for n in names):
        return i18n.pick(
            "{ref} differs from a name the repository has only in case: git's ref names are case-sensitive", ref=shown
        )
    if any(n == ref.strip() for n in names):
        return i18n.pick(
            "{ref} has blanks around a name the repository has: the ref is the whole string, blanks included",
            ref=shown,
        )
    longer = [n for n in names if n.startswith(ref)]
    if longer:
        return i18n.pick(
            "{ref} is not in either list, though {name} starts with it: compare whole names",
            ref=shown,
            name=repr(longer[0]),
        )
    near = [n for n in names if n in ref or ref in n]
    if near:
        return i18n.pick(
            "{ref} is not in either list, though it and {name} share letters: compare whole names",
            ref=shown,
            name=repr(near[0]),
        )
    return i18n.pick(
        "{ref} is in neither list: a ref is a tag or a branch only when one of the lists holds it exactly", ref=shown
    )


def _not_a_hash(ref: str) -> str:
    """Why `ref` is not a commit hash, in words."""
    shown = repr(ref)
    if ref != ref.lower() and all(ch in "0123456789abcdef" for ch in ref.lower()):
        return i18n.pick(
            "{ref} has upper-case letters: git writes a hash in lower-case hex digits, as the text asks", ref=shown
        )
    odd = sorted({ch for ch in ref if ch not in "0123456789abcdef"})
    if odd == ["\n"] and ref.endswith("\n") and ref.count("\n") == 1:
        return i18n.pick(
            "{ref} ends with a newline, and your hash test let it through: the newline is a character of the ref too "
            "(a regex's `$` also matches just before a final newline)",
            ref=shown,
        )
    if odd:
        return i18n.pick(
            "{ref} holds characters that are not hex digits ({characters}): every character of a hash is one of 0-9 "
            "and a-f (no 0x, no underscore, nothing after the digits)",
            ref=shown,
            characters=", ".join(map(repr, odd)),
        )
    if len(ref) < 7:
        return i18n.pick(
            "{ref} has {n} hex digits: a hash has 7 to 40 of them, so it is too short", ref=shown, n=len(ref)
        )
    return i18n.pick("{ref} has {n} hex digits: a hash has 7 to 40 of them, so it is too long", ref=shown, n=len(ref))


@checker(
    "8.1",
    library_answers=[_reference_policy],
    where=(
        "the paragraph under 'Predict first: exercise 8.1' and the section 'Before and after: upstream's real "
        "files, side by side': Megatron-LM has both a release branch and a release tag for one version, and the "
        "after-files clone three repositories with no ref at all"
    ),
    question=(
        "A ref is a name the repository holds, or a commit it can resolve, or neither. Which of the two lists you "
        "are given would hold core_r0.18.0, which core_v0.18.0, and what is left to decide for a ref in neither? "
        "And what tells you that a ref was never set at all?"
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
    """Exercise 8.1: `pin_policy(ref, tags, branches)` says what a pin is, from the repository's own refs.

    Contract. Returns one `str` (the lesson asks for a word, so the type is checked): "unpinned" for `None` or ""
    (only those: a blank is a ref), "tag" or "branch" when that collection holds the ref as a whole name, exactly
    (case and blanks count; a name is never in both), "commit" for a ref in neither that is 7 to 40 lower-case hex
    digits and nothing else (no sign, 0x, blanks, line end, other scripts' digits, SHA-256's 64), "missing"
    otherwise. `tags` and `branches` are any collections (list, tuple, set, frozenset, deque; each its own kind)
    and are left as they were.

    Domain: refs named as real repositories name them (Megatron-LM's core_r/core_v, vllm-ascend's releases/v...,
    v1.2.3 with rc/post/dev/build suffixes, main, feature/..., names of hex digits), refs resembling a held name
    (a prefix, a suffix, inside it, another case, blanks, origin/, ^{}, the last part of a path), hashes of every
    length 7..40 and near-hashes; a sweep of every resemblance and near-hash kind (seeded), then random draws.
    """
    return compare_on_inputs(
        fn,
        _reference_policy,
        inputs=_policy_inputs(),
        edge_cases=POLICY_CASES + _swept_cases(),
        mistakes=_policy_mistake,
        name="pin_policy",
        strict_types=True,
    )
