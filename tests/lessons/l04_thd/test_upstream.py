"""verlstudy.lessons.l04_thd.upstream: verl's own padding code, loaded from source with stand-ins for Megatron."""

from __future__ import annotations

import pytest
import torch

from verlstudy.kit import upstream
from verlstudy.lessons.l04_thd import upstream as l04
from verlstudy.lessons.l04_thd.thd import pack_sequences, pad_nested, sp_scatter

needs_verl = pytest.mark.skipif(not upstream.verl_available(), reason="verl is not installed (make setup)")
needs_090 = pytest.mark.skipif(not upstream.verl_available("0.9.0"), reason="verl 0.9.0 was not fetched (make setup)")


def batch(lengths: list[int], start: int = 1) -> torch.Tensor:
    seqs = []
    for n in lengths:
        seqs.append(list(range(start, start + n)))
        start += n
    return pack_sequences(seqs)


def test_fake_parallel_state_answers_what_it_was_given_and_checks_its_input() -> None:
    mpu = l04.FakeParallelState(tp=4, cp=2, cp_rank=1)
    assert (mpu.get_tensor_model_parallel_world_size(), mpu.get_context_parallel_world_size()) == (4, 2)
    assert mpu.get_context_parallel_rank() == 1 and mpu.get_context_parallel_group() is None
    with pytest.raises(ValueError, match="cp_rank must be an int in"):
        l04.FakeParallelState(cp=2, cp_rank=2)
    with pytest.raises(ValueError, match="tp must be a positive integer"):
        l04.FakeParallelState(tp=0)
    assert l04.FakePackedSeqParams(qkv_format="thd").qkv_format == "thd"


@needs_verl
@needs_090
def test_090_pads_to_the_longest_and_crashes_the_scatter_091_aligns_and_passes() -> None:
    ids = batch([7, 4, 9])
    old, old_mask = l04.vlm_mask_thd(2, 1, release="0.9.0")(ids, 0)
    new, new_mask = l04.vlm_mask_thd(2, 1)(ids, 0)
    assert old.shape == (3, 9) and new.shape == (3, 10)
    assert old_mask.sum(1).tolist() == new_mask.sum(1).tolist() == [7, 4, 9]
    with pytest.raises(AssertionError, match="divisible by tensor parallel size"):
        sp_scatter(old.T, 2, 0)
    assert sp_scatter(new.T, 2, 1).shape == (5, 3)
    ours = pad_nested(ids, 0, 2, 1)
    assert torch.equal(ours[0], new) and torch.equal(ours[1], new_mask)
    pad_090 = l04.as_pad_fn("0.9.0")
    assert pad_090(ids, 0, 2, 2)[0].shape == (3, 9) and pad_090.__name__ == "build_vlm_attn_mask_thd_0_9_0"


@needs_verl
def test_thd_engine_packs_labels_per_sequence_and_unpacks_outputs_to_the_original_lengths() -> None:
    pre, post = l04.thd_engine(2)
    labels = batch([7, 4, 9], start=101)
    packed, params, _ = pre(labels, pre_process=True, need_roll=True)
    assert packed.shape == (1, 22) and params.cu_seqlens_q_padded.tolist() == [0, 8, 12, 22]
    out = post(packed[..., None].float(), params, labels, 3)
    assert out.offsets().diff().tolist() == [7, 4, 9]
    params = pre(labels, pre_process=True, pad_to_length_bucket=16)[1]
    assert params.cu_seqlens_q_padded.tolist() == [0, 8, 12, 32]  # the last sequence absorbs the bucket
    for rank in range(2):
        local, params, _ = l04.thd_engine(2, 2, rank)[0](labels)
        assert local.shape == (1, 16) and params.cu_seqlens_q_padded.tolist() == [0, 8, 16, 32]


@needs_verl
def test_bshd_labels_follow_forced_max_seqlen_and_so_must_the_vlm_ids() -> None:
    build_bshd, pre_bshd = l04.bshd_engine(2)
    ids = batch([7, 4, 9])
    forced, _ = build_bshd(ids, 3, 0, forced_max_seqlen=12)
    local, _ = build_bshd(ids, 3, 0)
    labels, _, _ = pre_bshd(batch([7, 4, 9], start=101), need_roll=True, forced_max_seqlen=12)
    assert forced.shape == labels.shape == (3, 12) and local.shape == (3, 10)


@needs_verl
def test_compare_thd_padding_agrees_and_catches_a_planted_difference() -> None:
    assert l04.compare_thd_padding(cases=40).status == "agree"
    row = l04.compare_thd_padding(cases=40, ours=lambda ids, pad, tp, cp: pad_nested(ids, pad, tp, 1))
    assert row.status == "differ" and "cp=" in row.detail


@pytest.mark.parametrize("value", [None, 7, "build_vlm_attn_mask_thd", [1], float("nan")])
def test_load_util_names_its_names_of_the_wrong_type(value):
    # issue 43 item 8: load_util(None) ended in "'NoneType' object is not iterable" inside kit.upstream
    with pytest.raises(TypeError, match=r"argument names(\[0\])? must be (a list, each item )?a function name"):
        l04.load_util(value)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"cases": None}, r"argument cases must be a positive integer, got NoneType None"),
        ({"cases": "3"}, r"argument cases must be a positive integer"),
        ({"seed": [1]}, r"argument seed must be an integer, got list"),
        ({"ours": 7}, r"argument ours must be a function \(the code under comparison\) or None, got int 7"),
    ],
)
def test_compare_thd_padding_names_an_argument_of_the_wrong_type(args, named):
    # issue 43 item 8: cases=None ended in "'NoneType' object cannot be interpreted as an integer"
    with pytest.raises(TypeError, match=named):
        l04.compare_thd_padding(**args)
    with pytest.raises(TypeError, match=r"argument cases must be a positive integer"):
        l04.upstream_check(None)
