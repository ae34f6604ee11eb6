"""Exercise 0.1: seeded_sample(seed, n), held-out answers."""

import random

import numpy as np
import torch


# WRONG ---------------------------------------------------------------
def w_global_seed(seed, n):
    # seeds torch's global generator: the exercise forbids touching any global stream
    torch.manual_seed(seed)
    return torch.randn(n)


def w_fork_rng(seed, n):
    # fork_rng puts the state back, but the text says "not even for a moment"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return torch.randn(n)


def w_numpy_draws(seed, n):
    # numpy's values are not torch's draws for the seed
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(n).astype(np.float32))


def w_float64(seed, n):
    # dtype must be float32
    return torch.randn(n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def w_rand_uniform(seed, n):
    # uniform draws, not standard-normal
    return torch.rand(n, generator=torch.Generator().manual_seed(seed))


def w_cached_generator(seed, n, _cache={}):
    # one generator per seed kept between calls: the second call continues the stream
    g = _cache.setdefault(seed, torch.Generator().manual_seed(seed))
    return torch.randn(n, generator=g)


def w_seed_mod_2_31(seed, n):
    # wraps the seed into 31 bits: wrong for seeds with the top bits set
    return torch.randn(n, generator=torch.Generator().manual_seed(seed % 2**31))


def w_one_at_a_time(seed, n):
    # drawing one value per call differs from a vectorised draw of n (>= 16) values
    g = torch.Generator().manual_seed(seed)
    return torch.cat([torch.randn(1, generator=g) for _ in range(n)])


def w_python_random_seeded(seed, n):
    # seeds Python's global stream as a side effect
    random.seed(seed)
    return torch.randn(n, generator=torch.Generator().manual_seed(seed))


def w_shape_n_by_1(seed, n):
    # shape (n, 1), not (n,)
    return torch.randn(n, 1, generator=torch.Generator().manual_seed(seed))


# RIGHT ---------------------------------------------------------------
def r_normal_inplace(seed, n):
    gen = torch.Generator(device="cpu")
    gen.manual_seed(seed)
    out = torch.empty(n, dtype=torch.float32)
    out.normal_(generator=gen)
    return out


def r_torch_normal(seed, n):
    g = torch.Generator()
    g.manual_seed(int(seed))
    return torch.normal(0.0, 1.0, size=(n,), generator=g)


def r_randn_tuple_size(seed, n):
    return torch.randn((n,), generator=torch.Generator().manual_seed(seed), dtype=torch.float32, requires_grad=False)


WRONG = {
    "seeds the global generator": (w_global_seed,),
    "fork_rng then global seed": (w_fork_rng,),
    "numpy's normal draws": (w_numpy_draws,),
    "float64 result": (w_float64,),
    "uniform instead of normal": (w_rand_uniform,),
    "generator cached across calls": (w_cached_generator,),
    "seed reduced mod 2**31": (w_seed_mod_2_31,),
    "draws one value at a time": (w_one_at_a_time,),
    "also seeds python's random": (w_python_random_seeded,),
    "shape (n, 1)": (w_shape_n_by_1,),
}
RIGHT = {
    "normal_ in place with a local generator": (r_normal_inplace,),
    "torch.normal(0, 1) with a local generator": (r_torch_normal,),
    "randn with a tuple size": (r_randn_tuple_size,),
}
UNSURE = {}
