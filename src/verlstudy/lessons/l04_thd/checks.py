"""Lesson 04's exercise checkers: 4.1 predict the packed THD length, 4.2 a guard that finds a CP split bug,
4.3 the guard test for #7702 (padding that survives the SP scatter and the zigzag CP split).

A notebook reaches them only as check_exercise("N.M", answer); the mechanism's own functions are
refused as answers. 4.1 compares the learner's function with the reference on named edge cases and
generated batches (`verlstudy.kit.properties.compare_on_inputs`); 4.2 and 4.3 hand the learner's guard
known-good and known-bad functions (`check_guard`; the bad ones live only here). A wrong answer's message
names the mistake it shows; `where` and `method` are the later rungs of the hint ladder, in words.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable

import torch
from hypothesis import strategies as st

from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.kit.properties import Case, check_guard, compare_on_inputs
from verlstudy.lessons.l04_thd.thd import (
    aligned_length,
    pack_sequences,
    packed_thd_length,
    pad_nested,
    pad_nested_unaligned,
    rank_positions,
    zigzag_chunks,
    zigzag_merge,
    zigzag_split,
)

# A jagged tensor's first use in a process imports torch's DTensor and compiler modules (about a second on a
# laptop CPU). The lesson's cells pay it long before 4.3 is checked; a fresh process pays it here, when the
# checks load, so that no checker call (a guard builds its batches with pack_sequences) carries it.
pack_sequences([[1]]).values()

# ---------------------------------------------------------------- 4.1 the packed THD length

PACKED_CASES: tuple[tuple[tuple[int, ...], int, int, str], ...] = (
    ((7, 5, 9), 2, 1, "the worked case without CP"),
    ((7, 5, 9), 2, 2, "the worked case with CP"),
    ((4026,), 2, 1, "one sequence, already aligned"),
    ((4026, 17), 4, 1, "TP=4"),
    ((5, 8), 1, 2, "CP without TP"),
    ((1, 1, 1), 8, 1, "one-token sequences at TP=8"),
    ((24, 3), 3, 3, "odd TP and CP"),
    ((2212, 301), 1, 1, "no parallelism: nothing to pad"),
    ((9,), 3, 2, "one sequence with CP"),
)


WORKED_CASE = ((7, 5, 9), 2, 2)


def _each_padded(lengths: tuple[int, ...], align: int, *, keep_aligned: bool = True) -> int:
    """Each length rounded up to `align` (or, with keep_aligned=False, always pushed to the next block)."""
    return sum(n + (align - n % align if not keep_aligned or n % align else 0) for n in lengths)


def _packed_mistake_for(fn: Callable[[list[int], int, int], object]) -> Callable[..., str]:
    """The mistake classifier, with a probe of `fn` where two mistakes give the same number on a case."""

    def probe(lengths: list[int], tp: int, cp: int) -> object:
        try:
            return fn(list(lengths), tp, cp)
        except Exception:
            return None

    def name(args: tuple[object, ...], got: object, want: object) -> str:
        lengths, tp, cp = args
        lengths = tuple(lengths)
        first_only = len(lengths) > 1 and got == aligned_length(lengths[0], tp, cp) + sum(lengths[1:])
        # [1, 3] at TP=4: the first sequence alone padded gives 7, the sum aligned as one block 4
        if isinstance(got, numbers.Integral) and first_only and probe([1, 3], 4, 1) == 7:
            return "only the first sequence was padded: every sequence in the row needs its own padding"
        # Three mistakes that can give the same number on one case, told apart by one probe each:
        # [5] at TP=1, CP=2 (right 8, tp and cp swapped 6) and [4] at TP=2 without CP (right 4, an extra block 6)
        align = aligned_length(1, tp, cp)
        if align > 1 and got == _each_padded(lengths, align, keep_aligned=False) and probe([4], 2, 1) == 6:
            return (
                "a length already on a multiple of the alignment got a whole extra block of padding: "
                "a sequence that is already aligned stays as it is"
            )
        if tp != cp and got == packed_thd_length(list(lengths), cp, tp) and probe([5], 1, 2) == 6:
            return "you swapped tp and cp: the two play different parts in the alignment"
        if cp == 1 and got == sum(aligned_length(n, 2 * tp, 1) for n in lengths):
            return (
                "your alignment keeps the zigzag's factor 2 when cp == 1: without CP there is no zigzag split, "
                "only the scatter over the TP ranks"
            )
        return _packed_mistake(args, got, want)

    return name


def _packed_mistake(args: tuple[object, ...], got: object, want: object) -> str:
    """The mistake a wrong packed length shows, named without the formula ("" when none is recognised)."""
    lengths, tp, cp = args
    lengths = tuple(lengths)
    if isinstance(got, bool) or not isinstance(got, numbers.Real):
        return "return one int, the packed row's length"
    if not isinstance(got, numbers.Integral):
        return "the length is a count of tokens: an int, not a float"
    got = int(got)
    if (lengths, tp, cp) != WORKED_CASE and got == packed_thd_length(list(WORKED_CASE[0]), *WORKED_CASE[1:]):
        return "that is the worked case's answer: use the lengths, tp and cp you are given"
    if cp > 1 and got * cp == packed_thd_length(lengths, tp, cp):
        return "that is one CP rank's share, not the total over the CP ranks (cu_seqlens_padded[-1])"
    if cp > 1 and got == sum(aligned_length(n, tp * cp, 1) for n in lengths):
        return "your alignment with cp > 1 misses the zigzag's factor 2"
    if cp > 1 and got == sum(aligned_length(n, tp, 1) for n in lengths):
        return "your alignment ignores cp"
    if got == sum(aligned_length(n, 2 * cp, 1) for n in lengths) and tp > 1:
        return "your alignment ignores tp"
    if got == len(lengths) * aligned_length(max(lengths), tp, cp):
        return "that is the [B, L] rectangle of the VLM input_ids, not the packed row"
    if got == aligned_length(sum(lengths), tp, cp):
        return "you aligned the sum of the lengths as one block"
    if got == sum(lengths):
        return "that is the number of real tokens, with no padding at all"
    if len(lengths) > 1 and got == packed_thd_length(lengths[:1], tp, cp):
        return "only the first sequence was counted"
    return ""


@st.composite
def _packed_inputs(draw: object) -> tuple[list[int], int, int]:
    lengths = draw(st.lists(st.integers(1, 5000), min_size=1, max_size=6))  # type: ignore[operator]
    return lengths, draw(st.integers(1, 8)), draw(st.integers(1, 4))  # type: ignore[operator]


@checker(
    "4.1",
    library_answers=[packed_thd_length, aligned_length],
    where=(
        "Section 3 (what the SP scatter and the zigzag split each need of a length) and section 4's table; "
        "then think of one packed row holding several sequences, each attending only to itself."
    ),
    method=(
        "Work out the alignment first: with context parallelism it must satisfy both the scatter over the "
        "tensor-parallel ranks and the cut into twice as many chunks as CP ranks, without CP only the scatter. "
        "Then take each sequence on its own and round its length up to the next multiple of that alignment "
        "(a length already on a multiple stays). Add the rounded lengths of all sequences: that is the whole "
        "row, every CP rank's part together. Return it as an int."
    ),
    reveals=["each sequence padded on its own", "align each sequence, then add", "expected=(1, 22)"],
)
def check_packed_length(fn: Callable[[list[int], int, int], int]) -> str:
    """Exercise 4.1: fn(lengths, tp, cp) predicts the packed THD row count preprocess_thd_engine builds."""
    if not callable(fn):
        raise ExerciseFailure(f"pass your function itself, got {type(fn).__name__}")
    return compare_on_inputs(
        fn,
        lambda lengths, tp, cp: packed_thd_length(lengths, tp, cp),
        name="my_packed_length",
        edge_cases=[Case((list(lengths), tp, cp), why) for lengths, tp, cp, why in PACKED_CASES],
        inputs=_packed_inputs(),
        mistakes=_packed_mistake_for(fn),
    )


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


def _split_last_rank_wrong(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    right = zigzag_split(x, cp, rank)
    return right.flip(0) if cp > 1 and rank == cp - 1 else right


def _split_middle_rank_wrong(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    right = zigzag_split(x, cp, rank)
    return right.roll(1) if 0 < rank < cp - 1 else right


def _split_rows_reversed_in_chunks(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    if cp == 1:
        return x
    chunks = x.chunk(2 * cp)
    return torch.cat([chunks[rank].flip(0), chunks[2 * cp - 1 - rank].flip(0)])


def _split_ignores_cp_2(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    return zigzag_split(x, cp, rank) if cp == 2 else x.chunk(cp)[rank]


def _split_drops_rows_without_cp(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    return zigzag_split(x, cp, rank) if cp > 1 else x[: x.shape[0] // 2]


def _split_zigzag_by_hand(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    """A right split written another way: index the rows of chunks r and 2*cp-1-r."""
    if cp == 1:
        return x
    chunk = x.shape[0] // (2 * cp)
    rows = [*range(rank * chunk, (rank + 1) * chunk), *range((2 * cp - 1 - rank) * chunk, (2 * cp - rank) * chunk)]
    return x[torch.tensor(rows, dtype=torch.long)]


BUGGY_SPLITS: tuple[tuple[SplitFn, str], ...] = (
    (_split_contiguous, "the contiguous split (rank r holds block r): every row once, but unbalanced"),
    (_split_one_from_each_half, "a split giving rank r chunks r and cp+r: every row once, not the zigzag pairing"),
    (_split_swapped, "a split holding the right chunks in the wrong order"),
    (_split_mirror_off_by_one, "a split pairing chunk r with 2*cp-2-r: rows duplicated and missing"),
    (_split_last_rank_wrong, "a split that is right on every rank but the last"),
    (_split_middle_rank_wrong, "a split that is right on the first and last ranks only"),
    (_split_rows_reversed_in_chunks, "a split with the right chunks whose rows are out of place inside them"),
    (_split_ignores_cp_2, "a split that is zigzag only when cp == 2"),
    (_split_drops_rows_without_cp, "a split that is right for cp > 1 but drops half the rows when cp == 1"),
)
GOOD_SPLITS: tuple[tuple[SplitFn, str], ...] = (
    (zigzag_split, "the zigzag split"),
    (_split_zigzag_by_hand, "the zigzag split written by row index"),
)
SPLIT_CASES: tuple[tuple[int, int], ...] = ((8, 2), (24, 3), (16, 4), (12, 1), (32, 4), (6, 3))


@checker(
    "4.2",
    library_answers=[zigzag_split, rank_positions, zigzag_chunks, zigzag_merge],
    where=(
        "Section 4: which two chunks zigzag gives each CP rank, and in which order; then the suspect split "
        "above: what does a check of shapes or of 'every row once' miss?"
    ),
    method=(
        "For every rank, not only the first: write down by hand which rows zigzag gives that rank (cut the "
        "rows into twice as many equal chunks as ranks; the rank takes the chunk with its own number and the "
        "mirror chunk counted from the end, in that order; with one rank, all rows). Call the split function "
        "on the row numbers for that rank and compare the rows it returns with your list, position by "
        "position. Fail with an assertion that says which rank holds what."
    ),
    reveals=["a split that holds every row once can still be wrong"],
)
def check_split_guard(guard: Callable[[SplitFn, int, int], object]) -> str:
    """Exercise 4.2: guard(split_fn, seq_len, cp) raises AssertionError unless split_fn is the zigzag split.

    Its AssertionError must carry a message (the exercise asks which rank holds what); an error the split
    function itself raised, on rows the guard chose, is reported as that, not as the guard's own.
    """
    if not callable(guard):
        raise ExerciseFailure(f"the answer should be a function, got {type(guard).__name__}")
    try:
        return check_guard(
            _SplitGuardRun(guard),
            good=GOOD_SPLITS,
            bad=BUGGY_SPLITS,
            calls=lambda impl: [(impl, seq_len, cp) for seq_len, cp in SPLIT_CASES],
        )
    except _GuardProblem as problem:
        raise ExerciseFailure(str(problem)) from None


class _GuardProblem(BaseException):
    """What the guard did wrong, carried past check_guard's verdicts (which read any AssertionError, even
    ExerciseFailure, as the guard failing an implementation)."""


class _SplitGuardRun:
    """Calls the learner's guard with a watched split: a bare AssertionError, or the split's own error, is named."""

    def __init__(self, guard: Callable[[SplitFn, int, int], object]) -> None:
        self.guard = guard

    def __call__(self, split_fn: SplitFn, seq_len: int, cp: int) -> None:
        raised: list[tuple[BaseException, int]] = []

        def watched(rows: torch.Tensor, cp_: int, rank: int) -> torch.Tensor:
            try:
                return split_fn(rows, cp_, rank)
            except Exception as e:
                try:
                    count = len(rows)
                except TypeError:
                    count = -1
                raised.append((e, count))
                raise

        try:
            self.guard(watched, seq_len, cp)
        except AssertionError as e:
            if not str(e).strip() and all(split_fn is not good for good, _ in GOOD_SPLITS):
                raise _GuardProblem(
                    f"your guard failed with a bare AssertionError on guard(split_fn, {seq_len}, {cp}): give the "
                    "assertion a message that says which rank holds what (the exercise asks for one)"
                ) from None
            raise
        except Exception as e:
            for err, rows in raised:
                if err is e and rows != seq_len:
                    raise _GuardProblem(
                        f"the split function raised {type(e).__name__} when your guard called it on {rows} rows "
                        f"with cp={cp}, but the guard was given seq_len={seq_len}: split the rows you are given "
                        f"({type(e).__name__}: {e})"
                    ) from None
            raise


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


def _pad_first_length(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right on one-sequence batches: aligns the first sequence's length, not the longest."""
    return _pad_to(ids, pad_id, aligned_length(int(ids.offsets().diff()[0]), tp, cp))


