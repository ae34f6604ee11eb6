"""4.3 my_padding_guard(pad_fn): AssertionError unless pad_fn's (padded, mask) survive SP + zigzag CP."""
import torch

from verlstudy.lessons.l04_thd.thd import pack_sequences  # the notebook imports it

CASES = (([7, 4, 9], 2, 1), ([7, 4, 9], 2, 2), ([5, 13], 4, 2), ([3], 3, 3), ([6, 1, 11], 3, 2), ([5, 2], 3, 1))


def _batch(lens):
    return pack_sequences([list(range(1, n + 1)) for n in lens])


def _full_check(pad_fn, lens, t, c, align=None, check_mask_positions=True, check_tokens=True, exact=False):
    ids = _batch(lens)
    padded, mask = pad_fn(ids, 0, t, c)
    a = align(t, c) if align else (t * c * 2 if c > 1 else t)
    width = padded.shape[1]
    assert padded.shape[0] == len(lens) and mask.shape == padded.shape, f"shapes {padded.shape} {mask.shape}"
    assert width >= max(lens) and width % a == 0, f"width {width} at tp={t}, cp={c}"
    if exact:
        assert width == -(-max(lens) // a) * a, f"width {width} is not the least aligned length"
    assert mask.sum(dim=1).tolist() == lens, f"mask rows {mask.sum(dim=1).tolist()} vs {lens}"
    if check_mask_positions:
        for i, n in enumerate(lens):
            assert bool(mask[i, :n].all()) and not bool(mask[i, n:].any()), f"row {i}: mask not the first {n}"
    if check_tokens:
        assert torch.equal(padded[mask.bool()], ids.values()), "real tokens moved"


# ---------------- wrong
def w_single_sequence_batches(pad_fn):
    for n, t, c in ((7, 2, 1), (9, 2, 2), (13, 4, 2), (3, 3, 3), (11, 3, 2)):
        _full_check(pad_fn, [n], t, c)


def w_cp1_only(pad_fn):
    for lens, t in (([7, 4, 9], 2), ([5, 13], 4), ([6, 1, 11], 3)):
        _full_check(pad_fn, lens, t, 1)


def w_tp_only_alignment(pad_fn):
    for lens, t, c in CASES:
        _full_check(pad_fn, lens, t, c, align=lambda t, c: t)


def w_exact_width(pad_fn):
    for lens, t, c in CASES:
        _full_check(pad_fn, lens, t, c, exact=True)


def w_mask_counts_only(pad_fn):
    for lens, t, c in CASES:
        _full_check(pad_fn, lens, t, c, check_mask_positions=False, check_tokens=False)


def w_no_token_check(pad_fn):
    for lens, t, c in CASES:
        _full_check(pad_fn, lens, t, c, check_tokens=False)


def w_even_tp_only(pad_fn):
    for lens, t, c in (([7, 4, 9], 2, 1), ([7, 4, 9], 2, 2), ([5, 13], 4, 2), ([3, 8], 4, 3)):
        _full_check(pad_fn, lens, t, c)


def w_prs_example_only(pad_fn):
    _full_check(pad_fn, [7, 4, 9], 2, 1)


def w_no_alignment_check(pad_fn):
    for lens, t, c in CASES:
        ids = _batch(lens)
        padded, mask = pad_fn(ids, 0, t, c)
        assert padded.shape[1] >= max(lens), "too short"
        assert mask.sum(dim=1).tolist() == lens, "mask"
        assert torch.equal(padded[mask.bool()], ids.values()), "tokens"


def w_align_2cp_when_cp(pad_fn):
    # "zigzag needs 2*cp chunks; TP only matters without CP"
    for lens, t, c in CASES:
        _full_check(pad_fn, lens, t, c, align=lambda t, c: 2 * c if c > 1 else t)


# ---------------- right
def r_per_row(pad_fn):
    for lens, tp, cp in (([7, 4, 9], 2, 2), ([5, 13, 2], 3, 1), ([5, 13, 2], 3, 2), ([10], 1, 4), ([1, 8], 4, 1),
                         ([6, 3], 5, 3), ([4, 4, 4], 2, 1)):
        seqs = [torch.arange(100 + 10 * i, 100 + 10 * i + n) for i, n in enumerate(lens)]
        ids = pack_sequences(seqs)
        padded, mask = pad_fn(ids, 0, tp, cp)
        block = tp * cp * 2 if cp > 1 else tp
        S = padded.shape[1]
        assert S % block == 0 and S >= max(lens), f"padded length {S} at tp={tp} cp={cp} (block {block})"
        for i, seq in enumerate(seqs):
            n = len(seq)
            assert torch.equal(padded[i, :n], seq), f"row {i}: tokens not in place"
            assert mask[i, :n].all() and not mask[i, n:].any(), f"row {i}: mask wrong"


def r_reference_like(pad_fn):
    for lens, t, c in CASES + (([2, 9, 4, 1], 1, 2), ([8], 2, 2)):
        _full_check(pad_fn, lens, t, c)


def r_sweep(pad_fn):
    batches = ([3, 10, 6], [1, 2], [16])
    for tp in (1, 2, 3, 4):
        for cp in (1, 2, 3):
            for lens in batches:
                ids = _batch(lens)
                padded, mask = pad_fn(ids, 0, tp, cp)
                align = 2 * tp * cp if cp > 1 else tp
                assert padded.shape[1] % align == 0, f"{padded.shape[1]} not a multiple of {align}"
                assert padded.shape[1] >= max(lens), "shorter than the longest sequence"
                expect = torch.zeros_like(mask, dtype=torch.bool)
                for i, n in enumerate(lens):
                    expect[i, :n] = True
                assert torch.equal(mask.bool(), expect), f"mask {mask.int().tolist()} at {lens}"
                assert torch.equal(padded[expect], ids.values()), "real tokens moved"


# ---------------- unsure: the true survival conditions (S % 2cp and S % (tp*cp)), not verl's tp*cp*2
def u_true_survival(pad_fn):
    for lens, t, c in CASES:
        _full_check(pad_fn, lens, t, c, align=lambda t, c: __import__("math").lcm(2 * c, t * c) if c > 1 else t)


WRONG = {
    "single-sequence batches only": (w_single_sequence_batches,),
    "cp = 1 cases only": (w_cp1_only,),
    "checks width % tp only": (w_tp_only_alignment,),
    "demands the least aligned width exactly": (w_exact_width,),
    "mask row counts only, tokens unchecked": (w_mask_counts_only,),
    "no token-position check": (w_no_token_check,),
    "even tp only": (w_even_tp_only,),
    "the PR's example only (tp=2, cp=1)": (w_prs_example_only,),
    "no alignment check at all": (w_no_alignment_check,),
    "alignment 2*cp when cp > 1": (w_align_2cp_when_cp,),
}
RIGHT = {"per-row tokens and mask": (r_per_row,), "reference-like with more cases": (r_reference_like,),
         "sweep tp 1-4, cp 1-3": (r_sweep,)}
UNSURE = {"true survival conditions (lcm), not tp*cp*2": (u_true_survival,)}
