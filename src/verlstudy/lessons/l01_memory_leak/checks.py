"""Lesson 01's exercise checkers: 1.1 predicts the leak per micro-batch, 1.2 names a planted leak's site.

Both judge by property (`verlstudy.kit.properties`): the learner's function against the reference on named
cases, then on generated inputs from the exercise's own domain. 1.1's reference is the byte count the
tracker measures (tests/lessons/l01_memory_leak/test_checks.py pins it to `measure_slope`); 1.2 runs the
learner's search on toy pipelines with a planted leak and compares the name with the planted site. A
notebook reaches them only as check_exercise("N.M", answer); the mechanism's own prediction and
measurements are refused as answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from verlstudy.common.memtrace import ALLOCATOR_GRANULARITY, AllocationTracker, allocator_block
from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.kit.properties import Case, a_kind, compare_on_inputs, one_thread
from verlstudy.lessons.l01_memory_leak.measure import measure_slope
from verlstudy.lessons.l01_memory_leak.pipeline import (
    MicroBatchRunner,
    PipelineConfig,
    clear_planted_leaks,
    predicted_leak_bytes,
    predicted_leak_sites,
)

# ---------------------------------------------------------------- 1.1 predict the leak

# The notebook's own sizes (S=64, H=32, float32): a number right only there is example-shaped
NOTEBOOK_EXAMPLE = (64, 32, 4)


def _reference_leak(seq_len: int, hidden: int, itemsize: int) -> int:
    buffer = seq_len * hidden * itemsize
    return buffer + buffer + seq_len * itemsize  # the buffer, its gradient, the stored per-token output


def _leak_inputs() -> Any:
    from hypothesis import strategies as st

    return st.tuples(st.integers(1, 4096), st.integers(1, 1024), st.sampled_from([1, 2, 4, 8]))


LEAK_CASES = (
    Case((16, 8, 4), "the checker's first pipeline: S=16, H=8, float32"),
    Case((24, 40, 2), "bfloat16 (2 bytes per element), hidden wider than the sequence"),
    Case((1, 1, 4), "one token, hidden size 1"),
    Case((8, 64, 8), "float64, 8 bytes per element"),
)


def _leak_mistake(args: tuple[Any, ...], got: Any, want: Any) -> str | None:
    """The mistake a wrong byte count shows, named without the formula."""
    s, h, isz = args
    if not isinstance(got, int | float) or isinstance(got, bool):
        return "return a number of bytes, as an int"
    if isinstance(got, float):
        return "return the byte count as an int, not a float" if got == want else None
    buffer, output = s * h * isz, s * isz
    if (s, h, isz) != NOTEBOOK_EXAMPLE and got == _reference_leak(*NOTEBOOK_EXAMPLE):
        return "that is the count for the notebook's own sizes: use the seq_len, hidden and itemsize you are given"
    if got == buffer:
        return "that is the receive buffer alone, but more than the buffer survives with it"
    if got == 2 * buffer:
        return "the buffer's share is right, but you leave out what the store itself is meant to keep"
    if got == buffer + output:
        return "you count the buffer and the stored output, but backward left something more on the buffer"
    if got == 2 * buffer + s:
        return "your stored-output term counts elements, not bytes"
    if got == 2 * buffer + h * isz:
        return "the stored output holds one value per token, not one per hidden unit"
    if any(got == 2 * s * h * k + s * k for k in (1, 2, 4, 8) if k != isz):
        return "your count is right for another dtype: use the itemsize you are given, not a fixed one"
    if got == 8 * want:
        return "that is the count in bits, eight times too many: the tracker counts bytes"
    if any(got == 2 * buffer + s * k for k in (1, 2, 4, 8) if k != isz):
        return (
            "the buffer and its gradient are right, but your stored-output term uses a fixed size per value: "
            "the output has the itemsize you are given too"
        )
    for tokens, how in ((s + 1, "one token too many"), (s - 1, "one token too few")):
        if tokens >= 1 and got == _reference_leak(tokens, h, isz):
            return f"that is the count for {tokens} tokens, {how}: S is the number of tokens you are given"
    if got == 2 * allocator_block(buffer) + allocator_block(output) != want:
        return (
            f"you rounded each tensor up to a {ALLOCATOR_GRANULARITY}-byte block, as the CUDA caching allocator does: "
            "the tracker counts the bytes each tensor's storage holds"
        )
    extra = got - want
    if extra > 0 and extra % buffer == 0 and extra // buffer <= 4:
        many = "one more tensor" if extra == buffer else f"{extra // buffer} more tensors"
        return (
            f"you count {many} of the buffer's size: backward has already freed the graph's saved activations, "
            "so they do not stay"
        )
    if extra > 0:
        return f"you count {extra:g} bytes more than the tracker measures"
    return f"you are {-extra:g} bytes short of what the tracker measures"


@checker(
    "1.1",
    library_answers=[predicted_leak_bytes, predicted_leak_sites, measure_slope],
    where=(
        "section 1's description of the toy pipeline and the mechanism the PR names: what the stored output's "
        "grad_fn keeps reachable on the last stage, and what backward has written onto it by then"
    ),
    method=(
        "List what stays alive after one micro-batch's backward. The stored output's graph keeps its leaves; "
        "on the last stage one leaf is the fresh receive buffer, one value per token per hidden unit. Backward "
        "has just written that buffer's gradient, a tensor of the same size, and nothing clears it. The stored "
        "output itself is meant to stay: one value per token. Backward freed the saved activations, so they "
        "do not count. Add the three parts, each in elements times the bytes per element you are given, and "
        "return an int."
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
    """Exercise 1.1: `predict(seq_len, hidden, itemsize)` must equal the leak the tracker measures, as an int."""
    return compare_on_inputs(
        predict,
        _reference_leak,
        inputs=_leak_inputs(),
        edge_cases=LEAK_CASES,
        mistakes=_leak_mistake,
        name="predict_leak",
        max_examples=60,
    )


# ---------------------------------------------------------------- 1.2 find the growth site

PLANTED_SITES = {
    "score_cache": "cache_scores",
    "activation_log": "record_activation_stats",
    None: "loss_func",
    "score_cache+counters": "cache_scores",
    "activation_log+snapshot": "record_activation_stats",
}
# Beside the planted cache, a site that keeps several tiny tensors per micro-batch: the most allocations, few bytes
COUNTER_SITE = "keep_step_counters"
_STEP_COUNTERS: list[Any] = []


def keep_step_counters() -> None:
    """A small growing site: three 8-byte tensors kept per micro-batch (more allocations, fewer bytes)."""
    for _ in range(3):
        _STEP_COUNTERS.append(torch.zeros(2))


# Beside the planted activation log, a site that keeps one tensor a little larger than one activation per
# micro-batch: the largest single allocation, while the log's several activations add up to more bytes
SNAPSHOT_SITE = "keep_debug_snapshot"
_SNAPSHOTS: list[Any] = []


def keep_debug_snapshot(seq_len: int, hidden: int) -> None:
    """A growing site: one tensor of (S + 1) x H float32 values kept per micro-batch (one larger allocation)."""
    _SNAPSHOTS.append(torch.zeros(seq_len + 1, hidden))


ONE_OFF_SITES = ("backward_step", "stage_forward", "p2p_copy")
WHAT_IS_PLANTED = {
    "score_cache": "score cache planted",
    "activation_log": "activation log planted",
    None: "nothing planted",
    "score_cache+counters": "score cache planted, and a site keeping three tiny tensors per micro-batch",
    "activation_log+snapshot": "activation log planted, and a site keeping one larger tensor per micro-batch",
}


# A compound spec: the leak planted in the pipeline, and the site that grows beside it, called after each
# micro-batch with (seq_len, hidden)
_GROWS_BESIDE: dict[str, tuple[str, Callable[[int, int], None]]] = {
    "score_cache+counters": ("score_cache", lambda seq_len, hidden: keep_step_counters()),
    "activation_log+snapshot": ("activation_log", keep_debug_snapshot),
}


def _spec_config(spec: tuple[Any, ...]) -> PipelineConfig:
    _, seq_len, hidden, vocab, layers = spec
    return PipelineConfig(seq_len=seq_len, hidden=hidden, vocab=vocab, layers_per_stage=layers)


def _show_spec(args: tuple[Any, ...], kwargs: Any) -> str:
    planted, s, h, v, layers = args[0]
    return f"a pipeline with the fix applied, {WHAT_IS_PLANTED[planted]} (S={s}, H={h}, V={v}, {layers} layer(s)/stage)"


def _growth_inputs() -> Any:
    from hypothesis import strategies as st

    spec = st.tuples(
        st.sampled_from(["score_cache", "activation_log", None, "activation_log+snapshot"]),
        st.integers(4, 48),
        st.integers(4, 48),
        st.integers(8, 64),
        st.integers(1, 3),
    )
    return st.tuples(spec)


GROWTH_CASES = (
    Case((("score_cache", 32, 16, 48, 1),), "score cache planted: logits kept per micro-batch"),
    Case((("activation_log", 32, 16, 48, 1),), "activation log planted: activations kept per micro-batch"),
    Case(((None, 32, 16, 48, 1),), "nothing planted: only the stored outputs grow"),
    Case((("activation_log", 4, 4, 64, 1),), "a small activation log beside a wide vocabulary"),
    Case(
        (("score_cache+counters", 16, 8, 32, 1),),
        "the site that grows the most in bytes makes one allocation per micro-batch; another makes three",
    ),
    Case(
        (("activation_log+snapshot", 16, 8, 32, 3),),
        "the site that grows the most in bytes makes six smaller allocations per micro-batch; another makes "
        "the single largest one",
    ),
)


class _GrowthRun:
    """Runs the learner's search on one planted pipeline; a non-string answer is kept for the message."""

    def __init__(self, find: Callable[[AllocationTracker, Callable[[], None]], Any]) -> None:
        self.find, self.returned_object = find, None

    def __call__(self, spec: tuple[Any, ...]) -> Any:
        self.returned_object = None
        _clear_helpers()
        planted, seq_len, hidden = spec[:3]
        leak, beside = _GROWS_BESIDE.get(planted, (planted, None))
        runner: Callable[[], None] = MicroBatchRunner(_spec_config(spec), leak)
        if beside is not None:
            runner = _with_helper(runner, lambda: beside(seq_len, hidden))
        tracker = AllocationTracker()
        try:
            with tracker:
                got = self.find(tracker, runner)
        finally:
            _clear_helpers()
        if not isinstance(got, str):
            self.returned_object = got
            return a_kind(got)
        return got


