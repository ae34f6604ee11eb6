"""Lesson 03's checkers: the references pass; plausible wrong answers fail, each with a message naming the mistake."""

from __future__ import annotations

import time
from collections import deque

import pytest
import torch

from conftest import Wrong, checker_tests
from verlstudy.kit import upstream
from verlstudy.kit.exercises import check_exercise, exercise_results, find_checker
from verlstudy.lessons.l03_router_replay.config_cases import _build, _text_attr_cases
from verlstudy.lessons.l03_router_replay.config_cases import _Raised as Raised
from verlstudy.lessons.l03_router_replay.pipeline import from_wire, to_wire
from verlstudy.lessons.l03_router_replay.routes import stack_routes
from verlstudy.lessons.l03_router_replay.text_config import bfs_config_attr, get_text_config_attr
from verlstudy.lessons.l03_router_replay.upstream import load_hf_config_attr

LESSON = "verlstudy.lessons.l03_router_replay"


def stub(*args: object) -> object:
    raise NotImplementedError("exercise")


# --- 3.1: stack routes by layer number ----------------------------------------------------------------


def stack_by_layer(pairs):
    layer_numbers = [n for n, _ in pairs]
    if len(set(layer_numbers)) != len(layer_numbers):
        raise ValueError(f"duplicate layer numbers: {layer_numbers}")
    return torch.stack([routes.to(torch.int16) for _, routes in sorted(pairs, key=lambda p: p[0])], dim=1)


def stack_by_dict(pairs):  # right, written differently: a dict keyed by layer, columns by sorted key
    by_layer = {}
    for number, routes in pairs:
        if number in by_layer:
            raise ValueError(f"layer {number} twice")
        by_layer[number] = routes
    columns = [by_layer[n].short() for n in sorted(by_layer)]
    return torch.cat([c.unsqueeze(1) for c in columns], dim=1)


def stack_by_argsort(pairs):  # right: order from a tensor argsort, then index_select
    numbers = torch.tensor([n for n, _ in pairs])
    if numbers.unique().numel() != numbers.numel():
        raise ValueError("duplicate layer numbers")
    stacked = torch.stack([r for _, r in pairs], dim=1).to(torch.int16)
    return stacked.index_select(1, numbers.argsort())


def walk_order(pairs):
    return torch.stack([r.to(torch.int16) for _, r in pairs], dim=1)


def last_one_wins(pairs):
    by_layer = dict(pairs)
    return torch.stack([by_layer[n].to(torch.int16) for n in sorted(by_layer)], dim=1)


def tuple_sort(pairs):  # ties compare tensors: RuntimeError on a duplicate
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs)], dim=1)


def as_text(pairs):
    if len({n for n, _ in pairs}) != len(pairs):
        raise ValueError("duplicate")
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: str(p[0]))], dim=1)


def int64_routes(pairs):
    if len({n for n, _ in pairs}) != len(pairs):
        raise ValueError("duplicate")
    return torch.stack([r for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)


def layers_first(pairs):
    if len({n for n, _ in pairs}) != len(pairs):
        raise ValueError("duplicate")
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0])])


def sorts_in_place(pairs):
    if len({n for n, _ in pairs}) != len(pairs):
        raise ValueError("duplicate")
    pairs.sort(key=lambda p: p[0])
    return torch.stack([r.to(torch.int16) for _, r in pairs], dim=1)


def example_shaped(pairs):  # right only on walks of consecutive layers 1..n: indexes by number - 1
    if len({n for n, _ in pairs}) != len(pairs):
        raise ValueError("duplicate")
    columns = [None] * len(pairs)
    for n, r in pairs:
        columns[(n - 1) % len(pairs)] = r.to(torch.int16)
    return torch.stack(columns, dim=1)


def descending(pairs):
    if len({n for n, _ in pairs}) != len(pairs):
        raise ValueError("duplicate")
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0], reverse=True)], dim=1)


# --- 3.2: the dense branch's wire format ----------------------------------------------------------------


def ref_to_wire(routes, max_layers):
    payload = routes.contiguous().view(torch.uint8)
    padded = payload.new_zeros(payload.shape[0], payload.shape[1], max_layers, payload.shape[3])
    padded[:, :, : payload.shape[2]] = payload
    return padded


def ref_from_wire(payload, layer_count):
    return payload[:, :, :layer_count].contiguous().view(torch.int16)


def pad_to_wire(routes, max_layers):  # right: F.pad on the layer dim of the byte view
    payload = routes.contiguous().view(torch.uint8)
    return torch.nn.functional.pad(payload, (0, 0, 0, max_layers - payload.shape[2]))


