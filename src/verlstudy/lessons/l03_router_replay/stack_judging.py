"""Exercise 3.1's domain, reference and mistake names (serves checks.py only).

The inputs are what a walk over a real MoE model's routers meets: 1 to 61 MoE layers (DeepSeek-V3 and Kimi-K2 have
61 layers, the first ones dense), numbered as Megatron numbers them (from 1, with gaps where a dense layer sits, one
pipeline stage's range or a virtual-pipeline rank's chunks, past 9 and past 60), met in a shuffled, reversed or
interleaved order; routes of 1 to 5 tokens and top-1 to top-8 over 8 to 512 experts (384 as Kimi-K2, so expert ids
above 255 in every map), as torch.topk gives them (int64) or already narrowed (int32, int16), sometimes a strided
view. Duplicates are drawn the same way, anywhere in the list.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import torch
from hypothesis import strategies as st

from verlstudy.kit import i18n
from verlstudy.kit.exercises import ExerciseFailure
from verlstudy.kit.properties import Case
from verlstudy.lessons.l03_router_replay.moe import ROUTE_DTYPE

EXPERT_COUNTS = (8, 64, 128, 160, 256, 257, 384, 512)  # Mixtral .. DeepSeek-V3 (256), Kimi-K2 (384), Qwen3-Next (512)

Pairs = list[tuple[int, torch.Tensor]]


def _routes(
    rng: random.Random, tokens: int, topk: int, experts: int, dtype: torch.dtype, strided: bool
) -> torch.Tensor:
    """One router's (tokens, topk) expert ids; with more than 256 experts one id is 256 or above."""
    ids = [[rng.randrange(experts) for _ in range(topk)] for _ in range(tokens)]
    if experts > 256:
        ids[rng.randrange(tokens)][rng.randrange(topk)] = rng.randrange(256, experts)
    routes = torch.tensor(ids, dtype=dtype)
    return routes.t().contiguous().t() if strided else routes  # same values, column-major memory


def _layer_numbers(rng: random.Random, count: int) -> list[int]:
    """`count` distinct Megatron layer numbers of one of the layouts a walk meets."""
    layout = rng.choice(("model", "stage", "vpp", "sparse"))
    if layout == "model":  # every MoE layer of a model whose first layers are dense
        start = rng.choice((1, 2, 4))
        numbers = list(range(start, start + count))
    elif layout == "stage":  # one pipeline stage: a range that starts late
        start = rng.randrange(1, 40)
        numbers = list(range(start, start + count))
    elif layout == "vpp":  # one rank's virtual chunks: two ranges apart
        first = count // 2
        gap = rng.randrange(2, 30)
        numbers = [*range(1, 1 + first), *range(1 + first + gap, 1 + first + gap + count - first)]
    else:  # dense layers between MoE layers
        numbers = sorted(rng.sample(range(1, 95), count))
    order = rng.choice(("shuffled", "reversed", "interleaved", "shuffled"))
    if order == "shuffled":
        rng.shuffle(numbers)
    elif order == "reversed":
        numbers.reverse()
    else:  # registered odd positions first, then even ones
        numbers = numbers[1::2] + numbers[0::2]
    if count > 1 and numbers == sorted(numbers):
        numbers[0], numbers[-1] = numbers[-1], numbers[0]
    return numbers


def drawn_pairs(seed: int, *, duplicate: bool = False) -> Pairs:
    """A walk's (layer number, routes) pairs from `seed`; with `duplicate`, one number claimed twice."""
    rng = random.Random(seed)
    count = rng.choice((1, 2, 3, 5, 12, 30, 61)) if not duplicate else rng.choice((2, 3, 7, 30))
    tokens, topk = rng.randint(1, 5), rng.choice((1, 2, 4, 6, 8))
    experts = rng.choice(EXPERT_COUNTS)
    dtype = rng.choice((torch.int64, torch.int64, torch.int32, torch.int16))
    numbers = _layer_numbers(rng, count)
    if duplicate:
        numbers[rng.randrange(count)] = numbers[rng.randrange(count)]
        if len(set(numbers)) == count:
            numbers[-1] = numbers[0]
    return [(n, _routes(rng, tokens, topk, experts, dtype, rng.random() < 0.3)) for n in numbers]


