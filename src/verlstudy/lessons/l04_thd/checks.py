"""Lesson 04's exercise checkers: 4.1 the aligned length, 4.2 a zigzag CP rank's positions, 4.3 the least alignment.

A notebook reaches them only as check_exercise("N.M", answer); the mechanism's own alignment and
split functions are refused as answers. Each checker names the usual mistake it recognises.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence

import torch

from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.lessons.l04_thd.thd import (
    align_size,
    aligned_length,
    minimal_align_size,
    padding_needed,
    rank_positions,
    zigzag_chunks,
    zigzag_split,
)

ALIGN_CASES: tuple[tuple[int, int, int], ...] = (
    (4026, 2, 1),
    (4027, 2, 1),
    (4026, 4, 1),
    (4026, 2, 2),
    (4026, 1, 2),
    (4032, 2, 2),
    (1, 8, 1),
    (7, 1, 1),
    (0, 2, 2),
    (100, 3, 3),
    (24, 4, 3),
)


@checker("4.1", library_answers=[aligned_length, padding_needed, align_size])
def check_aligned_length(fn: Callable[[int, int, int], int]) -> str:
    """Exercise 4.1: fn(L, tp, cp) is the smallest multiple of the alignment that is >= L."""
    for length, tp, cp in ALIGN_CASES:
        want = aligned_length(length, tp, cp)
        got = fn(length, tp, cp)
        if isinstance(got, bool) or not isinstance(got, numbers.Integral):
            raise ExerciseFailure(f"fn({length}, {tp}, {cp}) should return an int, got {type(got).__name__}")
        if got == want:
            continue
        hint = f"expected {want}"
        if length % align_size(tp, cp) == 0 and got == length + align_size(tp, cp):
            hint += ": an already aligned length needs no padding; take the remainder modulo the alignment again"
        elif cp > 1 and got == aligned_length(length, tp * cp, 1):
            hint += ": with cp > 1 the zigzag split needs 2*cp chunks, so the alignment is tp*cp*2"
        elif cp > 1 and got == aligned_length(length, tp, 1):
            hint += ": you ignored cp; each of the 2*cp zigzag chunks must also be whole"
        elif got < length:
            hint += ": padding never removes tokens"
        raise ExerciseFailure(f"fn({length}, tp={tp}, cp={cp}) gave {got}; {hint}")
    return f"all {len(ALIGN_CASES)} (L, tp, cp) cases right"


ZIGZAG_CASES: tuple[tuple[int, int], ...] = ((8, 2), (16, 4), (24, 3), (12, 1))


@checker("4.2", library_answers=[rank_positions, zigzag_split, zigzag_chunks])
def check_zigzag_positions(fn: Callable[[int, int, int], Sequence[int]]) -> str:
    """Exercise 4.2: fn(seq_len, cp, rank) lists the positions a zigzag CP rank holds, in order."""
    for seq_len, cp in ZIGZAG_CASES:
        for rank in range(cp):
            want = rank_positions(seq_len, cp, rank, "zigzag").tolist()
            got = fn(seq_len, cp, rank)
            if isinstance(got, torch.Tensor):
                got = got.tolist()
            if isinstance(got, str) or not isinstance(got, Sequence):
                raise ExerciseFailure(f"fn({seq_len}, {cp}, {rank}) should return a list of positions, got {got!r}")
            got = list(got)
            if got == want:
                continue
            hint = f"expected {want}"
            if cp > 1 and got == rank_positions(seq_len, cp, rank, "contiguous").tolist():
                hint += ": that is the contiguous split; zigzag cuts 2*cp chunks and pairs chunk r with 2*cp-1-r"
            elif sorted(got) == want:
                hint += ": the right positions, but keep them in sequence order"
            elif cp > 1 and len(got) == len(want):
                hint += ": rank r holds chunk r and chunk 2*cp-1-r (counting from 0)"
            raise ExerciseFailure(f"fn(seq_len={seq_len}, cp={cp}, rank={rank}) gave {got}; {hint}")
    return f"{len(ZIGZAG_CASES)} (seq_len, cp) cases right, so every rank does equal causal work"


@checker("4.3", library_answers=[minimal_align_size])
def check_minimal_alignment(fn: Callable[[int, int], int]) -> str:
    """Exercise 4.3: fn(tp, cp) is the least length multiple that both zigzag CP and SP accept."""
    cases = [(tp, cp) for tp in (1, 2, 3, 4, 6, 8) for cp in (1, 2, 3, 4)]
    for tp, cp in cases:
        want = minimal_align_size(tp, cp)
        got = fn(tp, cp)
        if got == want:
            continue
        hint = f"expected {want}"
        if cp == 1:
            hint += ": without context parallelism (cp == 1) there is no zigzag split, so only SP's tp matters"
        elif got == align_size(tp, cp):
            hint += ": that is upstream's product tp*cp*2; it works, but for even tp a smaller multiple does too"
        elif cp > 1 and got == tp * cp:
            hint += ": each rank's tp*cp part is fine for SP, but the zigzag split also needs 2*cp whole chunks"
        raise ExerciseFailure(f"fn(tp={tp}, cp={cp}) gave {got}; {hint}")
    return f"{len(cases)} (tp, cp) pairs right"
