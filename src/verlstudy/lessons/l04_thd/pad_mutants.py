"""Exercise 4.3's family of wrong paddings: mutants of the aligned padding, generated (serves checks.py only).

A padding `pad_fn(input_ids, pad_token_id, tp, cp) -> (padded [B, L], mask [B, L])` is safe when L is at least the
longest sequence and splits over SP and zigzag CP (`L % (2*cp) == 0` with CP and `(L / cp) % tp == 0`), the mask
marks exactly each row's real tokens, and reading the padded ids where the mask is set gives the packed tokens back
in order. Each mutant breaks one of these in one plausible way (the alignment rule, which length is aligned, the
mask, where the tokens go), some only under a condition (cp > 1, tp > 1 with cp > 1, an odd tp, several
sequences). Mutants are written on the jagged tensor's values and offsets (no `to_padded_tensor`), so 50 of them
cost little. `unsafe_part` is the oracle a test and the messages use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

PadFn = Callable[[torch.Tensor, int, int, int], tuple[torch.Tensor, torch.Tensor]]
Rule = Callable[[int, int], int]  # (tp, cp) -> the multiple a padded length is rounded up to


def upstream_align(tp: int, cp: int) -> int:
    """verl 0.9.1's block (build_vlm_attn_mask_thd)."""
    return tp * cp * 2 if cp > 1 else tp


