"""Exercise 1.1: predict_leak(seq_len, hidden, itemsize), bytes one leaking micro-batch leaves on the last stage."""

import numpy as np
import torch

# The text (and its after-you-try note): three parts stay per micro-batch: the receive buffer (S x H), the gradient
# backward wrote into its .grad (S x H), and the stored per-token output (S values), all of the dtype's itemsize.

# --- WRONG -----------------------------------------------------------------------------------------------------------


def w_buffer_only(seq_len, hidden, itemsize):
    # only the receive buffer: forgets its .grad and the stored output
    return seq_len * hidden * itemsize


def w_no_output(seq_len, hidden, itemsize):
    # buffer and its grad, forgets the stored per-token log-probs
    return 2 * seq_len * hidden * itemsize


def w_no_grad(seq_len, hidden, itemsize):
    # buffer and output, forgets the gradient backward wrote into the buffer
    return seq_len * hidden * itemsize + seq_len * itemsize


def w_output_per_hidden(seq_len, hidden, itemsize):
    # stored output counted as S x H activations, not S per-token values
    return 3 * seq_len * hidden * itemsize


def w_elements_not_bytes(seq_len, hidden, itemsize):
    # counts elements: forgets the itemsize
    return 2 * seq_len * hidden + seq_len


def w_bits(seq_len, hidden, itemsize):
    # bits, not bytes
    return 8 * (2 * seq_len * hidden * itemsize + seq_len * itemsize)


def w_int32_wrap(seq_len, hidden, itemsize):
    # numpy int32 arithmetic wraps past 2**31 at real sizes (S = 32768, H = 16384)
    s, h, i = np.int32(seq_len), np.int32(hidden), np.int32(itemsize)
    with np.errstate(over="ignore"):
        return np.int32(2) * s * h * i + s * i


def w_float32(seq_len, hidden, itemsize):
    # float32 rounds counts above 2**24
    return np.float32(2 * seq_len * hidden * itemsize + seq_len * itemsize)


def w_output_fp32(seq_len, hidden, itemsize):
    # assumes log-probs are always kept in float32 (4 bytes), whatever the dtype
    return 2 * seq_len * hidden * itemsize + seq_len * 4


def w_kib(seq_len, hidden, itemsize):
    # KiB, not bytes (a fraction for small sizes)
    return (2 * seq_len * hidden * itemsize + seq_len * itemsize) / 1024


def w_extra_token(seq_len, hidden, itemsize):
    # off by one: S + 1 positions (a shifted label)
    return 2 * (seq_len + 1) * hidden * itemsize + (seq_len + 1) * itemsize


# --- RIGHT -----------------------------------------------------------------------------------------------------------


def r_factored(seq_len, hidden, itemsize):
    # S values per row of width 2H + 1
    return seq_len * itemsize * (2 * hidden + 1)


def r_sum_of_parts(seq_len, hidden, itemsize):
    # the three parts, summed in numpy int64
    parts = np.array([seq_len * hidden, seq_len * hidden, seq_len], dtype=np.int64) * itemsize
    return parts.sum()


def r_tensor_int64(seq_len, hidden, itemsize):
    # a one-value int64 tensor holding the count
    s, h, i = (torch.tensor(v, dtype=torch.int64) for v in (seq_len, hidden, itemsize))
    return s * i * (2 * h + 1)


def r_whole_float(seq_len, hidden, itemsize):
    # a float holding the whole value (exact: below 2**53)
    return float(seq_len * (2 * hidden + 1)) * float(itemsize)


WRONG = {
    "receive buffer only": (w_buffer_only,),
    "no stored output": (w_no_output,),
    "no gradient": (w_no_grad,),
    "output counted as S x H": (w_output_per_hidden,),
    "elements, not bytes": (w_elements_not_bytes,),
    "bits": (w_bits,),
    "int32 arithmetic wraps": (w_int32_wrap,),
    "float32 rounding": (w_float32,),
    "output always float32": (w_output_fp32,),
    "KiB": (w_kib,),
    "S + 1 positions": (w_extra_token,),
}

RIGHT = {
    "S * itemsize * (2H + 1)": (r_factored,),
    "numpy int64 sum of parts": (r_sum_of_parts,),
    "int64 tensor": (r_tensor_int64,),
    "whole float": (r_whole_float,),
}

UNSURE = {}
