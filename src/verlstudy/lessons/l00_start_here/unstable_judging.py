"""How exercise 0.2 is judged: lines built from the six kinds in every form the exercise allows, and a wrong
result named by probing the learner's function on the fragment it got wrong.

A line is stable words, look-alikes that are stable (short hex, "3 steps", "10 users", a host without its port)
and fragments of the six kinds, each in a context the exercise makes unambiguous: after a space, `(`, `[` or
`=`, before a space, `)`, `]`, `,`, `;` or `.` (a path, whose end the exercise leaves open, only ever before a
space or the end of the line). Fragments repeat sometimes; a set may drop the repeat, a list may not add one.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from verlstudy.kit import i18n

# The six kinds in the forms the exercise states (the reference is their every match)
KINDS = {
    "memory address": r"0x[0-9a-fA-F]{6,}",
    "duration": r"\b\d+(?:\.\d+)?\s?(?:s|ms|us)\b",
    "date": r"\b\d{4}-\d\d-\d\d(?:T\d\d:\d\d)?",
    "temporary path": r"/tmp/[\w./-]+",
    "process id": r"\bpid \d+",
    "local port": r"(?:127\.0\.0\.1|localhost):\d+",
}

STABLE_WORDS = (
    "loss", "0.3125", "after", "3", "steps", "epoch", "rank", "retained", "4096", "bytes", "per", "micro-batch",
    "took", "saved", "to", "at", "listening", "on", "v0.9.1", "layer.7", "tmp", "pid-file", "step", "of", "ok",
)  # fmt: skip
BEFORE = ("", "(", "[", "=")
AFTER = ("", ")", "]", ",", ";", ".")


def kind_of(fragment: str) -> str | None:
    """The kind whose form `fragment` has, whole (None: none of the six)."""
    return next((kind for kind, form in KINDS.items() if re.fullmatch(form, fragment)), None)


def _by_kind() -> dict[str, Any]:
    """One strategy per kind, spanning the forms the exercise allows."""
    from hypothesis import strategies as st

    # 12 digits as Linux prints a user-space address, 16 as a padded 64-bit one, and every length between
    width = st.one_of(st.sampled_from([12, 16]), st.integers(6, 16))
    hexes = width.flatmap(lambda k: st.text("0123456789abcdefABCDEF", min_size=k, max_size=k))
    number = st.tuples(st.integers(0, 99999), st.sampled_from(["", ".5", ".42", ".0625"])).map(
        lambda p: f"{p[0]}{p[1]}"
    )
    segment = st.text("abcxyz019_.-", min_size=1, max_size=6).filter(lambda t: t[0] not in ".-")
    minute = st.tuples(st.booleans(), st.integers(0, 1439)).map(lambda t: t[1] if t[0] else None)
    return {
        "memory address": hexes.map(lambda h: "0x" + h),
        "duration": st.tuples(number, st.sampled_from(["", " "]), st.sampled_from(["s", "ms", "us"])).map("".join),
        "date": st.tuples(st.integers(1990, 2099), st.integers(1, 12), st.integers(1, 28), minute).map(
            lambda d: f"{d[0]}-{d[1]:02d}-{d[2]:02d}" + ("" if d[3] is None else f"T{d[3] // 60:02d}:{d[3] % 60:02d}")
        ),
        "temporary path": st.lists(segment, min_size=1, max_size=3).map(lambda p: "/tmp/" + "/".join(p)),
        "process id": st.integers(0, 4194304).map(lambda d: f"pid {d}"),
        "local port": st.tuples(st.sampled_from(["127.0.0.1", "localhost"]), st.integers(1, 65535)).map(
            lambda h: f"{h[0]}:{h[1]}"
        ),
    }


def _fragments() -> Any:
    from hypothesis import strategies as st

    return st.one_of(*_by_kind().values())


def _look_alikes() -> Any:
    """Stable text that resembles a fragment: the exercise's forms say it is not one."""
    from hypothesis import strategies as st

    return st.one_of(
        st.text("0123456789abcdef", min_size=1, max_size=5).map(lambda h: "0x" + h),
        st.tuples(st.integers(0, 999), st.sampled_from(["steps", "samples", "users", "msgs", "shards"])).map(
            lambda p: f"{p[0]} {p[1]}"
        ),
        st.sampled_from(["127.0.0.1", "localhost", "2026", "12-02", "v2.1.0", "/tmpfs", "rank:3"]),
    )


