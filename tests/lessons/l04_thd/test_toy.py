"""verlstudy.lessons.l04_thd.toy: causal attention over packed sequences, sharded like SP + zigzag CP."""

from __future__ import annotations

import pytest
import torch

from verlstudy.lessons.l04_thd.thd import (
    SequenceParallelScatterError,
    pack_sequences,
    pad_nested,
    pad_nested_unaligned,
)
from verlstudy.lessons.l04_thd.toy import TinyLM, fused_logprobs, thd_logprobs, unfused_logprobs


def _toy(seed: int = 0, lengths: tuple[int, ...] = (5, 3, 7)) -> tuple[TinyLM, torch.Tensor, torch.Tensor]:
    torch.manual_seed(seed)
    model = TinyLM(vocab_size=13, hidden=8)
    ids = pack_sequences([torch.randint(1, 13, (n,)) for n in lengths])
    labels = pack_sequences([torch.randint(1, 13, (n,)) for n in lengths])
    return model, ids, labels


def _contiguous(x: torch.Tensor, cp: int, rank: int) -> torch.Tensor:
    return x.chunk(cp)[rank]


@pytest.mark.parametrize(("tp", "cp"), [(1, 1), (2, 1), (3, 1), (2, 2), (1, 3), (4, 2)])
def test_sharded_paths_match_the_packed_reference_over_cu_seqlens(tp: int, cp: int) -> None:
    model, ids, labels = _toy()
    with torch.no_grad():
        reference = thd_logprobs(model, ids, labels)
        unfused = unfused_logprobs(model, ids, labels, tp, cp)
        fused = fused_logprobs(model, ids, labels, tp, cp)
    assert reference.shape == unfused.shape == fused.shape == (15,)
    torch.testing.assert_close(unfused, reference)
    torch.testing.assert_close(fused, reference)


def _replace_token(ids: torch.Tensor, index: int) -> torch.Tensor:
    values = ids.values().clone()
    values[index] = values[index] % 12 + 1  # a different token id in [1, 12]
    return torch.nested.nested_tensor_from_jagged(values, offsets=ids.offsets())


def test_attention_is_causal_within_a_sequence_and_blind_across_sequences() -> None:
    model, ids, labels = _toy()  # sequences at packed rows 0-4, 5-7, 8-14
    with torch.no_grad():
        before = thd_logprobs(model, ids, labels)
        last_changed = thd_logprobs(model, _replace_token(ids, 14), labels)
        first_changed = thd_logprobs(model, _replace_token(ids, 8), labels)
    assert torch.isclose(before, last_changed)[:14].all() and not torch.isclose(before[14], last_changed[14])
    moved = ~torch.isclose(before, first_changed)
    assert not moved[:8].any() and moved[8:].all()  # the change reaches every later token of its own sequence only


def test_a_split_that_is_not_zigzag_changes_log_probs() -> None:
    model, ids, labels = _toy(lengths=(7, 4, 9))
    with torch.no_grad():
        reference = thd_logprobs(model, ids, labels)
        wrong = unfused_logprobs(model, ids, labels, 2, 2, split=_contiguous)
    assert int((wrong - reference).abs().gt(1e-4).sum()) >= 4


def test_pre_fix_padding_crashes_in_the_sp_scatter() -> None:
    model, ids, labels = _toy()
    with pytest.raises(SequenceParallelScatterError):
        fused_logprobs(model, ids, labels, 2, 1, pad_fn=pad_nested_unaligned)
    with pytest.raises(ValueError, match="2\\*cp"):
        unfused_logprobs(model, ids, labels, 1, 2, pad_fn=pad_nested_unaligned)


def test_both_paths_pad_only_the_input_ids_through_the_one_function() -> None:
    model, ids, labels = _toy()
    calls: list[torch.Tensor] = []

    def counting_pad(x: torch.Tensor, pad: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
        calls.append(x)
        return pad_nested(x, pad, tp, cp)

    unfused_logprobs(model, ids, labels, 2, 1, pad_fn=counting_pad)
    fused_logprobs(model, ids, labels, 2, 1, pad_fn=counting_pad)
    assert len(calls) == 2 and all(c is ids for c in calls)  # labels are never padded


def test_paths_reject_bad_input() -> None:
    model, ids, labels = _toy()
    with pytest.raises(ValueError, match="same per-sequence lengths"):
        fused_logprobs(model, ids, pack_sequences([[1] * 5, [1] * 3, [1] * 6]), 1, 1)
    with pytest.raises(TypeError, match="TinyLM"):
        unfused_logprobs(torch.nn.Linear(2, 2), ids, labels, 1, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="pad_fn"):
        unfused_logprobs(model, ids, labels, 1, 1, pad_fn=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="split must be a function"):
        model.hidden_states(torch.zeros(1, 4, dtype=torch.long), 1, 2, split=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="hidden must be a positive integer"):
        TinyLM(4, 0)
