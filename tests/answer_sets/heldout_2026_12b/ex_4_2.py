"""Exercise 4.2: my_split_guard(split_fn, seq_len, cp), AssertionError unless split_fn is the zigzag split."""

import numpy as np
import torch

# The text: call split_fn(torch.arange(seq_len), cp, rank) for every rank; raise AssertionError with a message saying
# which rank holds what (a bare assert is refused) unless each rank holds exactly zigzag's rows, in order: chunks
# r and 2cp-1-r of 2cp equal chunks; at cp = 1 there is no split (any length); return None otherwise.


def _zigzag(seq_len, cp, rank):
    if cp == 1:
        return list(range(seq_len))
    c = seq_len // (2 * cp)
    return list(range(rank * c, (rank + 1) * c)) + list(range((2 * cp - 1 - rank) * c, (2 * cp - rank) * c))


# --- WRONG -----------------------------------------------------------------------------------------------------------


def w_union_only(split_fn, seq_len, cp):
    # checks that all ranks together hold every row once: the lesson's suspect split passes
    held = sorted(v for r in range(cp) for v in split_fn(torch.arange(seq_len), cp, r).tolist())
    assert held == list(range(seq_len)), f"cp={cp}: ranks hold {held}"


def w_rank0_only(split_fn, seq_len, cp):
    # checks rank 0 only: a split wrong on another rank passes
    got = split_fn(torch.arange(seq_len), cp, 0).tolist()
    assert got == _zigzag(seq_len, cp, 0), f"cp={cp} rank 0 holds {got}"


def w_sets(split_fn, seq_len, cp):
    # compares sets: rows moved inside a chunk or chunks in another order pass
    for r in range(cp):
        got = split_fn(torch.arange(seq_len), cp, r).tolist()
        assert set(got) == set(_zigzag(seq_len, cp, r)), f"cp={cp} rank {r} holds {got}"


def w_bare_assert(split_fn, seq_len, cp):
    # a bare assert: the text asks for a message naming what the rank holds
    for r in range(cp):
        assert split_fn(torch.arange(seq_len), cp, r).tolist() == _zigzag(seq_len, cp, r)


def w_value_error(split_fn, seq_len, cp):
    # raises ValueError, not AssertionError
    for r in range(cp):
        got = split_fn(torch.arange(seq_len), cp, r).tolist()
        if got != _zigzag(seq_len, cp, r):
            raise ValueError(f"cp={cp} rank {r} holds {got}")


def w_lengths_only(split_fn, seq_len, cp):
    # checks each rank's row count only
    for r in range(cp):
        got = split_fn(torch.arange(seq_len), cp, r)
        assert got.numel() == len(_zigzag(seq_len, cp, r)), f"cp={cp} rank {r} holds {got.numel()} rows"


def w_cp1_as_zigzag(split_fn, seq_len, cp):
    # treats cp = 1 as two chunks of seq_len // 2: an odd length at cp = 1 loses its last row and fails the right split
    c = seq_len // (2 * cp)
    for r in range(cp):
        want = list(range(r * c, (r + 1) * c)) + list(range((2 * cp - 1 - r) * c, (2 * cp - r) * c))
        got = split_fn(torch.arange(seq_len), cp, r).tolist()
        assert got == want, f"cp={cp} rank {r} holds {got}; want {want}"


def w_suspect_as_truth(split_fn, seq_len, cp):
    # takes "one chunk from each half" (chunks r and cp + r) as the rule: the right zigzag fails
    c = seq_len // (2 * cp) if cp > 1 else seq_len
    for r in range(cp):
        want = list(range(r * c, (r + 1) * c)) + (list(range((cp + r) * c, (cp + r + 1) * c)) if cp > 1 else [])
        got = split_fn(torch.arange(seq_len), cp, r).tolist()
        assert got == want, f"cp={cp} rank {r} holds {got}"


def w_skips_last_rank(split_fn, seq_len, cp):
    # off by one: range(cp - 1) never checks the last rank
    for r in range(cp - 1):
        got = split_fn(torch.arange(seq_len), cp, r).tolist()
        assert got == _zigzag(seq_len, cp, r), f"cp={cp} rank {r} holds {got}"


def w_endpoints(split_fn, seq_len, cp):
    # checks each rank's first and last row only
    for r in range(cp):
        got = split_fn(torch.arange(seq_len), cp, r).tolist()
        want = _zigzag(seq_len, cp, r)
        assert got[:1] == want[:1] and got[-1:] == want[-1:], f"cp={cp} rank {r} holds {got}"


