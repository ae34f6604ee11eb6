"""Lesson 04's toy causal LM: one attention head over packed sequences, sharded like SP + zigzag CP.

The course's own model, not upstream's. Its attention is causal within each sequence (the THD
reference below builds the mask from `cu_seqlens`), so every log-prob depends on the tokens before
it: a CP split that puts rows in the wrong place changes log-probs instead of passing unnoticed.
The padded forward pads `input_ids` only, through one `pad_fn`; outputs come back to THD order with
the mask and labels stay packed, the way verl 0.9.1's THD engine path treats labels and outputs
(`preprocess_thd_engine` / `postprocess_thd_engine` in verl/models/mcore/util.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from verlstudy.kit.params import positive_int
from verlstudy.lessons.l04_thd.thd import (
    pad_nested,
    seq_lengths,
    sp_gather,
    sp_scatter,
    zigzag_merge,
    zigzag_split,
)

PadFn = Callable[[torch.Tensor, int, int, int], tuple[torch.Tensor, torch.Tensor]]
SplitFn = Callable[[torch.Tensor, int, int], torch.Tensor]  # (x [S, ...], cp, rank) -> the rank's rows


class TinyLM(nn.Module):
    """Embedding -> LayerNorm (the SP region) -> one causal attention head (+ residual) -> LM head."""

    def __init__(self, vocab_size: int, hidden: int) -> None:
        super().__init__()
        vocab_size = positive_int("vocab_size", vocab_size)
        hidden = positive_int("hidden", hidden)
        self.embed = nn.Embedding(vocab_size, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, vocab_size)

    def attend(self, queries: torch.Tensor, keys: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        """`[Sq, B, H]` normed queries over `[Sk, B, H]` normed keys; `allowed[q, k]` says which keys a query sees."""
        hidden = queries.shape[-1]
        q = self.qkv(queries)[..., :hidden]
        k, v = self.qkv(keys)[..., hidden:].chunk(2, dim=-1)
        scores = torch.einsum("qbh,kbh->bqk", q, k) / math.sqrt(hidden)
        weights = scores.masked_fill(~allowed, float("-inf")).softmax(dim=-1)
        return self.proj(torch.einsum("bqk,kbh->qbh", weights, v))

    def hidden_states(
        self, padded_ids: torch.Tensor, tp: int = 1, cp: int = 1, split: SplitFn = zigzag_split
    ) -> torch.Tensor:
        """`[B, L]` ids -> `[B, L, H]`: CP rank c holds `split(x, cp, c)`, its norm runs over `tp` SP slices.

        Each CP rank's queries see every rank's keys (the course's stand-in for CP's key/value
        exchange), masked causally. The positions and the un-sharding (`zigzag_merge`) assume the
        zigzag layout, as an attention kernel told that layout would: `split` only decides which rows
        each rank holds, so a split that is not zigzag puts rows where the model does not expect them.
        """
        tp = positive_int("tp", tp)
        cp = positive_int("cp", cp)
        if not callable(split):
            raise TypeError("split must be a function (x, cp, rank) -> that rank's rows of x")
        x = self.embed(padded_ids).transpose(0, 1)  # [S, B, H], Megatron's layout
        positions = torch.arange(x.shape[0], device=x.device)
        local_x = [split(x, cp, c) for c in range(cp)]
        local_pos = [zigzag_split(positions, cp, c) for c in range(cp)]  # the layout the model assumes
        normed = [sp_gather([self.norm(sp_scatter(part, tp, t)) for t in range(tp)]) for part in local_x]
        keys, key_pos = torch.cat(normed), torch.cat(local_pos)
        outs = [
            part + self.attend(n, keys, key_pos[None, :] <= pos[:, None])
            for part, n, pos in zip(local_x, normed, local_pos, strict=True)
        ]
        return zigzag_merge(outs).transpose(0, 1)


def _check_batch(model: object, input_ids: torch.Tensor, labels: torch.Tensor) -> None:
    if not isinstance(model, TinyLM):
        raise TypeError(f"model must be a TinyLM, got {type(model).__name__}")
    if not torch.equal(seq_lengths(input_ids), seq_lengths(labels)):
        raise ValueError("labels must have the same per-sequence lengths as input_ids")


def thd_hidden(model: TinyLM, input_ids: torch.Tensor) -> torch.Tensor:
    """The unsharded reference on the packed buffer: `[T, H]`, attention masked by `cu_seqlens` and causality."""
    lengths = seq_lengths(input_ids)
    offsets = input_ids.offsets()
    seq_id = torch.repeat_interleave(torch.arange(len(lengths), device=offsets.device), lengths)
    position = torch.arange(int(offsets[-1]), device=offsets.device) - offsets[seq_id]
    x = model.embed(input_ids.values())[:, None, :]  # [T, 1, H]: one packed row, as THD has it
    allowed = (seq_id[None, :] == seq_id[:, None]) & (position[None, :] <= position[:, None])
    return (x + model.attend(model.norm(x), model.norm(x), allowed))[:, 0]


def thd_logprobs(model: TinyLM, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Reference log-prob of each label token, computed on the packed (THD) buffer without any padding."""
    _check_batch(model, input_ids, labels)
    logp = torch.log_softmax(model.head(thd_hidden(model, input_ids)), dim=-1)
    return logp.gather(-1, labels.values()[:, None]).squeeze(-1)


def _padded_forward(
    model: TinyLM, input_ids: torch.Tensor, labels: torch.Tensor, pad_fn: PadFn, tp: int, cp: int, split: SplitFn
) -> tuple[torch.Tensor, torch.Tensor]:
    _check_batch(model, input_ids, labels)
    if not callable(pad_fn):
        raise TypeError("pad_fn must be a function (input_ids, pad_token_id, tp, cp) -> (padded, mask)")
    ids, mask = pad_fn(input_ids, 0, tp, cp)  # only the ids are padded; labels stay packed
    return model.hidden_states(ids, tp, cp, split), mask


def unfused_logprobs(
    model: TinyLM,
    input_ids: torch.Tensor,
    labels: torch.Tensor,
    tp: int,
    cp: int,
    pad_fn: PadFn = pad_nested,
    split: SplitFn = zigzag_split,
) -> torch.Tensor:
    """Log-prob of each label token, materialising the `[B, L, V]` log-softmax; returns THD-ordered values."""
    hidden, mask = _padded_forward(model, input_ids, labels, pad_fn, tp, cp, split)
    logp = torch.log_softmax(model.head(hidden), dim=-1)[mask]  # [B, L, V] -> real tokens, in THD order
    return logp.gather(-1, labels.values()[:, None]).squeeze(-1)


def fused_logprobs(
    model: TinyLM,
    input_ids: torch.Tensor,
    labels: torch.Tensor,
    tp: int,
    cp: int,
    pad_fn: PadFn = pad_nested,
    split: SplitFn = zigzag_split,
) -> torch.Tensor:
    """The same log-probs from hidden states and head weights on real tokens only (no `[B, L, V]` tensor kept)."""
    hidden, mask = _padded_forward(model, input_ids, labels, pad_fn, tp, cp, split)
    h, y = hidden[mask], labels.values()
    label_logit = (h * model.head.weight[y]).sum(-1) + model.head.bias[y]
    return label_logit - torch.logsumexp(model.head(h), dim=-1)
