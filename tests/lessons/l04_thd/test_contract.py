"""Lesson 04's guard checkers judge by mutants: the families hold together, and guards of other classes are judged.

The families: more than 50 wrong splits and paddings, each wrong (the split on some call, the padding on some batch
by the safety oracle), the right ones never wrong; the reference split guard fails a mutant on exactly the calls
`wrong_at` names. New wrong guards of classes test_checks.py lacks (the concatenation of all ranks compared, rank
lengths only, the cp it was given replaced, each rank's first chunk only, a split error swallowed, the guard's own
expectation wrong; a padding checked only at tp, only by the mask's count, only on aligned shapes) fail naming
what they missed; right guards written otherwise (survival of the scatter and the split checked instead of verl's
product, rows compared as tensors, every rank against a table built by hand) pass.
"""

from __future__ import annotations

import math

import pytest
import torch

from conftest import Wrong, checker_tests
from verlstudy.lessons.l04_thd.guard_cases import BAD_PADS, BAD_SPLITS, GOOD_PADS, GOOD_SPLITS
from verlstudy.lessons.l04_thd.pad_mutants import unsafe_part
from verlstudy.lessons.l04_thd.split_mutants import SPLIT_CALLS, wrong_at

# ---------------------------------------------------------------- the notebook's solutions (the reference guards)


def batch(lengths):
    start, seqs = 1, []
    for n in lengths:
        seqs.append(torch.arange(start, start + n))
        start += n
    return torch.nested.nested_tensor(seqs, layout=torch.jagged)


def reference_split_guard(split_fn, seq_len, cp):
    rows = torch.arange(seq_len)
    chunk = seq_len // (2 * cp) if cp > 1 else seq_len
    for rank in range(cp):
        pieces = (rank, 2 * cp - 1 - rank) if cp > 1 else (0,)
        want = [p for c in pieces for p in range(c * chunk, (c + 1) * chunk)]
        got = split_fn(rows, cp, rank).tolist()
        assert got == want, f"cp={cp} rank {rank} holds {got}; zigzag gives it {want}"


def reference_padding_guard(pad_fn):
    for lengths, tp, cp in (([7, 4, 9], 2, 1), ([7, 4, 9], 2, 2), ([5, 13], 4, 2), ([3], 3, 3)):
        ids = batch(lengths)
        padded, mask = pad_fn(ids, 0, tp, cp)
        align = tp * cp * 2 if cp > 1 else tp
        assert padded.shape[1] >= max(lengths) and padded.shape[1] % align == 0, f"S={padded.shape[1]}"
        assert mask.sum(dim=1).tolist() == lengths, "mask rows"
        assert torch.equal(padded[mask], ids.values()), "real tokens moved or were dropped"


# ---------------------------------------------------------------- the families themselves


def _fails(guard, *args) -> bool:
    try:
        guard(*args)
    except AssertionError:
        return True
    return False


def test_each_family_has_more_than_fifty_distinct_mutants():
    assert len(BAD_SPLITS) > 50 and len(BAD_PADS) > 50
    assert len({what for _, what in BAD_SPLITS}) == len(BAD_SPLITS)
    assert len({what for _, what in BAD_PADS}) == len(BAD_PADS)


@pytest.mark.parametrize(("split", "what"), BAD_SPLITS, ids=[w for _, w in BAD_SPLITS])
def test_the_reference_split_guard_fails_a_mutant_exactly_where_it_is_wrong(split, what):
    wrong = [call for call in SPLIT_CALLS if wrong_at(split, *call)]
    assert wrong, f"{what} is never wrong on the calls a guard gets"
    caught = [call for call in SPLIT_CALLS if _fails(reference_split_guard, split, *call)]
    assert caught == wrong


def test_the_right_splits_are_never_wrong_and_pass_the_reference_guard():
    for split, _ in GOOD_SPLITS:
        for call in SPLIT_CALLS:
            assert not wrong_at(split, *call)
            reference_split_guard(split, *call)


_PROBE_BATCHES = [
    (lengths, tp, cp)
    for lengths in ([7, 4, 9], [5, 13], [3], [9], [1, 6, 2], [16, 3])
    for tp in (1, 2, 3, 4)
    for cp in (1, 2, 3)
]


