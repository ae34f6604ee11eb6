"""Exercise 4.1: my_packed_length(lengths, tp, cp), the packed THD row length preprocess_thd_engine builds."""

import math

import numpy as np

# verl 0.9.1 models/mcore/util.py::preprocess_thd_engine: align = tp * cp * (2 if zigzag and cp > 1 else 1);
# each sequence padded on its own by (align - n % align) % align; the row is cu_seqlens_padded[-1]. An int.


def _align(tp, cp):
    return tp * cp * 2 if cp > 1 else tp


# --- WRONG -----------------------------------------------------------------------------------------------------------


def w_pad_total(lengths, tp, cp):
    # pads the sum once, not each sequence on its own
    a = _align(tp, cp)
    total = sum(lengths)
    return total + (a - total % a) % a


def w_zigzag_at_cp1(lengths, tp, cp):
    # the factor 2 also at cp = 1 (verl's zigzag factor applies only when cp > 1)
    a = 2 * tp * cp
    return sum(n + (a - n % a) % a for n in lengths)


def w_contiguous_align(lengths, tp, cp):
    # aligns to tp * cp (the contiguous layout), not the zigzag default
    a = tp * cp
    return sum(n + (a - n % a) % a for n in lengths)


def w_least_align(lengths, tp, cp):
    # the least alignment lcm(2cp, tp*cp): not what verl pads to
    a = math.lcm(2 * cp, tp * cp) if cp > 1 else tp
    return sum(n + (a - n % a) % a for n in lengths)


def w_whole_block(lengths, tp, cp):
    # forgets the outer % align: an aligned sequence gets a whole extra block
    a = _align(tp, cp)
    return sum(n + (a - n % a) for n in lengths)


def w_float(lengths, tp, cp):
    # numpy ceil gives a float; the text refuses a float even when whole
    a = _align(tp, cp)
    return float(np.sum(np.ceil(np.array(lengths) / a) * a))


def w_no_tp(lengths, tp, cp):
    # only the zigzag 2*cp factor, forgets the SP scatter's tp
    a = 2 * cp if cp > 1 else 1
    return sum(n + (a - n % a) % a for n in lengths)


def w_rectangle(lengths, tp, cp):
    # a [B, L] rectangle of the longest aligned length (the VLM ids' shape, not the packed row)
    a = _align(tp, cp)
    longest = max(lengths)
    return len(lengths) * (longest + (a - longest % a) % a)


def w_mutates(lengths, tp, cp):
    # pads the caller's list in place
    a = _align(tp, cp)
    for i, n in enumerate(lengths):
        lengths[i] = n + (a - n % a) % a
    return sum(lengths)


_seen = {}


def w_cache_by_lengths(lengths, tp, cp):
    # memoises on the lengths alone: a later call with other tp/cp gets an earlier answer
    key = tuple(lengths)
    if key not in _seen:
        a = _align(tp, cp)
        _seen[key] = sum(n + (a - n % a) % a for n in lengths)
    return _seen[key]


def w_per_rank(lengths, tp, cp):
    # one CP rank's share, not the row over all CP ranks
    a = _align(tp, cp)
    return sum(n + (a - n % a) % a for n in lengths) // cp


# --- RIGHT -----------------------------------------------------------------------------------------------------------


def r_ceil_div(lengths, tp, cp):
    # ceiling division by negation
    block = tp * cp * (2 if cp > 1 else 1)
    return sum(-(-n // block) * block for n in lengths)


def r_numpy(lengths, tp, cp):
    # numpy int64 arithmetic (a numpy integer is an int here)
    block = np.int64(_align(tp, cp))
    arr = np.asarray(lengths, dtype=np.int64)
    return ((arr + block - 1) // block * block).sum()


def r_loop(lengths, tp, cp):
    # a running total, each length stepped up to the next multiple
    factor = 2 if cp > 1 else 1
    block = tp * cp * factor
    total = 0
    for n in list(lengths):
        padded = n
        while padded % block:
            padded += 1
        total += padded
    return int(total)


WRONG = {
    "pads the total once": (w_pad_total,),
    "factor 2 at cp = 1": (w_zigzag_at_cp1,),
    "tp * cp (contiguous)": (w_contiguous_align,),
    "least alignment lcm": (w_least_align,),
    "whole extra block when aligned": (w_whole_block,),
    "float": (w_float,),
    "forgets tp": (w_no_tp,),
    "[B, L] rectangle": (w_rectangle,),
    "mutates the list": (w_mutates,),
    "cached by lengths only": (w_cache_by_lengths,),
    "per CP rank": (w_per_rank,),
}

RIGHT = {
    "ceil division": (r_ceil_div,),
    "numpy int64": (r_numpy,),
    "step up loop": (r_loop,),
}

UNSURE = {}
