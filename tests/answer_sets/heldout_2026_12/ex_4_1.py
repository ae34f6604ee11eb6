"""4.1 my_packed_length(lengths, tp, cp): cu_seqlens_padded[-1] of verl's THD packing."""
import math

import numpy as np


def _align(tp, cp):
    return tp * cp * 2 if cp > 1 else tp


def _up(n, a):
    return -(-n // a) * a


# ---------------- wrong
def w_pad_total(lengths, tp, cp):
    return _up(sum(lengths), _align(tp, cp))


def w_vlm_rectangle(lengths, tp, cp):
    return len(lengths) * _up(max(lengths), _align(tp, cp))


def w_align_always_2tpcp(lengths, tp, cp):
    return sum(_up(n, 2 * tp * cp) for n in lengths)


def w_align_tp_cp(lengths, tp, cp):
    return sum(_up(n, tp * cp) for n in lengths)


def w_least_alignment_lcm(lengths, tp, cp):
    a = math.lcm(2 * cp, tp * cp) if cp > 1 else tp
    return sum(_up(n, a) for n in lengths)


def w_whole_block_when_aligned(lengths, tp, cp):
    a = _align(tp, cp)
    return sum(n + a - n % a for n in lengths)


def w_numpy_float(lengths, tp, cp):
    a = _align(tp, cp)
    return np.sum(np.ceil(np.asarray(lengths) / a) * a)


def w_forgets_tp_under_cp(lengths, tp, cp):
    a = 2 * cp if cp > 1 else tp
    return sum(_up(n, a) for n in lengths)


def w_sorts_in_place(lengths, tp, cp):
    lengths.sort()
    return sum(_up(n, _align(tp, cp)) for n in lengths)


_cache = {}


def w_cache_by_tp(lengths, tp, cp):
    a = _cache.setdefault(tp, _align(tp, cp))  # alignment remembered per tp
    return sum(_up(n, a) for n in lengths)


def w_per_rank_length(lengths, tp, cp):
    # the row one CP rank holds, not the row over all ranks
    return sum(_up(n, _align(tp, cp)) for n in lengths) // cp


# ---------------- right
def r_ceil_div(lengths, tp, cp):
    align = tp if cp == 1 else 2 * tp * cp
    return sum(((n + align - 1) // align) * align for n in lengths)


def r_numpy_int(lengths, tp, cp):
    align = _align(tp, cp)
    arr = np.asarray(lengths, dtype=np.int64)
    return int((arr + (-arr) % align).sum())


def r_math_ceil(lengths, tp, cp):
    block = 2 * tp * cp if cp > 1 else tp
    total = 0
    for n in lengths:
        total += math.ceil(n / block) * block
    return int(total)


WRONG = {
    "pads the total, not each sequence": (w_pad_total,),
    "B x aligned longest (the VLM rectangle)": (w_vlm_rectangle,),
    "tp*cp*2 even when cp == 1": (w_align_always_2tpcp,),
    "tp*cp (contiguous layout)": (w_align_tp_cp,),
    "least alignment lcm(2cp, tp*cp)": (w_least_alignment_lcm,),
    "adds a whole block to aligned lengths": (w_whole_block_when_aligned,),
    "numpy float result": (w_numpy_float,),
    "2*cp only when cp > 1 (forgets tp)": (w_forgets_tp_under_cp,),
    "sorts the caller's list": (w_sorts_in_place,),
    "alignment cached by tp only": (w_cache_by_tp,),
    "one CP rank's share": (w_per_rank_length,),
}
RIGHT = {"integer ceil division": (r_ceil_div,), "numpy int64 with negative modulo": (r_numpy_int,), "math.ceil": (r_math_ceil,)}