def split_from_wire(payload, layer_count):  # right: narrow then a clone before the view
    return payload.narrow(2, 0, layer_count).clone().view(torch.int16)


def to_wire_cast(routes, max_layers):
    payload = torch.zeros(*routes.shape[:2], max_layers, routes.shape[3] * 2, dtype=torch.uint8)
    payload[:, :, : routes.shape[2], ::2] = routes.to(torch.uint8)
    return payload


def from_wire_cast(payload, layer_count):
    return payload[:, :, :layer_count, ::2].to(torch.int16)


def no_pad(routes, max_layers):
    return routes.contiguous().view(torch.uint8)


def pad_last_dim(routes, max_layers):
    payload = routes.contiguous().view(torch.uint8)
    return torch.nn.functional.pad(payload, (0, 2 * (max_layers - payload.shape[2])))


def edge_pad(routes, max_layers):
    payload = routes.contiguous().view(torch.uint8)
    if payload.shape[2] == 0:
        return payload.new_ones(*payload.shape[:2], max_layers, payload.shape[3])
    extra = payload[:, :, -1:].expand(-1, -1, max_layers - payload.shape[2], -1)
    return torch.cat([payload, extra], dim=2)


def keeps_padding(payload, layer_count):
    return payload.contiguous().view(torch.int16)


def cast_back(payload, layer_count):
    return payload[:, :, :layer_count].to(torch.int16)


def drop_zero_layers(payload, layer_count):  # ignores layer_count: keeps the layers with any nonzero byte
    keep = payload.flatten(0, 1).ne(0).any(dim=0).any(dim=-1)
    return payload[:, :, keep].contiguous().view(torch.int16)


def fixed_three(payload, layer_count):  # the notebook's example had 3 layers
    return payload[:, :, :3].contiguous().view(torch.int16)


def cast_whole_routes(routes, max_layers):  # values cast to uint8, one byte per route, padded
    payload = torch.zeros(*routes.shape[:2], max_layers, routes.shape[3], dtype=torch.uint8)
    payload[:, :, : routes.shape[2]] = routes.to(torch.uint8)
    return payload


# --- 3.3: the text-branch config walk ------------------------------------------------------------------

BRANCHES = ("text_config", "language_config", "thinker_config", "model_config")


def find_text_attr(config, name):
    getter = getattr(config, "get_text_config", None)
    text = getter() if callable(getter) else getattr(config, "text_config", None)
    if text is not None and getattr(text, name, None) is not None:
        return getattr(text, name)
    seen: set[int] = set()

    def walk(node):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        get = getattr(node, "get_text_config", None)
        inner = get() if callable(get) else getattr(node, "text_config", None)
        if inner is not None and inner is not node:
            yield from walk(inner)
        for branch in BRANCHES:
            yield from walk(getattr(node, branch, None))
        yield node

    for node in walk(config):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise AttributeError(f"{type(config).__name__} has no nested {name}")


def find_with_stack(config, name):  # right: an explicit post-order over the branch, then the first non-None
    def text_of(node):
        get = getattr(node, "get_text_config", None)
        text = get() if callable(get) else None
        return text if text is not None else getattr(node, "text_config", None)

    first = text_of(config)
    if first is not None and getattr(first, name, None) is not None:
        return getattr(first, name)
    order, seen = [], set()

    def visit(node):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        text = text_of(node)
        if text is not node:
            visit(text)
        for branch in BRANCHES:
            visit(getattr(node, branch, None))
        order.append(node)

    visit(config)
    found = [getattr(n, name) for n in order if getattr(n, name, None) is not None]
    if not found:
        raise AttributeError(name)
    return found[0]


def _walker(
    *, branches=BRANCHES, truthy=False, children_first=True, cycle_safe=True, getter=True, root=True, text_first=True
):
    """find_text_attr with one thing done wrong: the mistakes learners make, one switch each."""

    def find(config, name):
        if text_first:
            get = getattr(config, "get_text_config", None) if getter else None
            text = get() if callable(get) else getattr(config, "text_config", None)
            value = getattr(text, name, None) if text is not None else None
            if (value if truthy else value is not None) and not callable(value):
                return value
        seen: set[int] = set()

        def walk(node, is_root=False):
            if node is None or (cycle_safe and id(node) in seen):
                return
            seen.add(id(node))
            read_node = root or not is_root
            if not children_first and read_node:
                yield node
            get_text = getattr(node, "get_text_config", None) if getter else None
            text = get_text() if callable(get_text) else getattr(node, "text_config", None)
            if text is not None and text is not node:
                yield from walk(text)
            for branch in branches(node) if callable(branches) else branches:
                yield from walk(getattr(node, branch, None))
            if children_first and read_node:
                yield node

        for node in walk(config, is_root=True):
            value = getattr(node, name, None)
            if (value if truthy else value is not None) and not callable(value):
                return value
        raise AttributeError(name)

    return find


