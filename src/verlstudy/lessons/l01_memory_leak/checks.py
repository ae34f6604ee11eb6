"""Lesson 01's exercise checkers: 1.1 predicts the leak per micro-batch, 1.2 names a planted leak's site.

A notebook reaches them only as check_exercise("N.M", answer); the mechanism's own prediction and
measurements are refused as answers. Each checker names the usual mistake it recognises.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

from verlstudy.common.memtrace import AllocationTracker
from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.lessons.l01_memory_leak.measure import measure_slope
from verlstudy.lessons.l01_memory_leak.pipeline import (
    MicroBatchRunner,
    PipelineConfig,
    clear_planted_leaks,
    predicted_leak_bytes,
    predicted_leak_sites,
)

_PREDICTION_CASES = (
    PipelineConfig(seq_len=16, hidden=8, vocab=16),
    PipelineConfig(seq_len=24, hidden=40, vocab=16, dtype="bfloat16"),
    PipelineConfig(seq_len=8, hidden=64, vocab=16, layers_per_stage=3),
)


@checker("1.1", library_answers=[predicted_leak_bytes, predicted_leak_sites, measure_slope])
def check_leak_prediction(predict: Callable[[int, int, int], int]) -> str:
    """Exercise 1.1: `predict(seq_len, hidden, itemsize)` must equal the measured leak per micro-batch."""
    for cfg in _PREDICTION_CASES:
        s, h, isz = cfg.seq_len, cfg.hidden, cfg.itemsize
        measured, _, _ = measure_slope(cfg, 3)
        got = predict(s, h, isz)
        if isinstance(got, bool) or not isinstance(got, numbers.Real) or math.isnan(got):
            raise ExerciseFailure(f"predict({s}, {h}, {isz}) returned {got!r}; return a number of bytes")
        if got == measured:
            continue
        where = f"for seq_len={s}, hidden={h}, itemsize={isz} you predict {got:g} bytes, measured {measured:g}"
        if got == s * h * isz:
            hint = "that is the receive buffer alone: its .grad stays attached to it and is kept too"
        elif got == 2 * s * h * isz:
            hint = "buffer and gradient are right; the stored model_output (S per-token values) is kept as well"
        elif got == s * h * isz + s * isz:
            hint = "you are missing the receive buffer's gradient"
        elif got in (2 * s * h * 4 + s * 4, 2 * s * h * 2 + s * 2) and got != 2 * s * h * isz + s * isz:
            hint = "use the itemsize you are given, not a fixed 4 or 2 bytes"
        elif got > measured:
            hint = "after backward the saved activations are freed; only the graph's leaves survive"
        else:
            hint = "count the receive buffer, its gradient and the stored per-token output"
        raise ExerciseFailure(f"{where}: {hint}")
    return f"matches the measured slope in {len(_PREDICTION_CASES)} configurations"


def _growth_scenarios() -> list[tuple[str, dict[str, Any], str]]:
    cfg = PipelineConfig(seq_len=32, hidden=16, vocab=48)
    return [
        ("score cache planted, fix applied", {"config": cfg, "planted_leak": "score_cache"}, "cache_scores"),
        (
            "activation log planted, fix applied",
            {"config": cfg, "planted_leak": "activation_log"},
            "record_activation_stats",
        ),
        ("fix applied, nothing planted", {"config": cfg, "planted_leak": None}, "loss_func"),
    ]


@checker("1.2")
def check_growth_site(find: Callable[[AllocationTracker, Callable[[], None]], str]) -> str:
    """Exercise 1.2: `find(tracker, run_micro_batch)` must name the function whose allocations grow."""
    for title, spec, expected in _growth_scenarios():
        clear_planted_leaks()
        runner = MicroBatchRunner(spec["config"], spec["planted_leak"])
        tracker = AllocationTracker()
        try:
            with tracker:
                got = find(tracker, runner)
        finally:
            clear_planted_leaks()
        if not isinstance(got, str):
            raise ExerciseFailure(f"{title}: return the function name as a string, got {type(got).__name__}")
        if got != expected:
            if got.startswith(f"{expected} ("):
                hint = "return the function's name only (Site.function), not the site's label with file and line"
            elif got in ("backward_step", "stage_forward"):
                hint = (
                    "one-off allocations of the first micro-batch (parameter gradients) are not growth: "
                    "run a micro-batch, take tracker.mark(), run another, then look at top_sites(since=mark)"
                )
            else:
                hint = "group what was allocated after a mark and is still alive by function: the largest is the leak"
            raise ExerciseFailure(f"{title}: you named {got!r}; {hint}")
    return "named the growing site in all 3 scenarios"
