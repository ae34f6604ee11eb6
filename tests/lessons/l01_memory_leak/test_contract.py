"""Lesson 01's checkers test a contract: new wrong answers of other classes fail, right ones written otherwise pass.

1.1's classes: a count computed in 32-bit integers or float32 (wrong only at real sizes), another unit, a
branch right for some dtypes only, a floor or a constant added, parts returned instead of a total, S and H
swapped, one token too few; right ones in numpy, torch, float or math.prod. 1.2's: the first micro-batch
counted (no warm-up, totals, a diff of totals), a fixed function excluded, a count of allocations; right ones
comparing live bytes per function across micro-batches.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import torch

from conftest import Wrong, checker_tests
from verlstudy.kit.exercises import check_exercise, exercise_hint, exercise_results

# ---------------------------------------------------------------- 1.1


def _bytes(s, h, i):
    return 2 * s * h * i + s * i


def int32_arithmetic(s, h, i):
    x = np.array([s, h, i], dtype=np.int32)
    return int(2 * x[0] * x[1] * x[2] + x[0] * x[2])


def float32_tensor(s, h, i):
    return float(torch.tensor(float(_bytes(s, h, i)), dtype=torch.float32))


def in_kib(s, h, i):
    return _bytes(s, h, i) / 1024


def fp32_and_bf16_only(s, h, i):
    per_value = i if i in (2, 4) else 4
    return 2 * s * h * per_value + s * per_value


def allocation_floor(s, h, i):
    return max(_bytes(s, h, i), 512)


def plus_a_header(s, h, i):
    return _bytes(s, h, i) + 16


def parts(s, h, i):
    return (s * h * i, s * h * i, s * i)


def one_token_short(s, h, i):
    return _bytes(s - 1, h, i)


def half(s, h, i):
    return _bytes(s, h, i) // 2


def per_layer_activations(s, h, i):  # the buffer, its gradient, the output, and one activation kept per layer
    return _bytes(s, h, i) + s * h * i


def numpy_int64(s, h, i):
    return np.int64(s) * h * i * 2 + np.int64(s) * i


def torch_scalar(s, h, i):
    return torch.tensor(s, dtype=torch.int64) * (2 * h + 1) * i


def by_prod(s, h, i):
    return float(2 * math.prod((s, h, i)) + math.prod((s, i)))


# ---------------------------------------------------------------- 1.2


def largest_alive(tracker, run):  # everything alive after two micro-batches, one-offs included
    run()
    run()
    return tracker.top_sites(1)[0].function


def _by_function(tracker, since=None):
    totals = {}
    for alloc in tracker.live(since=since):
        totals[alloc.site.function] = totals.get(alloc.site.function, 0) + alloc.nbytes
    return totals


def total_change_over_two(tracker, run):  # what was alive before the first micro-batch vs after the second
    before = _by_function(tracker)
    run()
    run()
    after = _by_function(tracker)
    return max(after, key=lambda f: after[f] - before.get(f, 0))


def not_the_store(tracker, run):  # "loss_func is the store, never the leak"
    run()
    mark = tracker.mark()
    run()
    return next(site.function for site in tracker.top_sites(5, since=mark) if site.function != "loss_func")


def most_allocations_since(tracker, run):
    run()
    mark = tracker.mark()
    run()
    run()
    return max(tracker.top_sites(10, since=mark), key=lambda site: (site.count, site.bytes)).function


def growth_between_micro_batches(tracker, run):
    run()
    first = _by_function(tracker)
    run()
    second = _by_function(tracker)
    return max(second, key=lambda f: second[f] - first.get(f, 0))


def warm_up_twice_then_mark(tracker, run):
    run()
    run()
    mark = tracker.mark()
    run()
    run()
    totals = _by_function(tracker, since=mark)
    return sorted(totals, key=totals.get)[-1]


WRONG = {
    "1.2": [
        Wrong(largest_alive, ("one-off", "not growth", "does not grow"), why="one-offs counted"),
        Wrong(total_change_over_two, ("not growth", "does not grow"), why="totals over the first two"),
        Wrong(not_the_store, ("grows the most", "stored outputs"), why="loss_func excluded by name"),
        Wrong(most_allocations_since, "most allocations", why="counted allocations"),
    ],
    "1.1": [
        Wrong(int32_arithmetic, "32-bit", why="numpy int32 wraps past 2**31"),
        Wrong(float32_tensor, "float32", why="a float32 tensor rounds large counts"),
        Wrong(in_kib, "in KiB", why="KiB, not bytes"),
        Wrong(fp32_and_bf16_only, ("bytes more", "bytes short"), why="fp8 and fp64 read as 4 bytes"),
        Wrong(allocation_floor, ("bytes more", "bytes short"), why="a 512-byte floor"),
        Wrong(plus_a_header, "constant 16 bytes", why="a header added"),
        Wrong(parts, "return a number", why="the three parts, not their sum"),
        Wrong(one_token_short, "one token too few", why="S - 1 tokens"),
        Wrong(half, ("bytes short", "times"), why="half the count"),
        Wrong(per_layer_activations, "saved activations", why="an activation kept"),
    ],
}
RIGHT = {
    "1.1": [numpy_int64, torch_scalar, by_prod],
    "1.2": [growth_between_micro_batches, warm_up_twice_then_mark],
}
test_new_wrong_answers_fail, test_new_right_answers_pass = checker_tests(WRONG, RIGHT)


def test_1_1_generated_sizes_reach_real_models_and_counts_past_2_to_the_31() -> None:
    from hypothesis import given, settings

    from verlstudy.lessons.l01_memory_leak.checks import _leak_inputs, _reference_leak

    seen = {"past 2**31": 0, "S = 1": 0, "S >= 8192": 0, "H >= 8192": 0, 1: 0, 8: 0}

    @settings(max_examples=60, derandomize=True, database=None)
    @given(_leak_inputs())
    def record(args) -> None:
        s, h, i = args
        seen["past 2**31"] += _reference_leak(s, h, i) >= 2**31
        seen["S = 1"] += s == 1
        seen["S >= 8192"] += s >= 8192
        seen["H >= 8192"] += h >= 8192
        seen[i] = seen.get(i, 0) + 1

    record()
    assert set(seen) == {"past 2**31", "S = 1", "S >= 8192", "H >= 8192", 1, 2, 4, 8}, seen
    assert min(seen[k] for k in ("past 2**31", "S = 1", "S >= 8192", "H >= 8192", 1, 8)) >= 2, seen


@pytest.mark.parametrize("exercise_id", ["1.1", "1.2"])
def test_no_rung_before_the_solution_reads_the_formula(exercise_id, capsys) -> None:
    exercise_hint(exercise_id)
    hints = capsys.readouterr().out
    assert "a question first" in hints
    # 1.2's exercise text itself names the tracker's calls: its rungs must not say which one to use when
    forbidden = {"1.1": ("*", "2 x", "twice", "S x H", "plus", "three parts", "gradient"), "1.2": ("since=mark",)}
    for formula in forbidden[exercise_id]:
        assert formula not in hints, (exercise_id, formula)


def test_each_check_is_quick() -> None:
    for exercise_id, answer in (("1.1", _bytes), ("1.2", growth_between_micro_batches)):
        start = time.process_time()
        check_exercise(exercise_id, answer)
        assert exercise_results()[exercise_id] == "correct"
        assert time.process_time() - start < 1.0  # CPU, not wall: a loaded machine does not fail it
