"""Exercise 4.3 answers: my_padding_guard(pad_fn) raises AssertionError unless pad_fn's output is safe.

pad_fn(input_ids, pad_token_id, tp, cp) -> (padded [B, L], mask [B, L]); input_ids a jagged nested tensor.
verl 0.9.1 aligns L to tp * cp * 2 if cp > 1 else tp; the mask marks each row's first seqlen positions.
"""

import numpy as np
import torch


def _batch(lengths, start=1):
    return torch.nested.nested_tensor([torch.arange(start, start + n) for n in lengths], layout=torch.jagged)


def _align(tp, cp):
    return tp * cp * 2 if cp > 1 else tp


FULL_CASES = (([7, 4, 9], 3, 1), ([7, 4, 9], 2, 2), ([5, 13], 4, 2), ([3], 3, 3), ([11, 2, 6], 3, 2), ([5, 9], 1, 3))


def _check(pad_fn, cases, *, length=True, mask=True, tokens=True, align=_align):
    for lens, tp, cp in cases:
        ids = _batch(lens)
        padded, m = pad_fn(ids, 0, tp, cp)
        if length:
            a = align(tp, cp)
            assert padded.shape[1] >= max(lens) and padded.shape[1] % a == 0, f"L={padded.shape[1]} tp={tp} cp={cp}"
        if mask:
            assert m.sum(dim=1).tolist() == lens, f"mask rows {m.sum(dim=1).tolist()} != {lens}"
        if tokens:
            assert torch.equal(padded[m.bool()], ids.values()), "real tokens moved"


# --- wrong ---
def w_even_tp_only(pad_fn):
    # never tries an odd tp: a padding wrong only for odd tp passes
    _check(pad_fn, (([7, 4, 9], 2, 1), ([7, 4, 9], 2, 2), ([5, 13], 4, 2), ([3], 4, 3)))


def w_no_cp(pad_fn):
    # never tries cp > 1: a padding that ignores zigzag's 2*cp passes
    _check(pad_fn, (([7, 4, 9], 2, 1), ([7, 4, 9], 3, 1), ([5, 13], 4, 1)))


def w_single_sequence(pad_fn):
    # one-sequence batches only: a padding wrong on several sequences passes
    _check(pad_fn, (([7], 3, 1), ([9], 2, 2), ([13], 4, 2), ([3], 3, 3)))


