"""Exercise 1.1: predict_leak(seq_len, hidden, itemsize), held-out answers.

Per the notebook: the receive buffer (S x H), its .grad (S x H) and the stored per-token output (S) stay alive.
"""

import numpy as np
import torch


# WRONG ---------------------------------------------------------------
def w_no_grad(s, h, b):
    # forgets the .grad backward wrote into the receive buffer
    return s * h * b + s * b


def w_no_per_token(s, h, b):
    # forgets the stored per-token output
    return 2 * s * h * b


def w_per_token_fp32(s, h, b):
    # assumes the per-token output is always float32 (4 bytes), not the dtype's itemsize
    return 2 * s * h * b + s * 4


def w_per_token_is_hidden(s, h, b):
    # stores the output as S x H instead of one value per token
    return 3 * s * h * b


def w_int32_wrap(s, h, b):
    # numpy int32 arithmetic wraps past 2**31 for long sequences
    return int(np.int32(2) * np.int32(s) * np.int32(h) * np.int32(b) + np.int32(s) * np.int32(b))


def w_float32(s, h, b):
    # float32 rounds counts above 2**24
    return np.float32(2 * s * h * b + s * b)


def w_mib(s, h, b):
    # reports MiB, not bytes
    return (2 * s * h * b + s * b) / 2**20


def w_elements(s, h, b):
    # counts elements, not bytes
    return 2 * s * h + s


def w_off_by_one_token(s, h, b):
    # shifts the per-token output by one (labels are shifted, the output is not)
    return 2 * s * h * b + (s - 1) * b


# RIGHT ---------------------------------------------------------------
def r_factored(seq_len, hidden, itemsize):
    return seq_len * itemsize * (2 * hidden + 1)


def r_sum_of_parts(seq_len, hidden, itemsize):
    parts = {"recv buffer": seq_len * hidden, "its grad": seq_len * hidden, "per-token output": seq_len}
    return sum(parts.values()) * itemsize


def r_numpy_int64(seq_len, hidden, itemsize):
    return np.int64(seq_len) * (2 * np.int64(hidden) + 1) * np.int64(itemsize)


def r_torch_scalar(seq_len, hidden, itemsize):
    return torch.tensor(seq_len, dtype=torch.int64) * (2 * hidden + 1) * itemsize


WRONG = {
    "no .grad": (w_no_grad,),
    "no per-token output": (w_no_per_token,),
    "per-token output always 4 bytes": (w_per_token_fp32,),
    "per-token output S x H": (w_per_token_is_hidden,),
    "int32 wraps": (w_int32_wrap,),
    "float32 rounds": (w_float32,),
    "MiB instead of bytes": (w_mib,),
    "elements instead of bytes": (w_elements,),
    "S - 1 per-token values": (w_off_by_one_token,),
}
RIGHT = {
    "factored S*b*(2H+1)": (r_factored,),
    "dict of parts summed": (r_sum_of_parts,),
    "numpy int64": (r_numpy_int64,),
    "one-value int64 tensor": (r_torch_scalar,),
}


def u_float64(seq_len, hidden, itemsize):
    return float(seq_len * hidden * 2 * itemsize + seq_len * itemsize)


# the docstring allows a whole float; the notebook text says "a whole number": kept apart
UNSURE = {"whole float": (u_float64,)}
