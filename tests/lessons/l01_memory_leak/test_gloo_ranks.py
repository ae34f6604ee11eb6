"""gloo_ranks: the 1F1B order, and the stages as real gloo ranks, where only the last stage grows."""

from __future__ import annotations

import itertools

import pytest

from verlstudy.common.dist import run_local
from verlstudy.lessons.l01_memory_leak import pipeline as pl
from verlstudy.lessons.l01_memory_leak.gloo_ranks import (
    gloo_pipeline_runs,
    gloo_pipeline_worker,
    levels_after,
    one_f_one_b_order,
)
from verlstudy.lessons.l01_memory_leak.pipeline import PipelineConfig, predicted_leak_bytes, run_pipeline

CFG = PipelineConfig(seq_len=16, hidden=8, vocab=12)


@pytest.mark.parametrize(
    ("pp", "rank", "m", "expected"),
    [
        (2, 0, 3, [("F", 0), ("F", 1), ("B", 0), ("F", 2), ("B", 1), ("B", 2)]),
        (2, 1, 3, [("F", 0), ("B", 0), ("F", 1), ("B", 1), ("F", 2), ("B", 2)]),
        (4, 0, 2, [("F", 0), ("F", 1), ("B", 0), ("B", 1)]),
        (1, 0, 2, [("F", 0), ("B", 0), ("F", 1), ("B", 1)]),
    ],
)
def test_one_f_one_b_order(pp: int, rank: int, m: int, expected: list) -> None:
    assert one_f_one_b_order(pp, rank, m) == expected


def test_one_f_one_b_order_rejects_a_rank_outside_the_pipeline() -> None:
    with pytest.raises(ValueError, match="rank must be < pp_size"):
        one_f_one_b_order(2, 2, 1)
    with pytest.raises(ValueError, match="num_micro_batches must be an int >= 1"):
        one_f_one_b_order(2, 0, 0)


def test_one_f_one_b_order_properties() -> None:
    for pp in range(1, 5):
        for rank in range(pp):
            for m in range(1, 7):
                order = one_f_one_b_order(pp, rank, m)
                assert sorted(order) == sorted([("F", i) for i in range(m)] + [("B", i) for i in range(m)])
                for i in range(m):
                    assert order.index(("F", i)) < order.index(("B", i))
                # At most pp - rank micro-batches are ever in flight on this rank: O(depth), not O(m).
                live = peak = 0
                for kind, _ in order:
                    live += 1 if kind == "F" else -1
                    peak = max(peak, live)
                assert peak <= pp - rank


def test_gloo_two_ranks_only_the_last_stage_grows() -> None:
    # bounded: run_local raises TimeoutError and kills both ranks if they are not done in timeout_s
    r0, r1 = run_local(gloo_pipeline_worker, 2, CFG, (1, 2, 3), False, 0, timeout_s=60)
    assert (r0["rank"], r1["rank"]) == (0, 1)
    assert r0["slope"] == 0.0
    assert r1["slope"] == sum(predicted_leak_bytes(CFG).values())
    assert {s.function for s in r1["top_sites"]} >= {"create_tensor_recv_prev", "loss_func"}
    # The same losses as the single-process schedule: the stages compute the same thing.
    assert r1["losses"] == run_pipeline(CFG, 3).losses
    assert r0["losses"] == []


def test_gloo_three_ranks_still_only_the_last_stage_grows() -> None:
    cfg = pl.config_with(CFG, pp_size=3)
    ranks = run_local(gloo_pipeline_worker, 3, cfg, (1, 3), False, 0, timeout_s=60)
    assert [r["slope"] for r in ranks] == [0.0, 0.0, sum(predicted_leak_bytes(cfg).values())]
    assert ranks[2]["losses"] == run_pipeline(cfg, 3).losses


def test_gloo_with_the_fix_the_last_stage_keeps_only_outputs() -> None:
    _, r1 = run_local(gloo_pipeline_worker, 2, CFG, (1, 3), True, 0, timeout_s=60)
    assert r1["slope"] == CFG.seq_len * CFG.itemsize


def test_gloo_worker_needs_a_stage_per_rank() -> None:
    with pytest.raises(ValueError, match="must equal world_size"):
        gloo_pipeline_worker(0, 3, CFG, (1,))


def test_gloo_timeline_stage_0_is_a_sawtooth_and_the_last_stage_a_staircase() -> None:
    leak = pl.config_with(CFG, pp_size=2)
    r0, r1 = run_local(gloo_pipeline_worker, 2, leak, (1, 2), False, 0, 4, timeout_s=60)
    assert [step for step, _ in r0["timeline"]] == ["F0", "F1", "B0", "F2", "B1", "F3", "B2", "B3"]
    assert [step for step, _ in r1["timeline"]] == ["F0", "B0", "F1", "B1", "F2", "B2", "F3", "B3"]
    after_f, after_b = levels_after(r0["timeline"], "F"), levels_after(r0["timeline"], "B")
    one = after_f[0]  # one micro-batch's stage-0 activations in flight
    assert after_f == [one, 2 * one, 2 * one, 2 * one] and after_b == [one, one, one, 0]
    b1 = levels_after(r1["timeline"])
    leak_bytes = sum(predicted_leak_bytes(leak).values())
    assert [y - x for x, y in itertools.pairwise(b1)] == [leak_bytes] * 3
    _, fixed = run_local(gloo_pipeline_worker, 2, leak, (1, 2), True, 0, 4, timeout_s=60)
    b1_fix = levels_after(fixed["timeline"])
    # two gradient sends in flight at most, then only the stored outputs accumulate
    assert [y - x for x, y in itertools.pairwise(b1_fix[1:])] == [CFG.seq_len * CFG.itemsize] * 2
    assert (
        r0["end_bytes"][1] == r0["end_bytes"][2]
        and run_local(gloo_pipeline_worker, 2, leak, (1, 2), False, 0, timeout_s=60)[0]["timeline"] == []
    )


def test_levels_after_bad_input() -> None:
    assert levels_after([("F0", 3), ("B0", 1)], "F") == [3]
    with pytest.raises(ValueError, match="kind must be 'F' or 'B'"):
        levels_after([("F0", 3)], "X")
    with pytest.raises(TypeError, match=r"list of \(step, bytes\) pairs"):
        levels_after([3, 4])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="timeline_micro_batches must be an int"):
        gloo_pipeline_worker(0, 2, CFG, (1,), False, 0, 2.5)  # type: ignore[arg-type]


def test_gloo_pipeline_runs_in_one_launch_equal_separate_launches() -> None:
    leak = pl.config_with(CFG, pp_size=2)
    both = run_local(gloo_pipeline_runs, 2, leak, (((1, 2, 3), False), ((1, 2), True)), 0, 4, timeout_s=60)
    leaking = run_local(gloo_pipeline_worker, 2, leak, (1, 2, 3), False, 0, 4, timeout_s=60)
    fixed = run_local(gloo_pipeline_worker, 2, leak, (1, 2), True, 0, 4, timeout_s=60)
    assert [runs[0] for runs in both] == leaking and [runs[1] for runs in both] == fixed
    with pytest.raises(TypeError, match="runs must be a non-empty list"):
        gloo_pipeline_runs(0, 2, leak, ())
    with pytest.raises(TypeError, match="each run must be"):
        gloo_pipeline_runs(0, 2, leak, (((1, 2), 1),))  # type: ignore[list-item]
