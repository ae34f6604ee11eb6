"""Exercise 4.2 answers: my_split_guard(split_fn, seq_len, cp) raises AssertionError unless split_fn is zigzag.

Zigzag: 2*cp equal chunks, rank r holds chunks r and 2*cp-1-r, in that order; at cp == 1 the whole sequence.
"""

import numpy as np
import torch


def _zigzag_rows(seq_len, cp, rank):
    if cp == 1:
        return list(range(seq_len))
    chunk = seq_len // (2 * cp)
    return [*range(rank * chunk, (rank + 1) * chunk), *range((2 * cp - 1 - rank) * chunk, (2 * cp - rank) * chunk)]


# --- wrong ---
def w_union_only(split_fn, seq_len, cp):
    # checks only that all ranks together hold every row once: the suspect split passes
    held = torch.cat([split_fn(torch.arange(seq_len), cp, r) for r in range(cp)])
    assert sorted(held.tolist()) == list(range(seq_len)), f"rows held: {held.tolist()}"


def w_sorted_per_rank(split_fn, seq_len, cp):
    # compares each rank's rows as a sorted set: rows moved inside a chunk, or chunks swapped, pass
    for rank in range(cp):
        got = sorted(split_fn(torch.arange(seq_len), cp, rank).tolist())
        assert got == sorted(_zigzag_rows(seq_len, cp, rank)), f"rank {rank} holds {got}"


def w_rank_zero_only(split_fn, seq_len, cp):
    # checks rank 0 only: a split wrong on one other rank passes
    got = split_fn(torch.arange(seq_len), cp, 0).tolist()
    assert got == _zigzag_rows(seq_len, cp, 0), f"rank 0 holds {got}"


def w_bare_assert(split_fn, seq_len, cp):
    # a bare assert without a message: refused by the exercise
    for rank in range(cp):
        assert split_fn(torch.arange(seq_len), cp, rank).tolist() == _zigzag_rows(seq_len, cp, rank)


def w_lengths_only(split_fn, seq_len, cp):
    # checks how many rows each rank holds, not which
    for rank in range(cp):
        n = split_fn(torch.arange(seq_len), cp, rank).numel()
        assert n == seq_len // cp, f"rank {rank} holds {n} rows"


def w_skip_cp1(split_fn, seq_len, cp):
    # returns early at cp == 1: a split that mishandles cp == 1 passes
    if cp == 1:
        return
    for rank in range(cp):
        got = split_fn(torch.arange(seq_len), cp, rank).tolist()
        assert got == _zigzag_rows(seq_len, cp, rank), f"rank {rank} holds {got}"


def w_suspect_as_expected(split_fn, seq_len, cp):
    # expects "one chunk from each half" (r and cp + r): refuses the right split
    for rank in range(cp):
        chunks = torch.arange(seq_len).chunk(2 * cp)
        want = torch.cat([chunks[rank], chunks[cp + rank]]).tolist() if cp > 1 else list(range(seq_len))
        got = split_fn(torch.arange(seq_len), cp, rank).tolist()
        assert got == want, f"rank {rank} holds {got}, expected {want}"


def w_value_error(split_fn, seq_len, cp):
    # raises ValueError, not AssertionError
    for rank in range(cp):
        got = split_fn(torch.arange(seq_len), cp, rank).tolist()
        if got != _zigzag_rows(seq_len, cp, rank):
            raise ValueError(f"rank {rank} holds {got}")


def w_elementwise_eq(split_fn, seq_len, cp):
    # (got == want).all() raises a RuntimeError on a length mismatch: an exception of the guard's own
    for rank in range(cp):
        got = split_fn(torch.arange(seq_len), cp, rank)
        want = torch.tensor(_zigzag_rows(seq_len, cp, rank))
        assert bool((got == want).all()), f"rank {rank} holds {got.tolist()}"


def w_endpoints_only(split_fn, seq_len, cp):
    # checks the first and last row of each rank only: rows moved in the middle pass
    for rank in range(cp):
        got = split_fn(torch.arange(seq_len), cp, rank).tolist()
        want = _zigzag_rows(seq_len, cp, rank)
        assert got[:1] == want[:1] and got[-1:] == want[-1:], f"rank {rank} holds {got}"