def _item() -> Any:
    from hypothesis import strategies as st

    fragment = st.tuples(_fragments(), st.sampled_from(BEFORE), st.sampled_from(AFTER)).map(
        lambda f: f[0] if f[0].startswith("/tmp/") else f"{f[1]}{f[0]}{f[2]}"
    )
    return st.one_of(st.sampled_from(STABLE_WORDS), _look_alikes(), fragment)


def line_inputs() -> Any:
    """Lines of up to 9 items, two of them fragments of one kind (sometimes one fragment twice).

    Each is a 1-tuple, the learner's one argument.
    """
    from hypothesis import strategies as st

    items = st.lists(_item(), max_size=7)
    # every line holds two fragments of one kind (a second match of a kind is never missing from the draw)
    pair = st.sampled_from(sorted(KINDS)).flatmap(lambda kind: st.lists(_by_kind()[kind], min_size=2, max_size=2))
    doubled = _fragments().filter(lambda f: not f.startswith("/tmp/")).map(lambda f: [f, f])
    lines = st.tuples(st.one_of(pair, pair, doubled), items, st.integers(0, 7)).map(
        lambda p: [*p[1][: p[2]], p[0][0], *p[1][p[2] :], p[0][1]]
    )
    return lines.map(lambda words: (" ".join(words),))


# ---------------------------------------------------------------- comparing and naming


def as_found(fn: Callable[[str], object], reference: Callable[[str], list[str]]) -> Callable[[str], object]:
    """The learner's result read as the reference reads it: any order; a set (or a list without repeats) may
    name a repeated fragment once, but no fragment may be named more often than it occurs."""

    def run(text: str) -> object:
        got = fn(text)
        if not isinstance(got, (list, tuple, set, frozenset)) or not all(isinstance(g, str) for g in got):
            return got
        want = reference(text)
        items = list(got)
        if set(items) == set(want) and (len(set(items)) == len(items) or Counter(items) == Counter(want)):
            return sorted(want)
        return sorted(items)

    run.__name__ = getattr(fn, "__name__", "find_unstable")
    return run


# how a duration reads, by (with decimals, with a space before the unit): whole phrases, for translation
_DURATION_WORDS = {
    (False, False): "a duration in {unit}, with no space before the unit",
    (False, True): "a duration in {unit}, with a space before the unit",
    (True, False): "a duration in {unit}, with decimals, with no space before the unit",
    (True, True): "a duration in {unit}, with decimals, with a space before the unit",
}
_UNIT_WORDS = {"s": "seconds", "ms": "milliseconds", "us": "microseconds"}
_A_KIND = {"temporary path": "a temporary path", "process id": "a process id"}  # named by their kind alone


def _feature(fragment: str) -> str:
    """What sets this fragment apart within its kind, in words."""
    kind = kind_of(fragment)
    if kind == "memory address" and any(c in "ABCDEF" for c in fragment):
        return i18n.pick("an address of {digits} hex digits with uppercase hex digits", digits=len(fragment) - 2)
    if kind == "memory address":
        return i18n.pick("an address of {digits} hex digits", digits=len(fragment) - 2)
    if kind == "duration":
        unit = re.search(r"(ms|us|s)$", fragment).group(1)  # type: ignore[union-attr]
        words = _DURATION_WORDS["." in fragment, " " in fragment]
        return i18n.pick(words, unit=i18n._(_UNIT_WORDS[unit]))
    if kind == "date":
        return i18n._("a date with a time (THH:MM)") if "T" in fragment else i18n._("a date")
    if kind == "local port":
        host, digits = fragment.split(":")
        if len(digits) > 1:
            return i18n.pick("a local port on {host} ({count} digits)", host=host, count=len(digits))
        return i18n.pick("a local port on {host} ({count} digit)", host=host, count=len(digits))
    return i18n._(_A_KIND.get(str(kind), "a changing fragment"))


def _contexts(text: str, fragment: str) -> tuple[str, str]:
    """The characters right before and after `fragment` in `text`, where they are not spaces."""
    at = text.find(fragment)
    before, after = text[at - 1 : at] if at > 0 else "", text[at + len(fragment) : at + len(fragment) + 1]
    return before.strip(), after.strip()