def bfs(config, name):
    queue, seen = deque([config]), {id(config)}
    while queue:
        node = queue.popleft()
        if getattr(node, name, None) is not None:
            return getattr(node, name)
        for child in vars(node).values():
            if hasattr(child, "__dict__") and id(child) not in seen:
                seen.add(id(child))
                queue.append(child)
    raise AttributeError(name)


def key_error(config, name):
    try:
        return find_text_attr(config, name)
    except AttributeError as e:
        raise KeyError(name) from e


def view_without_contiguous(routes, max_layers):  # fails on a map whose last dim is strided
    payload = routes.view(torch.uint8)
    return torch.nn.functional.pad(payload, (0, 0, 0, max_layers - payload.shape[2]))


def big_endian_to_wire(routes, max_layers):  # high byte first: round-trips with its own reader, not on the wire
    pairs = torch.stack([(routes >> 8).to(torch.uint8), (routes & 0xFF).to(torch.uint8)], -1).flatten(-2)
    return torch.nn.functional.pad(pairs, (0, 0, 0, max_layers - pairs.shape[2]))


def big_endian_from_wire(payload, layer_count):
    q = payload[:, :, :layer_count].to(torch.int32).unflatten(-1, (-1, 2))
    return (q[..., 0] * 256 + q[..., 1]).to(torch.int16)


def front_padded(routes, max_layers):
    payload = routes.contiguous().view(torch.uint8)
    return torch.nn.functional.pad(payload, (0, 0, max_layers - payload.shape[2], 0))


def returns_none(config, name):
    try:
        return find_text_attr(config, name)
    except AttributeError:
        return None


def has_attr_walk(config, name):  # an attribute that exists counts, even when its value is None
    text = getattr(config, "text_config", None)
    get = getattr(config, "get_text_config", None)
    text = get() if callable(get) else text
    seen: set[int] = set()

    def walk(node):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        get_text = getattr(node, "get_text_config", None)
        inner = get_text() if callable(get_text) else getattr(node, "text_config", None)
        if inner is not None and inner is not node:
            yield from walk(inner)
        for branch in BRANCHES:
            yield from walk(getattr(node, branch, None))
        yield node

    for node in [text, *walk(config)]:
        if node is not None and hasattr(node, name) and not callable(getattr(node, name)):
            return getattr(node, name)
    raise AttributeError(name)


def every_sub_config(node):
    return [k for k, v in vars(node).items() if hasattr(v, "__dict__")]


def instance_dict_walk(config, name):  # reads vars(node): misses what the class serves (HF attribute_map, a property)
    def read(node):
        return vars(node).get(name) if hasattr(node, "__dict__") else None

    def text_of(node):
        get = getattr(node, "get_text_config", None)
        text = get() if callable(get) else None
        return text if text is not None else getattr(node, "text_config", None)

    first = text_of(config)
    if first is not None and read(first) is not None:
        return read(first)
    seen: set[int] = set()

    def walk(node):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        text = text_of(node)
        if text is not node:
            yield from walk(text)
        for branch in BRANCHES:
            yield from walk(getattr(node, branch, None))
        yield node

    for node in walk(config):
        if read(node) is not None:
            return read(node)
    raise AttributeError(name)


def text_config_attribute_only(config, name):  # never calls get_text_config(), at the root or below
    text = getattr(config, "text_config", None)
    if text is not None and getattr(text, name, None) is not None:
        return getattr(text, name)
    seen: set[int] = set()

    def walk(node):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        for branch in BRANCHES:
            yield from walk(getattr(node, branch, None))
        yield node

    for node in walk(config):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise AttributeError(name)


def from_wire_swapped_bytes(payload, layer_count):  # reads each route high byte first
    q = payload[:, :, :layer_count].to(torch.int32).unflatten(-1, (-1, 2))
    return (q[..., 0] * 256 + q[..., 1]).to(torch.int16)


def from_wire_off_by_one(payload, layer_count):  # a mistake no message names: the plain line
    return ref_from_wire(payload, layer_count) + 1


def to_wire_high_byte_set(routes, max_layers):  # a mistake no message names: the plain line
    payload = ref_to_wire(routes, max_layers)
    payload[:, :, : routes.shape[2], 1::2] |= 0x40
    return payload


