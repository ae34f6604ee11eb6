"""Exercise 4.2's family of wrong CP splits: mutants of the zigzag split, generated, not listed (serves checks.py).

Each mutant changes one thing of the reference `zigzag_rows` (which chunks a rank takes, their order, the rows
inside them, one rank only, one cp only, a row moved across ranks, the chunk length, what happens at cp == 1) and
is named in words. `SPLIT_CALLS` are the (seq_len, cp) the learner's guard is called with: cp from 1 to 8 (the
recipes' CP sizes), the shortest length each cp allows (one row per chunk) and longer ones. A mutant counts as
wrong on a call when some rank holds other rows than zigzag gives it there, which is exactly when the
reference guard (the notebook's solution) fails it; tests hold the two to each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import torch

from verlstudy.kit import i18n

SplitFn = Callable[[torch.Tensor, int, int], torch.Tensor]

# (seq_len, cp): every cp a recipe uses up to 8, the shortest length (2*cp rows: one per chunk) and longer ones
SPLIT_CALLS: tuple[tuple[int, int], ...] = ((12, 1), (5, 1), (4, 2), (16, 2), (24, 3), (6, 3), (32, 4), (48, 8))


def zigzag_rows(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    """The reference split: without CP the whole sequence; with CP chunks r and 2*cp-1-r of 2*cp equal chunks."""
    if cp == 1:
        return x
    if len(x) % (2 * cp):  # as the course's zigzag_split: a length zigzag cannot cut evenly is refused
        raise ValueError(f"zigzag CP needs the sequence length to divide by 2*cp={2 * cp}, got {len(x)}")
    chunks = x.chunk(2 * cp)
    return torch.cat([chunks[rank], chunks[2 * cp - 1 - rank]])


def _pair(first: Callable[[int, int], int], second: Callable[[int, int], int]) -> SplitFn:
    def split(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
        if cp == 1:
            return x
        chunks = x.chunk(2 * cp)
        return torch.cat([chunks[first(cp, rank) % (2 * cp)], chunks[second(cp, rank) % (2 * cp)]])

    return split


def _inside(change: Callable[[torch.Tensor, int], torch.Tensor]) -> SplitFn:
    """Zigzag's chunks, each changed by `change(chunk, chunk_length)` (the rows inside moved)."""

    def split(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
        if cp == 1:
            return x
        chunks = x.chunk(2 * cp)
        return torch.cat([change(chunks[c], len(chunks[c])) for c in (rank, 2 * cp - 1 - rank)])

    return split


def _on_ranks(which: Callable[[int, int], bool], change: Callable[[torch.Tensor], torch.Tensor]) -> SplitFn:
    """Zigzag, except that the ranks `which(cp, rank)` picks get their rows changed."""

    def split(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
        right = zigzag_rows(x, cp, rank)
        return change(right) if cp > 1 and which(cp, rank) else right

    return split


def _when(cps: Callable[[int], bool], otherwise: SplitFn) -> SplitFn:
    """Zigzag where `cps(cp)` holds, `otherwise` elsewhere."""

    def split(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
        return zigzag_rows(x, cp, rank) if cps(cp) else otherwise(x, cp, rank)

    return split


def _moved_row(src: Callable[[int], int], shift: int) -> SplitFn:
    """All ranks together hold zigzag's rows in zigzag's order, but `shift` rows cross from rank src(cp) to the next."""

    def split(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
        if cp == 1:
            return x
        whole = torch.cat([zigzag_rows(x, cp, r) for r in range(cp)])
        size, moved = len(x) // cp, src(cp) % (cp - 1) if cp > 2 else 0
        bounds = [r * size for r in range(cp + 1)]
        bounds[moved + 1] -= shift
        return whole[bounds[rank] : bounds[rank + 1]]

    return split


def _fixed_chunk(rows: int) -> SplitFn:
    def split(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
        if cp == 1:
            return x
        mirror = 2 * cp - 1 - rank
        return torch.cat([x[rows * rank : rows * (rank + 1)], x[rows * mirror : rows * (mirror + 1)]])

    return split


def _index_off(extra_start: int, extra_end: int) -> SplitFn:
    """Zigzag by row index, with the ranges' ends off by one (a row too many, too few, or shifted)."""

    def split(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
        if cp == 1:
            return x
        size = len(x) // (2 * cp)
        rows: list[int] = []
        for c in (rank, 2 * cp - 1 - rank):
            rows += range(max(c * size + extra_start, 0), min((c + 1) * size + extra_end, len(x)))
        return x[torch.tensor(rows, dtype=torch.long)]

    return split


def _contiguous(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    return x.chunk(cp)[rank]


def _swap_halves(t: torch.Tensor) -> torch.Tensor:
    return torch.cat(t.chunk(2)[::-1]) if len(t) > 1 else t


def _drop_last(t: torch.Tensor) -> torch.Tensor:
    return t[:-1]


def _repeat_first(t: torch.Tensor) -> torch.Tensor:
    return torch.cat([t[:1], t[:-1]])


def _last(cp: int, rank: int) -> bool:
    return rank == cp - 1


def _middle(cp: int, rank: int) -> bool:
    return 0 < rank < cp - 1


def _first(cp: int, rank: int) -> bool:
    return rank == 0


def _odd(cp: int, rank: int) -> bool:
    return rank % 2 == 1


def _no_cp(change: Callable[[torch.Tensor], torch.Tensor]) -> SplitFn:
    return lambda x, cp, rank: change(x) if cp == 1 else zigzag_rows(x, cp, rank)


@dataclass(frozen=True)
class SplitMutant:
    """One wrong split and what it gets wrong, in words (never the right rule)."""

    split: SplitFn
    what: str


def _chunk_choices() -> list[SplitMutant]:
    mirror = "the chunk mirrored from the end"
    return [
        SplitMutant(
            _pair(lambda cp, r: r, lambda cp, r: cp + r),
            "a split pairing each rank's chunk with one from the second half, not " + mirror,
        ),
        SplitMutant(
            _pair(lambda cp, r: 2 * cp - 1 - r, lambda cp, r: r),
            "a split holding the right two chunks in the other order",
        ),
        SplitMutant(
            _pair(lambda cp, r: r, lambda cp, r: 2 * cp - 2 - r), "a split whose mirror chunk is one chunk too early"
        ),
        SplitMutant(
            _pair(lambda cp, r: r, lambda cp, r: 2 * cp - r), "a split whose mirror chunk is one chunk too late"
        ),
        SplitMutant(
            _pair(lambda cp, r: 2 * r, lambda cp, r: 2 * r + 1), "a split giving each rank two neighbouring chunks"
        ),
        SplitMutant(
            _pair(lambda cp, r: r + 1, lambda cp, r: 2 * cp - 2 - r), "a split with both chunk numbers shifted by one"
        ),
        SplitMutant(_pair(lambda cp, r: r, lambda cp, r: r), "a split holding its own chunk twice and no mirror chunk"),
        SplitMutant(_pair(lambda cp, r: cp - 1 - r, lambda cp, r: cp + r), "a split that mirrors around the middle"),
        SplitMutant(_contiguous, "the contiguous split (rank r holds block r)"),
        SplitMutant(_pair(lambda cp, r: r, lambda cp, r: cp - 1 - r), "a split taking both chunks from the first half"),
    ]


def _rows_inside() -> list[SplitMutant]:
    return [
        SplitMutant(
            _inside(lambda c, n: c.flip(0)), "a split with the right chunks whose rows run backwards inside them"
        ),
        SplitMutant(_inside(lambda c, n: c.roll(1)), "a split with the right chunks whose rows are rotated by one"),
        SplitMutant(
            _inside(lambda c, n: c.roll(-1)), "a split with the right chunks whose rows are rotated the other way"
        ),
        SplitMutant(_inside(lambda c, n: _swap_halves(c)), "a split with the right chunks whose halves are swapped"),
        SplitMutant(
            _inside(lambda c, n: _repeat_first(c)), "a split whose chunks repeat their first row and lose their last"
        ),
        SplitMutant(
            lambda x, cp, r: zigzag_rows(x, cp, r).flip(0) if cp > 1 else x,
            "a split holding the right rows back to front",
        ),
        # wrong only between a rank's first and last rows: a guard reading the ends of each rank does not see them
        SplitMutant(
            _on_ranks(lambda cp, r: True, _inner_reversed), "a split whose rows between each rank's ends run backwards"
        ),
        SplitMutant(
            _on_ranks(lambda cp, r: True, _junction_swapped), "a split swapping the two rows where its chunks meet"
        ),
    ]


def _inner_reversed(t: torch.Tensor) -> torch.Tensor:
    return torch.cat([t[:1], t[1:-1].flip(0), t[-1:]]) if len(t) > 3 else t.flip(0)


def _junction_swapped(t: torch.Tensor) -> torch.Tensor:
    half = len(t) // 2
    order = [*range(half - 1), half, half - 1, *range(half + 1, len(t))]
    return t[torch.tensor(order, dtype=torch.long)]


def _one_rank_wrong() -> list[SplitMutant]:
    where = {_first: "the first", _last: "the last", _middle: "a middle", _odd: "every odd-numbered"}
    how = {
        (lambda t: t.flip(0)): "reversed",
        (lambda t: t.roll(1)): "rotated by one",
        _swap_halves: "with its two chunks swapped",
        _drop_last: "missing its last row",
    }
    return [
        SplitMutant(_on_ranks(which, change), f"a split right on every rank but {ranks} one(s), whose rows are {words}")
        for which, ranks in where.items()
        for change, words in how.items()
    ]


def _one_cp_wrong() -> list[SplitMutant]:
    return [
        SplitMutant(_when(lambda cp: cp <= 2, _contiguous), "a split that is zigzag only when cp is 1 or 2"),
        SplitMutant(_when(lambda cp: cp % 2 == 0, _contiguous), "a split that is zigzag only for an even cp"),
        SplitMutant(_when(lambda cp: cp != 2, _contiguous), "a split that is contiguous when cp == 2"),
        SplitMutant(_when(lambda cp: cp < 8, _contiguous), "a split that is zigzag only for cp below 8"),
        SplitMutant(
            _when(lambda cp: cp != 3, _inside(lambda c, n: c.flip(0))), "a split wrong inside its chunks at cp == 3"
        ),
        SplitMutant(_no_cp(lambda x: x[: len(x) // 2]), "a split that drops half the rows when cp == 1"),
        SplitMutant(_no_cp(lambda x: x.flip(0)), "a split that reverses the rows when cp == 1"),
        SplitMutant(_no_cp(_inner_reversed), "a split that reverses the rows between the ends when cp == 1"),
        SplitMutant(_no_cp(lambda x: x[1:]), "a split that loses the first row when cp == 1"),
        SplitMutant(_no_cp(lambda x: x[:0]), "a split that holds nothing when cp == 1"),
        SplitMutant(
            _no_cp(lambda x: torch.cat([x.chunk(2)[0], x.chunk(2)[-1]]) if len(x) % 2 else x.chunk(2)[0]),
            "a split that treats cp == 1 as two chunks and keeps the first",
        ),
    ]


def _rows_across_ranks() -> list[SplitMutant]:
    """All ranks together still hold zigzag's rows in zigzag's order: only the rank boundaries moved."""
    return [
        SplitMutant(
            _moved_row(lambda cp: 0, 1),
            "a split moving one row from the first rank to the next",
        ),
        SplitMutant(
            _moved_row(lambda cp: cp - 2, 1),
            "a split moving one row from the next-to-last rank to the last",
        ),
        SplitMutant(
            _moved_row(lambda cp: 0, -1),
            "a split moving one row from the second rank back to the first",
        ),
        SplitMutant(
            _moved_row(lambda cp: cp // 2, 1),
            "a split moving one row across a middle rank boundary",
        ),
    ]


def _chunk_lengths() -> list[SplitMutant]:
    return [
        SplitMutant(_fixed_chunk(1), "a split whose chunks are always one row long"),
        SplitMutant(_fixed_chunk(2), "a split whose chunks are always two rows long"),
        SplitMutant(_fixed_chunk(3), "a split whose chunks are always three rows long"),
        SplitMutant(_index_off(0, 1), "a split whose chunks each take one row too many"),
        SplitMutant(_index_off(0, -1), "a split whose chunks each lose their last row"),
        SplitMutant(_index_off(1, 1), "a split whose chunks each start one row late"),
        SplitMutant(_index_off(-1, -1), "a split whose chunks each start one row early"),
        SplitMutant(
            lambda x, cp, r: (
                torch.cat([x.chunk(2 * cp - 1)[r], x.chunk(2 * cp - 1)[(2 * cp - 1 - r) % (2 * cp - 1)]])
                if cp > 1
                else x
            ),
            "a split cutting the rows into one chunk fewer than it should",
        ),
    ]


def split_mutants() -> tuple[SplitMutant, ...]:
    """The family: every mutant above (more than 50), each a different plausible bug."""
    return (
        *_chunk_choices(),
        *_rows_inside(),
        *_one_rank_wrong(),
        *_one_cp_wrong(),
        *_rows_across_ranks(),
        *_chunk_lengths(),
    )


def rank_rows(split: SplitFn, seq_len: int, cp: int) -> list[list[int]] | None:
    """What `split` gives each rank of `torch.arange(seq_len)` (None when it raises)."""
    rows = torch.arange(seq_len)
    try:
        return [split(rows, cp, rank).tolist() for rank in range(cp)]
    except Exception:
        return None


@cache
def zigzag_table(seq_len: int, cp: int) -> tuple[tuple[int, ...], ...]:
    rows = torch.arange(seq_len)
    return tuple(tuple(zigzag_rows(rows, cp, r).tolist()) for r in range(cp))


def wrong_at(split: SplitFn, seq_len: int, cp: int) -> bool:
    """Whether some rank holds other rows (or other order) than zigzag gives it, for seq_len rows at this cp."""
    held = rank_rows(split, seq_len, cp)
    return held is None or [tuple(r) for r in held] != list(zigzag_table(seq_len, cp))


def how_wrong(split: SplitFn, seq_len: int, cp: int) -> str:
    """What a guard would have had to look at to see `split` is wrong on this call (for naming its mistake)."""
    held, want = rank_rows(split, seq_len, cp), [list(r) for r in zigzag_table(seq_len, cp)]
    if held is None:
        return i18n._("the split raises there")
    wrong = [r for r in range(cp) if held[r] != want[r]]
    if cp == 1:
        return i18n._("with cp == 1 there is no split: the one rank must hold every row, in order")
    if [row for r in held for row in r] == [row for r in want for row in r]:
        how = "moved"
    elif all(sorted(h) == sorted(w) for h, w in zip(held, want, strict=True)):
        how = "reordered"
    elif sorted(row for r in held for row in r) == list(range(seq_len)):
        how = "once"
    else:
        how = "other"
    return i18n.pick(_HOW_WRONG[how, 0 in wrong], wrong=wrong)


# how a split is wrong on one call, by (what its ranks hold, whether rank 0 is among the wrong ones): one whole
# sentence each, for translation
_HOW_WRONG = {
    ("moved", False): "only rank(s) {wrong} are wrong, yet all ranks together hold exactly zigzag's rows in zigzag's "
    "order: the rows sit on other ranks, so compare each rank's own rows",
    ("moved", True): "rank(s) {wrong} are wrong, yet all ranks together hold exactly zigzag's rows in zigzag's order: "
    "the rows sit on other ranks, so compare each rank's own rows",
    ("reordered", False): "only rank(s) {wrong} are wrong, each holding the right rows in another order: compare the "
    "rows in order, not as a set",
    ("reordered", True): "rank(s) {wrong} are wrong, each holding the right rows in another order: compare the rows in "
    "order, not as a set",
    ("once", False): "only rank(s) {wrong} are wrong, although every row is held exactly once: a check of 'every row "
    "once' does not see it",
    ("once", True): "rank(s) {wrong} are wrong, although every row is held exactly once: a check of 'every row once' "
    "does not see it",
    ("other", False): "only rank(s) {wrong} are wrong, holding other rows than zigzag gives them: check every rank",
    ("other", True): "rank(s) {wrong} are wrong, holding other rows than zigzag gives them",
}