@pytest.mark.parametrize(("pad", "what"), BAD_PADS, ids=[w for _, w in BAD_PADS])
def test_every_padding_mutant_is_unsafe_on_some_batch_and_the_reference_guard_catches_it(pad, what):
    assert any(unsafe_part(pad, batch(ls), tp, cp) for ls, tp, cp in _PROBE_BATCHES), f"{what} is safe everywhere"
    assert _fails(reference_padding_guard, pad)


def test_the_right_paddings_are_safe_everywhere():
    for pad, what in GOOD_PADS:
        for ls, tp, cp in _PROBE_BATCHES:
            assert unsafe_part(pad, batch(ls), tp, cp) is None, (what, ls, tp, cp)


# ---------------------------------------------------------------- 4.2: guards of other classes


def _zig(rows, cp, rank):
    if cp == 1:
        return rows
    chunks = rows.chunk(2 * cp)
    return torch.cat([chunks[rank], chunks[2 * cp - 1 - rank]])


def concatenation_only(split_fn, seq_len, cp):  # all ranks' rows joined, compared with zigzag's joined
    rows = torch.arange(seq_len)
    got = torch.cat([split_fn(rows, cp, r) for r in range(cp)])
    assert torch.equal(got, torch.cat([_zig(rows, cp, r) for r in range(cp)])), "the ranks' rows differ"


def lengths_only(split_fn, seq_len, cp):
    for r in range(cp):
        got = split_fn(torch.arange(seq_len), cp, r)
        assert len(got) == seq_len // cp, f"rank {r} holds {len(got)} rows"


