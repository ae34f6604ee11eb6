"""Exercise checkers for lesson 00 (reached through check_exercise("0.N", answer))."""

from __future__ import annotations

from collections.abc import Callable

import torch

from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.kit.hygiene import unstable_fragments


@checker(
    "0.1",
    method=(
        "make a private generator, g = torch.Generator().manual_seed(seed), and draw with "
        "torch.randn(n, generator=g): the same seed gives the same numbers and the global stream never moves"
    ),
    reveals=["torch.Generator", "generator=generator"],
)
def check_seeded_sample(seeded_sample: Callable[[int, int], torch.Tensor]) -> str:
    """Exercise 0.1: seeded_sample(seed, n) is reproducible and leaves the global RNG alone."""
    first = seeded_sample(7, 5)
    if not isinstance(first, torch.Tensor) or first.shape != (5,):
        raise ExerciseFailure(f"seeded_sample(7, 5) should return a tensor of shape (5,), got {first!r}")
    if not torch.equal(first, seeded_sample(7, 5)):
        raise ExerciseFailure("two calls with seed 7 gave different numbers: the draws do not depend on the seed yet")
    if torch.equal(first, seeded_sample(8, 5)):
        raise ExerciseFailure("seeds 7 and 8 gave the same numbers: the seed is not used")
    before = torch.get_rng_state()
    seeded_sample(7, 5)
    if not torch.equal(before, torch.get_rng_state()):
        raise ExerciseFailure("the global RNG moved: sampling here changes what every later cell draws")
    return "reproducible, and the global random stream is untouched"


UNSTABLE_CASES: tuple[str, ...] = (
    "<Tensor at 0x7f3a2b1c9d40>",
    "epoch 3 took 1.25 s",
    "saved to /tmp/tmpab12cd/model.pt at 2026-12-02T18:31",
    "rank 0 listening on 127.0.0.1:29500 (pid 4242)",
    "loss 0.3125 after 3 steps",
    "retained 4096 bytes per micro-batch",
)


@checker(
    "0.2",
    library_answers=[unstable_fragments],
    method=(
        "write one regular expression per kind: 0x and at least 6 hex digits; a number followed by s, ms or us; "
        "an ISO date YYYY-MM-DD with an optional THH:MM; /tmp/ and the path after it; 'pid' and its digits; "
        "127.0.0.1 or localhost, a colon and the port; return every re.finditer match of each, as strings"
    ),
    reveals=["0x[0-9a-fA-F]{6,}", "/tmp/[\\w./-]+"],
)
def check_unstable_detector(find_unstable: Callable[[str], list[str]]) -> str:
    """Exercise 0.2: find_unstable(text) returns the fragments that change between runs."""
    for text in UNSTABLE_CASES:
        expected = sorted(fragment for _, fragment in unstable_fragments(text))
        got = find_unstable(text)
        if not isinstance(got, list):
            raise ExerciseFailure(f"find_unstable should return a list of strings, got {type(got).__name__}")
        if sorted(got) != expected:
            extra = sorted(set(got) - set(expected))
            if extra:
                hint = f"{extra} is stable text (the same every run), not something that changes"
            else:
                missed = sorted(set(expected) - set(got))
                hint = f"you missed {missed}, which changes between runs (expected {len(expected)})"
            raise ExerciseFailure(f"for {text!r} you found {sorted(got)}; {hint}")
    return f"all {len(UNSTABLE_CASES)} cases right"
