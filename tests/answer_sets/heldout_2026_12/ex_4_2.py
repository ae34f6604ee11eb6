"""4.2 my_split_guard(split_fn, seq_len, cp): AssertionError (with message) unless split_fn is zigzag."""
import numpy as np
import torch


def _want(seq_len, cp, rank):
    rows = torch.arange(seq_len)
    chunks = rows.chunk(2 * cp)
    return torch.cat([chunks[rank], chunks[2 * cp - 1 - rank]]).tolist()


# ---------------- wrong
def w_sorted_compare(split_fn, seq_len, cp):
    for r in range(cp):
        got = split_fn(torch.arange(seq_len), cp, r).tolist()
        assert sorted(got) == sorted(_want(seq_len, cp, r)), f"rank {r} holds {got}"


def w_union_only(split_fn, seq_len, cp):
    held = torch.cat([split_fn(torch.arange(seq_len), cp, r) for r in range(cp)])
    assert sorted(held.tolist()) == list(range(seq_len)), f"ranks hold {held.tolist()}"


def w_lengths_only(split_fn, seq_len, cp):
    for r in range(cp):
        got = split_fn(torch.arange(seq_len), cp, r)
        assert got.numel() == seq_len // cp, f"rank {r} holds {got.numel()} rows"


def w_rank0_only(split_fn, seq_len, cp):
    got = split_fn(torch.arange(seq_len), cp, 0).tolist()
    assert got == _want(seq_len, cp, 0), f"rank 0 holds {got}"


def w_bare_assert(split_fn, seq_len, cp):
    for r in range(cp):
        assert split_fn(torch.arange(seq_len), cp, r).tolist() == _want(seq_len, cp, r)


def w_value_error(split_fn, seq_len, cp):
    for r in range(cp):
        got = split_fn(torch.arange(seq_len), cp, r).tolist()
        if got != _want(seq_len, cp, r):
            raise ValueError(f"rank {r} holds {got}")


def w_ends_only(split_fn, seq_len, cp):
    for r in range(cp):
        got = split_fn(torch.arange(seq_len), cp, r).tolist()
        want = _want(seq_len, cp, r)
        assert len(got) == len(want) and got[0] == want[0] and got[-1] == want[-1], f"rank {r} holds {got}"


def w_half_rule(split_fn, seq_len, cp):
    # expects "one chunk from each half", the suspect's own rule
    for r in range(cp):
        chunks = torch.arange(seq_len).chunk(2 * cp)
        want = torch.cat([chunks[r], chunks[cp + r]]).tolist() if cp > 1 else list(range(seq_len))
        got = split_fn(torch.arange(seq_len), cp, r).tolist()
        assert got == want, f"rank {r} holds {got}, expected {want}"


def w_skips_cp1(split_fn, seq_len, cp):
    if cp == 1:
        return None  # nothing to split
    for r in range(cp):
        got = split_fn(torch.arange(seq_len), cp, r).tolist()
        assert got == _want(seq_len, cp, r), f"rank {r} holds {got}"


def w_subset_only(split_fn, seq_len, cp):
    for r in range(cp):
        got = split_fn(torch.arange(seq_len), cp, r).tolist()
        want = set(_want(seq_len, cp, r))
        assert all(x in want for x in got), f"rank {r} holds {got}"


def w_chunk_rank_and_mirror_of_cp(split_fn, seq_len, cp):
    # off by one in the mirror chunk: 2*cp - r instead of 2*cp - 1 - r, clamped
    for r in range(cp):
        chunks = torch.arange(seq_len).chunk(2 * cp)
        want = torch.cat([chunks[r], chunks[min(2 * cp - r, 2 * cp - 1)]]).tolist()
        got = split_fn(torch.arange(seq_len), cp, r).tolist()
        assert got == want, f"rank {r}: {got} != {want}"


# ---------------- right
def r_arithmetic(split_fn, seq_len, cp):
    c = seq_len // (2 * cp)
    for rank in range(cp):
        want = list(range(rank * c, (rank + 1) * c)) + list(range((2 * cp - 1 - rank) * c, (2 * cp - rank) * c))
        got = split_fn(torch.arange(seq_len), cp, rank)
        got_list = got.tolist()
        assert got_list == want, f"cp={cp}, rank {rank}: got rows {got_list}, zigzag gives {want}"


def r_torch_equal(split_fn, seq_len, cp):
    rows = torch.arange(seq_len)
    pieces = rows.chunk(2 * cp)
    for rank in range(cp):
        expected = torch.cat([pieces[rank], pieces[-1 - rank]])
        got = split_fn(rows.clone(), cp, rank)
        assert got.shape == expected.shape and torch.equal(got, expected), (
            f"rank {rank} of cp={cp} holds {got.tolist()} instead of {expected.tolist()}")


def r_numpy(split_fn, seq_len, cp):
    blocks = np.array_split(np.arange(seq_len), 2 * cp)
    for rank in range(cp):
        want = np.concatenate([blocks[rank], blocks[2 * cp - 1 - rank]])
        got = np.asarray(split_fn(torch.arange(seq_len), cp, rank).tolist())
        if got.shape != want.shape or not (got == want).all():
            raise AssertionError(f"rank {rank}: {got.tolist()} vs zigzag {want.tolist()}")


WRONG = {
    "compares sorted rows (order ignored)": (w_sorted_compare,),
    "all ranks together hold every row once": (w_union_only,),
    "row counts only": (w_lengths_only,),
    "rank 0 only": (w_rank0_only,),
    "bare assert without message": (w_bare_assert,),
    "raises ValueError": (w_value_error,),
    "first and last row of each rank only": (w_ends_only,),
    "expects the 'one chunk from each half' rule": (w_half_rule,),
    "skips cp == 1": (w_skips_cp1,),
    "every row held is zigzag's (subset only)": (w_subset_only,),
    "mirror chunk off by one": (w_chunk_rank_and_mirror_of_cp,),
    # written as right, rejected on seq_len=5 at cp=1: without CP there is no split, so any length is whole (the
    # exercise text said only "a multiple of 2*cp" then; it now says so, and the checker was right)
    "index arithmetic (chunks at cp == 1 too)": (r_arithmetic,),
}
RIGHT = {"torch.equal on chunks": (r_torch_equal,), "numpy array_split": (r_numpy,)}
