"""Exercise checkers for lesson 00 (reached through check_exercise("0.N", answer)).

Both judge by property (`verlstudy.kit.properties`): the learner's function against the reference on named
edge cases, then on generated inputs; a wrong result's message names the mistake it shows.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import torch

from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.kit.hygiene import sanitize, unstable_fragments
from verlstudy.kit.properties import Case, compare_on_inputs

# ---------------------------------------------------------------- 0.1 seeded_sample


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _reference_sample(seed: int, n: int) -> torch.Tensor:
    return torch.randn(n, generator=_generator(seed))


def _sample_inputs() -> Any:
    from hypothesis import strategies as st

    return st.tuples(st.integers(0, 2**32 - 1), st.integers(1, 40))


SAMPLE_CASES = [
    Case((7, 5), "the notebook's own example"),
    Case((7, 5), "the same call again: the same seed must give the same numbers"),
    Case((0, 1), "one draw, seed 0"),
    Case((123456, 17), "a longer sample: 17 draws"),
    Case((2**32 - 1, 3), "the largest seed"),
]


def _sample_mistake(fn: Callable[[int, int], object]) -> Callable[[tuple[Any, ...], Any, Any], str | None]:
    def name(args: tuple[Any, ...], got: object, want: torch.Tensor) -> str | None:
        seed, n = args
        if type(got).__module__ == "numpy":
            return "that is numpy's random generator: the exercise asks for the draws torch makes from this seed"
        if isinstance(got, (list, tuple)) and not isinstance(got, torch.Tensor):
            return "a Python list (Python's random module?): the exercise asks for a torch tensor of torch's draws"
        if not isinstance(got, torch.Tensor):
            return "return a torch tensor"
        if got.dim() != 1 or got.shape[0] != n:
            return f"the sample has shape {tuple(got.shape)}: is the parameter n (here {n}) used?"
        if _numpy_draws(seed, n, got):
            return (
                "those are numpy's draws for this seed, wrapped in a tensor: the exercise asks for the draws torch "
                "makes from this seed"
            )
        if got.dtype != want.dtype:
            return f"the draws are {got.dtype}: torch's default float32 is asked"
        if torch.equal(got, torch.rand(n, generator=_generator(seed))):
            return "these are uniform draws in [0, 1): standard-normal draws are asked"
        try:
            first, again, other = fn(seed, n), fn(seed, n), fn((seed + 1) % 2**32, n)
        except Exception:
            return None
        if isinstance(again, torch.Tensor) and not torch.equal(first, again):
            return (
                "two calls with the same seed gave different numbers: each call must start from the seed, not from "
                "where a generator kept from an earlier call (or the global one) left off"
            )
        if isinstance(other, torch.Tensor) and torch.equal(got, other):
            return "two different seeds gave the same numbers: the seed parameter is not used"
        return "other numbers than torch's generator seeded with this seed draws: which seed, which generator?"

    return name


def _numpy_draws(seed: int, n: int, got: torch.Tensor) -> bool:
    """Whether `got` holds numpy's standard-normal draws for `seed` (its new Generator or its legacy RandomState)."""
    import numpy as np

    if not got.is_floating_point():
        return False
    values = got.detach().double()
    for draws in (np.random.default_rng(seed).standard_normal(n), np.random.RandomState(seed).standard_normal(n)):
        if torch.allclose(values, torch.from_numpy(draws), rtol=1e-5, atol=1e-6):
            return True
    return False


@checker(
    "0.1",
    where=(
        "the section 'Why seeding matters': the global random stream is shared by every cell, and torch can also "
        "make a generator of your own that nothing else draws from"
    ),
    method=(
        "Make a fresh random generator object that belongs to this call only, seed it with the seed you are given, "
        "and ask torch for n standard-normal numbers drawn from that object rather than from the global stream. "
        "Nothing global is seeded or drawn from, so the other cells see the same stream as before."
    ),
    reveals=["torch.Generator", "generator=generator"],
)
def check_seeded_sample(seeded_sample: Callable[[int, int], torch.Tensor]) -> str:
    """Exercise 0.1: seeded_sample(seed, n) gives torch's draws for `seed` and leaves the global RNG alone."""
    moved: list[tuple[int, int]] = []

    def watched(seed: int, n: int) -> object:
        before = torch.get_rng_state()
        try:
            return seeded_sample(seed, n)
        finally:
            if not torch.equal(before, torch.get_rng_state()):
                moved.append((seed, n))
            torch.set_rng_state(before)  # the checker itself leaves the learner's stream as it was

    watched.__name__ = "seeded_sample"
    summary = compare_on_inputs(
        watched,
        _reference_sample,
        inputs=_sample_inputs(),
        edge_cases=SAMPLE_CASES,
        mistakes=_sample_mistake(seeded_sample),
        name="seeded_sample",
        rtol=0.0,
        atol=0.0,
        max_examples=40,
    )
    if moved:
        seed, n = moved[0]
        raise ExerciseFailure(
            f"seeded_sample({seed}, {n}) gives the right numbers but moved the global RNG: sampling here changes "
            "what every later cell draws"
        )
    return summary


# ---------------------------------------------------------------- 0.2 find_unstable

# Stable words: none of them is, or starts, a fragment that changes run to run ("3 steps" is not a timing)
STABLE_WORDS = (
    "loss",
    "0.3125",
    "after",
    "3",
    "steps",
    "epoch",
    "rank",
    "retained",
    "4096",
    "bytes",
    "per",
    "micro-batch",
    "took",
    "saved",
    "to",
    "at",
    "listening",
    "on",
    "v0.9.1",
    "layer.7",
)

