"""Exercise 4.1 answers: my_packed_length(lengths, tp, cp), the packed THD length (cu_seqlens_padded[-1]).

verl 0.9.1 preprocess_thd_engine: align = tp * cp * (2 if zigzag and cp > 1 else 1); each sequence padded on its
own to a multiple of align.
"""

import math

import numpy as np
import torch


def _align(tp, cp):
    return tp * cp * 2 if cp > 1 else tp


# --- wrong ---
def w_pad_total_only(lengths, tp, cp):
    # pads the sum once: each sequence is padded on its own
    a, total = _align(tp, cp), sum(lengths)
    return total + (a - total % a) % a


def w_contiguous_align(lengths, tp, cp):
    # tp * cp: the contiguous layout's alignment, not zigzag's
    a = tp * cp
    return sum(n + (a - n % a) % a for n in lengths)


def w_factor_two_always(lengths, tp, cp):
    # 2 * tp * cp also when cp == 1
    a = 2 * tp * cp
    return sum(n + (a - n % a) % a for n in lengths)


def w_least_common_multiple(lengths, tp, cp):
    # the least alignment lcm(2cp, tp*cp): verl pads to the product
    a = math.lcm(2 * cp, tp * cp) if cp > 1 else tp
    return sum(n + (a - n % a) % a for n in lengths)


def w_whole_block_when_aligned(lengths, tp, cp):
    # no outer % align: an aligned length gets a whole extra block
    a = _align(tp, cp)
    return sum(n + (a - n % a) for n in lengths)


def w_float(lengths, tp, cp):
    # math via true division: a float, which the lesson refuses
    a = _align(tp, cp)
    return float(sum(-(-n // a) * a for n in lengths))


def w_per_rank(lengths, tp, cp):
    # the length one CP rank holds, not the row over all ranks
    a = _align(tp, cp)
    return sum(n + (a - n % a) % a for n in lengths) // cp


def w_rectangle(lengths, tp, cp):
    # the VLM [B, L] size: batch times the aligned longest length
    a, longest = _align(tp, cp), max(lengths)
    return len(lengths) * (longest + (a - longest % a) % a)


def w_forgets_tp(lengths, tp, cp):
    # aligns for zigzag only, forgets the SP scatter
    a = 2 * cp if cp > 1 else 1
    return sum(n + (a - n % a) % a for n in lengths)


def w_pops_list(lengths, tp, cp):
    # consumes the caller's list
    a, total = _align(tp, cp), 0
    while lengths:
        n = lengths.pop()
        total += n + (a - n % a) % a
    return total


_memo = {}


def w_memo_by_count(lengths, tp, cp):
    # caches by (count, tp, cp): state between calls gives a stale answer for other lengths of the same count
    key = (len(lengths), tp, cp)
    if key not in _memo:
        a = _align(tp, cp)
        _memo[key] = sum(n + (a - n % a) % a for n in lengths)
    return _memo[key]


# --- right ---
def r_ceil_division(lengths, tp, cp):
    block = tp * cp * (2 if cp > 1 else 1)
    return sum(-(-n // block) * block for n in lengths)


def r_numpy(lengths, tp, cp):
    block = tp if cp == 1 else 2 * tp * cp
    arr = np.asarray(lengths, dtype=np.int64)
    return (np.ceil(arr / block).astype(np.int64) * block).sum()


def r_torch_like_verl(lengths, tp, cp):
    seqlens = torch.tensor(lengths, dtype=torch.int64)
    factor = 2 if cp > 1 else 1
    align = tp * cp * factor
    pad = (align - seqlens % align) % align
    cu = torch.zeros(len(lengths) + 1, dtype=torch.int64)
    cu[1:] = torch.cumsum(seqlens + pad, 0)
    return int(cu[-1])


def r_loop_early(lengths, tp, cp):
    align = _align(tp, cp)
    total = 0
    for n in lengths:
        remainder = n % align
        total += n if remainder == 0 else n + align - remainder
    return total


WRONG = {
    "padded once in total": (w_pad_total_only,),
    "tp * cp": (w_contiguous_align,),
    "factor 2 at cp 1": (w_factor_two_always,),
    "lcm": (w_least_common_multiple,),
    "whole block when aligned": (w_whole_block_when_aligned,),
    "float": (w_float,),
    "per CP rank": (w_per_rank,),
    "B x aligned longest": (w_rectangle,),
    "forgets tp": (w_forgets_tp,),
    "pops the list": (w_pops_list,),
    "memo by count": (w_memo_by_count,),
}
RIGHT = {
    "ceil division": (r_ceil_division,),
    "numpy int64 sum": (r_numpy,),
    "torch cumsum as verl": (r_torch_like_verl,),
    "loop with remainder": (r_loop_early,),
}
UNSURE = {}