def _pad_shuffles_tokens(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Aligned, with the right mask, but each sequence's tokens written back to front."""
    padded, mask = pad_nested(ids, pad_id, tp, cp)
    for row, seq in enumerate(ids.unbind()):
        padded[row, : len(seq)] = seq.flip(0)
    return padded, mask


def _pad_later_rows_shifted(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Aligned and masked right, the first row right, later rows read from one token too early."""
    padded, mask = pad_nested(ids, pad_id, tp, cp)
    values, offsets = ids.values(), ids.offsets()
    for row in range(1, len(offsets) - 1):
        n = int(offsets[row + 1] - offsets[row])
        padded[row, :n] = values[int(offsets[row]) - 1 : int(offsets[row]) - 1 + n]
    return padded, mask


def _pad_left(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Aligned and masked, but the tokens pushed to the end of each row (the pads in front)."""
    padded, mask = pad_nested(ids, pad_id, tp, cp)
    return padded.flip(1), mask


def _pad_odd_tp_fails(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Aligns to tp rounded down to a power of two (right for tp = 1, 2, 4, 8 only)."""
    power = 1 << (tp.bit_length() - 1)
    return pad_nested(ids, pad_id, power, cp)


def _pad_one_more_block(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A right padding written another way: always one alignment block more than needed."""
    longest = int(ids.offsets().diff().max())
    return _pad_to(ids, pad_id, aligned_length(longest, tp, cp) + aligned_length(1, tp, cp))


BUGGY_PADS: tuple[tuple[PadFn, str], ...] = (
    (pad_nested_unaligned, "the pre-#7702 padding (to the longest sequence, no alignment)"),
    (_pad_tp_only, "a padding that aligns to tp and ignores cp"),
    (_pad_tp_times_cp, "a padding that aligns to tp*cp, without the factor 2 of the zigzag chunks"),
    (_pad_mask_all_true, "a padding whose mask marks the padded positions as real"),
    (_pad_rounds_down, "a padding that rounds the longest length down and drops real tokens"),
    (_pad_first_length, "a padding that aligns the first sequence's length, right only on one-sequence batches"),
    (_pad_shuffles_tokens, "a padding that is aligned and masked right but moves the real tokens"),
    (_pad_left, "a padding that puts the pads in front of the tokens"),
    (_pad_later_rows_shifted, "a padding whose first row is right but whose later rows hold their neighbours' tokens"),
    (_pad_odd_tp_fails, "a padding that is right for tp = 1, 2, 4, 8 and wrong for an odd tp"),
)
GOOD_PADS: tuple[tuple[PadFn, str], ...] = (
    (pad_nested, "the aligned padding of verl 0.9.1"),
    (_pad_one_more_block, "a padding one alignment block longer than needed (still safe)"),
)


@checker(
    "4.3",
    library_answers=[pad_nested],
    where=(
        "Section 3 (the alignment rule and where it comes from) and section 2 (what failed): a guard is only "
        "as good as its cases. Which batches and sizes make each wrong padding show itself?"
    ),
    method=(
        "Choose a few cases (the sequence lengths of a batch, tp, cp): some with several sequences whose "
        "longest is not on the alignment, at least one with cp above 1 and one with an odd tp. For each, build "
        "the batch with pack_sequences, call the padding function, and assert three things with a message: "
        "the padded length is at least the longest sequence and divides by the alignment of section 3; each "
        "mask row counts exactly its sequence's tokens; and reading the padded ids where the mask is set gives "
        "back the packed tokens in order, so each token stays where it was."
    ),
    reveals=["a padding guard needs an unaligned longest length and a case with CP"],
)
def check_padding_guard(guard: Callable[[PadFn], object]) -> str:
    """Exercise 4.3: guard(pad_fn) raises AssertionError unless pad_fn's output survives SP and zigzag CP."""
    return check_guard(guard, good=GOOD_PADS, bad=BUGGY_PADS)
