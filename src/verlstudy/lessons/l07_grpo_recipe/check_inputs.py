"""The input domains lesson 07's checkers draw from, and the precision a right GRPO advantage may have.

7.1: layouts of the sizes real recipes use (#7788's 512 devices, tp 8, pp 8, ep 64; GLM-5's 384 experts split
up to ep 256; cp and etp up to 8; pipeline sizes that are not powers of two) and worlds that divide one grid, both
or neither. 7.2: any ratio a token can have, any advantage, clip settings anywhere in their ranges, clip_c just
above 1 as well as far (where the dual clip binds inside the clip band), and the band's own edges. 7.3: groups of
2 to 64 responses: 0/1 rewards, graded rewards, all equal (at any value), and spreads down to 1e-7, where epsilon
decides the answer. Only checks.py uses this module.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

# ---------------------------------------------------------------- 7.1

_TP = st.sampled_from((1, 2, 4, 8, 16))
_PP = st.sampled_from((1, 2, 3, 4, 6, 8, 16))
_CP = st.sampled_from((1, 1, 2, 4, 8))
_ETP = st.sampled_from((1, 1, 2, 4, 8))
_EP = st.sampled_from((1, 2, 4, 8, 16, 32, 64, 96, 128, 256))


@st.composite
def layouts(draw: Any) -> tuple[int, int, int, int, int, int]:
    """(world, tp, pp, cp, ep, etp): worlds that divide the dense grid, the expert grid, both, or neither."""
    tp, pp, cp, ep, etp = draw(_TP), draw(_PP), draw(_CP), draw(_EP), draw(_ETP)
    dense, expert = tp * cp * pp, etp * ep * pp
    both = dense * expert // math.gcd(dense, expert)
    world = draw(
        st.one_of(
            st.integers(1, 16).map(lambda m: m * both),  # both grids divide
            st.integers(1, 64).map(lambda m: m * dense),  # the dense one divides, often not the expert one
            st.integers(1, 64).map(lambda m: m * expert),
            st.integers(1, 8192),
        )
    )
    return world, tp, pp, cp, ep, etp


# ---------------------------------------------------------------- 7.2


@st.composite
def token_inputs(draw: Any) -> tuple[float, float, float, float, float]:
    """(ratio, advantage, clip_low, clip_high, clip_c); the ratio is often drawn on a salient point (the band's
    edges, 1, clip_c) or between two of them, where a rule that is right elsewhere goes wrong."""
    low = draw(st.sampled_from((0.0, 0.1, 0.2, 0.3, 0.5, 0.9)) | st.floats(0.0, 0.95))
    high = draw(st.sampled_from((0.0, 0.2, 0.28, 0.5, 1.0)) | st.floats(0.0, 2.0))
    inside = st.floats(1.001, 1 + high) if high > 0.001 else st.just(1.001)  # clip_c within the band
    c = draw(st.sampled_from((1.05, 1.1, 1.2, 1.5, 3.0, 10.0)) | st.floats(1.001, 30.0) | inside)
    points = (1 - low, 1.0, 1 + high, c)
    a, b = draw(st.sampled_from(points)), draw(st.sampled_from(points))
    between = st.floats(min(a, b), max(a, b)) if a != b else st.just(a)
    ratio = draw(st.one_of(st.sampled_from(points), between, between, st.floats(0.01, 60.0), st.just(40.0)))
    adv = draw(st.sampled_from((0.0, 1.0, -1.0, -3.0, 2.5)) | st.floats(-5.0, 5.0))
    if draw(st.integers(0, 5)) == 0:  # a negative advantage past a clip_c that lies inside the band
        high = max(high, 0.1)
        c = draw(st.floats(1.001, 1 + 0.9 * high))
        ratio, adv = draw(st.floats(c, 1 + high)), draw(st.floats(-5.0, -0.01))
    return ratio, adv, low, high, c


# ---------------------------------------------------------------- 7.3

_BINARY = st.lists(st.sampled_from((0.0, 1.0)), min_size=2, max_size=64)
_GRADED = st.lists(st.floats(-5, 5, allow_nan=False).map(lambda x: round(x, 3)), min_size=2, max_size=16)
_EQUAL = st.tuples(st.sampled_from((0.0, 1.0, 0.7, -2.5, 3.3)), st.integers(2, 16)).map(lambda vn: [vn[0]] * vn[1])


@st.composite
def _small_spread(draw: Any) -> list[float]:
    """A group near 0 whose spread is about epsilon or below (float32 holds it exactly enough)."""
    step = draw(st.sampled_from((1e-7, 3e-7, 1e-6, 2e-6, 4e-6, 1e-5, 1e-4)))
    return [step * k for k in draw(st.lists(st.integers(0, 3), min_size=2, max_size=8))]


def reward_groups() -> Any:
    """One-argument tuples of a group's rewards, as `compare_on_inputs` takes them."""
    return st.one_of(_BINARY, _GRADED, _EQUAL, _small_spread()).map(lambda rewards: (rewards,))


# a float32 answer is right: verl's rewards are float32 tensors. Its error in a deviation from the mean is a few
# units in the last place of the largest reward (2**-24 relative), magnified by 1 / (std + epsilon)
_FLOAT32_ULPS = 8 * 2.0**-24


def advantage_tolerances(rewards: Sequence[float], want: Sequence[float], std: float, eps: float) -> list[float]:
    """How far each advantage of a right answer may be from the float64 reference (float32 arithmetic)."""
    scale = max((abs(r) for r in rewards), default=0.0) / (std + eps)
    return [1e-5 * abs(w) + 1e-6 + _FLOAT32_ULPS * scale * (1 + abs(w)) for w in want]
