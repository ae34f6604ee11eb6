"""Exercise 1.1 answers: predict_leak(seq_len, hidden, itemsize) in bytes.

What stays per leaking micro-batch on the last stage (notebook 01): the receive buffer (S, H), its .grad (S, H),
and the stored per-token output (S,), all in the dtype's itemsize.
"""

import numpy as np
import torch


# --- wrong ---
def w_no_grad(seq_len, hidden, itemsize):
    # forgets the gradient backward wrote into the receive buffer
    return seq_len * hidden * itemsize + seq_len * itemsize


def w_no_per_token_output(seq_len, hidden, itemsize):
    # forgets the stored per-token output
    return 2 * seq_len * hidden * itemsize


def w_elements_not_bytes(seq_len, hidden, itemsize):
    # counts elements, not bytes
    return 2 * seq_len * hidden + seq_len


def w_output_is_hidden_wide(seq_len, hidden, itemsize):
    # takes the stored output as (S, H) instead of one value per token
    return 3 * seq_len * hidden * itemsize


def w_int32_wrap(seq_len, hidden, itemsize):
    # computed in int32: wraps past 2**31 bytes for real model sizes
    return int(np.int32(2) * np.int32(seq_len) * np.int32(hidden) * np.int32(itemsize) + np.int32(seq_len * itemsize))


def w_float32(seq_len, hidden, itemsize):
    # float32 rounds counts above 2**24
    return np.float32(2 * seq_len * hidden * itemsize) + np.float32(seq_len * itemsize)


def w_output_always_float32(seq_len, hidden, itemsize):
    # assumes the per-token output is float32 whatever the dtype
    return 2 * seq_len * hidden * itemsize + seq_len * 4


def w_bits(seq_len, hidden, itemsize):
    # bits, not bytes
    return 8 * (2 * seq_len * hidden * itemsize + seq_len * itemsize)


def w_per_token(seq_len, hidden, itemsize):
    # divides by the number of tokens: bytes per token, not per micro-batch
    return (2 * seq_len * hidden * itemsize + seq_len * itemsize) / seq_len


def w_kib_float(seq_len, hidden, itemsize):
    # reports KiB as a fraction
    return (2 * seq_len * hidden * itemsize + seq_len * itemsize) / 1024


def w_off_by_one_token(seq_len, hidden, itemsize):
    # counts S + 1 tokens (a shifted-label habit)
    return 2 * (seq_len + 1) * hidden * itemsize + (seq_len + 1) * itemsize


# --- right ---
def r_factored(seq_len, hidden, itemsize):
    return seq_len * itemsize * (2 * hidden + 1)


def r_numpy_int64(seq_len, hidden, itemsize):
    parts = np.array([seq_len * hidden, seq_len * hidden, seq_len], dtype=np.int64)
    return parts.sum() * np.int64(itemsize)


def r_whole_float(seq_len, hidden, itemsize):
    # a float holding the same whole value (exact below 2**53)
    buffer = float(seq_len) * hidden * itemsize
    return buffer + buffer + float(seq_len * itemsize)


def r_torch_one_value(seq_len, hidden, itemsize):
    shapes = [(seq_len, hidden), (seq_len, hidden), (seq_len,)]
    total = sum(int(np.prod(s)) for s in shapes) * itemsize
    return torch.tensor(total, dtype=torch.int64)


WRONG = {
    "no gradient": (w_no_grad,),
    "no per-token output": (w_no_per_token_output,),
    "elements not bytes": (w_elements_not_bytes,),
    "output (S, H)": (w_output_is_hidden_wide,),
    "int32 wrap": (w_int32_wrap,),
    "float32 rounding": (w_float32,),
    "output always float32": (w_output_always_float32,),
    "bits": (w_bits,),
    "per token": (w_per_token,),
    "KiB fraction": (w_kib_float,),
    "S + 1 tokens": (w_off_by_one_token,),
}
RIGHT = {
    "factored int": (r_factored,),
    "numpy int64 sum": (r_numpy_int64,),
    "whole float": (r_whole_float,),
    "int64 tensor of one value": (r_torch_one_value,),
}
UNSURE = {}
