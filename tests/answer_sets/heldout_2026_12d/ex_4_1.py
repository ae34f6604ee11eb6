"""Exercise 4.1: my_packed_length(lengths, tp, cp), held-out answers."""

import math

import numpy as np


# WRONG ---------------------------------------------------------------
def w_pad_total(lengths, tp, cp):
    # pads the packed total once, not each sequence on its own
    align = tp * cp * 2 if cp > 1 else tp
    total = sum(lengths)
    return total + (-total) % align


def w_align_tp_cp(lengths, tp, cp):
    # forgets zigzag's factor 2: each CP rank holds two chunks
    align = tp * cp
    return sum(n + (-n) % align for n in lengths)


def w_align_always_double(lengths, tp, cp):
    # applies 2 * tp * cp also at cp == 1, where the block is tp
    align = 2 * tp * cp
    return sum(n + (-n) % align for n in lengths)


def w_bshd(lengths, tp, cp):
    # the [B, L] size of the padded ids: max length aligned, times B
    align = tp * cp * 2 if cp > 1 else tp
    longest = max(lengths)
    return len(lengths) * (longest + (-longest) % align)


def w_float(lengths, tp, cp):
    # ceil of a float division times align: a float, which the lesson refuses
    align = tp * cp * 2 if cp > 1 else tp
    return float(sum(math.ceil(n / align) * align for n in lengths))


def w_always_adds_block(lengths, tp, cp):
    # adds a whole block even when a length is already aligned
    align = tp * cp * 2 if cp > 1 else tp
    return sum(n + align - n % align for n in lengths)


def w_cp_only(lengths, tp, cp):
    # aligns to 2 * cp only: the SP scatter's tp is forgotten
    align = 2 * cp if cp > 1 else 1
    return sum(n + (-n) % align for n in lengths)


def w_lcm(lengths, tp, cp):
    # least common multiple of tp and 2*cp: verl uses the product
    align = math.lcm(tp, 2 * cp) if cp > 1 else tp
    return sum(n + (-n) % align for n in lengths)


def w_mutates(lengths, tp, cp):
    # pads the caller's list in place
    align = tp * cp * 2 if cp > 1 else tp
    for i, n in enumerate(lengths):
        lengths[i] = n + (-n) % align
    return sum(lengths)


_seen_total = [0]


def w_running_total(lengths, tp, cp):
    # keeps a running total between calls
    align = tp * cp * 2 if cp > 1 else tp
    _seen_total[0] += sum(n + (-n) % align for n in lengths)
    return _seen_total[0]


# RIGHT ---------------------------------------------------------------
def r_ceil_div(lengths, tp, cp):
    block = tp if cp == 1 else 2 * tp * cp
    return sum(-(-n // block) * block for n in lengths)


def r_numpy(lengths, tp, cp):
    block = np.int64(tp * (2 * cp if cp > 1 else 1))
    arr = np.asarray(lengths, dtype=np.int64)
    return np.sum((arr + block - 1) // block * block)


def r_loop(lengths, tp, cp):
    block = tp * cp * 2 if cp > 1 else tp
    total = 0
    for n in lengths:
        padded = n
        while padded % block:
            padded += 1
        total += padded
    return int(total)


WRONG = {
    "pads the total": (w_pad_total,),
    "block tp*cp": (w_align_tp_cp,),
    "block 2*tp*cp at cp 1": (w_align_always_double,),
    "B x aligned max": (w_bshd,),
    "float result": (w_float,),
    "a block added to aligned lengths": (w_always_adds_block,),
    "block 2*cp only": (w_cp_only,),
    "lcm instead of product": (w_lcm,),
    "pads the list in place": (w_mutates,),
    "running total between calls": (w_running_total,),
}
RIGHT = {
    "ceil division": (r_ceil_div,),
    "numpy int64": (r_numpy,),
    "step up until aligned": (r_loop,),
}
UNSURE = {}
