"""Lesson 03's checkers: the references pass; plausible wrong answers fail, each with a message naming the mistake."""

from __future__ import annotations

from collections import deque

import pytest
import torch

from verlstudy.kit import upstream
from verlstudy.kit.exercises import check_exercise, exercise_results, find_checker
from verlstudy.lessons.l03_router_replay.checks import _text_attr_cases
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


def test_3_1_accepts_columns_sorted_by_layer_number(capsys: pytest.CaptureFixture[str]) -> None:
    assert "duplicates rejected" in find_checker("3.1")(stack_by_layer)
    check_exercise("3.1", stack_by_layer)
    assert exercise_results()["3.1"] == "correct"
    assert "exercise 3.1: correct" in capsys.readouterr().out
    check_exercise("3.1", stub)
    assert exercise_results()["3.1"] == "not attempted"


def test_3_1_rejects_stacking_in_walk_order(assert_wrong) -> None:
    walk_order = lambda pairs: torch.stack([r.to(torch.int16) for _, r in pairs], dim=1)  # noqa: E731
    assert_wrong("3.1", walk_order, mentions="not the layer numbers")


def test_3_1_rejects_silently_accepting_duplicate_layers(assert_wrong) -> None:
    def last_one_wins(pairs):
        by_layer = dict(pairs)  # a second router on layer 1 overwrites the first
        return torch.stack([by_layer[n].to(torch.int16) for n in sorted(by_layer)], dim=1)

    assert_wrong("3.1", last_one_wins, mentions="a duplicate went through")


def test_3_1_rejects_a_duplicate_check_that_raises_the_wrong_error(assert_wrong) -> None:
    tuple_sort = lambda pairs: torch.stack([r.to(torch.int16) for _, r in sorted(pairs)], dim=1)  # noqa: E731
    assert_wrong("3.1", tuple_sort, mentions="raise ValueError, not RuntimeError")  # ties compare tensors


def test_3_1_rejects_routes_not_stored_as_int16(assert_wrong) -> None:
    int64 = lambda pairs: torch.stack([r for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)  # noqa: E731
    assert_wrong("3.1", int64, mentions="int16")


def test_3_1_rejects_stacking_along_the_wrong_dim(assert_wrong) -> None:
    dim0 = lambda pairs: torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0])])  # noqa: E731
    assert_wrong("3.1", dim0, mentions="not the middle dim")


def test_3_1_refuses_the_mechanisms_stack_routes(assert_wrong) -> None:
    assert_wrong("3.1", stack_routes, mentions="library's own stack_routes")
    assert_wrong("3.1", lambda pairs: stack_routes(pairs), mentions="calls the library's own stack_routes")


def test_3_1_is_not_passed_by_any_mechanism_function(assert_mechanism_does_not_pass) -> None:
    assert assert_mechanism_does_not_pass("3.1", LESSON) > 20


# --- 3.2: the wire format of pp_gather ------------------------------------------------------------------


def ref_to_wire(routes, max_layers):
    payload = routes.contiguous().view(torch.uint8)
    padded = payload.new_zeros(payload.shape[0], payload.shape[1], max_layers, payload.shape[3])
    padded[:, :, : payload.shape[2]] = payload
    return padded


def ref_from_wire(payload, layer_count):
    return payload[:, :, :layer_count].contiguous().view(torch.int16)


def test_3_2_accepts_a_bit_view_padded_on_the_layer_dim() -> None:
    assert "bit-exact" in find_checker("3.2")(ref_to_wire, ref_from_wire)
    check_exercise("3.2", stub, stub)
    assert exercise_results()["3.2"] == "not attempted"


def test_3_2_rejects_a_value_cast_to_uint8(assert_wrong) -> None:
    def to_wire_cast(routes, max_layers):
        payload = torch.zeros(*routes.shape[:2], max_layers, routes.shape[3] * 2, dtype=torch.uint8)
        payload[:, :, : routes.shape[2], ::2] = routes.to(torch.uint8)
        return payload

    def from_wire_cast(payload, layer_count):
        return payload[:, :, :layer_count, ::2].to(torch.int16)

    assert_wrong("3.2", to_wire_cast, from_wire_cast, mentions="a value cast to uint8 keeps only the low byte")


