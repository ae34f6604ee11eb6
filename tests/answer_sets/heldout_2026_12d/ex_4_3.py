"""Exercise 4.3: my_padding_guard(pad_fn), held-out answers.

pad_fn(input_ids, pad_token_id, tp, cp) -> (padded [B, L], mask [B, L]); input_ids is a jagged nested tensor
(the notebook's pack_sequences; here built with torch.nested directly).
"""

import itertools

import numpy as np
import torch


def _jagged(seqs):
    return torch.nested.nested_tensor([torch.as_tensor(s, dtype=torch.long) for s in seqs], layout=torch.jagged)


def _block(tp, cp):
    return tp * cp * 2 if cp > 1 else tp


_CASES = [
    (lens, tp, cp)
    for tp, cp in itertools.product((1, 2, 3, 4, 5), (1, 2, 3, 4))
    for lens in ([1], [7], [5, 13, 2], [9, 3, 16, 7], [_block(tp, cp)] * 2, [_block(tp, cp) + 1, 2])
]


# WRONG ---------------------------------------------------------------
def w_no_cp_cases(pad_fn):
    # the notebook's idea with cp = 1 only: mutants wrong only under CP pass
    for lens, tp in (([7, 4, 9], 2), ([5, 13], 4), ([3], 3)):
        ids = _jagged([list(range(1, n + 1)) for n in lens])
        padded, mask = pad_fn(ids, 0, tp, 1)
        assert padded.shape[1] % tp == 0 and padded.shape[1] >= max(lens), f"L={padded.shape[1]}"
        assert mask.sum(dim=1).tolist() == lens, "mask"
        assert torch.equal(padded[mask.bool()], ids.values()), "tokens"


def w_single_sequence_only(pad_fn):
    # one-sequence batches only: mutants right on one sequence pass
    for n, tp, cp in ((7, 2, 2), (13, 4, 2), (5, 3, 3), (9, 2, 1)):
        ids = _jagged([list(range(1, n + 1))])
        padded, mask = pad_fn(ids, 0, tp, cp)
        assert padded.shape[1] % _block(tp, cp) == 0, f"L={padded.shape[1]}"
        assert int(mask.sum()) == n, "mask"
        assert torch.equal(padded[mask.bool()], ids.values()), "tokens"


def w_even_tp_only(pad_fn):
    # even tp only: mutants wrong only for an odd tp pass
    for lens, tp, cp in (([7, 4, 9], 2, 1), ([7, 4, 9], 2, 2), ([5, 13], 4, 2), ([3, 11], 4, 1)):
        ids = _jagged([list(range(1, n + 1)) for n in lens])
        padded, mask = pad_fn(ids, 0, tp, cp)
        assert padded.shape[1] % _block(tp, cp) == 0 and padded.shape[1] >= max(lens), f"L={padded.shape[1]}"
        assert mask.sum(dim=1).tolist() == lens, "mask"
        assert torch.equal(padded[mask.bool()], ids.values()), "tokens"


def w_length_only(pad_fn):
    # checks the length only: a spoiled mask or moved tokens pass
    for lens, tp, cp in _CASES:
        padded, _ = pad_fn(_jagged([list(range(1, n + 1)) for n in lens]), 0, tp, cp)
        assert padded.shape[1] % _block(tp, cp) == 0 and padded.shape[1] >= max(lens), f"L={padded.shape[1]}"


def w_block_tp_cp(pad_fn):
    # checks alignment to tp * cp: forgets zigzag's 2, so a tp*cp-aligned mutant passes
    for lens, tp, cp in _CASES:
        ids = _jagged([list(range(1, n + 1)) for n in lens])
        padded, mask = pad_fn(ids, 0, tp, cp)
        assert padded.shape[1] % (tp * cp) == 0 and padded.shape[1] >= max(lens), f"L={padded.shape[1]}"
        assert mask.sum(dim=1).tolist() == lens, "mask"
        assert torch.equal(padded[mask.bool()], ids.values()), "tokens"


def w_exact_length(pad_fn):
    # demands the least aligned length: refuses the safe padding one block longer
    for lens, tp, cp in _CASES:
        ids = _jagged([list(range(1, n + 1)) for n in lens])
        padded, mask = pad_fn(ids, 0, tp, cp)
        b = _block(tp, cp)
        assert padded.shape[1] == max(lens) + (-max(lens)) % b, f"L={padded.shape[1]}"
        assert mask.sum(dim=1).tolist() == lens, "mask"
        assert torch.equal(padded[mask.bool()], ids.values()), "tokens"


def w_returns_bool(pad_fn):
    # returns False instead of raising
    for lens, tp, cp in _CASES:
        padded, mask = pad_fn(_jagged([list(range(1, n + 1)) for n in lens]), 0, tp, cp)
        if padded.shape[1] % _block(tp, cp) or mask.sum(dim=1).tolist() != lens:
            return False
    return True


def w_dense_input(pad_fn):
    # hands pad_fn a right-padded dense tensor: 0.9.1's padding calls .offsets() and fails
    for lens, tp, cp in _CASES[:6]:
        dense = torch.zeros(len(lens), max(lens), dtype=torch.long)
        for i, n in enumerate(lens):
            dense[i, :n] = torch.arange(1, n + 1)
        padded, mask = pad_fn(dense, 0, tp, cp)
        assert padded.shape[1] % _block(tp, cp) == 0, f"L={padded.shape[1]}"


