"""Exercise checkers for lesson 00 (reached through check_exercise("0.N", answer)).

Both judge by property (`verlstudy.kit.properties`): the learner's function against the reference on named
edge cases, then on generated inputs; a wrong result's message names the mistake it shows.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import torch

from verlstudy.kit import i18n
from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.kit.hygiene import sanitize, unstable_fragments
from verlstudy.kit.properties import Case, compare_on_inputs
from verlstudy.lessons.l00_start_here.seed_judging import DREW, GlobalStreamWatch, effect_message
from verlstudy.lessons.l00_start_here.unstable_judging import KINDS, as_found, line_inputs, mistake_namer

# ---------------------------------------------------------------- 0.1 seeded_sample


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _reference_sample(seed: int, n: int) -> torch.Tensor:
    return torch.randn(n, generator=_generator(seed))


def _sample_inputs() -> Any:
    from hypothesis import strategies as st

    # the whole seed range (the top bit set too) and sizes on both sides of torch's 16-value vectorised path
    seeds = st.one_of(st.integers(0, 2**32 - 1), st.sampled_from([0, 1, 42, 2**31 - 1, 2**31, 2**32 - 1]))
    sizes = st.one_of(st.integers(1, 40), st.sampled_from([15, 16, 17, 255, 1024, 4096]), st.integers(1, 5000))
    return st.tuples(seeds, sizes)


SAMPLE_CASES = [
    Case((7, 5), "the notebook's own example"),
    Case((7, 5), "the same call again: the same seed must give the same numbers"),
    Case((0, 1), "one draw, seed 0"),
    Case((123456, 17), "a longer sample: 17 draws"),
    Case((2**32 - 1, 3), "the largest seed"),
    Case((2**31 + 5, 4096), "a seed above 2**31 and 4096 draws"),
]


def _sample_mistake(fn: Callable[[int, int], object], watch: GlobalStreamWatch) -> Callable[..., str | None]:
    def name(args: tuple[Any, ...], got: object, want: torch.Tensor) -> str | None:
        seed, n = args
        if type(got).__module__ == "numpy":
            return i18n._(
                "that is numpy's random generator: the exercise asks for the draws torch makes from this seed"
            )
        if isinstance(got, (list, tuple)) and not isinstance(got, torch.Tensor):
            return i18n._(
                "a Python list (Python's random module?): the exercise asks for a torch tensor of torch's draws"
            )
        if not isinstance(got, torch.Tensor):
            return i18n._("return a torch tensor")
        if got.dim() != 1 or got.shape[0] != n:
            return i18n.pick(
                "the sample has shape {shape}: is the parameter n (here {n}) used?", shape=tuple(got.shape), n=n
            )
        if _numpy_draws(seed, n, got):
            return i18n._(
                "those are numpy's draws for this seed, wrapped in a tensor: the exercise asks for the draws torch "
                "makes from this seed"
            )
        if got.dtype != want.dtype:
            return i18n.pick("the draws are {dtype}: torch's default float32 is asked", dtype=got.dtype)
        if torch.equal(got, torch.rand(n, generator=_generator(seed))):
            return i18n._("these are uniform draws in [0, 1): standard-normal draws are asked")
        if DREW in watch.effects_of(seed, n):
            return i18n._(
                "these numbers come from the global stream every cell shares, which this seed does not start "
                "(each earlier draw moved it): the numbers must depend on the seed alone"
            )
        try:
            first, again, other = fn(seed, n), fn(seed, n), fn((seed + 1) % 2**32, n)
        except Exception:
            return None
        if isinstance(again, torch.Tensor) and not torch.equal(first, again):
            return i18n._(
                "two calls with the same seed gave different numbers: each call must start from the seed, not from "
                "where a generator kept from an earlier call (or the global one) left off"
            )
        if isinstance(other, torch.Tensor) and torch.equal(got, other):
            return i18n._("two different seeds gave the same numbers: the seed parameter is not used")
        return i18n._("other numbers than torch's generator seeded with this seed draws: which seed, which generator?")

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


def _plain_tensor(args: tuple[Any, ...], got: torch.Tensor, want: torch.Tensor) -> str | None:
    if got.requires_grad:
        return i18n._("the tensor requires grad: a sample is data, and every use of it would build an autograd graph")
    return None


def _calls_stay_apart(watch: GlobalStreamWatch) -> None:
    """Later calls leave an earlier result alone, and a caller changing a result changes no later call."""
    first = watch(11, 20)
    kept = first.clone() if isinstance(first, torch.Tensor) else None
    watch(12, 33)
    if kept is not None and not torch.equal(first, kept):
        raise ExerciseFailure(
            i18n._(
                "seeded_sample(12, 33) changed the tensor an earlier call, seeded_sample(11, 20), returned: each call "
                "must return a tensor of its own, not one buffer filled again"
            )
        )
    if isinstance(first, torch.Tensor):
        first.add_(1.0)
        again = watch(11, 20)
        if isinstance(again, torch.Tensor) and not torch.equal(again, _reference_sample(11, 20)):
            raise ExerciseFailure(
                i18n._(
                    "after the caller added 1 to what seeded_sample(11, 20) returned, calling it again gave those "
                    "changed numbers: each call must return a new tensor, not one kept from an earlier call"
                )
            )


@checker(
    "0.1",
    where=(
        "the section 'Why seeding matters': the global random stream is shared by every cell, and torch can also "
        "make a generator of your own that nothing else draws from"
    ),
    question=(
        "Cell A seeds the global stream and draws 3 numbers; cell B, run between two runs of A, draws 1 number "
        "without seeding. Does B's output depend on whether A ran before it? Now suppose A restores the global "
        "state when it is done, but B runs in another thread while A is drawing: what does B get? What would A "
        "need so that no other cell could ever share its stream?"
    ),
    method=(
        "Make a fresh random generator object that belongs to this call only, seed it with the seed you are given, "
        "and ask torch for n standard-normal numbers drawn from that object rather than from the global stream. "
        "Nothing global is seeded or drawn from, not even for a moment, so the other cells see the same stream as "
        "before."
    ),
    reveals=["torch.Generator", "generator=generator"],
)
def check_seeded_sample(seeded_sample: Callable[[int, int], torch.Tensor]) -> str:
    """Exercise 0.1: seeded_sample(seed, n) gives torch's draws for `seed` and touches no global stream.

    Contract. Returns a new float32 tensor of shape (n,), not requiring grad, equal bit for bit to the n
    standard-normal values torch draws (randn, normal_ or normal: the same values) from a CPU generator seeded
    with `seed`; the same arguments give the same values on every call, whatever was called before; a later
    call never changes an earlier result, and a caller changing a result changes no later call. Effects: none
    on any global stream: torch's global generators (CPU, CUDA and every other accelerator's) are never seeded
    and never drawn from, not even with the state put back afterwards (fork_rng, get/set_rng_state), and
    Python's and numpy's global streams are left as they were. Domain: every seed in 0..2**32 - 1 (the top bit
    set too) and n from 1 to thousands, on both sides of torch's 16-value vectorised sampling path.
    """
    if not callable(seeded_sample):
        raise ExerciseFailure(
            i18n.pick("the answer should be a function, got {kind}", kind=type(seeded_sample).__name__)
        )
    watch = GlobalStreamWatch(seeded_sample)
    summary = compare_on_inputs(
        watch,
        _reference_sample,
        inputs=_sample_inputs(),
        edge_cases=SAMPLE_CASES,
        mistakes=_sample_mistake(watch, watch),
        judge=_plain_tensor,
        name="seeded_sample",
        rtol=0.0,
        atol=0.0,
        max_examples=30,
    )
    _calls_stay_apart(watch)
    touched = watch.first_effect()
    if touched is not None:
        raise ExerciseFailure(effect_message(*touched))
    return summary


# ---------------------------------------------------------------- 0.2 find_unstable


def _reference_unstable(text: str) -> list[str]:
    return sorted(m.group(0) for form in KINDS.values() for m in re.finditer(form, text))


UNSTABLE_CASES = [
    Case(("",), "an empty line"),
    Case(("loss 0.3125 after 3 steps",), "stable text with numbers in it: nothing changes here"),
    Case(("retained 4096 bytes per micro-batch",), "more stable numbers"),
    Case(("<Tensor at 0x7f3a2b1c9d40>",), "a memory address"),
    Case(("tensor at 0x00007F3A2B1C9D40",), "a 16-digit address in uppercase hex, as some platforms print it"),
    Case(("epoch 3 took 1.25 s",), "a timing after a stable number"),
    Case(("saved to /tmp/tmpab12cd/model.pt at 2026-12-02T18:31",), "a path and a date with a time"),
    Case(("rank 0 listening on 127.0.0.1:29500 (pid 4242)",), "a port and a process id"),
    Case(("step 1 took 12 ms, step 2 took 9ms, step 3 took 700 us, step 4 took 0.5s",), "four timings: every one"),
    Case(("ids 0xdeadbeef00 and 0x1f and [0xABCDEF]",), "two addresses and a short hex that is stable"),
    Case(("ran 2026-12-02, again 2026-12-03T09:05.",), "two dates, the second with a time"),
    Case(("wrote /tmp/a/b.pt and /tmp/pytest-of-x/run-1/log.txt",), "two paths"),
    Case(("pid 4242 forked pid 7; 10 users",), "two process ids, and a count whose word starts like a unit"),
    Case(("localhost:8888 and 127.0.0.1:8 (localhost:8888)",), "two ports, one of them twice"),
]


@checker(
    "0.2",
    library_answers=[unstable_fragments, sanitize],
    where=(
        "the section 'Why seeding matters': the noisy line there holds three kinds of fragment, and the exercise "
        "text lists the six kinds with the exact form of each"
    ),
    question=(
        "In 'step 3 took 12 ms, then 0.5 s at 0xBEEF00 (pid 7)', which pieces change between two runs, and "
        "where exactly does each start and end? Why is the 3 not one of them, though it is a number followed by "
        "a space and an s? If a line held two timings, how many would you return?"
    ),
    method=(
        "Write one pattern per kind the exercise lists, each matching the whole fragment and nothing around it "
        "(a stable number such as a step count or a byte count must not match, and a unit is a whole word). "
        "Then collect every match of every pattern in the text, not only the first one of each, and return "
        "them as strings."
    ),
    reveals=["0x[0-9a-fA-F]{6,}", "/tmp/[\\w./-]+"],
)
def check_unstable_detector(find_unstable: Callable[[str], list[str]]) -> str:
    """Exercise 0.2: find_unstable(text) returns the fragments that change between runs.

    Contract. Returns every fragment of the six kinds the exercise states, each the whole match as a str, in
    a list, a tuple or a set, in any order: a memory address (0x and 6 or more hex digits, either case); a
    duration (a number, maybe with decimals, maybe one space, then s, ms or us as a whole word); a date
    YYYY-MM-DD, maybe with THH:MM; a path under /tmp/; `pid` and its digits; a port on 127.0.0.1 or
    localhost. A fragment that occurs twice may be named once (a set) or twice, never more often than it
    occurs; stable text, look-alikes included (0x and fewer than 6 digits, "3 steps", "10 users", a host
    without a port), gives nothing. Effects: the text is a str, nothing to change. Domain: lines of nbval's
    outputs, up to nine words, fragments after a space, (, [ or = and before a space, ), ], a comma, a
    semicolon or a full stop (a path, whose end the exercise leaves open, before a space or the line's end).
    """
    if not callable(find_unstable):
        raise ExerciseFailure(
            i18n.pick("the answer should be a function, got {kind}", kind=type(find_unstable).__name__)
        )
    return compare_on_inputs(
        as_found(find_unstable, _reference_unstable),
        _reference_unstable,
        inputs=line_inputs(),
        edge_cases=UNSTABLE_CASES,
        mistakes=mistake_namer(find_unstable),
        name="find_unstable",
        max_examples=80,
    )
