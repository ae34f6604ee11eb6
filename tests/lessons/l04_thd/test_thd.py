"""verlstudy.lessons.l04_thd.thd: the TP/CP alignment rule, padding at the model's entry, SP scatter and zigzag CP."""

from __future__ import annotations

import gc
import logging
import types
import warnings
from collections.abc import Callable

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from verlstudy.kit import upstream
from verlstudy.lessons.l04_thd.thd import (
    SequenceParallelScatterError,
    align_size,
    aligned_length,
    causal_work,
    cu_seqlens,
    imbalance,
    minimal_align_size,
    pack_sequences,
    packed_thd_length,
    packing_picture,
    pad_nested,
    pad_nested_unaligned,
    padding_needed,
    plot_packing,
    quiet_nested,
    rank_positions,
    seq_lengths,
    shard_lengths,
    sp_gather,
    sp_scatter,
    zigzag_chunks,
    zigzag_merge,
    zigzag_split,
)

PROPERTY = settings(max_examples=500, deadline=None)
tp_sizes = st.integers(min_value=1, max_value=16)
cp_sizes = st.integers(min_value=1, max_value=8)


def batch_of(lengths: list[int], start: int = 1) -> torch.Tensor:
    """A jagged batch whose tokens are distinct, so misplaced tokens show up."""
    seqs, nxt = [], start
    for n in lengths:
        seqs.append(list(range(nxt, nxt + n)))
        nxt += n
    return pack_sequences(seqs)


# ---------------------------------------------------------------- the rule


@pytest.mark.parametrize(
    ("tp", "cp", "expected"), [(1, 1, 1), (2, 1, 2), (4, 1, 4), (1, 2, 4), (2, 2, 8), (8, 4, 64), (3, 3, 18)]
)
def test_align_size_is_tp_without_cp_and_tp_cp_2_with_it(tp: int, cp: int, expected: int) -> None:
    assert align_size(tp, cp) == expected


@pytest.mark.parametrize(
    ("bad", "error"),
    [(0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError), ("2", TypeError), (None, TypeError)],
)
def test_bad_parallel_sizes_are_rejected_by_name(bad: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="tp must be a positive integer"):
        align_size(bad, 1)  # type: ignore[arg-type]
    with pytest.raises(error, match="cp must be a positive integer"):
        aligned_length(10, 2, bad)  # type: ignore[arg-type]
    with pytest.raises(error, match="tp must be a positive integer"):
        minimal_align_size(bad, 2)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-1, 2.0, False, "7"])
def test_bad_lengths_are_rejected(bad: object) -> None:
    with pytest.raises(ValueError, match="length must be a non-negative integer"):
        aligned_length(bad, 2, 1)  # type: ignore[arg-type]


