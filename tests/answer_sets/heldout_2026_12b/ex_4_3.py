"""Exercise 4.3: my_padding_guard(pad_fn), AssertionError unless pad_fn's output survives SP and zigzag CP."""

import torch

# The text: pad_fn(input_ids (jagged), pad_token_id, tp, cp) -> (padded [B, L], mask [B, L]); raise AssertionError
# unless L survives the SP scatter and the zigzag split (0.9.1's build_vlm_attn_mask_thd aligns the longest length
# to tp * cp * 2 when cp > 1, else tp), the mask marks exactly the real tokens, and the real tokens stay in place;
# a padding a whole block longer is still safe; wrong paddings may be right on one sequence, without CP, or for
# even tp only.


def _jagged(lengths):
    return torch.nested.nested_tensor([torch.arange(1, n + 1) for n in lengths], layout=torch.jagged)


def _align(tp, cp):
    return tp * cp * 2 if cp > 1 else tp


REF_CASES = (([7, 4, 9], 2, 1), ([7, 4, 9], 2, 2), ([5, 13], 4, 2), ([3], 3, 3))


def _check(pad_fn, cases, *, align=_align, mask=True, tokens=True, exact=False, longest=True):
    for lens, tp, cp in cases:
        ids = _jagged(lens)
        padded, m = pad_fn(ids, 0, tp, cp)
        a = align(tp, cp)
        width = padded.shape[1]
        if exact:
            want = max(lens) + (a - max(lens) % a) % a
            assert width == want, f"L={width}, want {want} at tp={tp}, cp={cp}"
        assert width % a == 0, f"L={width} not a multiple of {a} at tp={tp}, cp={cp}"
        if longest:
            assert width >= max(lens), f"L={width} shorter than {max(lens)}"
        if mask:
            assert m.sum(dim=1).tolist() == lens, f"mask rows {m.sum(dim=1).tolist()}, lengths {lens}"
        if tokens:
            assert torch.equal(padded[m], ids.values()), "real tokens moved"


# --- WRONG -----------------------------------------------------------------------------------------------------------


def w_no_cp_cases(pad_fn):
    # tries only cp = 1: a padding wrong only with CP passes
    _check(pad_fn, (([7, 4, 9], 2, 1), ([5, 13], 4, 1), ([3], 3, 1)))


def w_tp_cp_align(pad_fn):
    # aligns to tp * cp, forgetting zigzag's factor 2
    _check(pad_fn, REF_CASES, align=lambda tp, cp: tp * cp)


def w_no_mask_check(pad_fn):
    # never looks at the mask
    _check(pad_fn, REF_CASES, mask=False, tokens=False)


def w_mask_count_only(pad_fn):
    # counts the mask's True per row but never checks the tokens under it: a moved token passes
    _check(pad_fn, REF_CASES, tokens=False)


def w_one_sequence(pad_fn):
    # one-sequence batches only: a padding wrong only on several sequences passes
    _check(pad_fn, (([9], 2, 1), ([9], 2, 2), ([13], 4, 2), ([3], 3, 3)))


def w_even_tp(pad_fn):
    # even tp only: a padding wrong only for an odd tp passes
    _check(pad_fn, (([7, 4, 9], 2, 1), ([7, 4, 9], 2, 2), ([5, 13], 4, 2), ([3], 2, 3)))


def w_exact_length(pad_fn):
    # demands the least aligned length: the right padding a whole block longer fails
    _check(pad_fn, REF_CASES, exact=True)


def w_sp_only(pad_fn):
    # checks only that L divides by tp (the SP scatter), not the zigzag split
    _check(pad_fn, REF_CASES, align=lambda tp, cp: tp)


def w_never_both(pad_fn):
    # never tp and cp both above 1: a padding wrong only then passes
    _check(pad_fn, (([7, 4, 9], 2, 1), ([7, 4, 9], 1, 2), ([5, 13], 1, 4), ([3], 3, 1)))


def w_returns_bool(pad_fn):
    # returns False instead of raising
    try:
        _check(pad_fn, REF_CASES)
    except AssertionError:
        return False
    return True


def w_first_row_only(pad_fn):
    # checks the mask and tokens of the first sequence only
    for lens, tp, cp in REF_CASES:
        ids = _jagged(lens)
        padded, m = pad_fn(ids, 0, tp, cp)
        assert padded.shape[1] % _align(tp, cp) == 0, f"L={padded.shape[1]}"
        assert int(m[0].sum()) == lens[0], f"mask row 0 {int(m[0].sum())}"
        assert torch.equal(padded[0][m[0]], ids.values()[: lens[0]]), "first sequence moved"


# --- RIGHT -----------------------------------------------------------------------------------------------------------

MANY_CASES = tuple(
    (lens, tp, cp)
    for lens in ([1], [3], [9], [7, 4, 9], [5, 13], [2, 2], [12, 1, 6, 11])
    for tp in (1, 2, 3, 4, 5)
    for cp in (1, 2, 3)
)


