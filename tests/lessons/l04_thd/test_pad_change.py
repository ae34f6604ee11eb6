"""The toy's fix as a change of its own function (issue 41 item 1): `pad_nested_unaligned` (before #7702) and
`pad_nested` differ in the one line that rounds the length up to `align_size(tp, cp)`."""

from __future__ import annotations

import pytest
import torch

from verlstudy.kit.show import change_view
from verlstudy.lessons.l04_thd.thd import pack_sequences, pad_nested, pad_nested_unaligned


def test_the_change_shown_is_the_alignment_of_the_length():
    diff = change_view(pad_nested_unaligned, pad_nested).lines()
    assert "-    length = int(lengths.max())" in diff
    assert "+    length = aligned_length(int(lengths.max()), tp, cp)" in diff


@pytest.mark.parametrize(("tp", "cp", "aligned"), [(1, 1, 9), (2, 1, 10), (2, 2, 16), (3, 2, 12)])
def test_before_the_fix_tp_and_cp_change_nothing_after_it_the_length_is_aligned(tp, cp, aligned):
    ids = pack_sequences([torch.arange(1, n + 1) for n in (7, 4, 9)])
    before, before_mask = pad_nested_unaligned(ids, 0, tp, cp)
    after, after_mask = pad_nested(ids, 0, tp, cp)
    assert before.shape == (3, 9) and after.shape == (3, aligned)
    assert torch.equal(after[:, :9], before) and torch.equal(after_mask[:, :9], before_mask)
    assert before_mask.sum().item() == after_mask.sum().item() == 20


def test_before_the_fix_a_bad_tp_is_still_refused():
    ids = pack_sequences([torch.arange(1, 4)])
    with pytest.raises(ValueError, match="tp"):
        pad_nested_unaligned(ids, 0, 0, 1)