WRONG = {
    "3.1": [
        Wrong(walk_order, mentions="not the layer numbers", why="columns in walk order"),
        Wrong(last_one_wins, mentions="a duplicate went through", why="duplicates silently merged"),
        Wrong(tuple_sort, mentions="raise ValueError", why="a duplicate raises another error"),
        Wrong(as_text, mentions="sorted as text", why="layer numbers sorted as strings"),
        Wrong(int64_routes, mentions="int16", why="dtype ignored"),
        Wrong(layers_first, mentions="not the middle dim", why="layers stacked along dim 0"),
        Wrong(sorts_in_place, mentions="changed its input", why="the learner's input mutated"),
        Wrong(example_shaped, mentions=("another layer's routes", "layer numbers"), why="right only on layers 1..n"),
        Wrong(descending, mentions="descending", why="sorted the wrong way round"),
    ],
    "3.2": [
        Wrong((to_wire_cast, from_wire_cast), mentions="low byte", why="values cast to uint8"),
        Wrong((no_pad, ref_from_wire), mentions="not padded to max_layers", why="no padding"),
        Wrong((pad_last_dim, ref_from_wire), mentions=("another dim", "not padded"), why="padded the byte dim"),
        Wrong((edge_pad, ref_from_wire), mentions="nonzero bytes", why="padding repeats the last layer"),
        Wrong((ref_to_wire, keeps_padding), mentions="kept padding layers", why="padding not stripped"),
        Wrong((ref_to_wire, cast_back), mentions="two bytes", why="bytes cast back one by one"),
        Wrong((ref_to_wire, drop_zero_layers), mentions="lost real layers", why="count guessed from the bytes"),
        Wrong((ref_to_wire, fixed_three), mentions="layers", why="example-shaped: a fixed layer count"),
        Wrong((cast_whole_routes, ref_from_wire), mentions="one byte", why="one byte per route"),
        Wrong((view_without_contiguous, ref_from_wire), mentions="not contiguous", why="no contiguous copy first"),
        Wrong((big_endian_to_wire, big_endian_from_wire), mentions="other order", why="big-endian bytes"),
        Wrong((front_padded, ref_from_wire), mentions="must come first", why="padding before the routes"),
        Wrong((ref_to_wire, from_wire_swapped_bytes), mentions="high byte first", why="from_wire: bytes swapped"),
    ],
    "3.3": [
        Wrong(bfs, mentions=("root before its text branch", "sibling"), why="root-first BFS over every sub-config"),
        Wrong(
            _walker(children_first=False, text_first=False),
            mentions="root before its text branch",
            why="the node before its branches",
        ),
        Wrong(_walker(truthy=True), mentions="falsy", why="0/False taken for missing"),
        Wrong(
            _walker(branches=("text_config",)),
            mentions=("missed a text branch", "only the text_config"),
            why="only text_config walked (one level of names)",
        ),
        Wrong(
            _walker(branches=("text_config", "language_config", "model_config")),
            mentions=("missed", "root"),
            why="thinker_config never descended",
        ),
        Wrong(_walker(root=False), mentions=("missed a text branch", "sibling"), why="never reads the config itself"),
        Wrong(
            _walker(getter=False),
            mentions="ignores what the config's get_text_config() returns",
            why="get_text_config() ignored",
        ),
        Wrong(
            text_config_attribute_only,
            mentions="ignores what the config's get_text_config() returns",
            why="only the text_config attribute read, never get_text_config() (not a root-first walk)",
        ),
        Wrong(
            instance_dict_walk, mentions="instance __dict__", why="vars(): misses a Hugging Face attribute_map alias"
        ),
        Wrong(_walker(branches=every_sub_config), mentions="sibling", why="reads the audio sibling"),
        Wrong(_walker(cycle_safe=False), mentions="revisits configs", why="no cycle guard"),
        Wrong(key_error, mentions=("KeyError", "raise AttributeError"), why="raises KeyError for a missing attribute"),
        Wrong(returns_none, mentions="returns None", why="None returned instead of raising"),
        Wrong(has_attr_walk, mentions="exists", why="an attribute that is None counted as present"),
        Wrong(_walker(branches=tuple(reversed(BRANCHES))), mentions="another order", why="branches in another order"),
        Wrong(_walker(text_first=False), mentions="text config itself wins", why="no first read of the text config"),
    ],
}

RIGHT = {
    "3.1": [stack_by_dict, stack_by_argsort],
    "3.2": [(pad_to_wire, split_from_wire), (pad_to_wire, ref_from_wire)],
    "3.3": [find_with_stack, find_text_attr],
}

test_wrong_answers_fail_naming_the_mistake, test_right_answers_written_differently_pass = checker_tests(WRONG, RIGHT)


