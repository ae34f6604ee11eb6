"""Exercise 4.2: my_split_guard(split_fn, seq_len, cp), held-out answers."""

import numpy as np
import torch


def _zigzag_rows(seq_len, cp, rank):
    if cp == 1:
        return list(range(seq_len))
    chunk = seq_len // (2 * cp)
    return list(range(rank * chunk, (rank + 1) * chunk)) + list(
        range((2 * cp - 1 - rank) * chunk, (2 * cp - rank) * chunk)
    )


# WRONG ---------------------------------------------------------------
def w_union_only(split_fn, seq_len, cp):
    # checks that all ranks together hold every row once: the lesson's suspect split passes
    rows = torch.arange(seq_len)
    held = sorted(v for r in range(cp) for v in split_fn(rows, cp, r).tolist())
    assert held == list(range(seq_len)), f"rows held {held}"


def w_lengths_only(split_fn, seq_len, cp):
    # checks only each rank's length
    rows = torch.arange(seq_len)
    for r in range(cp):
        got = split_fn(rows, cp, r)
        assert got.numel() == seq_len // cp, f"rank {r} holds {got.numel()} rows"


def w_rank0_only(split_fn, seq_len, cp):
    # checks rank 0 only: a mutant wrong on one other rank passes
    got = split_fn(torch.arange(seq_len), cp, 0).tolist()
    assert got == _zigzag_rows(seq_len, cp, 0), f"rank 0 holds {got}"


def w_ignores_order(split_fn, seq_len, cp):
    # compares sets: rows moved inside a chunk, or chunks swapped, pass
    rows = torch.arange(seq_len)
    for r in range(cp):
        got = set(split_fn(rows, cp, r).tolist())
        assert got == set(_zigzag_rows(seq_len, cp, r)), f"rank {r} holds {sorted(got)}"


def w_bare_assert(split_fn, seq_len, cp):
    # a bare assert with no message: the text refuses it
    rows = torch.arange(seq_len)
    for r in range(cp):
        assert split_fn(rows, cp, r).tolist() == _zigzag_rows(seq_len, cp, r)


def w_returns_false(split_fn, seq_len, cp):
    # returns False instead of raising
    rows = torch.arange(seq_len)
    return all(split_fn(rows, cp, r).tolist() == _zigzag_rows(seq_len, cp, r) for r in range(cp))


def w_wrong_zigzag(split_fn, seq_len, cp):
    # expects chunks r and cp + r (the suspect's layout): refuses the right split
    rows = torch.arange(seq_len)
    chunk = seq_len // (2 * cp) if cp > 1 else seq_len
    for r in range(cp):
        pieces = (r, cp + r) if cp > 1 else (0,)
        want = [p for c in pieces for p in range(c * chunk, (c + 1) * chunk)]
        got = split_fn(rows, cp, r).tolist()
        assert got == want, f"rank {r} holds {got}, want {want}"


def w_value_error(split_fn, seq_len, cp):
    # raises ValueError: the guard must raise AssertionError
    rows = torch.arange(seq_len)
    for r in range(cp):
        got = split_fn(rows, cp, r).tolist()
        if got != _zigzag_rows(seq_len, cp, r):
            raise ValueError(f"rank {r} holds {got}")


def w_tensor_eq_in_assert(split_fn, seq_len, cp):
    # asserts on an elementwise tensor comparison: "ambiguous truth value" RuntimeError, or a shape error
    rows = torch.arange(seq_len)
    for r in range(cp):
        got = split_fn(rows, cp, r)
        want = torch.tensor(_zigzag_rows(seq_len, cp, r))
        assert (got == want).all() if got.numel() == 1 else got == want, f"rank {r} holds {got}"


def w_skips_cp1(split_fn, seq_len, cp):
    # skips cp == 1 ("no split"): a split that mishandles cp == 1 passes
    if cp == 1:
        return None
    rows = torch.arange(seq_len)
    for r in range(cp):
        got = split_fn(rows, cp, r).tolist()
        assert got == _zigzag_rows(seq_len, cp, r), f"rank {r} holds {got}"
    return None


def w_first_chunk_only(split_fn, seq_len, cp):
    # checks only each rank's first chunk
    rows = torch.arange(seq_len)
    for r in range(cp):
        want = _zigzag_rows(seq_len, cp, r)
        got = split_fn(rows, cp, r).tolist()
        half = len(want) // 2 if cp > 1 else len(want)
        assert got[:half] == want[:half], f"rank {r} starts {got[:half]}"


# RIGHT ---------------------------------------------------------------
def r_chunk_cat(split_fn, seq_len, cp):
    rows = torch.arange(seq_len)
    if cp == 1:
        expected = {0: rows}
    else:
        chunks = rows.chunk(2 * cp)
        expected = {r: torch.cat([chunks[r], chunks[2 * cp - 1 - r]]) for r in range(cp)}
    for rank, want in expected.items():
        got = split_fn(rows, cp, rank)
        assert isinstance(got, torch.Tensor) and got.shape == want.shape and torch.equal(got, want), (
            f"cp={cp}, rank {rank}: got {got.tolist() if isinstance(got, torch.Tensor) else got}, zigzag {want.tolist()}"
        )


def r_collect_then_assert(split_fn, seq_len, cp):
    problems = []
    for rank in range(cp):
        got = split_fn(torch.arange(seq_len), cp, rank).tolist()
        want = _zigzag_rows(seq_len, cp, rank)
        if got != want:
            problems.append(f"rank {rank} of {cp} holds {got}, expected {want}")
    if problems:
        raise AssertionError("; ".join(problems))


def r_numpy_reshape(split_fn, seq_len, cp):
    full = np.arange(seq_len)
    blocks = full.reshape(2 * cp, -1) if cp > 1 else full.reshape(1, -1)
    for rank in range(cp):
        want = np.concatenate([blocks[rank], blocks[2 * cp - 1 - rank]]) if cp > 1 else blocks[0]
        got = np.asarray(split_fn(torch.arange(seq_len), cp, rank).tolist())
        assert got.shape == want.shape and (got == want).all(), f"zigzag rank {rank}/{cp}: {got} != {want}"


WRONG = {
    "union of ranks only": (w_union_only,),
    "lengths only": (w_lengths_only,),
    "rank 0 only": (w_rank0_only,),
    "sets, order ignored": (w_ignores_order,),
    "bare assert": (w_bare_assert,),
    "returns False": (w_returns_false,),
    "suspect's layout expected": (w_wrong_zigzag,),
    "ValueError": (w_value_error,),
    "tensor == in assert": (w_tensor_eq_in_assert,),
    "cp == 1 skipped": (w_skips_cp1,),
    "first chunk only": (w_first_chunk_only,),
}
RIGHT = {
    "chunk and cat, torch.equal": (r_chunk_cat,),
    "collect problems then raise": (r_collect_then_assert,),
    "numpy reshape into blocks": (r_numpy_reshape,),
}
UNSURE = {}
