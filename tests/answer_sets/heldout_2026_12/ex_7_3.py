"""7.3 my_advantages(rewards): GRPO's (r - mean) / (unbiased std + 1e-6)."""
import math
import statistics

import numpy as np
import torch


def _mean(x):
    return sum(x) / len(x)


def _ustd(x):
    m = _mean(x)
    return math.sqrt(sum((v - m) ** 2 for v in x) / (len(x) - 1))


def w_population_std(rewards):
    return list((np.asarray(rewards) - np.mean(rewards)) / (np.std(rewards) + 1e-6))


def w_no_epsilon(rewards):
    m, s = _mean(rewards), _ustd(rewards)
    return [(r - m) / s for r in rewards]


def w_zero_guard_no_eps(rewards):
    m, s = _mean(rewards), _ustd(rewards)
    if s == 0:
        return [0.0] * len(rewards)
    return [(r - m) / s for r in rewards]


def w_mean_only(rewards):
    m = _mean(rewards)
    return [r - m for r in rewards]


def w_in_place(rewards):
    m, s = _mean(rewards), _ustd(rewards)
    for i, r in enumerate(rewards):
        rewards[i] = (r - m) / (s + 1e-6)
    return rewards


def w_eps_1e8(rewards):
    m, s = _mean(rewards), _ustd(rewards)
    return [(r - m) / (s + 1e-8) for r in rewards]


def w_precedence_typo(rewards):
    n = len(rewards)
    m = sum(rewards) / n
    std = (sum((r - m) ** 2 for r in rewards) / n - 1) ** 0.5
    return [(r - m) / (std + 1e-6) for r in rewards]


def w_min_max(rewards):
    m = _mean(rewards)
    return [(r - m) / (max(rewards) - min(rewards) + 1e-6) for r in rewards]


def w_sorted_output(rewards):
    m, s = _mean(rewards), _ustd(rewards)
    return sorted((r - m) / (s + 1e-6) for r in rewards)


def w_variance_not_std(rewards):
    m = _mean(rewards)
    var = sum((r - m) ** 2 for r in rewards) / (len(rewards) - 1)
    return [(r - m) / (var + 1e-6) for r in rewards]


WRONG = {
    "population std (np.std)": (w_population_std,),
    "no epsilon (NaN / ZeroDivisionError on equal rewards)": (w_no_epsilon,),
    "zero-std special case, no epsilon otherwise": (w_zero_guard_no_eps,),
    "mean only, no std": (w_mean_only,),
    "normalises the caller's list in place": (w_in_place,),
    "epsilon 1e-8": (w_eps_1e8,),
    "'/ n - 1' precedence typo": (w_precedence_typo,),
    "divides by max - min": (w_min_max,),
    "returns advantages sorted": (w_sorted_output,),
    "divides by the variance": (w_variance_not_std,),
}


def r_torch(rewards):
    t = torch.tensor(rewards, dtype=torch.float64)
    return ((t - t.mean()) / (t.std() + 1e-6)).tolist()


def r_statistics(rewards):
    m, s = statistics.fmean(rewards), statistics.stdev(rewards)
    return [(r - m) / (s + 1e-6) for r in rewards]


def r_numpy(rewards):
    x = np.array(rewards, dtype=np.float64)
    return (x - x.mean()) / (x.std(ddof=1) + 1e-6)


RIGHT = {"torch float64, unbiased std": (r_torch,), "statistics.stdev": (r_statistics,), "numpy ddof=1": (r_numpy,)}
UNSURE = {
    "epsilon inside the sqrt": (lambda rw: [(r - _mean(rw)) / math.sqrt(_ustd(rw) ** 2 + 1e-6) for r in rw],),
    "torch float32 (verl's dtype)": (lambda rw: ((lambda t: (t - t.mean()) / (t.std() + 1e-6))(torch.tensor(rw, dtype=torch.float32))).tolist(),),
}