def w_wrong_chunk_size(split_fn, seq_len, cp):
    # chunk = seq_len // cp: the expected rows are wrong, the right split is refused
    for rank in range(cp):
        chunk = seq_len // cp
        want = list(range(rank * chunk, (rank + 1) * chunk))
        got = split_fn(torch.arange(seq_len), cp, rank).tolist()
        assert got == want, f"rank {rank} holds {got}"


# --- right ---
def r_chunk_and_cat(split_fn, seq_len, cp):
    rows = torch.arange(seq_len)
    if cp == 1:
        got = split_fn(rows, cp, 0)
        assert torch.equal(got, rows), f"cp=1 must hold every row in order, got {got.tolist()}"
        return
    chunks = rows.chunk(2 * cp)
    for rank in range(cp):
        expected = torch.cat((chunks[rank], chunks[-1 - rank]))
        got = split_fn(rows, cp, rank)
        assert got.shape == expected.shape and torch.equal(got, expected), (
            f"rank {rank} of {cp}: got {got.tolist()}, zigzag wants {expected.tolist()}"
        )


def r_collect_then_assert(split_fn, seq_len, cp):
    problems = []
    for rank in range(cp):
        got = np.asarray(split_fn(torch.arange(seq_len), cp, rank))
        want = np.asarray(_zigzag_rows(seq_len, cp, rank))
        if got.shape != want.shape or not np.array_equal(got, want):
            problems.append(f"rank {rank}: {got.tolist()} != {want.tolist()}")
    if problems:
        raise AssertionError("not the zigzag split (cp=%d): %s" % (cp, "; ".join(problems)))


def r_reshape_formula(split_fn, seq_len, cp):
    pieces = 2 * cp if cp > 1 else 1
    grid = torch.arange(seq_len).reshape(pieces, seq_len // pieces)
    for rank in range(cp):
        idx = [rank, pieces - 1 - rank] if cp > 1 else [0]
        want = grid[idx].reshape(-1).tolist()
        have = split_fn(torch.arange(seq_len), cp, rank).tolist()
        if have != want:
            raise AssertionError(f"split_fn(rows, cp={cp}, rank={rank}) gave {have}; expected {want}")


# --- unsure ---
def u_split_errors_to_assertion(split_fn, seq_len, cp):
    # turns an error the split raises into an AssertionError; the text names such errors without saying
    # whether the guard must let them through or may report them as a failed check
    for rank in range(cp):
        try:
            got = split_fn(torch.arange(seq_len), cp, rank).tolist()
        except Exception as error:  # the split's own failure
            raise AssertionError(f"split_fn raised {error!r} on rank {rank}") from error
        assert got == _zigzag_rows(seq_len, cp, rank), f"rank {rank} holds {got}"


def u_offset_rows(split_fn, seq_len, cp):
    # hands the split rows 1000.. instead of arange(seq_len): the notebook says torch.arange(seq_len), the
    # docstring says the guard chooses its rows
    base = torch.arange(seq_len) + 1000
    for rank in range(cp):
        got = (split_fn(base, cp, rank) - 1000).tolist()
        assert got == _zigzag_rows(seq_len, cp, rank), f"rank {rank} holds {got}"


WRONG = {
    "union of ranks only": (w_union_only,),
    "sorted per rank": (w_sorted_per_rank,),
    "rank 0 only": (w_rank_zero_only,),
    "bare assert": (w_bare_assert,),
    "lengths only": (w_lengths_only,),
    "cp == 1 skipped": (w_skip_cp1,),
    "suspect split as expectation": (w_suspect_as_expected,),
    "ValueError": (w_value_error,),
    "elementwise == on mismatched lengths": (w_elementwise_eq,),
    "endpoints only": (w_endpoints_only,),
    "chunk of seq_len // cp": (w_wrong_chunk_size,),
}
RIGHT = {
    "chunk and cat, torch.equal": (r_chunk_and_cat,),
    "numpy, collect then raise": (r_collect_then_assert,),
    "reshape grid, explicit raise": (r_reshape_formula,),
}
UNSURE = {
    "split errors become AssertionError": (u_split_errors_to_assertion,),
    "offset rows": (u_offset_rows,),
}