def mistake_namer(fn: Callable[[str], object]) -> Callable[[tuple[Any, ...], Any, Any], str | None]:
    """Names what a wrong result shows, probing `fn` on the fragment it got wrong (never the regex)."""

    def found(text: str) -> list[str]:
        try:
            got = fn(text)
        except Exception:
            return []
        return [g for g in got if isinstance(g, str)] if isinstance(got, (list, tuple, set, frozenset)) else []

    def name(args: tuple[Any, ...], got: Any, want: list[str]) -> str | None:
        (text,) = args
        if not isinstance(got, (list, tuple, set, frozenset)):
            return i18n._("return a list of the fragments (strings)")
        if not all(isinstance(g, str) for g in got):
            return i18n._("return each fragment as one string (the whole match), not a group or a match object")
        extra = [g for g in got if g not in want]
        missing = [w for w in want if w not in got]
        for g in extra:
            for w in missing:
                if g.strip().lower() == w.lower():
                    return i18n.pick(
                        "{got} where the line has {want}: return each fragment exactly as it stands in the line",
                        got=repr(g),
                        want=repr(w),
                    )
                if g in w:
                    return i18n.pick(
                        "{got} is only part of the changing fragment {want}: match the whole fragment",
                        got=repr(g),
                        want=repr(w),
                    )
                if w in g:
                    return i18n.pick(
                        "{got} holds more than the changing fragment {want}: match it and nothing around it",
                        got=repr(g),
                        want=repr(w),
                    )
        if extra:
            g = extra[0]
            if re.fullmatch(r"0x[0-9a-fA-F]{1,5}", g):
                return i18n.pick(
                    "{got} has fewer than 6 hex digits: the exercise's addresses have at least 6, this is stable",
                    got=repr(g),
                )
            near = re.search(r"\d+(?:\.\d+)?\s?(?:s|ms|us)(?=[a-z])", text)
            if near and g in near.group(0) + text[near.end() : near.end() + 10]:
                word = re.match(r"\S+\s?\S*", text[near.start() :]).group(0)  # type: ignore[union-attr]
                return i18n.pick(
                    "{got} comes from {word}, a stable count: a unit is a whole word, not the start of one",
                    got=repr(g),
                    word=repr(word),
                )
            return i18n.pick("{extra} is stable text (the same every run), not something that changes", extra=extra)
        counts_got, counts_want = Counter(got), Counter(want)
        if not missing:
            twice = [g for g in counts_got if counts_got[g] > counts_want[g]]
            if not twice:
                return None
            return i18n.pick("{got} is named more times than it occurs in the line", got=repr(twice[0]))
        w = missing[0]
        alone = found(w)
        if w not in alone and any(a != w and a.strip().lower() == w.lower() for a in alone):
            return i18n.pick(
                "you return {want} changed: return each fragment exactly as it stands in the line", want=repr(w)
            )
        if w not in alone:
            return i18n.pick(
                "you missed {want}, {feature}, which changes between runs", want=repr(w), feature=_feature(w)
            )
        same = [f for f in got if kind_of(f) == kind_of(w) and f != w]
        if same and w not in found(f"{same[0]} ; {w}"):
            return i18n.pick(
                "you missed {want}, a second {kind} in the line after {first}: is only the first match of each kind "
                "kept?",
                want=repr(w),
                kind=i18n._(str(kind_of(w))),
                first=repr(same[0]),
            )
        others = [f for f in got if f != w]
        if others and w not in found(f"{others[0]} ; {w}"):
            return i18n.pick(
                "you missed {want}, found alone but not after {first} in one line: is only the first fragment of a "
                "line kept?",
                want=repr(w),
                first=repr(others[0]),
            )
        before, after = _contexts(text, w)
        if w not in found(f"x {w} y"):
            return i18n.pick(
                "you missed {want}, {feature}, when words stand around it", want=repr(w), feature=_feature(w)
            )
        if before or after:
            return i18n.pick(_STANDS[bool(before), bool(after)], want=repr(w), before=repr(before), after=repr(after))
        return i18n.pick("you missed {want}, {feature}, which changes between runs", want=repr(w), feature=_feature(w))

    return name


# a fragment missed with punctuation around it, by (something right before it, something right after it)
_STANDS = {
    (True, False): "you missed {want} where it stands right after {before}: the fragment is the same with punctuation "
    "around it",
    (False, True): "you missed {want} where it stands right before {after}: the fragment is the same with punctuation "
    "around it",
    (True, True): "you missed {want} where it stands right after {before} and right before {after}: the fragment is "
    "the same with punctuation around it",
}