def test_3_2_rejects_a_payload_that_is_not_padded(assert_wrong) -> None:
    no_pad = lambda routes, max_layers: routes.contiguous().view(torch.uint8)  # noqa: E731
    assert_wrong("3.2", no_pad, ref_from_wire, mentions="not padded to max_layers")


def test_3_2_rejects_padding_the_byte_dim(assert_wrong) -> None:
    def pad_last_dim(routes, max_layers):
        payload = routes.contiguous().view(torch.uint8)
        extra = max_layers - payload.shape[2]
        return torch.nn.functional.pad(payload, (0, 2 * extra))

    assert_wrong("3.2", pad_last_dim, ref_from_wire, mentions="not padded to max_layers")


def test_3_2_rejects_padding_that_repeats_the_last_layer(assert_wrong) -> None:
    def edge_pad(routes, max_layers):
        payload = routes.contiguous().view(torch.uint8)
        extra = payload[:, :, -1:].expand(-1, -1, max_layers - payload.shape[2], -1)
        return torch.cat([payload, extra], dim=2)

    assert_wrong("3.2", edge_pad, ref_from_wire, mentions="padding layers hold nonzero bytes")


def test_3_2_rejects_a_from_wire_that_keeps_the_padding(assert_wrong) -> None:
    keeps_padding = lambda payload, layer_count: payload.contiguous().view(torch.int16)  # noqa: E731
    assert_wrong("3.2", ref_to_wire, keeps_padding, mentions="kept padding layers")


def test_3_2_rejects_a_from_wire_that_casts_the_bytes(assert_wrong) -> None:
    cast_back = lambda payload, layer_count: payload[:, :, :layer_count].to(torch.int16)  # noqa: E731
    assert_wrong("3.2", ref_to_wire, cast_back, mentions="a route is two bytes")


def test_3_2_rejects_padding_with_nonzero_bytes(assert_wrong) -> None:
    def pad_with_255(routes, max_layers):
        payload = routes.contiguous().view(torch.uint8)
        padded = torch.full((*payload.shape[:2], max_layers, payload.shape[3]), 255, dtype=torch.uint8)
        padded[:, :, : payload.shape[2]] = payload
        return padded

    assert_wrong("3.2", pad_with_255, ref_from_wire, mentions="padding layers hold nonzero bytes")


def test_3_2_rejects_a_from_wire_with_a_fixed_layer_count(assert_wrong) -> None:
    fixed_two = lambda payload, layer_count: payload[:, :, :2].contiguous().view(torch.int16)  # noqa: E731
    assert_wrong("3.2", ref_to_wire, fixed_two, mentions="lost real layers")


def test_3_2_rejects_a_from_wire_that_guesses_the_count_from_zero_layers(assert_wrong) -> None:
    def drop_zero_layers(payload, layer_count):  # ignores layer_count: keeps the layers with any nonzero byte
        keep = payload.flatten(0, 1).ne(0).any(dim=0).any(dim=-1)
        return payload[:, :, keep].contiguous().view(torch.int16)

    assert_wrong("3.2", ref_to_wire, drop_zero_layers, mentions="all zero, every token on expert 0, is a real layer")


def test_3_2_refuses_the_mechanisms_wire_functions(assert_wrong) -> None:
    assert_wrong("3.2", to_wire, from_wire, mentions="library's own to_wire")
    assert_wrong("3.2", lambda r, n: to_wire(r, n), ref_from_wire, mentions="calls the library's own to_wire")
    assert_wrong("3.2", ref_to_wire, lambda p, n: from_wire(p, n), mentions="calls the library's own from_wire")


@pytest.mark.parametrize(
    "answer",
    [lambda fn: (fn, ref_from_wire), lambda fn: (ref_to_wire, fn)],
    ids=["as to_wire", "as from_wire"],
)
def test_3_2_is_not_passed_by_any_mechanism_function(assert_mechanism_does_not_pass, answer) -> None:
    assert assert_mechanism_does_not_pass("3.2", LESSON, answer=answer) > 20


# --- 3.3: the text-branch config walk ------------------------------------------------------------------

BRANCHES = ("text_config", "language_config", "thinker_config", "model_config")


