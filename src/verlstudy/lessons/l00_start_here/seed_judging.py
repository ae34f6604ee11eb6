"""How exercise 0.1 is judged: the global random streams watched around each call, and a wrong result named.

`GlobalStreamWatch` wraps the learner's `seeded_sample` and records, per call, every way it touches a random
stream other than its own: torch's global seeding functions (the CPU's and every accelerator's, called
directly or through `torch.manual_seed`), a random op that draws from the global CPU stream (even one put back
afterwards, as `fork_rng` or a saved state does), the global CPU state or seed left changed, Python's `random`
and numpy's global streams left changed. The checker's own restore puts every stream back after each call,
so a wrong answer never changes what the learner's later cells draw.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from verlstudy.kit import i18n

# torch's functions that seed a global generator, by the module that holds them (looked up when a call runs)
_SEEDING = {
    "torch": ("manual_seed", "seed"),
    "torch.random": ("manual_seed", "seed"),
    "torch.cuda": ("manual_seed", "manual_seed_all", "seed", "seed_all"),
    "torch.cuda.random": ("manual_seed", "manual_seed_all", "seed", "seed_all"),
    "torch.mps": ("manual_seed", "seed"),
    "torch.xpu": ("manual_seed", "manual_seed_all", "seed", "seed_all"),
}

SEEDED = "seeded"  # a global generator was seeded (even if its state was put back)
MOVED = "moved"  # the global CPU stream (or its seed) was left changed
DREW = "drew"  # a random op drew from the global CPU stream (even if its state was put back)
PYTHON = "python"  # Python's random module's global stream was left changed
NUMPY = "numpy"  # numpy's global stream was left changed


class _GlobalDraws(TorchDispatchMode):
    """Notes a random op that draws from the global CPU stream: no generator given, or the global one."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # otherwise the first op imports torch._dynamo: seconds per process

    def __init__(self) -> None:
        super().__init__()
        self.drew = False

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if torch.Tag.nondeterministic_seeded not in func.tags:
            return func(*args, **kwargs)
        before = torch.default_generator.get_state()
        out = func(*args, **kwargs)
        if kwargs.get("generator") is None or not torch.equal(before, torch.default_generator.get_state()):
            self.drew = True
        return out


def _modules() -> Iterator[Any]:
    import importlib

    for name in _SEEDING:
        try:
            yield name, importlib.import_module(name)
        except Exception:  # a backend this build of torch lacks
            continue


@contextmanager
def _seeding_recorded(calls: list[str]) -> Iterator[None]:
    """Inside the block torch's global seeding functions record their call; only the CPU's is really seeded.

    An accelerator's generator is never touched (CUDA would queue the seed until it starts, for the rest of
    the learner's session); the CPU's is seeded so that the learner's code draws what it would draw.
    """
    saved: list[tuple[Any, str, Any]] = []

    def recorder(qualified: str) -> Callable[..., Any]:
        def seed(*args: Any, **kwargs: Any) -> Any:
            calls.append(qualified)
            if qualified in ("torch.manual_seed", "torch.random.manual_seed"):
                return torch.default_generator.manual_seed(*args, **kwargs)
            if qualified in ("torch.seed", "torch.random.seed"):
                return torch.default_generator.seed()
            return None

        return seed

    for name, module in _modules():
        for attr in _SEEDING[name]:
            if hasattr(module, attr):
                saved.append((module, attr, getattr(module, attr)))
                setattr(module, attr, recorder(f"{name}.{attr}"))
    try:
        yield
    finally:
        for module, attr, original in reversed(saved):
            setattr(module, attr, original)


def _lazy_cuda_seeds() -> list[Any]:
    """The seeds CUDA has queued until it starts (torch's private tracker; empty where it has none)."""
    tracker = getattr(torch.cuda, "_lazy_seed_tracker", None)
    return list(getattr(tracker, "call_order", []) or [])


class GlobalStreamWatch:
    """The learner's function, watched: `effects[i]` lists what call i did to the global streams."""

    def __init__(self, fn: Callable[[int, int], Any]) -> None:
        self.fn = fn
        self.calls: list[tuple[int, int]] = []
        self.effects: list[list[str]] = []
        self.__name__ = "seeded_sample"

    def __call__(self, seed: int, n: int) -> Any:
        cpu, py, npy = torch.get_rng_state(), random.getstate(), np.random.get_state()
        first_seed, lazy = torch.initial_seed(), _lazy_cuda_seeds()
        seeded: list[str] = []
        draws = _GlobalDraws()
        try:
            with _seeding_recorded(seeded), draws:
                return self.fn(seed, n)
        finally:
            found = [SEEDED] * bool(seeded or _lazy_cuda_seeds() != lazy)
            if not torch.equal(cpu, torch.get_rng_state()) or torch.initial_seed() != first_seed:
                found.append(MOVED)
            found += [DREW] * draws.drew
            found += [PYTHON] * (random.getstate() != py)
            found += [NUMPY] * (not _same_numpy_state(npy, np.random.get_state()))
            self.calls.append((seed, n))
            self.effects.append(found)
            # the checker itself leaves every stream as it was (a queued CUDA seed cannot be taken back)
            torch.set_rng_state(cpu)
            random.setstate(py)
            np.random.set_state(npy)

    def first_effect(self) -> tuple[tuple[int, int], str] | None:
        """The first call that touched a global stream, and the worst thing it did there."""
        for call, found in zip(self.calls, self.effects, strict=True):
            for effect in (MOVED, SEEDED, DREW, PYTHON, NUMPY):
                if effect in found:
                    return call, effect
        return None

    def effects_of(self, seed: int, n: int) -> list[str]:
        """What the last call with these arguments did to the global streams."""
        for call, found in zip(reversed(self.calls), reversed(self.effects), strict=True):
            if call == (seed, n):
                return found
        return []


def _same_numpy_state(a: Any, b: Any) -> bool:
    return a[0] == b[0] and bool(np.array_equal(a[1], b[1])) and tuple(a[2:]) == tuple(b[2:])


# one whole sentence per effect, for translation (kit/locale/zh_CN/l00.po)
EFFECT_MESSAGES = {
    SEEDED: (
        "seeded_sample({seed}, {n}) gives the right numbers but seeds one of torch's global generators, even if the "
        "state is put back afterwards: torch.manual_seed seeds the CPU's and every accelerator's generator (CUDA's "
        "is queued until CUDA starts, and restoring the CPU state or forking the devices torch knows of here does "
        "not undo it), and while the seed is in place any other draw in the process gets your stream. Draw from a "
        "generator that belongs to this call, and seed nothing global"
    ),
    MOVED: (
        "seeded_sample({seed}, {n}) gives the right numbers but moved the global RNG (seeded it, or drew from it, "
        "and left it so): sampling here changes what every later cell draws"
    ),
    DREW: (
        "seeded_sample({seed}, {n}) gives the right numbers but draws from the global stream every cell shares "
        "(even if its state is put back afterwards): while it is in use, nothing else may draw from it. Draw from "
        "a generator that belongs to this call"
    ),
    PYTHON: (
        "seeded_sample({seed}, {n}) gives the right numbers but moved Python's random module's global stream, "
        "which the exercise leaves alone"
    ),
    NUMPY: (
        "seeded_sample({seed}, {n}) gives the right numbers but moved numpy's global random stream, which the "
        "exercise leaves alone"
    ),
}


def effect_message(call: tuple[int, int], effect: str) -> str:
    """One line for the learner: the call, what it did to a global stream, and why that matters."""
    seed, n = call
    return i18n.pick(EFFECT_MESSAGES[effect], seed=seed, n=n)
