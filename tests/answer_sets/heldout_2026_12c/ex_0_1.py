"""Exercise 0.1 answers: seeded_sample(seed, n)."""

import random

import numpy as np
import torch


# --- wrong ---
def w_global_seed(seed, n):
    # seeds torch's global generator: the exercise forbids touching any global stream
    torch.manual_seed(seed)
    return torch.randn(n)


def w_fork_rng(seed, n):
    # fork_rng puts the state back, but still seeds the global stream "for a moment": forbidden
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return torch.randn(n)


def w_save_restore_state(seed, n):
    # get/set_rng_state around a global seed: still seeds the global stream
    state = torch.get_rng_state()
    torch.manual_seed(seed)
    out = torch.randn(n)
    torch.set_rng_state(state)
    return out


def w_numpy_draws(seed, n):
    # numpy's draws are not torch's draws from that seed
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(n).astype(np.float32))


def w_float64(seed, n):
    # dtype float64: the exercise asks for float32
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=g, dtype=torch.float64)


def w_off_by_one(seed, n):
    # one draw too many
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n + 1, generator=g)


_shared = torch.Generator()


def w_shared_generator_unseeded_later(seed, n):
    # a module-level generator seeded once: later calls continue the stream, not the same draws for the same seed
    if not getattr(w_shared_generator_unseeded_later, "done", False):
        _shared.manual_seed(seed)
        w_shared_generator_unseeded_later.done = True
    return torch.randn(n, generator=_shared)


def w_uniform(seed, n):
    # uniform draws, not standard normal
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, generator=g)


def w_python_random(seed, n):
    # Python's global random stream is seeded (and these are not torch's values anyway)
    random.seed(seed)
    return torch.tensor([random.gauss(0, 1) for _ in range(n)], dtype=torch.float32)


def w_seed_mod_2_31(seed, n):
    # wraps the seed into 31 bits: seeds with the top bit set give other draws
    g = torch.Generator().manual_seed(seed % 2**31)
    return torch.randn(n, generator=g)


_cache = {}


def w_cached_same_object(seed, n):
    # returns the same tensor object again: a caller changing a result changes later calls
    key = (seed, n)
    if key not in _cache:
        _cache[key] = torch.randn(n, generator=torch.Generator().manual_seed(seed))
    return _cache[key]


def w_requires_grad(seed, n):
    # the result requires grad: the contract says it must not
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=g).requires_grad_()


def w_shape_column(seed, n):
    # shape (n, 1), not (n,)
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 1, generator=g)


# --- right ---
def r_normal_inplace(seed, n):
    g = torch.Generator(device="cpu")
    g.manual_seed(seed)
    return torch.empty(n, dtype=torch.float32).normal_(generator=g)


def r_torch_normal(seed, n):
    gen = torch.Generator().manual_seed(int(seed))
    return torch.normal(torch.zeros(n), torch.ones(n), generator=gen)


def r_normal_mean_std(seed, n):
    gen = torch.Generator()
    gen.manual_seed(seed)
    return torch.normal(0.0, 1.0, size=(n,), generator=gen)


def r_randn_tuple_size(seed, n):
    return torch.randn((n,), generator=torch.Generator().manual_seed(seed), dtype=torch.float32).clone()


# --- unsure ---
def u_set_state_on_private_generator(seed, n):
    # seeds a private generator via set_state of another private one: no global stream touched, but roundabout;
    # right by the text, unsure only because the checker may spy on set_state calls
    src = torch.Generator().manual_seed(seed)
    g = torch.Generator()
    g.set_state(src.get_state())
    return torch.randn(n, generator=g)


WRONG = {
    "global manual_seed": (w_global_seed,),
    "fork_rng then global seed": (w_fork_rng,),
    "save/restore global state": (w_save_restore_state,),
    "numpy draws": (w_numpy_draws,),
    "float64": (w_float64,),
    "n + 1 draws": (w_off_by_one,),
    "module generator seeded once": (w_shared_generator_unseeded_later,),
    "uniform not normal": (w_uniform,),
    "python random global": (w_python_random,),
    "seed wrapped to 31 bits": (w_seed_mod_2_31,),
    "cached result object returned": (w_cached_same_object,),
    "requires grad": (w_requires_grad,),
    "shape (n, 1)": (w_shape_column,),
}
RIGHT = {
    "normal_ in place on empty": (r_normal_inplace,),
    "torch.normal with tensors": (r_torch_normal,),
    "torch.normal mean std size": (r_normal_mean_std,),
    "randn tuple size, clone": (r_randn_tuple_size,),
}
UNSURE = {
    "state copied between private generators": (u_set_state_on_private_generator,),
}
