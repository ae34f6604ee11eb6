"""Aligning packed (THD) sequence lengths for sequence and context parallelism (verl #7702).

Megatron's sequence parallelism (SP) scatters activations `[S, B, H]` along S over the `tp` ranks
and asserts `S % tp == 0`. Zigzag context parallelism (CP) cuts S into `2 * cp` chunks and gives
rank r the chunks r and `2*cp-1-r`, so S must divide by `2 * cp` and each rank's `S / cp` must still
divide by `tp`. Upstream pads once, at the model's entry, to a multiple of
`tp * cp * 2 if cp > 1 else tp` (`verl/models/mcore/util.py::build_vlm_attn_mask_thd`), and the
fused forward path reuses that function. This module is the course's own version of that
arithmetic, a mock of the scatter that fails the way Megatron's does, and the zigzag split (the toy
model that uses them is in `toy.py`).
"""

from __future__ import annotations

import logging
import math
import numbers
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Literal

import matplotlib.figure
import matplotlib.patches
import matplotlib.pyplot as plt
import torch
from matplotlib.colors import ListedColormap

from verlstudy.common.heap import collector_paused
from verlstudy.kit.params import got, positive_int
from verlstudy.kit.plots import COLORS, apply_style, fit_layout

# The once-per-process torch log line that jagged tensors can trigger carries a PID and a time.
_NOISY_LOGGERS = ("torch.fx._symbolic_trace", "torch.nested")

Split = Literal["contiguous", "zigzag"]


class SequenceParallelScatterError(AssertionError, ValueError):
    """The sequence dimension does not divide by the SP size.

    Megatron's `_split_along_first_dim` fails with an `assert`, so this is an AssertionError like
    upstream's crash, and also a ValueError like every other bad input in this project.
    """


# ---------------------------------------------------------------- validation and quiet jagged tensors


