"""Exercise 0.1: seeded_sample(seed, n), n standard-normal draws from `seed`, no global stream touched."""

import random

import numpy as np
import torch

# --- WRONG -----------------------------------------------------------------------------------------------------------


def w_global_seed(seed, n):
    # seeds torch's global generator: the text forbids seeding any global stream
    torch.manual_seed(seed)
    return torch.randn(n)


def w_fork_rng(seed, n):
    # fork_rng puts the state back, but the text says "not even for a moment"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return torch.randn(n)


def w_save_restore_state(seed, n):
    # get/set_rng_state around a global seed: still seeds the global stream for a moment
    state = torch.get_rng_state()
    torch.manual_seed(seed)
    out = torch.randn(n)
    torch.set_rng_state(state)
    return out


def w_float64(seed, n):
    # wrong dtype: the text asks for float32
    return torch.randn(n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def w_uniform(seed, n):
    # uniform draws (rand), not standard-normal ones
    return torch.rand(n, generator=torch.Generator().manual_seed(seed))


def w_row_shape(seed, n):
    # shape (1, n), not (n,)
    return torch.randn(1, n, generator=torch.Generator().manual_seed(seed))


def w_numpy_stream(seed, n):
    # numpy's normal draws are not torch's draws from `seed`
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(n).astype(np.float32))


def w_one_at_a_time(seed, n):
    # drawing one value per call takes torch's scalar path: other values than one randn(n)
    g = torch.Generator().manual_seed(seed)
    return torch.cat([torch.randn(1, generator=g) for _ in range(n)])


_shared_generators = {}


def w_generator_cache(seed, n):
    # keeps one generator per seed and never reseeds it: a second call with the same seed gives other values
    g = _shared_generators.setdefault(seed, torch.Generator().manual_seed(seed))
    return torch.randn(n, generator=g)


_result_cache = {}


def w_cached_tensor(seed, n):
    # hands the same tensor to every caller: a caller changing a result changes later calls
    key = (seed, n)
    if key not in _result_cache:
        _result_cache[key] = torch.randn(n, generator=torch.Generator().manual_seed(seed))
    return _result_cache[key]


def w_seed_top_bit_dropped(seed, n):
    # folds the seed to 31 bits: seeds with the top bit set (the text allows up to 2**32 - 1) give other draws
    return torch.randn(n, generator=torch.Generator().manual_seed(seed % 2**31))


def w_skip_first(seed, n):
    # off by one: draws n + 1 and drops the first value
    return torch.randn(n + 1, generator=torch.Generator().manual_seed(seed))[1:]


def w_python_random_seeded(seed, n):
    # reseeds Python's global `random` stream (to "be safe"): a global stream changed
    random.seed(seed)
    return torch.randn(n, generator=torch.Generator().manual_seed(seed))


def w_requires_grad(seed, n):
    # the draws are data, yet returned requiring grad
    return torch.randn(n, generator=torch.Generator().manual_seed(seed), requires_grad=True)


# --- RIGHT -----------------------------------------------------------------------------------------------------------


def r_normal_inplace(seed, n):
    # normal_ on a fresh float32 buffer draws the same values as randn
    g = torch.Generator(device="cpu")
    g.manual_seed(seed)
    return torch.empty(n, dtype=torch.float32).normal_(generator=g)


def r_torch_normal(seed, n):
    # torch.normal(mean 0, std 1) with a private generator
    return torch.normal(0.0, 1.0, size=(n,), generator=torch.Generator().manual_seed(seed), dtype=torch.float32)


def r_fresh_each_call_explicit(seed, n):
    # a fresh generator per call, explicit tuple size and dtype
    generator = torch.Generator("cpu")
    generator.manual_seed(int(seed))
    values = torch.randn((int(n),), generator=generator, dtype=torch.float32)
    return values.clone()


def r_flatten_row(seed, n):
    # randn over (1, n) has the same n values in the same order; flattened back to (n,)
    return torch.randn(1, n, generator=torch.Generator().manual_seed(seed)).reshape(n)


WRONG = {
    "seeds the global generator": (w_global_seed,),
    "fork_rng around a global seed": (w_fork_rng,),
    "saves and restores the global state": (w_save_restore_state,),
    "float64 draws": (w_float64,),
    "uniform instead of normal": (w_uniform,),
    "shape (1, n)": (w_row_shape,),
    "numpy's normal stream": (w_numpy_stream,),
    "one draw per call (scalar path)": (w_one_at_a_time,),
    "generator cached per seed, not reseeded": (w_generator_cache,),
    "same tensor object returned every time": (w_cached_tensor,),
    "seed folded to 31 bits": (w_seed_top_bit_dropped,),
    "skips the first draw": (w_skip_first,),
    "reseeds Python's random": (w_python_random_seeded,),
    "returned requiring grad": (w_requires_grad,),
}

RIGHT = {
    "normal_ on an empty buffer": (r_normal_inplace,),
    "torch.normal(0, 1, size)": (r_torch_normal,),
    "fresh generator, explicit dtype, cloned": (r_fresh_each_call_explicit,),
    "randn(1, n) reshaped": (r_flatten_row,),
}

UNSURE = {}