def find_text_attr(config, name):
    seen: set[int] = set()

    def walk(node):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        getter = getattr(node, "get_text_config", None)
        text = getter() if callable(getter) else getattr(node, "text_config", None)
        if text is not None and text is not node:
            yield from walk(text)
        for branch in BRANCHES:
            yield from walk(getattr(node, branch, None))
        yield node

    for node in walk(config):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise AttributeError(f"{type(config).__name__} has no nested {name}")


def _walker(*, branches=BRANCHES, truthy=False, children_first=True, cycle_safe=True, getter=True, root=True):
    """find_text_attr with one thing done wrong: the mistakes learners make, one switch each."""

    def find(config, name):
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


def test_3_3_accepts_the_text_branch_walk() -> None:
    assert find_checker("3.3")(find_text_attr) == "7 lookups right, audio sibling refused, cycle safe"
    check_exercise("3.3", stub)
    assert exercise_results()["3.3"] == "not attempted"


def test_3_3_rejects_a_root_first_breadth_first_walk(assert_wrong) -> None:
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

    assert_wrong("3.3", bfs, mentions="root 1024 beside text_config 4096: got 1024")


def test_3_3_rejects_the_node_before_its_text_config(assert_wrong) -> None:
    assert_wrong("3.3", _walker(children_first=False), mentions="reads the root before its text branch")


def test_3_3_rejects_truthiness_as_presence(assert_wrong) -> None:
    assert_wrong("3.3", _walker(truthy=True), mentions="takes a falsy value for a missing one")


def test_3_3_rejects_walking_only_text_config(assert_wrong) -> None:
    assert_wrong("3.3", _walker(branches=("text_config",)), mentions="not named text_config")


def test_3_3_rejects_a_walk_that_never_descends_thinker_config(assert_wrong) -> None:
    no_thinker = _walker(branches=("text_config", "language_config", "model_config"))
    assert_wrong("3.3", no_thinker, mentions="nested inside thinker_config")


def test_3_3_rejects_a_walk_that_never_falls_back_to_the_root(assert_wrong) -> None:
    assert_wrong("3.3", _walker(root=False), mentions="never reads the config itself")


def test_3_3_rejects_a_walk_that_ignores_get_text_config(assert_wrong) -> None:
    assert_wrong("3.3", _walker(getter=False), mentions="ignores what the config's get_text_config() returns")


def test_3_3_rejects_reading_an_audio_sibling(assert_wrong) -> None:
    every_sub_config = lambda node: [k for k, v in vars(node).items() if hasattr(v, "__dict__")]  # noqa: E731
    assert_wrong("3.3", _walker(branches=every_sub_config), mentions="it read audio_config")


def test_3_3_rejects_a_walk_that_loops_on_a_cycle(assert_wrong) -> None:
    assert_wrong("3.3", _walker(cycle_safe=False), mentions="revisits configs")


def test_3_3_rejects_raising_something_other_than_attribute_error(assert_wrong) -> None:
    def key_error(config, name):
        try:
            return find_text_attr(config, name)
        except AttributeError as e:
            raise KeyError(name) from e

    assert_wrong("3.3", key_error, mentions="raise AttributeError, not KeyError")


def test_3_3_refuses_the_mechanisms_config_walks(assert_wrong) -> None:
    assert_wrong("3.3", get_text_config_attr, mentions="library's own get_text_config_attr")
    assert_wrong("3.3", lambda c, n: get_text_config_attr(c, n), mentions="calls the library's own get_text_config")
    assert_wrong("3.3", lambda c, n: bfs_config_attr(c.get_text_config(), n), mentions="library's own bfs_config_attr")


def test_3_3_is_not_passed_by_any_mechanism_function(assert_mechanism_does_not_pass) -> None:
    assert assert_mechanism_does_not_pass("3.3", LESSON) > 20


@pytest.mark.skipif(not upstream.verl_available(), reason="verl is not installed (make setup)")
def test_3_3_cases_are_what_upstreams_get_hf_config_attr_answers() -> None:
    get_hf_config_attr = load_hf_config_attr()
    for label, config, name, expected, _ in _text_attr_cases():
        assert get_hf_config_attr(config, name) == expected, label