def test_upstream_example_b1_the_lengths_that_matter() -> None:
    # Upstream's example: 4026 tokens at TP=2. 4026 is even, so that setting needs no padding.
    assert padding_needed(4026, 2, 1) == 0
    assert aligned_length(4026, 2, 1) == 4026
    # These settings do need padding, and the padded length then survives SP and zigzag CP.
    for length, tp, cp, expected in [(4027, 2, 1, 4028), (4026, 4, 1, 4028), (4026, 1, 2, 4028), (4026, 2, 2, 4032)]:
        assert aligned_length(length, tp, cp) == expected
        ids = batch_of([length])
        padded, mask = pad_nested(ids, 0, tp, cp)
        assert padded.shape == (1, expected)
        assert int(mask.sum()) == length
        assert shard_lengths(expected, tp, cp) == [[expected // (tp * cp)] * tp] * cp


@given(length=st.integers(min_value=0, max_value=100_000), tp=tp_sizes, cp=cp_sizes)
@PROPERTY
def test_aligned_length_is_the_smallest_multiple_at_least_length(length: int, tp: int, cp: int) -> None:
    align = align_size(tp, cp)
    got = aligned_length(length, tp, cp)
    assert got % align == 0
    assert length <= got < length + align
    assert padding_needed(length, tp, cp) == got - length


@given(raw=st.integers(min_value=1, max_value=5000), tp=st.integers(1, 8), cp=st.integers(1, 4))
@PROPERTY
def test_every_rank_gets_a_whole_tp_divisible_slice(raw: int, tp: int, cp: int) -> None:
    length = aligned_length(raw, tp, cp)
    per_cp_rank = [zigzag_split(torch.arange(length), cp, c).numel() for c in range(cp)]
    assert per_cp_rank == [length // cp] * cp
    assert all(n % tp == 0 for n in per_cp_rank)
    assert shard_lengths(length, tp, cp) == [[length // (tp * cp)] * tp] * cp


@given(length=st.integers(min_value=1, max_value=400), tp=st.integers(1, 8), cp=st.integers(2, 4))
@PROPERTY
def test_unaligned_lengths_fail_in_the_split_not_silently(length: int, tp: int, cp: int) -> None:
    if length % minimal_align_size(tp, cp) == 0:
        assert sum(map(sum, shard_lengths(length, tp, cp))) == length
    else:
        with pytest.raises(ValueError):
            shard_lengths(length, tp, cp)


@pytest.mark.parametrize("tp", [1, 2, 3, 4, 6, 8])
@pytest.mark.parametrize("cp", [1, 2, 3, 4])
def test_minimal_alignment_is_the_least_length_the_splits_accept(tp: int, cp: int) -> None:
    def accepted(length: int) -> bool:
        try:
            shard_lengths(length, tp, cp)
        except ValueError:
            return False
        return True

    least = next(n for n in range(1, 200) if accepted(n))
    assert least == minimal_align_size(tp, cp)
    assert align_size(tp, cp) % least == 0  # upstream's product is always a multiple of the least


# ---------------------------------------------------------------- padding at the model's entry


def test_pad_nested_pads_to_aligned_longest_with_a_false_mask() -> None:
    ids = batch_of([3, 5])
    padded, mask = pad_nested(ids, -1, 2, 1)
    assert padded.tolist() == [[1, 2, 3, -1, -1, -1], [4, 5, 6, 7, 8, -1]]
    assert mask.tolist() == [[True] * 3 + [False] * 3, [True] * 5 + [False]]
    assert mask.dtype == torch.bool and padded.dtype == ids.dtype


def test_pad_nested_unaligned_is_the_pre_fix_behaviour() -> None:
    padded, mask = pad_nested_unaligned(batch_of([3, 5]), 0, 2, 2)
    assert padded.shape == (2, 5) and mask.sum().item() == 8


@given(
    lengths=st.lists(st.integers(min_value=0, max_value=24), min_size=1, max_size=4).filter(lambda ls: max(ls) > 0),
    tp=st.integers(1, 8),
    cp=st.integers(1, 4),
    pad=st.integers(-5, 0),
)
@PROPERTY
def test_mask_sums_equal_lengths_and_tokens_survive(lengths: list[int], tp: int, cp: int, pad: int) -> None:
    ids = batch_of(lengths)
    padded, mask = pad_nested(ids, pad, tp, cp)
    assert padded.shape == (len(lengths), aligned_length(max(lengths), tp, cp))
    assert mask.sum(dim=1).tolist() == lengths
    assert torch.equal(padded[mask], ids.values())
    assert bool((padded[~mask] == pad).all())


def test_pad_nested_rejects_what_is_not_a_jagged_batch() -> None:
    with pytest.raises(TypeError, match="jagged nested tensor"):
        pad_nested(torch.zeros(2, 3, dtype=torch.long), 0, 2, 1)
    with pytest.raises(TypeError, match="jagged nested tensor"):
        pad_nested([[1, 2]], 0, 2, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="pad_token_id must be an int"):
        pad_nested(batch_of([2]), None, 2, 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tp must be a positive integer"):
        pad_nested(batch_of([2]), 0, 0, 1)


def test_pack_sequences_offsets_are_cu_seqlens() -> None:
    ids = pack_sequences([[5, 6, 7], [8], torch.tensor([9, 10])])
    assert seq_lengths(ids).tolist() == [3, 1, 2]
    assert cu_seqlens(ids).tolist() == [0, 3, 4, 6] and cu_seqlens(ids).dtype == torch.int32
    assert ids.values().tolist() == [5, 6, 7, 8, 9, 10]


@pytest.mark.parametrize("bad", [[], "abc", torch.arange(3), [[[1, 2]]]])
def test_pack_sequences_rejects_bad_input(bad: object) -> None:
    with pytest.raises(ValueError):
        pack_sequences(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="integer token ids"):
        pack_sequences([torch.tensor([1.5])])


def _upstream_build_vlm_attn_mask_thd(tp: int, cp: int) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    """Upstream's function, run from the installed verl source with a stand-in for Megatron's mpu."""
    mpu = types.SimpleNamespace(
        get_tensor_model_parallel_world_size=lambda: tp, get_context_parallel_world_size=lambda: cp
    )
    try:
        loaded = upstream.load_upstream(
            "models/mcore/util.py", ["build_vlm_attn_mask_thd"], {"torch": torch, "mpu": mpu}
        )
    except upstream.VerlNotInstalled:
        pytest.skip("verl is not installed (pip install --no-deps verl==0.9.1 to compare with upstream)")
    return loaded["build_vlm_attn_mask_thd"]


@pytest.mark.parametrize(
    ("lengths", "tp", "cp"),
    [([4026], 2, 1), ([4027], 2, 1), ([4026], 4, 1), ([4026], 2, 2), ([3, 5, 1], 1, 1), ([3, 5, 1], 3, 3)],
)
def test_pad_nested_agrees_with_upstream_when_installed(lengths: list[int], tp: int, cp: int) -> None:
    # verl/models/mcore/util.py::build_vlm_attn_mask_thd (PR #7702), from the installed verl 0.9.1 source
    build_vlm_attn_mask_thd = _upstream_build_vlm_attn_mask_thd(tp, cp)
    ids = batch_of(lengths)
    theirs = build_vlm_attn_mask_thd(ids, 0)
    ours = pad_nested(ids, 0, tp, cp)
    assert torch.equal(ours[0], theirs[0]) and torch.equal(ours[1], theirs[1])


def test_packing_picture_marks_real_longest_and_alignment_pads() -> None:
    picture = packing_picture([3, 5], tp=4, cp=1)
    assert picture.splitlines() == [
        "tp=4 cp=1: longest 5 -> padded length 8 (align 4)",
        "seq 0 |###..+++| 3 tokens",
        "seq 1 |#####+++| 5 tokens",
    ]
    with pytest.raises(ValueError, match="non-empty list"):
        packing_picture([], 2, 1)
    with pytest.raises(ValueError, match=r"lengths\[1\] must be a non-negative integer"):
        packing_picture([3, -1], 2, 1)


def test_plot_packing_draws_the_grid_and_prints_the_picture(capsys: pytest.CaptureFixture[str]) -> None:
    import matplotlib.pyplot as plt

    fig = plot_packing([3, 5], tp=2, cp=2, show=False)
    image = fig.axes[0].images[0].get_array()
    plt.close(fig)
    assert image.shape == (2, 8)
    assert image[0].tolist() == [0, 0, 0, 1, 1, 2, 2, 2]
    assert capsys.readouterr().out.strip() == packing_picture([3, 5], 2, 2)


# ---------------------------------------------------------------- SP scatter and zigzag CP


def test_sp_scatter_fails_like_megatron_on_an_unaligned_length() -> None:
    x = torch.zeros(5, 1, 4)
    with pytest.raises(AssertionError, match="divisible by tensor parallel size"):
        sp_scatter(x, 2, 0)
    with pytest.raises(ValueError, match=r"S=5, tp=2"):
        sp_scatter(x, 2, 1)
    assert issubclass(SequenceParallelScatterError, AssertionError)


def test_sp_scatter_slices_and_gather_restores() -> None:
    x = torch.arange(12).reshape(6, 1, 2)
    parts = [sp_scatter(x, 3, r) for r in range(3)]
    assert parts[1].tolist() == [[[4, 5]], [[6, 7]]]
    assert torch.equal(sp_gather(parts), x)
    assert sp_scatter(x, 1, 0) is x or torch.equal(sp_scatter(x, 1, 0), x)


@pytest.mark.parametrize("rank", [-1, 2, 1.0, True])
def test_sp_scatter_rejects_bad_rank(rank: object) -> None:
    with pytest.raises(ValueError, match=r"rank must be an integer in \[0, tp=2\)"):
        sp_scatter(torch.zeros(4), 2, rank)  # type: ignore[arg-type]


def test_sp_scatter_and_gather_reject_bad_tensors() -> None:
    with pytest.raises(TypeError, match="tensor"):
        sp_scatter([1, 2], 2, 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-empty list"):
        sp_gather([])


def test_zigzag_chunks_pair_r_with_2cp_minus_1_minus_r() -> None:
    assert [zigzag_chunks(4, r) for r in range(4)] == [(0, 7), (1, 6), (2, 5), (3, 4)]
    assert zigzag_chunks(1, 0) == (0,)
    assert rank_positions(8, 2, 0).tolist() == [0, 1, 6, 7]
    assert rank_positions(8, 2, 1).tolist() == [2, 3, 4, 5]
    assert rank_positions(8, 2, 1, "contiguous").tolist() == [4, 5, 6, 7]


def test_zigzag_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match=r"divide by 2\*cp=4"):
        zigzag_split(torch.arange(6), 2, 0)
    with pytest.raises(ValueError, match="dim must be an int"):
        zigzag_split(torch.arange(8), 2, 0, dim=1)
    with pytest.raises(ValueError, match=r"rank must be an integer in \[0, cp=2\)"):
        zigzag_split(torch.arange(8), 2, 2)
    with pytest.raises(ValueError, match="odd length"):
        zigzag_merge([torch.arange(3), torch.arange(3)])
    with pytest.raises(ValueError, match="split must be"):
        rank_positions(8, 2, 0, "striped")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="contiguous split needs"):
        rank_positions(7, 2, 0, "contiguous")


@given(
    chunk=st.integers(min_value=0, max_value=12),
    cp=cp_sizes,
    batch=st.integers(1, 3),
    dim=st.sampled_from([0, 1]),
)
@PROPERTY
def test_zigzag_split_then_merge_is_the_identity(chunk: int, cp: int, batch: int, dim: int) -> None:
    seq = 2 * cp * chunk
    x = torch.arange(seq * batch).reshape(seq, batch)
    if dim == 1:
        x = x.T.contiguous()
    parts = [zigzag_split(x, cp, r, dim=dim) for r in range(cp)]
    assert all(p.shape[dim] == seq // cp for p in parts)
    assert torch.equal(zigzag_merge(parts, dim=dim), x)


@given(chunk=st.integers(min_value=1, max_value=512), cp=st.integers(2, 8))
@PROPERTY
def test_zigzag_balances_causal_work_and_contiguous_does_not(chunk: int, cp: int) -> None:
    seq = 2 * cp * chunk
    zig = causal_work(seq, cp, "zigzag")
    contiguous = causal_work(seq, cp, "contiguous")
    total = seq * (seq + 1) // 2
    assert sum(zig) == sum(contiguous) == total
    assert len(set(zig)) == 1 and imbalance(zig) == 1.0
    assert contiguous == sorted(contiguous) and imbalance(contiguous) > 1.0


def test_imbalance_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        imbalance([])
    with pytest.raises(ValueError, match="positive total"):
        imbalance([0, 0])


@pytest.mark.parametrize("value", [None, "3", [1], float("nan")])
def test_imbalance_and_sp_gather_name_an_item_of_the_wrong_type(value) -> None:
    # issue 43 item 8: imbalance([[1]]) ended in "unsupported operand type(s) for +: 'int' and 'list'"
    with pytest.raises(TypeError, match=r"argument work\[1\] must be a number \(one rank's work\), got "):
        imbalance([1, value])
    with pytest.raises(TypeError, match=r"argument parts\[1\] must be a per-rank tensor, got "):
        sp_gather([torch.zeros(1), value])


def test_packed_thd_length_aligns_each_sequence_then_sums() -> None:
    assert packed_thd_length([7, 4, 9], 2, 1) == 8 + 4 + 10
    assert packed_thd_length([7, 4, 9], 2, 2) == 8 + 8 + 16
    assert packed_thd_length([4026], 1, 1) == 4026
    with pytest.raises(ValueError, match="non-empty list"):
        packed_thd_length([], 2, 1)
    with pytest.raises(ValueError, match=r"lengths\[1\] must be a non-negative integer"):
        packed_thd_length([3, -1], 2, 1)


def test_quiet_nested_silences_the_pid_log_line_and_the_prototype_warning() -> None:
    # torch logs "is_fx_tracing ..." once per process, with a PID and a time, on first jagged use.
    symbolic_trace = pytest.importorskip("torch.fx._symbolic_trace")
    once = getattr(symbolic_trace, "is_fx_tracing_warning", None)
    if once is None or not hasattr(once, "cache_clear"):
        pytest.skip("this torch version does not log the once-only is_fx_tracing line")
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("torch.fx._symbolic_trace")
    logger.addHandler(handler)
    try:
        once.cache_clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with quiet_nested():
                # torch warns once per process ("prototype stage") from C++; a Python one stands in for it.
                warnings.warn("The PyTorch API of nested tensors is in prototype stage", UserWarning, stacklevel=1)
                pack_sequences([[1, 2, 3], [4]])
                once()
            warnings.warn("control: outside quiet_nested warnings are seen", UserWarning, stacklevel=1)
        assert records == []
        assert [str(w.message)[:7] for w in caught] == ["control"]
        once.cache_clear()
        once()  # control: outside quiet_nested the line is logged
        assert [r.getMessage()[:13] for r in records] == ["is_fx_tracing"]
    finally:
        logger.removeHandler(handler)
        once.cache_clear()
        with quiet_nested():
            once()  # leave the once-only line spent, as it was


def test_quiet_nested_pauses_the_collector_and_gives_it_back() -> None:
    assert gc.isenabled()
    with quiet_nested():
        assert not gc.isenabled()  # a first jagged tensor's imports set off no whole-heap collections
    assert gc.isenabled()


def test_causal_work_closed_form_matches_counting_positions() -> None:
    for seq_len, cp in [(16, 2), (48, 3), (64, 4), (10, 1)]:
        for split in ("contiguous", "zigzag"):
            counted = [int((rank_positions(seq_len, cp, r, split) + 1).sum()) for r in range(cp)]
            assert causal_work(seq_len, cp, split) == counted
    with pytest.raises(ValueError, match="divisible by 4"):
        causal_work(6, 2, "zigzag")
    with pytest.raises(ValueError, match="split must be"):
        causal_work(8, 2, "ring")  # type: ignore[arg-type]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bool, torch.complex64])
def test_token_ids_that_are_not_integers_are_rejected(dtype):
    with pytest.raises(TypeError, match="integer token ids"):
        pack_sequences([torch.ones(3, dtype=dtype)])
    jagged = torch.nested.nested_tensor([torch.ones(3), torch.ones(2)], layout=torch.jagged).to(dtype)
    with pytest.raises(TypeError, match="input_ids must hold integer token ids"):
        seq_lengths(jagged)