def _clear_helpers() -> None:
    clear_planted_leaks()
    _STEP_COUNTERS.clear()
    _SNAPSHOTS.clear()


def _with_helper(runner: Callable[[], None], helper: Callable[[], None]) -> Callable[[], None]:
    def run_micro_batch() -> None:
        runner()
        helper()

    return run_micro_batch


def _growth_reference(spec: tuple[Any, ...]) -> str:
    return PLANTED_SITES[spec[0]]


def _growth_mistake(run: _GrowthRun) -> Callable[[tuple[Any, ...], Any, Any], str | None]:
    def name(args: tuple[Any, ...], got: Any, want: Any) -> str | None:
        if run.returned_object is not None:
            return "return the function's name as a string (a Site's .function), not the object itself"
        if got.startswith(f"{want} ("):
            return "return the function's name only (Site.function), not the site's label with file and line"
        if got.endswith(".py") or "/" in got:
            return "that is a file name: return the name of the function that allocated (Site.function)"
        if got in ONE_OFF_SITES:
            return (
                "that site allocates once, in the first micro-batch (one-off allocations such as the parameter "
                "gradients), so it is not growth"
            )
        if got == COUNTER_SITE:
            return (
                "that site makes the most allocations per micro-batch, but they are tiny: growth is measured in "
                "bytes kept, not in how many tensors"
            )
        if got == SNAPSHOT_SITE:
            return (
                "that site keeps the single largest tensor per micro-batch, but another site keeps more bytes in "
                "all, spread over several smaller tensors"
            )
        if got == "create_tensor_recv_prev":
            return "that was the unfixed pipeline's leak; these pipelines have the fix applied"
        if got == PLANTED_SITES[None]:
            return "that site grows too (the stored outputs), but it is not the site that grows the most"
        if got in PLANTED_SITES.values():
            return (
                "that is a site of another pipeline, not of the one you were handed: did you return a fixed name? "
                "Read the answer off the tracker each time"
            )
        return "that is not the site that grows the most from one micro-batch to the next"

    return name


