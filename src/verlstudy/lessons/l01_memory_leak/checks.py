"""Lesson 01's exercise checkers: 1.1 predicts the leak per micro-batch, 1.2 names a planted leak's site.

A notebook reaches them only as check_exercise("N.M", answer); the mechanism's own prediction and
measurements are refused as answers. A wrong answer's message names the mistake it shows; how to get
there is each checker's `method`, shown after repeated tries or by `exercise_hint`.
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


@checker(
    "1.1",
    library_answers=[predicted_leak_bytes, predicted_leak_sites, measure_slope],
    method=(
        "the stored output's grad_fn pins its graph. Backward frees the graph's saved activations but not its "
        "leaves, and on the last stage the leaf is the receive buffer (S x H x itemsize bytes), whose .grad "
        "backward has just filled (the same size again); the stored per-token output itself adds S x itemsize. "
        "So predict 2 * S * H * itemsize + S * itemsize"
    ),
    reveals=[
        "16640",
        "8192 B x1 backward_step",
        "S x H x itemsize",
        "(S x itemsize)",
        "buffer + its gradient + S x 2 B of output",
    ],
)
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
        raise ExerciseFailure(f"{where}: {_leak_mistake(got, measured, s, h, isz)}")
    return f"matches the measured slope in {len(_PREDICTION_CASES)} configurations"


def _leak_mistake(got: float, measured: int, s: int, h: int, isz: int) -> str:
    """The mistake a wrong byte count shows, named without the formula."""
    buffer, output = s * h * isz, s * isz
    if got == buffer:
        return "that is the receive buffer alone, but more than the buffer survives with it"
    if got == 2 * buffer:
        return "the buffer's share is right, but you leave out what the store itself is meant to keep"
    if got == buffer + output:
        return "you count the buffer and the stored output, but backward left something more on the buffer"
    if got == 2 * buffer + s:
        return "your stored-output term counts elements, not bytes"
    if got in (2 * s * h * 4 + s * 4, 2 * s * h * 2 + s * 2):
        return "your count is right for another dtype: use the itemsize you are given, not a fixed 4 or 2 bytes"
    if got > measured:
        return (
            f"you count {got - measured:g} bytes too many: backward has already freed the graph's saved "
            "activations, so they do not stay"
        )
    return f"you are {measured - got:g} bytes short of what the tracker measured"


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


@checker(
    "1.2",
    method=(
        "run one micro-batch first (it makes the one-off allocations, such as the parameter gradients), take "
        "m = tracker.mark(), run one more micro-batch, then return tracker.top_sites(1, since=m)[0].function: "
        "the site holding the most bytes allocated after the mark and still alive"
    ),
    reveals=["tracker.top_sites(5, since=last_mb)", "warm-up: one-off allocations happen here"],
)
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
                mistake = "return the function's name only (Site.function), not the site's label with file and line"
            elif got in ("backward_step", "stage_forward"):
                mistake = (
                    "that site allocates once, in the first micro-batch (one-off allocations such as the parameter "
                    "gradients), so it is not growth"
                )
            elif got == "create_tensor_recv_prev":
                mistake = "that was the unfixed pipeline's leak; these pipelines have the fix applied"
            else:
                mistake = "that is not the site whose live bytes grow the most from one micro-batch to the next"
            raise ExerciseFailure(f"{title}: you named {got!r}; {mistake}")
    return "named the growing site in all 3 scenarios"