def _round_up(n: int, block: int) -> int:
    return -(-n // block) * block


def pad_rows(ids: torch.Tensor, pad_id: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad each row of a jagged batch to `length` (cutting longer rows), with the exact mask."""
    lengths = _lengths(ids)
    values = ids.values()
    kept = torch.tensor([min(n, length) for n in lengths])
    mask = torch.arange(length)[None, :] < kept[:, None]
    # plain Python for the positions: repeat_interleave costs milliseconds on a busy CPU
    within = torch.tensor([i < length for n in lengths for i in range(n)], dtype=torch.bool)
    padded = torch.full((len(lengths), length), pad_id, dtype=values.dtype)
    padded[mask] = values[within]
    return padded, mask


def _lengths(ids: torch.Tensor) -> list[int]:
    return ids.offsets().diff().tolist()


def aligned_padding(rule: Rule = upstream_align, source: Callable[[list[int]], int] = max, extra: int = 0) -> PadFn:
    """Pad to source(lengths) rounded up to rule(tp, cp), plus `extra` blocks."""

    def pad(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
        block = rule(tp, cp)
        return pad_rows(ids, pad_id, _round_up(source(_lengths(ids)), block) + extra * block)

    return pad


def _changed(change: Callable[[torch.Tensor, torch.Tensor, list[int]], tuple[torch.Tensor, torch.Tensor]]) -> PadFn:
    """The right padding, then `change(padded, mask, lengths)` (the mask or the tokens spoiled)."""
    right = aligned_padding()

    def pad(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
        padded, mask = right(ids, pad_id, tp, cp)
        return change(padded.clone(), mask.clone(), _lengths(ids))

    return pad


def _only_when(condition: Callable[[list[int], int, int], bool], wrong: PadFn) -> PadFn:
    right = aligned_padding()

    def pad(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
        return (wrong if condition(_lengths(ids), tp, cp) else right)(ids, pad_id, tp, cp)

    return pad


def _round_down(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    block, longest = upstream_align(tp, cp), max(_lengths(ids))
    return pad_rows(ids, pad_id, max(longest - longest % block, block))


def _one_short(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor]:
    return pad_rows(ids, pad_id, _round_up(max(_lengths(ids)) - 1, upstream_align(tp, cp)))


# ---------------------------------------------------------------- what a padding does to the mask and the tokens


def _mask_all(padded: torch.Tensor, mask: torch.Tensor, lengths: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    return padded, torch.ones_like(mask)


def _mask_one_more(padded: torch.Tensor, mask: torch.Tensor, lengths: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    return padded, torch.arange(mask.shape[1])[None, :] <= torch.tensor(lengths)[:, None]


def _mask_one_less(padded: torch.Tensor, mask: torch.Tensor, lengths: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    return padded, torch.arange(mask.shape[1])[None, :] < torch.tensor(lengths)[:, None] - 1


def _mask_longest(padded: torch.Tensor, mask: torch.Tensor, lengths: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    return padded, (torch.arange(mask.shape[1]) < max(lengths)).expand_as(mask).clone()


def _mask_rows_reversed(
    padded: torch.Tensor, mask: torch.Tensor, lengths: list[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    return padded, mask.flip(0)


def _tokens_reversed(padded: torch.Tensor, mask: torch.Tensor, lengths: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    for row, n in enumerate(lengths):
        padded[row, :n] = padded[row, :n].flip(0)
    return padded, mask


def _tokens_left(padded: torch.Tensor, mask: torch.Tensor, lengths: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    return padded.flip(1), mask


def _tokens_rolled(padded: torch.Tensor, mask: torch.Tensor, lengths: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    for row, n in enumerate(lengths):
        padded[row, :n] = padded[row, :n].roll(1)
    return padded, mask


def _later_rows_shifted(
    padded: torch.Tensor, mask: torch.Tensor, lengths: list[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    values = padded[mask]
    start = 0
    for row, n in enumerate(lengths):
        if row:
            padded[row, :n] = values[start - 1 : start - 1 + n]
        start += n
    return padded, mask


def _rows_reversed(padded: torch.Tensor, mask: torch.Tensor, lengths: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    return padded.flip(0), mask.flip(0)


def _last_token_to_pad(
    padded: torch.Tensor, mask: torch.Tensor, lengths: list[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    for row, n in enumerate(lengths):
        padded[row, n - 1] = padded[row, n - 1] + 1000
    return padded, mask


@dataclass(frozen=True)
class PadMutant:
    """One wrong padding and what it gets wrong, in words (never the rule itself)."""

    pad: PadFn
    what: str


def _rules() -> list[PadMutant]:
    rules: dict[str, Rule] = {
        "ignores cp": lambda tp, cp: tp,
        "forgets the zigzag's factor of two with CP": lambda tp, cp: tp * cp,
        "ignores tp when cp > 1": lambda tp, cp: 2 * cp if cp > 1 else tp,
        "ignores how many CP ranks there are": lambda tp, cp: 2 * tp if cp > 1 else tp,
        "adds tp and cp instead of combining them": lambda tp, cp: tp + 2 * cp if cp > 1 else tp,
        "takes the larger of the two sizes' needs": lambda tp, cp: max(tp, 2 * cp),
        "treats cp == 2 as no CP": lambda tp, cp: upstream_align(tp, cp) if cp > 2 else tp,
        "rounds tp down to a power of two": lambda tp, cp: upstream_align(1 << (tp.bit_length() - 1), cp),
        "uses the CP chunks only": lambda tp, cp: 2 * cp,
        "halves the CP block": lambda tp, cp: tp * cp if cp > 1 else tp,
        "does not align at all": lambda tp, cp: 1,
    }
    return [PadMutant(aligned_padding(rule), f"a padding that {words}") for words, rule in rules.items()]


def _lengths_aligned() -> list[PadMutant]:
    sources: dict[str, Callable[[list[int]], int]] = {
        "the first sequence's length": lambda ls: ls[0],
        "the shortest sequence's length": min,
        "the mean length": lambda ls: sum(ls) // len(ls),
    }
    found = [
        PadMutant(aligned_padding(source=s), f"a padding that aligns {words}, not the longest")
        for words, s in sources.items()
    ]
    return [
        *found,
        PadMutant(_round_down, "a padding that rounds the longest length down and cuts real tokens"),
        PadMutant(_one_short, "a padding that aligns one token less than the longest length"),
        PadMutant(aligned_padding(upstream_align, max, -1), "a padding one block shorter than it should be"),
    ]


_CHANGES: dict[str, Callable[..., tuple[torch.Tensor, torch.Tensor]]] = {
    "whose mask marks the padded positions as real": _mask_all,
    "whose mask marks one padded position per row as real": _mask_one_more,
    "whose mask misses each row's last real token": _mask_one_less,
    "whose mask marks every row as long as the longest": _mask_longest,
    "whose mask rows are in the other order": _mask_rows_reversed,
    "that writes each row's tokens back to front": _tokens_reversed,
    "that puts the pads in front of the tokens": _tokens_left,
    "that rotates each row's tokens by one": _tokens_rolled,
    "whose later rows hold their neighbours' tokens": _later_rows_shifted,
    "that puts the rows in the other order": _rows_reversed,
    "that changes each row's last token": _last_token_to_pad,
}

_CONDITIONS: dict[str, Callable[[list[int], int, int], bool]] = {
    "": lambda ls, tp, cp: True,
    ", only when cp > 1": lambda ls, tp, cp: cp > 1,
    ", only when tp > 1 and cp > 1 together": lambda ls, tp, cp: tp > 1 and cp > 1,
    ", only for an odd tp": lambda ls, tp, cp: tp % 2 == 1,
    ", only on batches of several sequences": lambda ls, tp, cp: len(ls) > 1,
}


def _mask_and_tokens() -> list[PadMutant]:
    out = []
    for words, change in _CHANGES.items():
        for when, condition in _CONDITIONS.items():
            several = words.startswith(
                ("whose mask rows", "whose mask marks every", "whose later", "that puts the rows")
            )
            if several and when in (", only on batches of several sequences", ", only for an odd tp"):
                continue  # shown only on several sequences; the reference guard tries an odd tp on one
            out.append(PadMutant(_only_when(condition, _changed(change)), f"a padding {words}{when}"))
    return out


def _conditional_rules() -> list[PadMutant]:
    tp_only = aligned_padding(lambda tp, cp: tp)
    unaligned = aligned_padding(lambda tp, cp: 1)
    return [
        PadMutant(_only_when(lambda ls, tp, cp: tp > 1 and cp > 1, tp_only), "a padding that ignores cp when tp > 1"),
        PadMutant(
            _only_when(lambda ls, tp, cp: len(ls) > 1, unaligned), "a padding that aligns only one-sequence batches"
        ),
        PadMutant(_only_when(lambda ls, tp, cp: tp % 2 == 1, unaligned), "a padding that does not align for an odd tp"),
    ]


def pad_mutants() -> tuple[PadMutant, ...]:
    """The family (more than 50 wrong paddings)."""
    return (*_rules(), *_lengths_aligned(), *_mask_and_tokens(), *_conditional_rules())


def unsafe_part(pad_fn: PadFn, ids: torch.Tensor, tp: int, cp: int) -> str | None:
    """Which part of `pad_fn`'s output on this batch would break SP, zigzag CP or the loss (None: it is safe)."""
    lengths = _lengths(ids)
    try:
        padded, mask = pad_fn(ids, 0, tp, cp)
    except Exception:
        return "it raises"
    length = padded.shape[1]
    if length < max(lengths) or (cp > 1 and length % (2 * cp)) or (length // cp) % tp:
        return "its padded length"
    want = torch.arange(length)[None, :] < torch.tensor(lengths)[:, None]
    if mask.dtype != torch.bool or mask.shape != padded.shape or not torch.equal(mask, want):
        return "its mask"
    if not torch.equal(padded[mask], ids.values()):
        return "where its real tokens are"
    return None