@st.composite
def stack_inputs(draw: Any) -> tuple[Pairs]:
    return (drawn_pairs(draw(st.integers(0, 10**6))),)


def stack_reference(pairs: Pairs) -> torch.Tensor:
    ordered = sorted(pairs, key=lambda pair: pair[0])
    return torch.stack([routes.to(ROUTE_DTYPE) for _, routes in ordered], dim=1)


def _fixed(numbers: list[int], *, tokens: int = 3, topk: int = 2, experts: int = 384, seed: int = 0) -> Pairs:
    rng = random.Random(seed)
    return [(n, _routes(rng, tokens, topk, experts, torch.int64, False)) for n in numbers]


def stack_cases() -> list[Case]:
    """Named cases that illustrate the contract (the generated walks are the check)."""
    return [
        Case((_fixed([3, 1, 4, 2]),), "walk order 3, 1, 4, 2, expert ids up to 383"),
        Case((_fixed([2, 10, 9]),), "layer numbers past 9: 10 sorts before 2 as text"),
        Case((_fixed([7], tokens=1, topk=1, experts=512),), "one router, one token, top-1"),
        Case((_fixed([40, 17, 33, 18], topk=8, seed=3),), "one pipeline stage's layers 17..40, top-8"),
        Case((_fixed([1, 3], experts=8),), "a gap (a dense layer between), 8 experts"),
    ]


def _stacked(order: Pairs) -> torch.Tensor:
    return torch.stack([r.to(ROUTE_DTYPE) for _, r in order], dim=1)


def stack_mistake(args: tuple[Any, ...], got: Any, want: torch.Tensor) -> str | None:
    """The mistake a wrong stacked map shows (None: only the values are shown)."""
    (pairs,) = args
    if not isinstance(got, torch.Tensor):
        return i18n._("return one tensor (tokens, layers, topk)")
    if got.shape != want.shape:
        if got.dim() == 3 and got.shape[0] == want.shape[1] and got.shape[1] == want.shape[0]:
            return i18n._("your layers are not the middle dim")
        return i18n._("the map must be (tokens, layers, topk): one column per router")
    if got.dtype != ROUTE_DTYPE:
        return i18n._("routes are stored as torch.int16")
    if torch.equal(got, want.to(torch.uint8).to(ROUTE_DTYPE)) or torch.equal(got, want.to(torch.int8).to(ROUTE_DTYPE)):
        return i18n._("expert ids above 255 came back changed (300 became 44): an 8-bit type held them on the way")
    if torch.equal(got, _stacked(pairs)):
        return i18n._("the columns follow the order the pairs came in, not the layer numbers")
    if torch.equal(got, _stacked(sorted(pairs, key=lambda p: str(p[0])))):
        return i18n._("the layer numbers were sorted as text (10 before 2), not as numbers")
    if torch.equal(got, _stacked(sorted(pairs, key=lambda p: -p[0]))):
        return i18n._("the columns are in descending layer order")
    return i18n._("some column holds another layer's routes: replay would hand them to the wrong layer")


def duplicate_verdict(stack_by_layer: Callable[..., Any], seeds: range = range(12)) -> int:
    """Every drawn walk with a layer number claimed twice must raise ValueError; returns how many were tried."""
    for seed in seeds:
        pairs = drawn_pairs(seed, duplicate=True)
        numbers = [n for n, _ in pairs]
        twice = next(n for n in numbers if numbers.count(n) > 1)
        walk = (
            i18n.pick("layers {numbers}", numbers=numbers)
            if len(numbers) <= 8
            else i18n.pick("a {count}-router walk", count=len(numbers))
        )
        try:
            stack_by_layer(list(pairs))
        except ValueError:
            continue
        except (ExerciseFailure, NotImplementedError):
            raise
        except Exception as e:
            raise ExerciseFailure(
                i18n.pick(
                    "in {walk}, two routers claimed layer {twice} and your function raised {error} ({detail}); raise "
                    "ValueError for a duplicate",
                    walk=walk,
                    twice=twice,
                    error=type(e).__name__,
                    detail=e,
                )
            ) from None
        raise ExerciseFailure(
            i18n.pick(
                "in {walk}, two routers claimed layer {twice} and your function raised nothing: a duplicate went "
                "through",
                walk=walk,
                twice=twice,
            )
        )
    return len(seeds)