UNSTABLE_FORMS = (
    r"0x[0-9a-fA-F]{6,}",
    r"\b\d+(?:\.\d+)?\s?(?:s|ms|us)\b",
    r"\b\d{4}-\d\d-\d\d(?:T\d\d:\d\d)?",
    r"/tmp/[\w./-]+",
    r"\bpid \d+",
    r"(?:127\.0\.0\.1|localhost):\d+",
)


def _reference_unstable(text: str) -> list[str]:
    return sorted(m.group(0) for form in UNSTABLE_FORMS for m in re.finditer(form, text))


def _fragments() -> Any:
    from hypothesis import strategies as st

    digits = st.integers(0, 99999).map(str)
    hexes = st.text("0123456789abcdefABCDEF", min_size=6, max_size=16)
    path = st.lists(st.text("abcxyz019_", min_size=1, max_size=5), min_size=1, max_size=3).map("/".join)
    return st.one_of(
        hexes.map(lambda h: "0x" + h),
        st.tuples(
            digits, st.sampled_from(["", ".42", ".5"]), st.sampled_from([" ", ""]), st.sampled_from(["s", "ms", "us"])
        ).map("".join),
        st.tuples(st.integers(1990, 2099), st.integers(1, 12), st.integers(1, 28), st.booleans()).map(
            lambda d: f"{d[0]}-{d[1]:02d}-{d[2]:02d}" + ("T18:31" if d[3] else "")
        ),
        path.map(lambda p: "/tmp/" + p),
        digits.map(lambda d: "pid " + d),
        st.tuples(st.sampled_from(["127.0.0.1", "localhost"]), st.integers(1, 65535)).map(lambda h: f"{h[0]}:{h[1]}"),
    )


def _text_inputs() -> Any:
    from hypothesis import strategies as st

    pieces = st.lists(st.one_of(st.sampled_from(STABLE_WORDS), _fragments()), max_size=10, unique=True)
    return pieces.map(lambda words: (" ".join(words),))


UNSTABLE_CASES = [
    Case(("",), "an empty line"),
    Case(("loss 0.3125 after 3 steps",), "stable text with numbers in it: nothing changes here"),
    Case(("retained 4096 bytes per micro-batch",), "more stable numbers"),
    Case(("<Tensor at 0x7f3a2b1c9d40>",), "a memory address"),
    Case(("buffer at 0x7F00DEADBEEF",), "a memory address in uppercase hex"),
    Case(("tensor at 0x00007f3a2b1c9d40",), "a 16-digit address, as some platforms print it"),
    Case(("epoch 3 took 1.25 s",), "a timing after a stable number"),
    Case(("step 1 took 12 ms, step 2 took 9 ms, step 3 took 700 us",), "three timings in one line: every match"),
    Case(("saved to /tmp/tmpab12cd/model.pt at 2026-12-02T18:31",), "a path and a date with a time"),
    Case(("rank 0 listening on 127.0.0.1:29500 (pid 4242)",), "a port and a process id"),
    Case(("localhost:8888 and localhost:8889",), "two ports, the second too"),
]


def _sorted_result(fn: Callable[[str], object]) -> Callable[[str], object]:
    def run(text: str) -> object:
        got = fn(text)
        if isinstance(got, (list, tuple, set, frozenset)) and all(isinstance(g, str) for g in got):
            return sorted(got)
        return got

    run.__name__ = getattr(fn, "__name__", "find_unstable")
    return run


def _unstable_mistake(args: tuple[Any, ...], got: object, want: list[str]) -> str | None:
    if not isinstance(got, (list, tuple)):
        return "return a list of the fragments (strings)"
    if not all(isinstance(g, str) for g in got):
        return "return each fragment as one string (the whole match), not a group or a match object"
    extra = [g for g in got if g not in want]
    missing = [w for w in want if w not in got]
    part = [(g, w) for g in extra for w in missing if g in w]
    if part:
        return f"{part[0][0]!r} is only part of the changing fragment {part[0][1]!r}: match the whole fragment"
    if extra and not sanitize(" ".join(extra)).count("<"):
        return f"{extra} is stable text (the same every run), not something that changes"
    if extra:
        return f"{extra} is not exactly a changing fragment: match the whole fragment and nothing around it"
    if any(re.fullmatch(r"0x[0-9a-fA-F]*[A-F][0-9a-fA-F]*", w) for w in missing):
        return f"you missed {missing}: hex digits may be written in uppercase (A-F) too"
    kinds_seen = {k for k, f in unstable_fragments(" ".join(got))}
    if missing and any(k in kinds_seen for k, f in unstable_fragments(" ".join(missing))):
        return f"you missed {missing}, another fragment of a kind you found: is only the first match kept?"
    if missing:
        return f"you missed {missing}, which changes between runs"
    return None


@checker(
    "0.2",
    library_answers=[unstable_fragments, sanitize],
    where=(
        "the section 'Why seeding matters': the noisy line there holds three kinds of fragment, and the exercise "
        "text lists the six kinds with the exact form of each"
    ),
    method=(
        "Write one regular expression per kind the exercise lists, each matching the whole fragment and nothing "
        "around it (a stable number such as a step count or a byte count must not match). Then collect every "
        "match of every expression in the text, not only the first one of each, and return them as strings."
    ),
    reveals=["0x[0-9a-fA-F]{6,}", "/tmp/[\\w./-]+"],
)
def check_unstable_detector(find_unstable: Callable[[str], list[str]]) -> str:
    """Exercise 0.2: find_unstable(text) returns the fragments that change between runs."""
    return compare_on_inputs(
        _sorted_result(find_unstable),
        _reference_unstable,
        inputs=_text_inputs(),
        edge_cases=UNSTABLE_CASES,
        mistakes=_unstable_mistake,
        name="find_unstable",
        max_examples=80,
    )