def _check_length(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a non-negative integer (a token count), got {type(value).__name__} {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be a non-negative integer (a token count), got {value}")
    return int(value)


def _check_rank(rank: object, size: int, size_name: str) -> int:
    if isinstance(rank, bool) or not isinstance(rank, numbers.Integral) or not 0 <= rank < size:
        raise ValueError(f"rank must be an integer in [0, {size_name}={size}), got {rank!r}")
    return int(rank)


def _check_jagged(name: str, value: object) -> torch.Tensor:
    if not isinstance(value, torch.Tensor) or not value.is_nested or value.layout != torch.jagged:
        got = type(value).__name__ if not isinstance(value, torch.Tensor) else f"tensor with layout {value.layout}"
        raise TypeError(
            f"{name} must be a jagged nested tensor (torch.nested.nested_tensor(..., layout=torch.jagged), "
            f"or pack_sequences(...)), got {got}"
        )
    if value.dim() != 2:
        raise ValueError(f"{name} must be [B, j] (a batch of 1-D token sequences), got {value.dim()} dims")
    if value.dtype.is_floating_point or value.dtype.is_complex or value.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer token ids, got dtype {value.dtype}")
    return value


@contextmanager
def quiet_nested() -> Iterator[None]:
    """Silence the prototype warnings and the once-only, PID-bearing log line around jagged tensors.

    The garbage collector is paused too: a process's first jagged tensor imports torch's DTensor and compiler
    modules, whose many new objects would otherwise set off collections that walk the whole heap.
    """
    loggers = [logging.getLogger(name) for name in _NOISY_LOGGERS]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), collector_paused():
            warnings.simplefilter("ignore", UserWarning)
            yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def pack_sequences(sequences: Sequence[Sequence[int] | torch.Tensor]) -> torch.Tensor:
    """Pack B token sequences of different lengths into one jagged nested tensor `[B, j]` (THD).

    The result's `values()` is the packed token buffer and `offsets()` its cu_seqlens.
    """
    if isinstance(sequences, torch.Tensor | str | bytes) or not isinstance(sequences, Sequence) or len(sequences) == 0:
        raise ValueError("sequences must be a non-empty list of 1-D token sequences")
    tensors = []
    for i, seq in enumerate(sequences):
        if not isinstance(seq, torch.Tensor):
            if not isinstance(seq, Iterable) or isinstance(seq, str | bytes):
                raise ValueError(f"sequences[{i}] must be a 1-D list of token ids, got {type(seq).__name__}")
            items = list(seq)
            if any(isinstance(x, Iterable) for x in items):
                raise ValueError(f"sequences[{i}] must be 1-D (token ids), not a list of lists")
            # torch.tensor(..., dtype=long) would truncate 1.7 to 1 and take True as 1: refuse them by name
            bad = [x for x in items if isinstance(x, bool) or not isinstance(x, numbers.Integral)]
            if bad:
                raise TypeError(f"sequences[{i}] must hold integer token ids, got {type(bad[0]).__name__} {bad[0]!r}")
            seq = torch.tensor(items, dtype=torch.long)
        t = seq
        if t.dim() != 1:
            raise ValueError(f"sequences[{i}] must be 1-D (token ids), got shape {tuple(t.shape)}")
        if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool:
            raise TypeError(f"sequences[{i}] must hold integer token ids, got dtype {t.dtype}")
        tensors.append(t)
    offsets = torch.tensor([0, *(t.numel() for t in tensors)]).cumsum(0)
    # Building from (values, offsets) is the THD layout itself, and cheaper than from a list. The
    # longest length is passed as well: without it, `to_padded_tensor` pads to the whole buffer's length.
    longest = max(t.numel() for t in tensors)
    with quiet_nested():
        return torch.nested.nested_tensor_from_jagged(torch.cat(tensors), offsets=offsets, max_seqlen=longest)


def seq_lengths(input_ids: torch.Tensor) -> torch.Tensor:
    """Each sequence's length in a jagged batch: `offsets().diff()`."""
    return _check_jagged("input_ids", input_ids).offsets().diff()


def cu_seqlens(input_ids: torch.Tensor) -> torch.Tensor:
    """Cumulative sequence lengths (int32, starting at 0), as flash-attention and TE's THD take them."""
    return _check_jagged("input_ids", input_ids).offsets().to(torch.int32)


# ---------------------------------------------------------------- the alignment rule


def align_size(tp: int, cp: int) -> int:
    """The multiple a padded length must reach: `tp * cp * 2` when `cp > 1`, else `tp`."""
    tp = positive_int("tp", tp)
    cp = positive_int("cp", cp)
    return tp * cp * 2 if cp > 1 else tp


def padding_needed(length: int, tp: int, cp: int) -> int:
    """Tokens to add so `length` becomes a multiple of `align_size(tp, cp)` (0 if it already is)."""
    length = _check_length("length", length)
    align = align_size(tp, cp)
    return (align - length % align) % align


def aligned_length(length: int, tp: int, cp: int) -> int:
    """The smallest multiple of `align_size(tp, cp)` that is >= `length`."""
    return _check_length("length", length) + padding_needed(length, tp, cp)


def packed_thd_length(lengths: Sequence[int], tp: int, cp: int) -> int:
    """Rows of the packed THD buffer when each sequence is padded on its own to `align_size(tp, cp)`.

    The total over CP ranks (`cu_seqlens_padded[-1]`), as verl 0.9.1's `preprocess_thd_engine` builds
    it without FP8 padding or length buckets; it differs from the `[B, L]` rectangle of the VLM ids.
    """
    if isinstance(lengths, str) or not isinstance(lengths, Sequence) or len(lengths) == 0:
        raise ValueError("lengths must be a non-empty list of sequence lengths")
    return sum(aligned_length(_check_length(f"lengths[{i}]", n), tp, cp) for i, n in enumerate(lengths))


def minimal_align_size(tp: int, cp: int) -> int:
    """The least multiple that satisfies both rules: lcm(2*cp, tp*cp) with CP, else tp.

    Upstream uses the product `tp*cp*2`; it differs from this when tp is even (a few extra pads).
    """
    tp = positive_int("tp", tp)
    cp = positive_int("cp", cp)
    return math.lcm(2 * cp, tp * cp) if cp > 1 else tp


# ---------------------------------------------------------------- padding at the model's entry


def pad_nested(input_ids: torch.Tensor, pad_token_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Jagged `[B, j]` ids -> (`[B, L]` padded ids, `[B, L]` bool mask), L aligned for SP and CP.

    L is the longest sequence rounded up with `aligned_length`; padded positions hold
    `pad_token_id` and are False in the mask. The same rule and output as upstream's
    `build_vlm_attn_mask_thd` (verl/models/mcore/util.py, PR #7702) with tp/cp passed in.
    """
    input_ids = _check_jagged("input_ids", input_ids)
    if isinstance(pad_token_id, bool) or not isinstance(pad_token_id, numbers.Integral):
        raise TypeError(f"pad_token_id must be an int, got {type(pad_token_id).__name__} {pad_token_id!r}")
    lengths = input_ids.offsets().diff()
    length = aligned_length(int(lengths.max()), tp, cp)
    with quiet_nested():
        padded = input_ids.to_padded_tensor(int(pad_token_id), output_size=(input_ids.shape[0], length))
    mask = torch.arange(length, device=padded.device) < lengths.to(padded.device)[:, None]
    return padded, mask


def pad_nested_unaligned(
    input_ids: torch.Tensor, pad_token_id: int, tp: int, cp: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Jagged `[B, j]` ids -> (`[B, L]` padded ids, `[B, L]` bool mask), L the longest sequence: before #7702.

    tp and cp are checked and ignored, as verl 0.9.0's `build_vlm_attn_mask_thd` ignored them (the bug, kept to
    show it); `pad_nested` is the fix.
    """
    input_ids = _check_jagged("input_ids", input_ids)
    if isinstance(pad_token_id, bool) or not isinstance(pad_token_id, numbers.Integral):
        raise TypeError(f"pad_token_id must be an int, got {type(pad_token_id).__name__} {pad_token_id!r}")
    positive_int("tp", tp), positive_int("cp", cp)  # checked, then ignored: the bug
    lengths = input_ids.offsets().diff()
    length = int(lengths.max())
    with quiet_nested():
        padded = input_ids.to_padded_tensor(int(pad_token_id), output_size=(input_ids.shape[0], length))
    mask = torch.arange(length, device=padded.device) < lengths.to(padded.device)[:, None]
    return padded, mask


def packing_picture(lengths: Sequence[int], tp: int, cp: int) -> str:
    """One text row per sequence: `#` real token, `.` pad to the longest, `+` pad for the TP/CP alignment."""
    if isinstance(lengths, str) or not isinstance(lengths, Sequence) or len(lengths) == 0:
        raise ValueError("lengths must be a non-empty list of sequence lengths")
    lengths = [_check_length(f"lengths[{i}]", n) for i, n in enumerate(lengths)]
    longest = max(lengths)
    total = aligned_length(longest, tp, cp)
    rows = [f"tp={tp} cp={cp}: longest {longest} -> padded length {total} (align {align_size(tp, cp)})"]
    for i, n in enumerate(lengths):
        rows.append(f"seq {i} |{'#' * n}{'.' * (longest - n)}{'+' * (total - longest)}| {n} tokens")
    return "\n".join(rows)


def plot_packing(lengths: Sequence[int], tp: int, cp: int, show: bool = True) -> matplotlib.figure.Figure:
    """Draw the padded batch (real tokens, pad to longest, alignment pad) and print `packing_picture`."""
    text = packing_picture(lengths, tp, cp)
    longest = max(lengths)
    total = aligned_length(longest, tp, cp)
    grid = torch.full((len(lengths), total), 2)
    grid[:, :longest] = 1
    for i, n in enumerate(lengths):
        grid[i, :n] = 0
    apply_style()
    fig, ax = plt.subplots(figsize=(6.0, 0.5 + 0.35 * len(lengths)))
    ax.imshow(grid.numpy(), cmap=ListedColormap(COLORS[:3]), vmin=0, vmax=2, aspect="auto")
    ax.set(title=f"padded batch at tp={tp}, cp={cp}", xlabel="position", ylabel="sequence")
    ax.grid(False)
    keys = ("real token", "pad to the longest", "pad for TP/CP alignment")
    handles = [matplotlib.patches.Patch(color=c, label=k) for c, k in zip(COLORS[:3], keys, strict=True)]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fit_layout(fig)
    print(text)
    if show:
        plt.show()
    return fig


# ---------------------------------------------------------------- SP scatter and zigzag CP


def sp_scatter(x: torch.Tensor, tp: int, rank: int) -> torch.Tensor:
    """Rank `rank`'s slice of `[S, ...]` split along S into `tp` parts, as Megatron's SP scatter does.

    Raises SequenceParallelScatterError (an AssertionError, like Megatron's assert) when S % tp != 0.
    """
    if not isinstance(x, torch.Tensor) or x.dim() < 1:
        raise TypeError(f"x must be a tensor [S, B, H] with at least one dim, got {type(x).__name__}")
    tp = positive_int("tp", tp)
    rank = _check_rank(rank, tp, "tp")
    seq = x.shape[0]
    if seq % tp != 0:
        raise SequenceParallelScatterError(
            f"First dimension of the tensor should be divisible by tensor parallel size (S={seq}, tp={tp})"
        )
    part = seq // tp
    return x[rank * part : (rank + 1) * part]


def sp_gather(parts: Sequence[torch.Tensor]) -> torch.Tensor:
    """The inverse of `sp_scatter` over all ranks: concatenate the slices along S."""
    if isinstance(parts, torch.Tensor) or not isinstance(parts, Sequence) or len(parts) == 0:
        raise ValueError("parts must be a non-empty list of per-rank tensors")
    for i, part in enumerate(parts):
        if not isinstance(part, torch.Tensor):
            raise TypeError(f"argument parts[{i}] must be a per-rank tensor, got {got(part)}")
    return torch.cat(list(parts), dim=0)


def _check_seq_dim(x: object, dim: int) -> tuple[torch.Tensor, int]:
    if not isinstance(x, torch.Tensor) or x.dim() < 1:
        raise TypeError(f"x must be a tensor with a sequence dimension, got {type(x).__name__}")
    if isinstance(dim, bool) or not isinstance(dim, int) or not -x.dim() <= dim < x.dim():
        raise ValueError(f"dim must be an int in [-{x.dim()}, {x.dim()}), got {dim!r}")
    return x, dim % x.dim()


def zigzag_chunks(cp: int, rank: int) -> tuple[int, ...]:
    """Which of the `2*cp` sequence chunks a CP rank holds: (r, 2*cp-1-r); (0,) without CP."""
    cp = positive_int("cp", cp)
    rank = _check_rank(rank, cp, "cp")
    return (rank, 2 * cp - 1 - rank) if cp > 1 else (0,)


def zigzag_split(x: torch.Tensor, cp: int, rank: int, dim: int = 0) -> torch.Tensor:
    """CP rank `rank`'s part of `x`: chunks r and 2*cp-1-r of 2*cp equal chunks along `dim`.

    With cp == 1 there is no split and `x` is returned whole. Raises ValueError when the sequence
    length does not divide by 2*cp.
    """
    x, dim = _check_seq_dim(x, dim)
    chunks = zigzag_chunks(cp, rank)
    if cp == 1:
        return x
    seq = x.shape[dim]
    if seq % (2 * cp) != 0:
        raise ValueError(f"zigzag CP needs the sequence length to divide by 2*cp={2 * cp}, got {seq}")
    pieces = x.chunk(2 * cp, dim=dim)
    return torch.cat([pieces[c] for c in chunks], dim=dim)


def zigzag_merge(parts: Sequence[torch.Tensor], dim: int = 0) -> torch.Tensor:
    """The inverse of `zigzag_split` over all cp ranks (cp = len(parts)): the original order back."""
    if isinstance(parts, torch.Tensor) or not isinstance(parts, Sequence) or len(parts) == 0:
        raise ValueError("parts must be a non-empty list with one tensor per CP rank")
    cp = len(parts)
    first, dim = _check_seq_dim(parts[0], dim)
    if cp == 1:
        return first
    pieces: list[torch.Tensor | None] = [None] * (2 * cp)
    for rank, part in enumerate(parts):
        if part.shape[dim] % 2 != 0:
            raise ValueError(f"parts[{rank}] has an odd length {part.shape[dim]}: it is not a zigzag_split output")
        low, high = part.chunk(2, dim=dim)
        pieces[rank], pieces[2 * cp - 1 - rank] = low, high
    return torch.cat([p for p in pieces if p is not None], dim=dim)


def rank_positions(seq_len: int, cp: int, rank: int, split: Split = "zigzag") -> torch.Tensor:
    """Token positions (0-based, in sequence order) that a CP rank holds under a split scheme."""
    seq_len = _check_length("seq_len", seq_len)
    if split not in ("contiguous", "zigzag"):
        raise ValueError(f"split must be 'contiguous' or 'zigzag', got {split!r}")
    positions = torch.arange(seq_len)
    if split == "zigzag":
        return zigzag_split(positions, cp, rank)
    cp = positive_int("cp", cp)
    rank = _check_rank(rank, cp, "cp")
    if seq_len % cp != 0:
        raise ValueError(f"a contiguous split needs the sequence length to divide by cp={cp}, got {seq_len}")
    part = seq_len // cp
    return positions[rank * part : (rank + 1) * part]


def causal_work(seq_len: int, cp: int, split: Split) -> list[int]:
    """Per-rank causal attention work: (query, key) pairs with key <= query for the queries it holds.

    A query at position i attends to i + 1 keys, so a rank's work is the sum of (position + 1).
    """
    seq_len = _check_length("seq_len", seq_len)
    cp = positive_int("cp", cp)
    if split not in ("contiguous", "zigzag"):
        raise ValueError(f"split must be 'contiguous' or 'zigzag', got {split!r}")
    n_chunks = 2 * cp if split == "zigzag" and cp > 1 else cp
    if seq_len % n_chunks != 0:
        raise ValueError(f"a {split} split over cp={cp} needs a length divisible by {n_chunks}, got {seq_len}")
    size = seq_len // n_chunks

    def chunk_work(k: int) -> int:  # sum of (i + 1) for i in chunk k: the keys its queries see
        start, stop = k * size, (k + 1) * size
        return (stop * (stop + 1) - start * (start + 1)) // 2

    if split == "zigzag" and cp > 1:
        return [chunk_work(r) + chunk_work(2 * cp - 1 - r) for r in range(cp)]
    return [chunk_work(r) for r in range(cp)]


def imbalance(work: Sequence[int]) -> float:
    """Busiest rank's work over the mean: 1.0 is perfectly balanced (the others wait for the busiest)."""
    if isinstance(work, str) or not isinstance(work, Sequence) or len(work) == 0:
        raise ValueError("work must be a non-empty list of per-rank amounts")
    for i, amount in enumerate(work):
        if isinstance(amount, bool) or not isinstance(amount, numbers.Real) or math.isnan(amount):
            raise TypeError(f"argument work[{i}] must be a number (one rank's work), got {got(amount)}")
    mean = sum(work) / len(work)
    if mean <= 0:
        raise ValueError("work must have a positive total")
    return max(work) / mean


def shard_lengths(padded_len: int, tp: int, cp: int) -> list[list[int]]:
    """Tokens on each (cp rank, tp rank) after zigzag CP then SP: raises where the slices are not whole.

    Actually performs the split on a position tensor, so it fails exactly where the real split would.
    """
    padded_len = _check_length("padded_len", padded_len)
    tp = positive_int("tp", tp)
    cp = positive_int("cp", cp)
    positions = torch.arange(padded_len)
    return [[int(sp_scatter(zigzag_split(positions, cp, c), tp, t).numel()) for t in range(tp)] for c in range(cp)]
