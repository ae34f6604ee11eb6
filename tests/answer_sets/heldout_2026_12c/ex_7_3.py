"""Exercise 7.3 answers: my_advantages(rewards) -> GRPO's (r - mean) / (unbiased std + 1e-6), one per reward."""

import math
import statistics

import numpy as np
import torch


# --- unsure ---
def u_torch_float32_as_verl(rewards):
    # verl's own arithmetic (float32 tensors). For a group of equal rewards that float32 cannot hold exactly
    # (64 x -4.7), the float32 mean differs from the values by an ulp, the std is ~1e-7, and the advantages come
    # out near 0.3, not the 0 the contract names: "equal to verl's" and "advantage 0" disagree here
    scores = torch.tensor(rewards, dtype=torch.float32)
    return (scores - scores.mean()) / (scores.std(unbiased=True) + 1e-6)


# --- wrong ---
def w_population_std(rewards):
    # std with ddof=0: verl uses the unbiased std
    arr = np.asarray(rewards, dtype=np.float64)
    return list((arr - arr.mean()) / (arr.std() + 1e-6))


def w_eps_in_sqrt(rewards):
    # epsilon added to the variance inside the square root
    n = len(rewards)
    mean = sum(rewards) / n
    var = sum((r - mean) ** 2 for r in rewards) / (n - 1)
    return [(r - mean) / math.sqrt(var + 1e-6) for r in rewards]


def w_no_eps_guarded(rewards):
    # no epsilon, zero for equal groups: for spreads near 1e-7 epsilon decides the answer
    n = len(rewards)
    mean = sum(rewards) / n
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / (n - 1))
    return [0.0 if std == 0 else (r - mean) / std for r in rewards]


def w_eps_1e8(rewards):
    # epsilon 1e-8: the exercise says 1e-6
    t = torch.tensor(rewards, dtype=torch.float32)
    return ((t - t.mean()) / (t.std() + 1e-8)).tolist()


def w_in_place(rewards):
    # writes the advantages into the caller's list and returns it
    n = len(rewards)
    mean = sum(rewards) / n
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / (n - 1))
    for i, r in enumerate(rewards):
        rewards[i] = (r - mean) / (std + 1e-6)
    return rewards


def w_range_scaling(rewards):
    # divides by the range, not the std
    lo, hi = min(rewards), max(rewards)
    mean = sum(rewards) / len(rewards)
    return [(r - mean) / (hi - lo + 1e-6) for r in rewards]


def w_no_centering(rewards):
    # forgets to subtract the mean
    std = statistics.stdev(rewards)
    return [r / (std + 1e-6) for r in rewards]


def w_mean_only(rewards):
    # Dr. GRPO style: centred, not divided by the std
    mean = sum(rewards) / len(rewards)
    return [r - mean for r in rewards]


def w_float16(rewards):
    # float16 arithmetic: far coarser than float32
    t = torch.tensor(rewards, dtype=torch.float16)
    return ((t - t.mean()) / (t.std() + 1e-6)).float().tolist()


def w_sorted(rewards):
    # sorted, not in the order of the rewards
    t = torch.tensor(rewards, dtype=torch.float32)
    return sorted(((t - t.mean()) / (t.std() + 1e-6)).tolist())


def w_std_of_group_mean_eps_first(rewards):
    # divides then adds epsilon: (r - mean) / std + 1e-6, NaN for equal groups
    arr = np.asarray(rewards, dtype=np.float64)
    std = arr.std(ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (arr - arr.mean()) / std + 1e-6


# --- right ---
def r_torch_float64(rewards):
    scores = torch.tensor(rewards, dtype=torch.float64)
    return (scores - scores.mean()) / (scores.std(unbiased=True) + 1e-6)


def r_numpy_ddof1(rewards):
    arr = np.array(rewards, dtype=np.float64)
    return (arr - arr.mean()) / (arr.std(ddof=1) + 1e-6)


def r_statistics(rewards):
    mean = statistics.fmean(rewards)
    spread = statistics.stdev(rewards)
    return tuple((value - mean) / (spread + 1e-6) for value in rewards)


def r_welford(rewards):
    # one-pass Welford mean and variance
    mean, m2 = 0.0, 0.0
    for count, value in enumerate(rewards, start=1):
        delta = value - mean
        mean += delta / count
        m2 += delta * (value - mean)
    std = math.sqrt(m2 / (len(rewards) - 1))
    return [(value - mean) / (std + 1e-6) for value in rewards]


WRONG = {
    "population std": (w_population_std,),
    "eps inside sqrt": (w_eps_in_sqrt,),
    "no eps, guarded": (w_no_eps_guarded,),
    "eps 1e-8": (w_eps_1e8,),
    "in place": (w_in_place,),
    "range scaling": (w_range_scaling,),
    "no centring": (w_no_centering,),
    "mean only": (w_mean_only,),
    "float16": (w_float16,),
    "sorted": (w_sorted,),
    "eps after division": (w_std_of_group_mean_eps_first,),
}
RIGHT = {
    "torch float64 tensor": (r_torch_float64,),
    "numpy ddof=1": (r_numpy_ddof1,),
    "statistics tuple": (r_statistics,),
    "Welford": (r_welford,),
}
UNSURE = {
    "torch float32, verl's arithmetic": (u_torch_float32_as_verl,),
}
