"""1.1 predict_leak(seq_len, hidden, itemsize): bytes one leaking micro-batch leaves alive."""
import numpy as np
import torch

WRONG = {
    "buffer only (the PR's S*H*2B figure)": (lambda S, H, i: S * H * i,),
    "buffer + grad, forgets stored output": (lambda S, H, i: 2 * S * H * i,),
    "buffer + output, forgets the grad": (lambda S, H, i: S * H * i + S * i,),
    "itemsize hard-coded to bf16": (lambda S, H, i: 2 * S * H * 2 + S * 2,),
    "stored output counted as S*H": (lambda S, H, i: 3 * S * H * i,),
    "int32 product wraps": (lambda S, H, i: int(np.prod([2, S, H, i], dtype=np.int32) + S * i),),
    "computed in float32 then int": (lambda S, H, i: int(torch.tensor(2.0 * S * H * i + S * i, dtype=torch.float32).item()),),
    "output has S-1 tokens (shifted log-probs)": (lambda S, H, i: 2 * S * H * i + (S - 1) * i,),
    "output sized by H instead of S": (lambda S, H, i: 2 * S * H * i + H * i,),
    "grad counted in fp32 whatever the dtype": (lambda S, H, i: S * H * i + S * H * 4 + S * i,),
}


def r_factored(seq_len, hidden, itemsize):
    return seq_len * itemsize * (2 * hidden + 1)


def r_parts(seq_len, hidden, itemsize):
    parts = {"buffer": seq_len * hidden * itemsize, "grad": seq_len * hidden * itemsize, "output": seq_len * itemsize}
    return sum(parts.values())


def r_numpy_int64(seq_len, hidden, itemsize):
    return int(np.int64(seq_len) * np.int64(itemsize) * np.int64(2 * hidden + 1))


RIGHT = {"factored S*i*(2H+1)": (r_factored,), "sum of named parts": (r_parts,), "int64 numpy arithmetic": (r_numpy_int64,)}
# the exercise text says a float is refused, even a whole one; the checker's contract says a whole float passes
UNSURE = {"whole float (true division)": (lambda S, H, i: (2 * S * H * i + S * i) / 1,)}