def r_many_prefix(pad_fn):
    # a grid of batches, tp and cp; the mask must be exactly each row's first n positions, holding the sequence
    for lens, tp, cp in MANY_CASES:
        ids = _jagged(lens)
        padded, mask = pad_fn(ids, 0, tp, cp)
        block = tp * cp * 2 if cp > 1 else tp
        width = padded.shape[-1]
        assert padded.shape == mask.shape == (len(lens), width), f"shapes {padded.shape}, {mask.shape}"
        assert width >= max(lens) and width % block == 0, f"L={width} at tp={tp}, cp={cp} (block {block})"
        positions = torch.arange(width)
        for row, n in enumerate(lens):
            assert torch.equal(mask[row].bool(), positions < n), f"row {row}: mask {mask[row].tolist()}, length {n}"
            assert padded[row, :n].tolist() == list(range(1, n + 1)), f"row {row}: tokens {padded[row].tolist()}"


def r_per_rank(pad_fn):
    # checks the divisibility the lesson derives, rank by rank: 2*cp equal chunks (cp > 1), and each rank's S/cp
    # rows split over tp, with S a multiple of tp*cp*2 (0.9.1's rule), then mask and tokens via boolean indexing
    for lens in ([7, 4, 9], [5, 13], [3], [6, 6, 1], [16]):
        for tp, cp in ((1, 1), (2, 1), (3, 1), (2, 2), (3, 2), (4, 2), (3, 3), (1, 4), (5, 2)):
            ids = _jagged(lens)
            padded, mask = pad_fn(ids, 0, tp, cp)
            s = padded.shape[1]
            assert s >= max(lens), f"S={s} < {max(lens)}"
            if cp > 1:
                assert s % (tp * cp * 2) == 0, f"S={s} not a multiple of tp*cp*2={tp * cp * 2}"
                assert (s // cp) % tp == 0 and s % (2 * cp) == 0, f"S={s}: a CP rank's rows do not split over tp"
            else:
                assert s % tp == 0, f"S={s} not a multiple of tp={tp}"
            assert mask.sum(dim=1).tolist() == lens, f"mask rows {mask.sum(dim=1).tolist()} != {lens}"
            assert torch.equal(padded[mask.bool()], ids.values()), "real tokens moved"
            assert not mask[:, max(lens) :].any(), "mask marks a position past the longest sequence"


def r_reference_cases_plus(pad_fn):
    # the exercise's own kinds of cases plus odd tp with cp, compared with to_padded_tensor on the real part
    for lens, tp, cp in REF_CASES + (([2, 11, 4], 3, 2), ([1, 1], 5, 1), ([8, 3], 1, 3)):
        ids = _jagged(lens)
        padded, mask = pad_fn(ids, 0, tp, cp)
        block = _align(tp, cp)
        assert padded.shape[1] % block == 0 and padded.shape[1] >= max(lens), f"L={padded.shape[1]}, block {block}"
        expected = ids.to_padded_tensor(0, output_size=(len(lens), padded.shape[1]))
        real = torch.arange(padded.shape[1])[None, :] < torch.tensor(lens)[:, None]
        assert torch.equal(mask.bool(), real), f"mask {mask.int().tolist()}"
        assert torch.equal(padded[real], expected[real]), "real tokens moved"


WRONG = {
    "cp = 1 cases only": (w_no_cp_cases,),
    "aligns to tp * cp": (w_tp_cp_align,),
    "no mask check": (w_no_mask_check,),
    "mask count only": (w_mask_count_only,),
    "one-sequence batches only": (w_one_sequence,),
    "even tp only": (w_even_tp,),
    "exact least length demanded": (w_exact_length,),
    "SP divisibility only": (w_sp_only,),
    "never tp and cp both above 1": (w_never_both,),
    "returns a bool": (w_returns_bool,),
    "first row only": (w_first_row_only,),
}

RIGHT = {
    "grid of cases, prefix mask": (r_many_prefix,),
    "rank by rank divisibility": (r_per_rank,),
    "to_padded_tensor comparison": (r_reference_cases_plus,),
}


def u_survival_only(pad_fn):
    # checks only what the text names, survival of the SP scatter and the zigzag split: S % (2*cp) == 0 and
    # (S / cp) % tp == 0, i.e. the least alignment lcm(2cp, tp*cp); a padding to that least length survives both,
    # yet 0.9.1 pads to tp*cp*2 and the contract counts "another alignment rule" as a mutant
    for lens in ([7, 4, 9], [5, 13], [3], [6, 6, 1]):
        for tp, cp in ((1, 1), (2, 1), (3, 1), (2, 2), (3, 2), (4, 2), (3, 3), (1, 4)):
            ids = _jagged(lens)
            padded, mask = pad_fn(ids, 0, tp, cp)
            s = padded.shape[1]
            assert s >= max(lens), f"S={s}"
            if cp > 1:
                assert s % (2 * cp) == 0 and (s // cp) % tp == 0, f"S={s} does not survive tp={tp}, cp={cp}"
            else:
                assert s % tp == 0, f"S={s} does not survive tp={tp}"
            assert mask.sum(dim=1).tolist() == lens, f"mask rows {mask.sum(dim=1).tolist()}"
            assert torch.equal(padded[mask.bool()], ids.values()), "real tokens moved"


UNSURE = {
    "survival only (least alignment accepted)": (u_survival_only,),
}