def w_mask_count_only(pad_fn):
    # checks the total of the mask, not each row: a mask moved between sequences passes
    for lens, tp, cp in _CASES:
        ids = _jagged([list(range(1, n + 1)) for n in lens])
        padded, mask = pad_fn(ids, 0, tp, cp)
        assert padded.shape[1] % _block(tp, cp) == 0 and padded.shape[1] >= max(lens), f"L={padded.shape[1]}"
        assert int(mask.sum()) == sum(lens), "mask total"


def w_tp2_cp2_only(pad_fn):
    # a single size pair: mutants wrong only for odd tp, or tp 1 with cp, pass
    for lens in ([7, 4, 9], [5, 13], [3]):
        ids = _jagged([list(range(1, n + 1)) for n in lens])
        padded, mask = pad_fn(ids, 0, 2, 2)
        assert padded.shape[1] % 8 == 0 and padded.shape[1] >= max(lens), f"L={padded.shape[1]}"
        assert mask.sum(dim=1).tolist() == lens, "mask"
        assert torch.equal(padded[mask.bool()], ids.values()), "tokens"


# RIGHT ---------------------------------------------------------------
def r_strict_rows(pad_fn):
    pad_id = 0
    for lens, tp, cp in _CASES:
        seqs = [[100 + 7 * i + j for j in range(n)] for i, n in enumerate(lens)]
        padded, mask = pad_fn(_jagged(seqs), pad_id, tp, cp)
        block = _block(tp, cp)
        assert padded.dim() == 2 and padded.shape == mask.shape and padded.shape[0] == len(lens), (
            f"shapes {tuple(padded.shape)} / {tuple(mask.shape)} for {len(lens)} sequences"
        )
        width = padded.shape[1]
        assert width >= max(lens) and width % block == 0, f"width {width} at tp={tp}, cp={cp}: block {block}"
        m = mask.bool()
        for i, seq in enumerate(seqs):
            n = len(seq)
            assert m[i, :n].all() and not m[i, n:].any(), f"row {i}: mask {m[i].int().tolist()}, length {n}"
            assert padded[i, :n].tolist() == seq, f"row {i}: tokens {padded[i, :n].tolist()} != {seq}"


def r_numpy_expected(pad_fn):
    for lens, tp, cp in _CASES:
        seqs = [list(range(1, n + 1)) for n in lens]
        padded, mask = pad_fn(_jagged(seqs), 0, tp, cp)
        p = np.asarray(padded.tolist())
        m = np.asarray(mask.tolist()).astype(bool)
        if p.ndim != 2 or p.shape != m.shape or p.shape[0] != len(lens):
            raise AssertionError(f"bad shapes {p.shape} {m.shape}")
        width = p.shape[1]
        if width < max(lens) or width % _block(tp, cp):
            raise AssertionError(f"length {width} not aligned for tp={tp} cp={cp}")
        want_mask = np.arange(width)[None, :] < np.asarray(lens)[:, None]
        if not (m == want_mask).all():
            raise AssertionError(f"mask marks {m.sum(1).tolist()} tokens, lengths {lens}")
        for i, s in enumerate(seqs):
            if p[i, : len(s)].tolist() != s:
                raise AssertionError(f"sequence {i} moved")


def r_selected_values(pad_fn):
    failures = []
    for lens, tp, cp in _CASES:
        ids = _jagged([torch.randperm(50, generator=torch.Generator().manual_seed(n))[:n] + 1 for n in lens])
        padded, mask = pad_fn(ids, 0, tp, cp)
        mask = mask.to(torch.bool)
        width = padded.shape[-1]
        if width % _block(tp, cp) or width < max(lens):
            failures.append(f"tp={tp} cp={cp}: length {width}")
        elif mask.sum(-1).tolist() != lens or not torch.equal(mask, mask.cummin(-1).values):
            failures.append(f"tp={tp} cp={cp}: mask rows {mask.sum(-1).tolist()} vs {lens}")
        elif not torch.equal(padded[mask], ids.values()):
            failures.append(f"tp={tp} cp={cp}: real tokens moved")
    assert not failures, "; ".join(failures[:5])


WRONG = {
    "cp = 1 cases only": (w_no_cp_cases,),
    "single-sequence batches only": (w_single_sequence_only,),
    "even tp only": (w_even_tp_only,),
    "length checked only": (w_length_only,),
    "block tp*cp": (w_block_tp_cp,),
    "least aligned length demanded": (w_exact_length,),
    "returns a bool": (w_returns_bool,),
    "dense input": (w_dense_input,),
    "mask total only": (w_mask_count_only,),
    "tp 2, cp 2 only": (w_tp2_cp2_only,),
}
RIGHT = {
    "per-row mask prefix and tokens": (r_strict_rows,),
    "numpy expected mask": (r_numpy_expected,),
    "collect failures, cummin prefix mask": (r_selected_values,),
}
UNSURE = {}
