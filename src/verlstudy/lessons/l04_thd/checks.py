"""Lesson 04's exercise checkers: 4.1 predict the packed THD length, 4.2 a guard that finds a CP split bug,
4.3 the guard test for #7702 (padding that survives the SP scatter and the zigzag CP split).

A notebook reaches them only as check_exercise("N.M", answer); the mechanism's own functions are
refused as answers. 4.2 and 4.3 hand the learner's guard known-good and known-bad functions (the
bad ones live only here). A wrong answer's message names the mistake it shows; how to get there is each
checker's `method`, shown after repeated tries or by `exercise_hint`.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable

import torch

from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.lessons.l04_thd.thd import (
    aligned_length,
    packed_thd_length,
    pad_nested,
    pad_nested_unaligned,
    rank_positions,
    zigzag_chunks,
    zigzag_merge,
    zigzag_split,
)

# ---------------------------------------------------------------- 4.1 the packed THD length

PACKED_CASES: tuple[tuple[tuple[int, ...], int, int], ...] = (
    ((7, 5, 9), 2, 1),  # sum 21: aligned total 22, per sequence 24, [B, L] rectangle 30
    ((7, 5, 9), 2, 2),
    ((4026,), 2, 1),
    ((4026, 17), 4, 1),
    ((5, 8), 1, 2),
    ((1, 1, 1), 8, 1),
    ((24, 3), 3, 3),
    ((2212, 301), 1, 1),
)


def _packed_mistake(got: int, lengths: tuple[int, ...], tp: int, cp: int) -> str:
    """The mistake a wrong packed length shows, named without the formula ("" when none is recognised)."""
    if cp > 1 and got * cp == packed_thd_length(lengths, tp, cp):
        return ": that is one CP rank's share, not the total over the CP ranks (cu_seqlens_padded[-1])"
    if cp > 1 and got == sum(aligned_length(n, tp * cp, 1) for n in lengths):
        return ": your alignment with cp > 1 misses the zigzag's factor 2"
    if cp > 1 and got == sum(aligned_length(n, tp, 1) for n in lengths):
        return ": your alignment ignores cp"
    if got == len(lengths) * aligned_length(max(lengths), tp, cp):
        return ": that is the [B, L] rectangle of the VLM input_ids, not the packed row"
    if got == aligned_length(sum(lengths), tp, cp):
        return ": you aligned the sum of the lengths as one block"
    if got == sum(lengths):
        return ": that is the number of real tokens, with no padding at all"
    return ""


@checker(
    "4.1",
    library_answers=[packed_thd_length],
    method=(
        "the alignment is a = tp*cp*2 when cp > 1, else tp (section 3); round each sequence's length up to a "
        "multiple of a on its own, n + (a - n % a) % a, and add the rounded lengths: the total over every CP "
        "rank, no [B, L] rectangle"
    ),
    reveals=["each sequence padded on its own", "align each sequence, then add", "expected=(1, 22)"],
)
def check_packed_length(fn: Callable[[list[int], int, int], int]) -> str:
    """Exercise 4.1: fn(lengths, tp, cp) predicts the packed THD row count preprocess_thd_engine builds."""
    for lengths, tp, cp in PACKED_CASES:
        got = fn(list(lengths), tp, cp)
        if isinstance(got, bool) or not isinstance(got, numbers.Integral):
            raise ExerciseFailure(f"fn({list(lengths)}, {tp}, {cp}) should return an int, got {type(got).__name__}")
        want = packed_thd_length(lengths, tp, cp)
        if got != want:
            mistake = _packed_mistake(int(got), lengths, tp, cp)
            raise ExerciseFailure(f"fn({list(lengths)}, tp={tp}, cp={cp}) gave {got}, expected {want}{mistake}")
    return f"all {len(PACKED_CASES)} (lengths, tp, cp) cases right"


# ---------------------------------------------------------------- 4.2 a guard that finds a CP split bug

SplitFn = Callable[[torch.Tensor, int, int], torch.Tensor]


def _split_contiguous(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    return x.chunk(cp)[rank]


def _split_one_from_each_half(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    chunks = x.chunk(2 * cp)
    return torch.cat([chunks[rank], chunks[cp + rank]]) if cp > 1 else x


def _split_swapped(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    chunks = x.chunk(2 * cp)
    return torch.cat([chunks[2 * cp - 1 - rank], chunks[rank]]) if cp > 1 else x


def _split_mirror_off_by_one(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    chunks = x.chunk(2 * cp)
    return torch.cat([chunks[rank], chunks[(2 * cp - 2 - rank) % (2 * cp)]]) if cp > 1 else x


BUGGY_SPLITS: tuple[tuple[SplitFn, str], ...] = (
    (_split_contiguous, "the contiguous split (rank r holds block r): every row once, but unbalanced"),
    (_split_one_from_each_half, "a split giving rank r chunks r and cp+r: every row once, not the zigzag pairing"),
    (_split_swapped, "a split holding the right chunks in the wrong order"),
    (_split_mirror_off_by_one, "a split pairing chunk r with 2*cp-2-r: rows duplicated and missing"),
)
SPLIT_CASES: tuple[tuple[int, int], ...] = ((8, 2), (24, 3), (16, 4), (12, 1))


def _verdict(guard: Callable[..., object], *args: object) -> str | None:
    """None when the guard passes, the AssertionError's text when it fails; other errors are the learner's bug."""
    try:
        guard(*args)
    except AssertionError as e:
        return str(e) or "AssertionError"
    except NotImplementedError:
        raise  # a stub: the exercise is not attempted yet
    except Exception as e:
        raise ExerciseFailure(f"your guard raised {type(e).__name__}: {e} (a guard fails with AssertionError)") from e
    return None


@checker(
    "4.2",
    library_answers=[zigzag_split, rank_positions, zigzag_chunks, zigzag_merge],
    method=(
        "for each rank r in range(cp) build the rows zigzag gives it by hand: with chunk = seq_len // (2*cp), "
        "the rows of chunk r followed by the rows of chunk 2*cp-1-r (with cp == 1, every row); then assert "
        "split_fn(torch.arange(seq_len), cp, r).tolist() equals that list, order included, with a message"
    ),
    reveals=["a split that holds every row once can still be wrong"],
)
def check_split_guard(guard: Callable[[SplitFn, int, int], object]) -> str:
    """Exercise 4.2: guard(split_fn, seq_len, cp) raises AssertionError unless split_fn is the zigzag split."""
    for seq_len, cp in SPLIT_CASES:
        failed = _verdict(guard, zigzag_split, seq_len, cp)
        if failed is not None:
            where = f"seq_len={seq_len}, cp={cp}"
            raise ExerciseFailure(f"your guard rejected the correct zigzag split ({where}): {failed}")
    for split, what in BUGGY_SPLITS:
        for seq_len, cp in SPLIT_CASES:
            rows = torch.arange(seq_len)
            same = all(torch.equal(split(rows, cp, r), zigzag_split(rows, cp, r)) for r in range(cp))
            if not same and _verdict(guard, split, seq_len, cp) is None:
                raise ExerciseFailure(f"your guard let {what} through at seq_len={seq_len}, cp={cp}")
    return f"passes the zigzag split and catches all {len(BUGGY_SPLITS)} buggy splits"


# ---------------------------------------------------------------- 4.3 the guard test for the padding

PadFn = Callable[[torch.Tensor, int, int, int], tuple[torch.Tensor, torch.Tensor]]


def _pad_to(input_ids: torch.Tensor, pad_id: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = input_ids.offsets().diff()
    rows = [torch.cat([s, s.new_full((max(length - len(s), 0),), pad_id)])[:length] for s in input_ids.unbind()]
    padded = torch.stack(rows)
    return padded, torch.arange(length)[None, :] < lengths[:, None]


def _pad_tp_only(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    return _pad_to(ids, pad_id, aligned_length(int(ids.offsets().diff().max()), tp, 1))


def _pad_tp_times_cp(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    return _pad_to(ids, pad_id, aligned_length(int(ids.offsets().diff().max()), tp * cp, 1))


def _pad_mask_all_true(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    padded, mask = pad_nested(ids, pad_id, tp, cp)
    return padded, torch.ones_like(mask)


def _pad_rounds_down(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    longest = int(ids.offsets().diff().max())
    align = aligned_length(1, tp, cp)
    return _pad_to(ids, pad_id, max(longest - longest % align, align))


BUGGY_PADS: tuple[tuple[PadFn, str], ...] = (
    (pad_nested_unaligned, "the pre-#7702 padding (to the longest sequence, no alignment)"),
    (_pad_tp_only, "a padding that aligns to tp and ignores cp"),
    (_pad_tp_times_cp, "a padding that aligns to tp*cp, without the factor 2 of the zigzag chunks"),
    (_pad_mask_all_true, "a padding whose mask marks the padded positions as real"),
    (_pad_rounds_down, "a padding that rounds the longest length down and drops real tokens"),
)


@checker(
    "4.3",
    library_answers=[pad_nested],
    method=(
        "loop over a few (lengths, tp, cp) cases whose longest length is not a multiple of the alignment, with "
        "cp = 1 and cp > 1 (one with an odd tp); build ids with pack_sequences, call pad_fn(ids, 0, tp, cp) and "
        "assert: padded.shape[1] >= the longest length and padded.shape[1] % (tp*cp*2 if cp > 1 else tp) == 0; "
        "mask.sum(dim=1) equals the lengths; padded[mask] equals ids.values()"
    ),
    reveals=["a padding guard needs an unaligned longest length and a case with CP"],
)
def check_padding_guard(guard: Callable[[PadFn], object]) -> str:
    """Exercise 4.3: guard(pad_fn) raises AssertionError unless pad_fn's output survives SP and zigzag CP."""
    failed = _verdict(guard, pad_nested)
    if failed is not None:
        raise ExerciseFailure(f"your guard rejected a correct padding function: {failed}")
    for pad, what in BUGGY_PADS:
        if _verdict(guard, pad) is None:
            raise ExerciseFailure(f"your guard let {what} through: none of your cases shows it wrong")
    return f"passes the aligned padding and catches all {len(BUGGY_PADS)} buggy ones"