def w_exact_length(pad_fn):
    # demands the least aligned length: refuses a padding a whole block longer, which is still safe
    for lens, tp, cp in FULL_CASES:
        padded, m = pad_fn(_batch(lens), 0, tp, cp)
        a = _align(tp, cp)
        assert padded.shape[1] == -(-max(lens) // a) * a, f"L={padded.shape[1]}"
        assert m.sum(dim=1).tolist() == lens, "mask"


def w_no_mask_check(pad_fn):
    # never looks at the mask
    _check(pad_fn, FULL_CASES, mask=False, tokens=False)


def w_no_token_check(pad_fn):
    # checks the mask's counts but not where the tokens sit
    _check(pad_fn, FULL_CASES, tokens=False)


def w_tp_alignment(pad_fn):
    # aligns to tp only, the SP rule, forgetting zigzag
    _check(pad_fn, FULL_CASES, align=lambda tp, cp: tp)


def w_contiguous_alignment(pad_fn):
    # tp * cp: the contiguous layout's rule, not zigzag's 2*cp chunks
    _check(pad_fn, FULL_CASES, align=lambda tp, cp: tp * cp)


def w_factor_two_always(pad_fn):
    # 2 * tp * cp also at cp == 1: refuses 0.9.1 at an odd tp without CP
    _check(pad_fn, FULL_CASES, align=lambda tp, cp: 2 * tp * cp)


def w_mask_total(pad_fn):
    # counts the mask over the whole batch: marks moved from one row to another pass
    for lens, tp, cp in FULL_CASES:
        padded, m = pad_fn(_batch(lens), 0, tp, cp)
        assert padded.shape[1] % _align(tp, cp) == 0, "length"
        assert int(m.sum()) == sum(lens), "mask total"


def w_numel_alignment(pad_fn):
    # checks the number of elements B * L, not the row length L
    for lens, tp, cp in FULL_CASES:
        padded, m = pad_fn(_batch(lens), 0, tp, cp)
        assert padded.numel() % _align(tp, cp) == 0, "numel"
        assert m.sum(dim=1).tolist() == lens, "mask"
        assert torch.equal(padded[m.bool()], _batch(lens).values()), "tokens"


def w_returns_false(pad_fn):
    # returns False instead of raising
    try:
        _check(pad_fn, FULL_CASES)
    except AssertionError:
        return False
    return True


# --- right ---
def r_numpy_rows(pad_fn):
    for lens, tp, cp in (([7, 4, 9], 3, 1), ([10, 3], 2, 2), ([5, 13, 1], 4, 2), ([3], 3, 3), ([8, 2], 5, 2)):
        ids = _batch(lens, start=11)
        padded, mask = pad_fn(ids, 0, tp, cp)
        padded, mask = np.asarray(padded), np.asarray(mask).astype(bool)
        align = tp * cp * 2 if cp > 1 else tp
        width = padded.shape[1]
        if padded.shape[0] != len(lens) or width < max(lens) or width % align:
            raise AssertionError(f"{padded.shape} for lengths {lens} at tp={tp}, cp={cp} (align {align})")
        values = ids.values().tolist()
        offsets = ids.offsets().tolist()
        for row, n in enumerate(lens):
            want_mask = np.arange(width) < n
            if not np.array_equal(mask[row], want_mask):
                raise AssertionError(f"row {row}: mask {mask[row].astype(int).tolist()} marks not the first {n}")
            if padded[row, :n].tolist() != values[offsets[row] : offsets[row + 1]]:
                raise AssertionError(f"row {row}: tokens {padded[row, :n].tolist()} moved")


def r_simulate_scatter_and_zigzag(pad_fn):
    # checks the alignment rule, then that every (cp rank, tp rank) slice is whole and the tokens sit at the front
    cases = [([7, 4, 9], 2, 1), ([7, 4, 9], 3, 1), ([6, 1, 12], 2, 2), ([5, 13], 3, 2), ([3], 3, 3), ([4, 4], 1, 2)]
    for lengths, tp, cp in cases:
        ids = _batch(lengths)
        padded, mask = pad_fn(ids, 0, tp, cp)
        L = padded.shape[1]
        assert L % (tp * cp * (2 if cp > 1 else 1)) == 0, f"L={L} not aligned for tp={tp}, cp={cp}"
        chunks = torch.arange(L).chunk(2 * cp) if cp > 1 else (torch.arange(L),)
        sizes = {c.numel() for c in chunks}
        assert len(sizes) == 1 and len(chunks) == (2 * cp if cp > 1 else 1), f"unequal zigzag chunks {sizes}"
        assert (L // cp) % tp == 0, f"rank slice {L // cp} does not scatter over tp={tp}"
        expect = torch.zeros(len(lengths), L, dtype=torch.bool)
        for i, n in enumerate(lengths):
            expect[i, :n] = True
        assert torch.equal(mask.bool(), expect), "mask is not exactly the real tokens"
        assert torch.equal(padded[expect], ids.values()), "real tokens are not in place"


def r_collect_failures(pad_fn):
    failures = []
    for lens, tp, cp in (([9, 7, 4], 3, 1), ([7, 4, 9], 2, 2), ([5, 13], 4, 2), ([3], 3, 3), ([2, 11], 3, 2)):
        ids = _batch(lens)
        try:
            padded, mask = pad_fn(ids, 0, tp, cp)
        except Exception as error:
            failures.append(f"{lens} tp={tp} cp={cp}: pad_fn raised {error!r}")
            continue
        align = _align(tp, cp)
        if padded.shape[-1] % align or padded.shape[-1] < max(lens):
            failures.append(f"{lens} tp={tp} cp={cp}: L={padded.shape[-1]} not a multiple of {align}")
        if mask.sum(1).tolist() != lens:
            failures.append(f"{lens}: mask counts {mask.sum(1).tolist()}")
        elif not torch.equal(padded[mask.bool()], ids.values()):
            failures.append(f"{lens}: tokens moved")
        elif not all(bool(mask[i, :n].all()) for i, n in enumerate(lens)):
            failures.append(f"{lens}: mask not on the first positions")
    assert not failures, "unsafe padding:\n" + "\n".join(failures)


# --- unsure ---
def u_least_alignment(pad_fn):
    # checks what survival needs, lcm(2cp, tp*cp), not verl's product: a mutant padding to the least safe length
    # is truly safe, but the text's mutants include "another alignment rule" the reference guard catches
    for lens, tp, cp in FULL_CASES:
        padded, m = pad_fn(_batch(lens), 0, tp, cp)
        L = padded.shape[1]
        ok = L % tp == 0 if cp == 1 else (L % (2 * cp) == 0 and (L // cp) % tp == 0)
        assert ok and L >= max(lens), f"L={L} does not survive tp={tp}, cp={cp}"
        assert m.sum(dim=1).tolist() == lens, "mask"
        assert torch.equal(padded[m.bool()], _batch(lens).values()), "tokens"


def u_pad_value_checked(pad_fn):
    # also demands the pad id in every padded slot: the text asks only about length, mask and real tokens
    _check(pad_fn, FULL_CASES)
    for lens, tp, cp in FULL_CASES:
        padded, m = pad_fn(_batch(lens), 0, tp, cp)
        assert bool((padded[~m.bool()] == 0).all()), "padding is not the pad id"


WRONG = {
    "even tp only": (w_even_tp_only,),
    "no cp > 1": (w_no_cp,),
    "single sequences only": (w_single_sequence,),
    "exact least length": (w_exact_length,),
    "no mask check": (w_no_mask_check,),
    "mask counts, no token check": (w_no_token_check,),
    "tp alignment only": (w_tp_alignment,),
    "tp * cp alignment": (w_contiguous_alignment,),
    "2 * tp * cp at cp 1": (w_factor_two_always,),
    "mask total over the batch": (w_mask_total,),
    "numel alignment": (w_numel_alignment,),
    "returns False": (w_returns_false,),
}
RIGHT = {
    "numpy per row": (r_numpy_rows,),
    "simulated scatter and zigzag": (r_simulate_scatter_and_zigzag,),
    "collect failures": (r_collect_failures,),
}
# After the one measurement: answers whose verdict the checker does not give as labelled, each with why. The test
# expects each to keep failing (strict xfail): a change of the checker that flips one is seen.
KNOWN_MISSES = {
    "numel alignment": "a guard that checks B x L, not L: no mutant in the family is a row length off the alignment "
    "with B x L on it that the reference guard also catches (tried, and left: see the set's README)",
    "numpy per row": "its cases never hold a batch whose first sequence is not the longest, so it lets the mutant "
    "'aligns the first sequence's length' through; the contract names that mutant ('the wrong length aligned'): "
    "wrong by the contract, right by the tester's reading",
}

UNSURE = {
    "least alignment lcm": (u_least_alignment,),
    "pad value checked": (u_pad_value_checked,),
}