def w_cp1_skipped(split_fn, seq_len, cp):
    # returns at cp = 1 without calling the split: a split that mishandles cp = 1 passes
    if cp == 1:
        return
    for r in range(cp):
        got = split_fn(torch.arange(seq_len), cp, r).tolist()
        assert got == _zigzag(seq_len, cp, r), f"cp={cp} rank {r} holds {got}"


def w_mirror_off_by_one(split_fn, seq_len, cp):
    # second chunk 2cp - r, not 2cp - 1 - r: the right split fails
    c = seq_len // (2 * cp) if cp > 1 else seq_len
    for r in range(cp):
        want = list(range(r * c, (r + 1) * c))
        if cp > 1:
            second = (2 * cp - r) % (2 * cp)
            want += list(range(second * c, (second + 1) * c))
        got = split_fn(torch.arange(seq_len), cp, r).tolist()
        assert got == want, f"cp={cp} rank {r} holds {got}"


def w_returns_false(split_fn, seq_len, cp):
    # returns a bool instead of raising: a wrong split goes unreported
    return all(split_fn(torch.arange(seq_len), cp, r).tolist() == _zigzag(seq_len, cp, r) for r in range(cp))


# --- RIGHT -----------------------------------------------------------------------------------------------------------


def r_chunk_cat(split_fn, seq_len, cp):
    # builds zigzag with torch.chunk and cat, compares element lists
    rows = torch.arange(seq_len)
    chunks = rows.chunk(2 * cp) if cp > 1 else (rows,)
    for rank in range(cp):
        expected = rows if cp == 1 else torch.cat([chunks[rank], chunks[2 * cp - 1 - rank]])
        got = split_fn(torch.arange(seq_len), cp, rank)
        assert got.tolist() == expected.tolist(), (
            f"cp={cp}, rank {rank}: holds {got.tolist()}, zigzag {expected.tolist()}"
        )


def r_owner_table(split_fn, seq_len, cp):
    # numpy: the expected rows of each rank from a chunk index, compared in order
    for rank in range(cp):
        if cp == 1:
            want = np.arange(seq_len)
        else:
            width = seq_len // (2 * cp)
            want = np.concatenate([np.arange(width) + rank * width, np.arange(width) + (2 * cp - 1 - rank) * width])
        got = np.asarray(split_fn(torch.arange(seq_len), cp, rank).tolist())
        if got.shape != want.shape or not np.array_equal(got, want):
            raise AssertionError(f"rank {rank} of cp={cp} got rows {got.tolist()}, expected {want.tolist()}")


def r_all_then_report(split_fn, seq_len, cp):
    # gathers every rank first, then reports all wrong ranks in one message
    wrong = []
    for rank in range(cp):
        got = split_fn(torch.arange(seq_len), cp, rank).tolist()
        if got != _zigzag(seq_len, cp, rank):
            wrong.append(f"rank {rank} holds {got}, zigzag gives {_zigzag(seq_len, cp, rank)}")
    if wrong:
        raise AssertionError(f"cp={cp}, seq_len={seq_len}: " + "; ".join(wrong))


WRONG = {
    "union of rows only": (w_union_only,),
    "rank 0 only": (w_rank0_only,),
    "sets, not order": (w_sets,),
    "bare assert": (w_bare_assert,),
    "ValueError": (w_value_error,),
    "row counts only": (w_lengths_only,),
    "cp = 1 cut in two chunks": (w_cp1_as_zigzag,),
    "suspect split as the rule": (w_suspect_as_truth,),
    "last rank never checked": (w_skips_last_rank,),
    "first and last row only": (w_endpoints,),
    "cp = 1 skipped": (w_cp1_skipped,),
    "mirror chunk off by one": (w_mirror_off_by_one,),
    "returns a bool": (w_returns_false,),
}

RIGHT = {
    "chunk and cat": (r_chunk_cat,),
    "numpy expected rows": (r_owner_table,),
    "every rank, one message": (r_all_then_report,),
}


def u_split_errors_as_assertions(split_fn, seq_len, cp):
    # turns an error the split raises into an AssertionError naming the rank; the contract says only that such an
    # error "is named", not whether the guard should let it through or report it as a wrong split
    for rank in range(cp):
        try:
            got = split_fn(torch.arange(seq_len), cp, rank).tolist()
        except Exception as error:
            raise AssertionError(f"cp={cp} rank {rank}: the split raised {error!r}") from error
        assert got == _zigzag(seq_len, cp, rank), f"cp={cp} rank {rank} holds {got}"


UNSURE = {
    "split's own errors reported as AssertionError": (u_split_errors_as_assertions,),
}
