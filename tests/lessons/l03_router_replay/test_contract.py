"""Lesson 03's checkers test a contract: new wrong answers of other classes fail, right ones written otherwise pass.

3.1's classes: expert ids through an 8-bit type (a uint8 round trip: 365 -> 109), a duplicate check that looks only
at neighbours in walk order or at the first pair, columns placed by number minus the first number (gaps), a squeeze
that loses a top-1 or one-token dim, the caller's tensors narrowed in place. 3.2's: all low bytes then all high
bytes, no contiguous copy (a stage's slice, an expanded batch), padding marked with 255, four bytes per route, a
stage without MoE layers sent one byte per route, from_wire reading the low bytes only or as uint8 values. 3.3's:
a truthy test only on the text config's own value, the text
branch read only under the root's names (never a thinker's text_config), getattr with a default of 0; right ones: an
explicit stack, a recursion returning a sentinel, a cycle guard over the path only.
"""

from __future__ import annotations

import heapq
import itertools

import numpy as np
import torch

from conftest import Wrong, checker_tests
from verlstudy.lessons.l03_router_replay.stack_judging import drawn_pairs

# ---------------------------------------------------------------- 3.1


def _no_duplicates(pairs):
    numbers = [n for n, _ in pairs]
    if len(set(numbers)) != len(numbers):
        raise ValueError(f"layer numbers {numbers} repeat")


def through_uint8(pairs):  # the class: a byte on the way (365 -> 109)
    _no_duplicates(pairs)
    return torch.stack([r.to(torch.uint8) for _, r in sorted(pairs, key=lambda p: p[0])], dim=1).to(torch.int16)


def through_int8(pairs):
    _no_duplicates(pairs)
    return torch.stack([r.to(torch.int8).to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)


def neighbours_only(pairs):  # a duplicate caught only when the two sit next to each other in walk order
    for (a, _), (b, _) in itertools.pairwise(pairs):
        if a == b:
            raise ValueError("duplicate")
    by_layer = dict(pairs)
    return torch.stack([by_layer[n].to(torch.int16) for n in sorted(by_layer)], dim=1)


def first_pair_only(pairs):  # a duplicate of the first pair's number only
    if any(n == pairs[0][0] for n, _ in pairs[1:]):
        raise ValueError("duplicate")
    by_layer = dict(pairs)
    return torch.stack([by_layer[n].to(torch.int16) for n in sorted(by_layer)], dim=1)


def by_offset(pairs):  # columns placed at number - smallest: right without gaps, wrong (or raising) with them
    _no_duplicates(pairs)
    low = min(n for n, _ in pairs)
    columns = [None] * len(pairs)
    for n, r in pairs:
        columns[min(n - low, len(pairs) - 1)] = r.to(torch.int16)
    return torch.stack(columns, dim=1)


def squeezed(pairs):  # a top-1 or one-token map loses a dim
    _no_duplicates(pairs)
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0])], dim=1).squeeze()


def narrows_in_place(pairs):  # the caller's tensors overwritten with a clamp
    _no_duplicates(pairs)
    for _, r in pairs:
        r.clamp_(max=255)
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)