def always_cp_two(split_fn, seq_len, cp):  # the cp it was given replaced by the notebook's
    reference_split_guard(split_fn, 4 * (seq_len // 4 or 1), 2)


def first_chunk_only(split_fn, seq_len, cp):  # each rank's first chunk compared, the mirror chunk never
    rows = torch.arange(seq_len)
    for r in range(cp):
        got, want = split_fn(rows, cp, r), _zig(rows, cp, r)
        half = len(want) // 2 if cp > 1 else len(want)
        assert got[:half].tolist() == want[:half].tolist(), f"rank {r} starts with {got[:half].tolist()}"


def endpoints_only(split_fn, seq_len, cp):  # each rank's first and last row
    rows = torch.arange(seq_len)
    for r in range(cp):
        got, want = split_fn(rows, cp, r).tolist(), _zig(rows, cp, r).tolist()
        assert got[:1] + got[-1:] == want[:1] + want[-1:], f"rank {r} runs {got[:1]}..{got[-1:]}"


def middle_ranks_skipped(split_fn, seq_len, cp):
    ranks = {0, cp - 1}
    reference_split_guard(lambda x, c, r: split_fn(x, c, r) if r in ranks else _zig(x, c, r), seq_len, cp)


def contiguous_expected(split_fn, seq_len, cp):  # the guard's own expectation is the contiguous split
    rows = torch.arange(seq_len)
    for r in range(cp):
        assert torch.equal(split_fn(rows, cp, r), rows.chunk(cp)[r]), f"rank {r} is not block {r}"


def split_guard_by_table(split_fn, seq_len, cp):  # right: every rank against a table of row numbers built by hand
    chunk = seq_len // (2 * cp)
    table = {
        r: [*range(r * chunk, (r + 1) * chunk), *range((2 * cp - 1 - r) * chunk, (2 * cp - r) * chunk)]
        for r in range(cp)
    }
    if cp == 1:
        table = {0: list(range(seq_len))}
    for r, want in table.items():
        got = split_fn(torch.arange(seq_len), cp, r)
        assert got.shape == (len(want),) and got.tolist() == want, f"rank {r}: {got.tolist()} != {want}"


def split_guard_tensor_equal(split_fn, seq_len, cp):  # right: one tensor comparison per rank, indices by arithmetic
    rows = torch.arange(seq_len)
    n = 2 * cp
    for r in range(cp):
        idx = torch.arange(seq_len).view(n, -1)[[r, n - 1 - r]].flatten() if cp > 1 else rows
        assert torch.equal(split_fn(rows, cp, r), rows[idx]), f"rank {r} differs from zigzag"


# ---------------------------------------------------------------- 4.3: guards of other classes


def _padding_checks(pad_fn, cases, *, mask=True, tokens=True, rule=lambda tp, cp: tp * cp * 2 if cp > 1 else tp):
    for lengths, tp, cp in cases:
        ids = batch(lengths)
        padded, got_mask = pad_fn(ids, 0, tp, cp)
        width = padded.shape[1]
        assert width >= max(lengths) and width % rule(tp, cp) == 0, f"width {width} at tp={tp}, cp={cp}"
        if mask:
            want = torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]
            assert torch.equal(got_mask, want), "the mask is off"
        if tokens:
            assert torch.equal(padded[got_mask], ids.values()), "tokens moved"


_CASES = (([7, 4, 9], 2, 1), ([7, 4, 9], 2, 2), ([5, 13], 4, 2), ([3], 3, 3))


def tp_rule_only(pad_fn):  # the scatter's rule alone, even with CP
    _padding_checks(pad_fn, _CASES, rule=lambda tp, cp: tp)


def mask_count_and_length(pad_fn):  # the mask's count per row, never its positions or the tokens
    for lengths, tp, cp in _CASES:
        padded, got_mask = pad_fn(batch(lengths), 0, tp, cp)
        assert padded.shape[1] % (tp * cp * 2 if cp > 1 else tp) == 0, "not aligned"
        assert got_mask.sum(1).tolist() == lengths, "mask count"


def shapes_only_tp_cp_apart(pad_fn):  # never tp and cp above 1 together
    _padding_checks(pad_fn, (([7, 4, 9], 3, 1), ([7, 4, 9], 1, 2), ([5, 13], 1, 3)))


def tokens_not_checked(pad_fn):
    _padding_checks(pad_fn, _CASES, tokens=False)


def padding_guard_survival(pad_fn):  # right: the scatter and the zigzag split each checked, not verl's product
    for lengths, tp, cp in (([7, 4, 9], 2, 1), ([7, 4, 9], 2, 2), ([5, 13], 4, 2), ([3], 3, 3), ([2, 11], 3, 2)):
        ids = batch(lengths)
        padded, got_mask = pad_fn(ids, 0, tp, cp)
        width = padded.shape[1]
        assert width >= max(lengths), "a token was cut"
        assert (cp == 1 or width % (2 * cp) == 0) and (width // cp) % tp == 0, f"{width} fails at tp={tp}, cp={cp}"
        for row, n in enumerate(lengths):
            assert got_mask[row].tolist() == [True] * n + [False] * (width - n), f"row {row}'s mask"
        assert padded[got_mask].tolist() == ids.values().tolist(), "tokens moved"


def padding_guard_lcm(pad_fn):  # right: the least length both rules accept divides the width
    for lengths, tp, cp in _CASES:
        need = math.lcm(2 * cp, tp * cp) if cp > 1 else tp
        _padding_checks(pad_fn, ((lengths, tp, cp),), rule=lambda tp, cp, need=need: need)


WRONG = {
    "4.2": [
        Wrong(concatenation_only, mentions="compare each rank's own rows", why="the ranks' rows joined"),
        Wrong(lengths_only, mentions="let", why="rank lengths only"),
        Wrong(always_cp_two, mentions="it was given", why="cp or seq_len replaced"),
        Wrong(first_chunk_only, mentions="let", why="the mirror chunk never compared"),
        Wrong(endpoints_only, mentions="let", why="first and last rows only"),
        Wrong(middle_ranks_skipped, mentions="the first and last ranks only", why="middle ranks skipped"),
        Wrong(contiguous_expected, mentions="rejected the zigzag split", why="expects the contiguous split"),
    ],
    "4.3": [
        Wrong(tp_rule_only, mentions="let", why="the scatter's rule alone"),
        Wrong(mask_count_and_length, mentions="where its real tokens are", why="mask counted, tokens unchecked"),
        Wrong(shapes_only_tp_cp_apart, mentions="tp and cp both above 1", why="tp and cp never together"),
        Wrong(tokens_not_checked, mentions="where its real tokens are", why="tokens never read back"),
    ],
}
RIGHT = {
    "4.2": [split_guard_by_table, split_guard_tensor_equal],
    "4.3": [padding_guard_survival, padding_guard_lcm],
}

test_new_wrong_guards_fail_naming_the_mistake, test_new_right_guards_pass = checker_tests(WRONG, RIGHT)
