"""Exercise 7.3: my_advantages(rewards), GRPO's normalised advantages of one group."""

import math
import statistics

import numpy as np
import torch

# The text: (r - mean) / (unbiased std + 1e-6), no NaN when every reward is equal, one float per reward in order,
# the caller's list unchanged (and not the thing returned).

# --- WRONG -----------------------------------------------------------------------------------------------------------


def w_population_std(rewards):
    # population std (ddof 0), not the unbiased one
    a = np.asarray(rewards, dtype=np.float64)
    return list((a - a.mean()) / (a.std() + 1e-6))


def w_no_epsilon(rewards):
    # no epsilon: equal rewards divide by zero
    m = statistics.fmean(rewards)
    s = statistics.stdev(rewards)
    return [(r - m) / s for r in rewards]


def w_epsilon_in_sqrt(rewards):
    # epsilon added to the variance, inside the square root
    n = len(rewards)
    m = sum(rewards) / n
    var = sum((r - m) ** 2 for r in rewards) / (n - 1)
    return [(r - m) / math.sqrt(var + 1e-6) for r in rewards]


def w_epsilon_1e8(rewards):
    # epsilon 1e-8, not 1e-6: near-0 spreads come out far larger
    n = len(rewards)
    m = sum(rewards) / n
    s = (sum((r - m) ** 2 for r in rewards) / (n - 1)) ** 0.5
    return [(r - m) / (s + 1e-8) for r in rewards]


def w_max_epsilon(rewards):
    # max(std, eps) instead of std + eps
    n = len(rewards)
    m = sum(rewards) / n
    s = (sum((r - m) ** 2 for r in rewards) / (n - 1)) ** 0.5
    return [(r - m) / max(s, 1e-6) for r in rewards]


def w_centred_only(rewards):
    # subtracts the mean, never divides by the std
    m = sum(rewards) / len(rewards)
    return [r - m for r in rewards]


def w_sorts(rewards):
    # sorts the caller's list in place: order lost and the input changed
    rewards.sort()
    n = len(rewards)
    m = sum(rewards) / n
    s = (sum((r - m) ** 2 for r in rewards) / (n - 1)) ** 0.5
    return [(r - m) / (s + 1e-6) for r in rewards]


def w_in_place(rewards):
    # writes the advantages into the caller's list and returns it
    n = len(rewards)
    m = sum(rewards) / n
    s = (sum((r - m) ** 2 for r in rewards) / (n - 1)) ** 0.5
    for i, r in enumerate(rewards):
        rewards[i] = (r - m) / (s + 1e-6)
    return rewards


def w_zero_guard_no_eps(rewards):
    # guards the equal group but drops epsilon elsewhere: near-0 spreads are where epsilon decides
    n = len(rewards)
    m = sum(rewards) / n
    s = (sum((r - m) ** 2 for r in rewards) / (n - 1)) ** 0.5
    return [0.0] * n if s == 0 else [(r - m) / s for r in rewards]


def w_mean_over_n_minus_1(rewards):
    # divides the sum by n - 1 for the mean too
    n = len(rewards)
    m = sum(rewards) / (n - 1)
    s = (sum((r - m) ** 2 for r in rewards) / (n - 1)) ** 0.5
    return [(r - m) / (s + 1e-6) for r in rewards]


def w_generator(rewards):
    # a generator, not a list, tuple, array or tensor
    n = len(rewards)
    m = sum(rewards) / n
    s = (sum((r - m) ** 2 for r in rewards) / (n - 1)) ** 0.5
    return ((r - m) / (s + 1e-6) for r in rewards)


def w_variance(rewards):
    # divides by the variance, not the std
    n = len(rewards)
    m = sum(rewards) / n
    var = sum((r - m) ** 2 for r in rewards) / (n - 1)
    return [(r - m) / (var + 1e-6) for r in rewards]


# --- RIGHT -----------------------------------------------------------------------------------------------------------


def r_numpy_ddof1(rewards):
    # numpy, ddof=1, float64
    a = np.array(rewards, dtype=np.float64)
    return (a - a.mean()) / (a.std(ddof=1) + 1e-6)


def r_statistics(rewards):
    # statistics.fmean and stdev (the sample std), a tuple
    mean = statistics.fmean(rewards)
    std = statistics.stdev(rewards)
    return tuple((r - mean) / (std + 1e-6) for r in rewards)


def r_torch64(rewards):
    # torch float64, unbiased std
    t = torch.tensor(rewards, dtype=torch.float64)
    return (t - t.mean()) / (t.std(unbiased=True) + 1e-6)


WRONG = {
    "population std": (w_population_std,),
    "no epsilon": (w_no_epsilon,),
    "epsilon inside the sqrt": (w_epsilon_in_sqrt,),
    "epsilon 1e-8": (w_epsilon_1e8,),
    "max(std, eps)": (w_max_epsilon,),
    "centred only": (w_centred_only,),
    "sorts the input": (w_sorts,),
    "in place, returns the input": (w_in_place,),
    "zero guard, no epsilon": (w_zero_guard_no_eps,),
    "mean over n - 1": (w_mean_over_n_minus_1,),
    "generator": (w_generator,),
    "divides by the variance": (w_variance,),
}

RIGHT = {
    "numpy ddof=1": (r_numpy_ddof1,),
    "statistics module": (r_statistics,),
    "torch float64": (r_torch64,),
}


def u_torch_float32(rewards):
    # verl's own arithmetic: float32 tensors (the contract says "to the precision of float32 arithmetic"), but a
    # spread near 1e-7 around a large reward is rounded away by float32 itself, which may exceed the tolerance
    t = torch.tensor(rewards, dtype=torch.float32)
    return (t - t.mean()) / (t.std() + 1e-6)


UNSURE = {
    "torch float32, as verl computes": (u_torch_float32,),
}