def test_3_2_messages_name_the_byte_order_or_nothing_not_the_method(assert_wrong) -> None:
    """A first wrong try names the mistake (or shows only the values), never the method: reinterpret the memory."""
    for answer, mentions in (
        ((big_endian_to_wire, big_endian_from_wire), "low byte first"),
        ((ref_to_wire, from_wire_swapped_bytes), "high byte first"),
        ((ref_to_wire, from_wire_off_by_one), "expected"),
        ((to_wire_high_byte_set, ref_from_wire), "expected"),
    ):
        verdict = assert_wrong("3.2", *answer, mentions=mentions)
        assert "reinterpret" not in verdict and "view" not in verdict, verdict
    for answer in ((ref_to_wire, from_wire_off_by_one), (to_wire_high_byte_set, ref_from_wire)):
        verdict = assert_wrong("3.2", *answer, mentions="expected")  # no mistake recognised: no guess either
        assert "(a tensor with other values than expected) [" in verdict, verdict  # nothing named after the values
        assert "value cast" not in verdict and "converted" not in verdict, verdict


def test_3_3_get_text_config_is_named_only_when_a_probe_shows_it_ignored(assert_wrong) -> None:
    """The composite case gives 1024 both to a walk that ignores get_text_config() and to one reading the root
    first: the message names get_text_config() only for the first (the tester's report: the root-first text
    shadowed it)."""
    verdict = assert_wrong("3.3", text_config_attribute_only, mentions="get_text_config() returns")
    assert "root before its text branch" not in verdict, verdict


def test_references_pass_and_stubs_are_not_attempted(capsys: pytest.CaptureFixture[str]) -> None:
    assert "duplicates rejected" in find_checker("3.1")(stack_by_layer)
    check_exercise("3.1", stack_by_layer)
    assert exercise_results()["3.1"] == "correct"
    assert "exercise 3.1: correct" in capsys.readouterr().out
    for exercise_id, arity in (("3.1", 1), ("3.2", 2), ("3.3", 1)):
        check_exercise(exercise_id, *[stub] * arity)
        assert exercise_results()[exercise_id] == "not attempted"


@pytest.mark.parametrize(
    ("exercise_id", "answer"),
    [("3.1", (stack_by_layer,)), ("3.2", (ref_to_wire, ref_from_wire)), ("3.3", (find_text_attr,))],
)
def test_each_checker_call_takes_under_a_second(exercise_id, answer) -> None:
    find_checker(exercise_id)(*answer)  # warm (hypothesis imports)
    start = time.process_time()  # CPU, not wall: a loaded machine slows the clock, not the checker's work
    find_checker(exercise_id)(*answer)
    assert time.process_time() - start < 1.0


def test_the_mechanism_functions_are_refused(assert_wrong) -> None:
    assert_wrong("3.1", stack_routes, mentions="library's own stack_routes")
    assert_wrong("3.1", lambda pairs: stack_routes(pairs), mentions="calls the library's own stack_routes")
    assert_wrong("3.2", to_wire, from_wire, mentions="library's own to_wire")
    assert_wrong("3.2", ref_to_wire, lambda p, n: from_wire(p, n), mentions="calls the library's own from_wire")
    assert_wrong("3.3", get_text_config_attr, mentions="library's own get_text_config_attr")
    assert_wrong("3.3", lambda c, n: bfs_config_attr(c, n), mentions="library's own bfs_config_attr")


def test_3_1_is_not_passed_by_any_mechanism_function(assert_mechanism_does_not_pass) -> None:
    assert assert_mechanism_does_not_pass("3.1", LESSON) > 20


@pytest.mark.parametrize(
    "answer", [lambda fn: (fn, ref_from_wire), lambda fn: (ref_to_wire, fn)], ids=["as to_wire", "as from_wire"]
)
def test_3_2_is_not_passed_by_any_mechanism_function(assert_mechanism_does_not_pass, answer) -> None:
    assert assert_mechanism_does_not_pass("3.2", LESSON, answer=answer) > 20


def test_3_3_is_not_passed_by_any_mechanism_function(assert_mechanism_does_not_pass) -> None:
    assert assert_mechanism_does_not_pass("3.3", LESSON) > 20


@pytest.mark.skipif(not upstream.verl_available(), reason="verl is not installed (make setup)")
def test_3_3_cases_are_what_upstreams_get_hf_config_attr_answers() -> None:
    get_hf_config_attr = load_hf_config_attr()
    for label, spec, name, expected in _text_attr_cases():
        try:
            theirs = get_hf_config_attr(_build(spec), name)
        except AttributeError:
            theirs = Raised("AttributeError")
        assert theirs == expected, label
