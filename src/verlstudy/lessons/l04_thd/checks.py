"""Lesson 04's exercise checkers: 4.1 predict the packed THD length, 4.2 a guard that finds a CP split bug,
4.3 the guard test for #7702 (padding that survives the SP scatter and the zigzag CP split).

A notebook reaches them only as check_exercise("N.M", answer); the mechanism's own functions are refused as
answers. 4.1 compares the learner's function with the reference on named cases and batches generated over the
real domain (`verlstudy.kit.properties.compare_on_inputs`). 4.2 and 4.3 judge a guard by a generated family of
mutants of the reference implementation (`split_mutants.py`, `pad_mutants.py`, more than 50 each): the guard
must pass the right implementations, written several ways, and catch every mutant the reference guard catches
(`check_guard`). A wrong answer's message names the mistake it shows; `where`, `question` and `method` are the
later rungs of the hint ladder, in words. Nothing heavy runs at import (no jagged tensor is built here).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from functools import cache
from typing import Any

from hypothesis import strategies as st

from verlstudy.kit import i18n
from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.kit.guards import GuardLetThrough, check_guard
from verlstudy.kit.properties import Case, compare_on_inputs
from verlstudy.lessons.l04_thd.guard_cases import (
    BAD_PADS,
    BAD_SPLITS,
    GOOD_PADS,
    GOOD_SPLITS,
    GuardProblem,
    Implementations,
    PadFn,
    PadGuardRun,
    SplitFn,
    SplitGuardRun,
    WatchedGuard,
)
from verlstudy.lessons.l04_thd.split_mutants import SPLIT_CALLS, wrong_at
from verlstudy.lessons.l04_thd.thd import (
    aligned_length,
    pack_sequences,
    packed_thd_length,
    pad_nested,
    rank_positions,
    zigzag_chunks,
    zigzag_merge,
    zigzag_split,
)

# ---------------------------------------------------------------- 4.1 the packed THD length

# The notebook's worked case ([7, 5, 9] at TP=2, CP=2, which the learner works out by hand) is not a named case:
# a first wrong try prints what was expected on the case it fails, and that must not be the hand exercise's answer.
PACKED_CASES: tuple[tuple[tuple[int, ...], int, int, str], ...] = (
    ((9, 3, 13), 2, 1, "three sequences at TP=2, no CP"),
    ((9, 3, 13), 2, 2, "the same three at TP=2, CP=2"),
    ((4026,), 2, 1, "one sequence, already aligned"),
    ((4026, 17), 4, 1, "TP=4"),
    ((5, 8), 1, 2, "CP without TP"),
    ((1, 1, 1), 8, 1, "one-token sequences at TP=8"),
    ((24, 3), 3, 3, "odd TP and CP"),
    ((2212, 301), 1, 1, "no parallelism: nothing to pad"),
    ((9,), 3, 2, "one sequence with CP"),
)


WORKED_CASE = ((7, 5, 9), 2, 2)  # the notebook's hand exercise


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
        if isinstance(got, bool) or not isinstance(got, numbers.Real):
            return _packed_mistake(args, got, want)  # not a number: the probes below compare numbers
        worked = packed_thd_length(list(WORKED_CASE[0]), *WORKED_CASE[1:])
        if got == worked and (lengths, tp, cp) != WORKED_CASE and probe([1], 1, 1) == worked:
            return i18n._("that is the worked case's answer: use the lengths, tp and cp you are given")
        # section 3's least alignment lcm(2*cp, tp*cp) is tp*cp for an even tp: [1] at TP=3, CP=2 tells them apart
        least = sum(aligned_length(n, math.lcm(2 * cp, tp * cp), 1) for n in lengths) if cp > 1 else None
        if got == least and probe([1], 3, 2) == 12 and probe([1], 2, 2) == 4:
            return i18n._(
                "that is the least alignment both rules accept (section 3's lcm), not the one verl pads to: "
                "the packed length is the row verl builds"
            )
        first_only = len(lengths) > 1 and got == aligned_length(lengths[0], tp, cp) + sum(lengths[1:])
        # [1, 3] at TP=4: the first sequence alone padded gives 7, the sum aligned as one block 4
        if isinstance(got, numbers.Integral) and first_only and probe([1, 3], 4, 1) == 7:
            return i18n._("only the first sequence was padded; the others were counted as they are")
        # Three mistakes that can give the same number on one case, told apart by one probe each:
        # [5] at TP=1, CP=2 (right 8, tp and cp swapped 6) and [4] at TP=2 without CP (right 4, an extra block 6)
        align = aligned_length(1, tp, cp)
        if align > 1 and got == _each_padded(lengths, align, keep_aligned=False) and probe([4], 2, 1) == 6:
            return i18n._(
                "a length already on a multiple of the alignment got a whole extra block of padding: "
                "a sequence that is already aligned stays as it is"
            )
        if tp != cp and got == packed_thd_length(list(lengths), cp, tp) and probe([5], 1, 2) == 6:
            return i18n._("you swapped tp and cp: the two play different parts in the alignment")
        if cp == 1 and got == sum(aligned_length(n, 2 * tp, 1) for n in lengths):
            return i18n._(
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
        return i18n._("return one int, the packed row's length")
    if not isinstance(got, numbers.Integral):
        return i18n._("the length is a count of tokens: an int, not a float")
    got = int(got)
    if cp > 1 and got * cp == packed_thd_length(lengths, tp, cp):
        return i18n._("that is one CP rank's share, not the total over the CP ranks (cu_seqlens_padded[-1])")
    if cp > 1 and got == sum(aligned_length(n, tp * cp, 1) for n in lengths):
        return i18n._("your alignment with cp > 1 misses the zigzag's factor 2")
    if cp > 1 and got == sum(aligned_length(n, tp, 1) for n in lengths):
        return i18n._("your alignment ignores cp")
    if got == sum(aligned_length(n, 2 * cp, 1) for n in lengths) and tp > 1:
        return i18n._("your alignment ignores tp")
    if got == len(lengths) * aligned_length(max(lengths), tp, cp):
        return i18n._("that is the [B, L] rectangle of the VLM input_ids, not the packed row")
    if got == aligned_length(sum(lengths), tp, cp):
        return i18n._("you aligned the sum of the lengths as one block")
    if got == sum(lengths):
        return i18n._("that is the number of real tokens, with no padding at all")
    if len(lengths) > 1 and got == packed_thd_length(lengths[:1], tp, cp):
        return i18n._("only the first sequence was counted")
    return ""


@st.composite
def _packed_inputs(draw: Any) -> tuple[list[int], int, int]:
    """Batches of the real domain: one to 16 sequences of 1 to 16384 tokens (the recipe's 2048 + 6144 and more),
    tp up to 16 and cp up to 8, odd sizes included."""
    lengths = draw(st.lists(st.integers(1, 16384), min_size=1, max_size=16))
    return lengths, draw(st.sampled_from([1, 2, 3, 4, 5, 6, 8, 16])), draw(st.sampled_from([1, 2, 3, 4, 8]))


def _reference_packed_length(lengths: list[int], tp: int, cp: int) -> int:
    return packed_thd_length(lengths, tp, cp)


@checker(
    "4.1",
    library_answers=[packed_thd_length, aligned_length],
    where=(
        "Section 3 (what the SP scatter and the zigzag split each need of a length) and section 4's table; "
        "then think of one packed row holding several sequences, each attending only to itself."
    ),
    question=(
        "Take one sequence of 5 tokens. At TP=3 without CP, what is the smallest length the scatter accepts? "
        "At TP=3 with CP=2, how many chunks does the zigzag cut it into, how many tokens does each CP rank "
        "keep, and must that share still divide by 3? The 24-token picture of section 4 is that case: what "
        "block did verl pad it to, and is that block the product of what the two rules need or something smaller?"
    ),
    method=(
        "Step 1: find the block each sequence is padded to. Without CP only the scatter over the TP ranks "
        "matters. With CP, verl does not look for the least length both rules accept (section 3's lcm): it "
        "multiplies what the zigzag cut needs by what each CP rank's scatter needs, as the 24-token picture "
        "shows. Step 2: round each sequence's length up to the next multiple of that block on its own (a length "
        "already on a multiple stays). Step 3: add the rounded lengths of all sequences: that is the whole "
        "row, every CP rank's part together. Return it as an int."
    ),
    reveals=["each sequence padded on its own", "align each sequence, then add", "expected=(1, 22)"],
)
def check_packed_length(fn: Callable[[list[int], int, int], int]) -> str:
    """Exercise 4.1: fn(lengths, tp, cp) predicts the packed THD row count preprocess_thd_engine builds.

    Contract: for any non-empty list of sequence lengths (each >= 1, up to 16384: the recipe's 2048 + 6144 and
    more; one sequence or up to 16) and any tp in 1..16 and cp in 1..8 (odd sizes too), fn returns the length of
    the packed row over all CP ranks, as verl 0.9.1 builds it (each sequence padded on its own to verl's
    block, the product of the sizes when cp > 1). The lesson teaches the type: an int (a numpy integer is one;
    a float, even a whole one, is refused). fn leaves the list it is given as it was, and keeps no state
    between calls (every generated call must be right, whatever came before).
    """
    if not callable(fn):
        raise ExerciseFailure(i18n.pick("pass your function itself, got {kind}", kind=type(fn).__name__))
    return compare_on_inputs(
        fn,
        _reference_packed_length,
        name="my_packed_length",
        edge_cases=[Case((list(lengths), tp, cp), why) for lengths, tp, cp, why in PACKED_CASES],
        inputs=_packed_inputs(),
        mistakes=_packed_mistake_for(fn),
    )


# ---------------------------------------------------------------- 4.2 a guard that finds a CP split bug


@cache
def _split_calls(impl: SplitFn) -> tuple[tuple[int, int], ...]:
    """The calls on which a wrong split is wrong (the reference guard fails it there); a right split: all calls."""
    if any(impl is right for right, _ in GOOD_SPLITS):
        return SPLIT_CALLS
    return tuple(call for call in SPLIT_CALLS if wrong_at(impl, *call))


@checker(
    "4.2",
    library_answers=[zigzag_split, rank_positions, zigzag_chunks, zigzag_merge],
    where=(
        "Section 4: which two chunks zigzag gives each CP rank, and in which order; then the suspect split "
        "above: what does a check of shapes or of 'every row once' miss?"
    ),
    question=(
        "Take 8 rows at cp=2 and write by hand what rank 0 and rank 1 should hold, in order. Now think of a "
        "split that gives rank 0 one row fewer and rank 1 one row more, or that holds rank 1's rows back to "
        "front, or that is wrong only when cp is 1: which comparison in your guard would notice each of them?"
    ),
    method=(
        "For every rank, not only the first, and for the cp and seq_len you are given (cp == 1 too): write "
        "down which rows zigzag gives that rank (cut the rows into twice as many equal chunks as ranks; the "
        "rank takes the chunk with its own number and the mirror chunk counted from the end, in that order; "
        "with one rank, all rows). Call the split function on the row numbers for that rank and compare what "
        "it returns with your list, position by position, length included. Fail with an assertion that says "
        "which rank holds what."
    ),
    reveals=["a split that holds every row once can still be wrong"],
)
def check_split_guard(guard: Callable[[SplitFn, int, int], object]) -> str:
    """Exercise 4.2: guard(split_fn, seq_len, cp) raises AssertionError unless split_fn is the zigzag split.

    Contract: the guard is called with every (seq_len, cp) of `SPLIT_CALLS` (cp 1 to 8, the shortest length a
    cp allows and longer ones). On each right split (three ways of writing zigzag) it returns without raising;
    on each of more than 50 mutants of the zigzag split (other chunks, chunks in another order, rows moved
    inside a chunk, one rank wrong, one cp wrong, a row moved across ranks so that all ranks together still
    hold zigzag's rows, chunk lengths off by one, cp == 1 mishandled) it raises AssertionError, with a
    message, on every call where that mutant is wrong (where the reference guard fails it). Any other
    exception of the guard's own is a bug; an error the split raises on rows the guard chose is named.
    """
    run = SplitGuardRun(guard, good=GOOD_SPLITS, impl_name="split_fn")
    return _named_guard_verdict(
        run,
        bad=BAD_SPLITS,
        calls=lambda impl: [(impl, seq_len, cp) for seq_len, cp in _split_calls(impl)],
        every_call=True,
    )


def _named_guard_verdict(run: WatchedGuard, *, bad: Implementations, **options: Any) -> str:
    """check_guard's verdict on the watched guard (`options`: how it is called), with what the guard did wrong
    named where it is recognised (`WatchedGuard.why_let_through`)."""
    try:
        return check_guard(run, good=run.good, bad=bad, **options)
    except GuardProblem as problem:
        raise ExerciseFailure(str(problem)) from None
    except GuardLetThrough as failure:
        why = run.why_let_through(failure.impl, failure.passed)
        if why is None:
            raise
        # `why` names the call it was let through on: the message's own example call would say it twice
        said = str(failure).replace(failure.example, "") if failure.example else str(failure)
        raise ExerciseFailure(i18n.pick("{said}: {why}", said=said, why=why)) from None


# ---------------------------------------------------------------- 4.3 the guard test for the padding


@checker(
    "4.3",
    library_answers=[pad_nested],
    where=(
        "Section 3 (the alignment rule and where it comes from) and section 2 (what failed): a guard is only "
        "as good as its cases. Which batches and sizes make each wrong padding show itself?"
    ),
    question=(
        "A padding can be right on one-sequence batches, right without CP, right when only one of tp and cp is "
        "above 1, right for even tp, and still wrong elsewhere; it can also have the right length but a mask or "
        "tokens out of place. For each of those, which batch (lengths, tp, cp) would show it, and which "
        "assertion would notice?"
    ),
    method=(
        "Choose several cases (the sequence lengths of a batch, tp, cp): batches of several sequences whose "
        "longest is not on the alignment and not first, at least one with cp above 1, one with tp and cp both "
        "above 1, and one with an odd tp. For each, build the batch with pack_sequences, call the padding "
        "function, and assert three things with a message: the padded length is at least the longest sequence "
        "and divides by the alignment of section 3; each mask row marks exactly its sequence's tokens; and "
        "reading the padded ids where the mask is set gives back the packed tokens in order."
    ),
    reveals=["a padding guard needs an unaligned longest length and a case with CP"],
)
def check_padding_guard(guard: Callable[[PadFn], object]) -> str:
    """Exercise 4.3: guard(pad_fn) raises AssertionError unless pad_fn's output survives SP and zigzag CP.

    Contract: the guard chooses its own batches. It returns without raising on each right padding (0.9.1's,
    one written on the batch's values and offsets, one a whole block longer: still safe); it raises
    AssertionError on each of more than 50 mutants of the right padding that the reference guard catches
    (another alignment rule, the wrong length aligned, a spoiled mask, tokens moved; some only when cp > 1,
    only when tp and cp are both above 1, only for an odd tp, only on several sequences). A mutant let
    through is named by what the guard's own cases never showed, or by the part of the output it did not
    look at.
    """
    _warm_jagged_padding()
    return _named_guard_verdict(PadGuardRun(guard, good=GOOD_PADS, impl_name="pad_fn"), bad=BAD_PADS)


@cache
def _warm_jagged_padding() -> None:
    """Pad one jagged batch before the learner's guard is timed: a process's first jagged tensor imports torch's
    DTensor and compiler modules (seconds on a loaded machine), which is not the guard's time."""
    GOOD_PADS[0][0](pack_sequences([[1, 2, 3], [4]]), 0, 2, 2)


# run by the lesson's set-up (`kit.lesson_start.prepare_checks`), so the learner's first 4.3 check does not pay it
WARM_UP = (_warm_jagged_padding,)
