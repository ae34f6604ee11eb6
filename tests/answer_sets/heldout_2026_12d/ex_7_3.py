"""Exercise 7.3: my_advantages(rewards), held-out answers: (r - mean) / (unbiased std + 1e-6)."""

import math
import statistics

import numpy as np
import torch


# WRONG ---------------------------------------------------------------
def w_population_std(rewards):
    # population std (divides by n): GRPO uses the unbiased one
    return list((np.array(rewards) - np.mean(rewards)) / (np.std(rewards) + 1e-6))


def w_no_epsilon(rewards):
    # no epsilon: equal rewards divide by zero
    return [(r - statistics.mean(rewards)) / statistics.stdev(rewards) for r in rewards]


def w_zero_guard_no_eps(rewards):
    # guards the zero std but drops epsilon: spreads near 1e-7 come out far too large
    std = statistics.stdev(rewards)
    mean = statistics.fmean(rewards)
    return [0.0 if std == 0 else (r - mean) / std for r in rewards]


def w_eps_in_sqrt(rewards):
    # epsilon under the square root
    m = sum(rewards) / len(rewards)
    var = sum((r - m) ** 2 for r in rewards) / (len(rewards) - 1)
    return [(r - m) / math.sqrt(var + 1e-6) for r in rewards]


def w_eps_1e8(rewards):
    # epsilon 1e-8, not verl's 1e-6
    m = sum(rewards) / len(rewards)
    s = (sum((r - m) ** 2 for r in rewards) / (len(rewards) - 1)) ** 0.5
    return [(r - m) / (s + 1e-8) for r in rewards]


def w_mean_only(rewards):
    # centres without scaling (Dr. GRPO's variant, not verl's GRPO default)
    m = sum(rewards) / len(rewards)
    return [r - m for r in rewards]


def w_in_place(rewards):
    # writes the advantages into the caller's list and returns it
    m = sum(rewards) / len(rewards)
    s = (sum((r - m) ** 2 for r in rewards) / (len(rewards) - 1)) ** 0.5
    for i, r in enumerate(rewards):
        rewards[i] = (r - m) / (s + 1e-6)
    return rewards


def w_min_max(rewards):
    # min-max scaling instead of the std
    lo, hi = min(rewards), max(rewards)
    m = sum(rewards) / len(rewards)
    return [(r - m) / (hi - lo + 1e-6) for r in rewards]


def w_sorted(rewards):
    # returns the advantages sorted, not in the rewards' order
    m = sum(rewards) / len(rewards)
    s = (sum((r - m) ** 2 for r in rewards) / (len(rewards) - 1)) ** 0.5
    return sorted((r - m) / (s + 1e-6) for r in rewards)


def w_float16(rewards):
    # float16 arithmetic: well off float32 precision
    t = torch.tensor(rewards, dtype=torch.float16)
    return (t - t.mean()) / (t.std() + 1e-6)


# RIGHT ---------------------------------------------------------------
def r_torch_float32(rewards):
    scores = torch.tensor(rewards, dtype=torch.float32)
    return (scores - scores.mean()) / (scores.std(unbiased=True) + 1e-6)


def r_numpy_ddof1(rewards):
    arr = np.asarray(rewards, dtype=np.float64)
    return (arr - arr.mean()) / (arr.std(ddof=1) + 1e-6)


def r_statistics_tuple(rewards):
    mean = statistics.fmean(rewards)
    spread = statistics.stdev(rewards)
    return tuple((value - mean) / (spread + 1e-6) for value in rewards)


WRONG = {
    "population std": (w_population_std,),
    "no epsilon": (w_no_epsilon,),
    "zero guard without epsilon": (w_zero_guard_no_eps,),
    "epsilon under the sqrt": (w_eps_in_sqrt,),
    "epsilon 1e-8": (w_eps_1e8,),
    "no scaling": (w_mean_only,),
    "written into the caller's list": (w_in_place,),
    "min-max scaling": (w_min_max,),
    "sorted": (w_sorted,),
    "float16": (w_float16,),
}
RIGHT = {
    "torch float32": (r_torch_float32,),
    "numpy ddof=1": (r_numpy_ddof1,),
    "statistics module, tuple": (r_statistics_tuple,),
}
UNSURE = {}