def int32_map(pairs):
    _no_duplicates(pairs)
    return torch.stack([r.to(torch.int32) for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)


def stack_with_heap(pairs):  # right: a heap of (number, position)
    _no_duplicates(pairs)
    heap = [(n, i) for i, (n, _) in enumerate(pairs)]
    heapq.heapify(heap)
    columns = []
    while heap:
        _, i = heapq.heappop(heap)
        columns.append(pairs[i][1].type(torch.short))
    return torch.stack(columns, 1)


def stack_with_numpy(pairs):  # right: numpy's argsort, then one tensor indexed
    numbers = np.array([n for n, _ in pairs])
    if np.unique(numbers).size != numbers.size:
        raise ValueError("two routers claim one layer")
    cube = torch.stack([r.long() for _, r in pairs], dim=1)
    return cube[:, torch.from_numpy(np.argsort(numbers, kind="stable"))].to(torch.int16)


def stack_by_counter(pairs):  # right: a Counter for duplicates, an insertion into a sorted list
    from collections import Counter

    if max(Counter(n for n, _ in pairs).values()) > 1:
        raise ValueError("duplicate layer")
    ordered = []
    for n, r in pairs:
        at = next((i for i, (m, _) in enumerate(ordered) if m > n), len(ordered))
        ordered.insert(at, (n, r))
    return torch.cat([r.to(torch.int16)[:, None, :] for _, r in ordered], dim=1)


# ---------------------------------------------------------------- 3.2


def ref_to_wire(routes, max_layers):
    payload = routes.contiguous().view(torch.uint8)
    padded = payload.new_zeros(payload.shape[0], payload.shape[1], max_layers, payload.shape[3])
    padded[:, :, : payload.shape[2]] = payload
    return padded


def ref_from_wire(payload, layer_count):
    return payload[:, :, :layer_count].contiguous().view(torch.int16)


def _pad_layers(payload, max_layers, value=0):
    return torch.nn.functional.pad(payload, (0, 0, 0, max_layers - payload.shape[2]), value=value)


def lows_then_highs(routes, max_layers):  # every low byte, then every high byte
    r = routes.to(torch.int32)
    return _pad_layers(torch.cat([r & 0xFF, r >> 8], dim=-1).to(torch.uint8), max_layers)


def no_contiguous_copy(routes, max_layers):  # a view's memory is not the routes in order
    return _pad_layers(routes.view(torch.uint8), max_layers)


def padding_marked(routes, max_layers):  # padding filled with 255 to mark it
    return _pad_layers(routes.contiguous().view(torch.uint8), max_layers, value=255)


def four_bytes(routes, max_layers):
    return _pad_layers(routes.to(torch.int32).contiguous().view(torch.uint8), max_layers)


def empty_stage_short(routes, max_layers):  # a stage without MoE layers sends one byte per route
    if routes.shape[2] == 0:
        return torch.zeros(*routes.shape[:2], max_layers, routes.shape[3], dtype=torch.uint8)
    return ref_to_wire(routes, max_layers)


def from_low_bytes(payload, layer_count):
    return payload[:, :, :layer_count, 0::2].to(torch.int16)


def from_wire_as_values(payload, layer_count):  # the bytes read as numbers, one route each
    return payload[:, :, :layer_count].to(torch.int16)


def to_wire_by_arithmetic(routes, max_layers):  # right: low byte then high byte, computed
    r = routes.to(torch.int32) & 0xFFFF
    pairs = torch.stack([r & 0xFF, r >> 8], dim=-1).flatten(-2).to(torch.uint8)
    return _pad_layers(pairs, max_layers)


def to_wire_by_numpy(routes, max_layers):  # right: numpy's bytes of a little-endian int16 array
    raw = np.ascontiguousarray(routes.numpy().astype("<i2")).view(np.uint8)
    out = torch.zeros(*routes.shape[:2], max_layers, 2 * routes.shape[3], dtype=torch.uint8)
    out[:, :, : routes.shape[2]] = torch.from_numpy(raw.copy())
    return out


def from_wire_view_first(payload, layer_count):  # right: the whole payload as int16, then the first layers
    return payload.contiguous().view(torch.int16)[:, :, :layer_count]


def from_wire_by_arithmetic(payload, layer_count):  # right: low + 256 * high, back to int16
    p = payload[:, :, :layer_count].to(torch.int32)
    return (p[..., 0::2] | (p[..., 1::2] << 8)).to(torch.int16)


# ---------------------------------------------------------------- 3.3

BRANCHES = ("text_config", "language_config", "thinker_config", "model_config")


def _text_of(node):
    get = getattr(node, "get_text_config", None)
    text = get() if callable(get) else None
    return text if text is not None else getattr(node, "text_config", None)


def _lookup(*, seen_key=id, first_present=lambda v: v is not None, deep=True, default=None):
    def find(config, name):
        first = _text_of(config)
        if first is not None and first_present(getattr(first, name, default)):
            return getattr(first, name, default)
        seen = set()

        def walk(node, via):
            if node is None or seen_key((node, via)) in seen:
                return
            seen.add(seen_key((node, via)))
            text = _text_of(node)
            if text is not node and deep:
                yield from walk(text, "text")
            for branch in BRANCHES if deep or node is config else ():
                yield from walk(getattr(node, branch, None), branch)
            yield node

        for node in walk(config, "root"):
            value = getattr(node, name, default)
            if value is not None:
                return value
        raise AttributeError(name)

    return find


def find_iterative(config, name):  # right: an explicit stack, post-order
    first = _text_of(config)
    if first is not None and getattr(first, name, None) is not None:
        return getattr(first, name)
    seen, stack = set(), [(config, False)]
    while stack:
        node, done = stack.pop()
        if done:
            if getattr(node, name, None) is not None:
                return getattr(node, name)
            continue
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        text = _text_of(node)
        kids = ([text] if text is not None and text is not node else []) + [getattr(node, b, None) for b in BRANCHES]
        stack.extend((k, False) for k in reversed(kids) if k is not None)
    raise AttributeError(name)


_MISS = object()


def find_recursive_sentinel(config, name):  # right: a recursion that returns a sentinel for a miss
    first = _text_of(config)
    if first is not None and getattr(first, name, None) is not None:
        return getattr(first, name)
    seen = set()

    def look(node):
        if node is None or id(node) in seen:
            return _MISS
        seen.add(id(node))
        text = _text_of(node)
        for kid in ([text] if text is not node else []) + [getattr(node, b, None) for b in BRANCHES]:
            found = look(kid)
            if found is not _MISS:
                return found
        value = getattr(node, name, None)
        return _MISS if value is None else value

    found = look(config)
    if found is _MISS:
        raise AttributeError(name)
    return found


def find_path_guard(config, name):  # right: a cycle guard over the configs on the path only
    first = _text_of(config)
    if first is not None and getattr(first, name, None) is not None:
        return getattr(first, name)

    def walk(node, path):
        if node is None or any(node is p for p in path):
            return
        text = _text_of(node)
        for kid in ([text] if text is not node else []) + [getattr(node, b, None) for b in BRANCHES]:
            yield from walk(kid, (*path, node))
        yield node

    for node in walk(config, ()):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise AttributeError(name)


WRONG = {
    "3.3": [
        Wrong(_lookup(first_present=bool), mentions="expected", why="a truthy test on the text config's own value"),
        Wrong(_lookup(deep=False), mentions="expected", why="only the root's names, never a thinker's text_config"),
        Wrong(_lookup(default=0), mentions="expected", why="getattr with a default of 0"),
    ],
    "3.2": [
        Wrong((lows_then_highs, ref_from_wire), mentions="expected", why="all low bytes, then all high bytes"),
        Wrong((no_contiguous_copy, ref_from_wire), mentions=("view", "raised"), why="no contiguous copy of a view"),
        Wrong((padding_marked, ref_from_wire), mentions="nonzero bytes", why="padding marked with 255"),
        Wrong((four_bytes, ref_from_wire), mentions="another dim", why="four bytes per route"),
        Wrong((empty_stage_short, ref_from_wire), mentions="0 MoE layers", why="an empty stage one byte per route"),
        Wrong((ref_to_wire, from_low_bytes), mentions="low byte", why="from_wire keeps the low bytes"),
        Wrong((ref_to_wire, from_wire_as_values), mentions="two bytes", why="each byte read as a route"),
    ],
    "3.1": [
        Wrong(through_uint8, mentions="above 255", why="a uint8 round trip"),
        Wrong(through_int8, mentions="above 255", why="an int8 round trip"),
        Wrong(neighbours_only, mentions="a duplicate went through", why="duplicates checked between neighbours"),
        Wrong(first_pair_only, mentions="a duplicate went through", why="only the first number checked"),
        Wrong(by_offset, mentions=("another layer's routes", "raised"), why="number minus the smallest"),
        Wrong(squeezed, mentions="(tokens, layers, topk)", why="top-1 or one token squeezed away"),
        Wrong(narrows_in_place, mentions="changed its input", why="the caller's tensors clamped"),
        Wrong(int32_map, mentions="int16", why="int32 where the lesson stores int16"),
    ],
}
RIGHT = {
    "3.1": [stack_with_heap, stack_with_numpy, stack_by_counter],
    "3.3": [find_iterative, find_recursive_sentinel, find_path_guard],
    "3.2": [
        (to_wire_by_arithmetic, from_wire_view_first),
        (to_wire_by_numpy, from_wire_by_arithmetic),
        (to_wire_by_arithmetic, from_wire_by_arithmetic),
    ],
}

test_new_wrong_answers_fail_naming_the_mistake, test_new_right_answers_pass = checker_tests(WRONG, RIGHT)


def test_3_1_draws_the_real_domain():
    """Expert ids above 255 in every map of a model over 256 experts, up to 61 layers, numbers past 60, int64
    routes as torch.topk gives them, and walks not in layer order."""
    walks = [drawn_pairs(seed) for seed in range(300)]
    assert max(len(w) for w in walks) == 61
    assert max(n for w in walks for n, _ in w) > 60
    assert sum(int(r.max()) >= 256 for w in walks for _, r in w) > 100
    assert {r.dtype for w in walks for _, r in w} == {torch.int64, torch.int32, torch.int16}
    assert all([n for n, _ in w] != sorted(n for n, _ in w) for w in walks if len(w) > 1)
    assert any(not r.is_contiguous() for w in walks for _, r in w)
    for seed in range(50):
        numbers = [n for n, _ in drawn_pairs(seed, duplicate=True)]
        assert len(set(numbers)) < len(numbers)


def test_3_3_draws_every_shape_and_the_reference_agrees_with_verl():
    """The drawn configs span the shapes, names and outcomes; where verl is installed its own get_hf_config_attr
    answers each as the reference does."""
    from verlstudy.kit import upstream
    from verlstudy.lessons.l03_router_replay.text_config import get_text_config_attr
    from verlstudy.lessons.l03_router_replay.walk_judging import DrawnConfig

    built = [DrawnConfig(seed).build() for seed in range(300)]
    kinds = {type(config).__name__ + ":" + repr(config) for config, _, _ in built}
    assert {"LMConfig", "VLConfig", "OmniConfig", "CompositeConfig"} <= {k.split(":")[1] for k in kinds}
    assert len({name for _, name, _ in built}) == 6
    outcomes = []
    for config, name, _ in built:
        try:
            outcomes.append(get_text_config_attr(config, name))
        except AttributeError:
            outcomes.append("raised")
    assert "raised" in outcomes and 0 in outcomes and False in outcomes and len(set(map(repr, outcomes))) > 10
    if upstream.verl_available():
        from verlstudy.lessons.l03_router_replay.upstream import load_hf_config_attr

        theirs_fn = load_hf_config_attr()
        for (config, name, _), ours in zip(built, outcomes, strict=True):
            try:
                theirs = theirs_fn(config, name)
            except AttributeError:
                theirs = "raised"
            assert repr(theirs) == repr(ours), (repr(config), name)