@checker(
    "1.2",
    where=(
        "the tracker's description before the exercise: what `mark()` returns, what `top_sites(n, since=...)` "
        "groups and sorts, and which allocations the first micro-batch makes only once"
    ),
    method=(
        "Let the first micro-batch happen before you start looking, so its one-off allocations are behind you. "
        "Then put a marker in the tracker, run one more micro-batch, and ask the tracker for the allocation "
        "sites of what was created after your marker and is still alive, largest first. The growing site is "
        "the first of them; return its function name as a string."
    ),
    reveals=["tracker.top_sites(5, since=last_mb)", "warm-up: one-off allocations happen here"],
)
def check_growth_site(find: Callable[[AllocationTracker, Callable[[], None]], str]) -> str:
    """Exercise 1.2: `find(tracker, run_micro_batch)` must name the function whose allocations grow."""
    if not callable(find):
        raise ExerciseFailure(f"the answer should be a function, got {type(find).__name__}")
    run = _GrowthRun(find)
    with one_thread():
        return _compare_growth(run)


def _compare_growth(run: _GrowthRun) -> str:
    return compare_on_inputs(
        run,
        _growth_reference,
        inputs=_growth_inputs(),
        edge_cases=GROWTH_CASES,
        mistakes=_growth_mistake(run),
        name="find_growth_site",
        show=_show_spec,
        max_examples=6,
    )
