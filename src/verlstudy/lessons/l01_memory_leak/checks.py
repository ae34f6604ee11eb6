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

from verlstudy.common.memtrace import AllocationTracker
from verlstudy.kit import i18n
from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.kit.properties import Case, a_kind, compare_on_inputs, one_thread
from verlstudy.lessons.l01_memory_leak.leak_judging import count_of, leak_formula, name_leak_mistake
from verlstudy.lessons.l01_memory_leak.measure import measure_slope
from verlstudy.lessons.l01_memory_leak.pipeline import (
    MicroBatchRunner,
    PipelineConfig,
    clear_planted_leaks,
    predicted_leak_bytes,
    predicted_leak_sites,
)

# ---------------------------------------------------------------- 1.1 predict the leak


def _reference_leak(seq_len: int, hidden: int, itemsize: int) -> int:
    return leak_formula(seq_len, hidden, itemsize)


def _leak_inputs() -> Any:
    from hypothesis import strategies as st

    # S from one token to verl's 32k-token responses; H from 1 to 16384 (the toy's limit, a 70B-class model's
    # 8192 inside it); every itemsize torch has (fp8, bf16/fp16, fp32, fp64)
    seq = st.one_of(st.integers(1, 64), st.sampled_from([1, 2, 1024, 4096, 8192, 32768]), st.integers(1, 32768))
    hidden = st.one_of(st.integers(1, 64), st.sampled_from([1, 896, 4096, 8192, 16384]), st.integers(1, 16384))
    # long sequences on wide models: counts past 2**31 bytes, where a 32-bit integer wraps
    large = st.tuples(st.integers(16384, 32768), st.integers(8192, 16384), st.sampled_from([8, 4]))
    return st.one_of(st.tuples(seq, hidden, st.sampled_from([1, 2, 4, 8])), large)


LEAK_CASES = (
    Case((16, 8, 4), "the checker's first pipeline: S=16, H=8, float32"),
    Case((24, 40, 2), "bfloat16 (2 bytes per element), hidden wider than the sequence"),
    Case((1, 1, 4), "one token, hidden size 1"),
    Case((8, 64, 8), "float64, 8 bytes per element"),
    Case((32768, 16384, 8), "a 32k-token micro-batch, hidden 16384, float64: past 2**32 bytes"),
)


def _as_count(predict: Callable[[int, int, int], Any]) -> Callable[[int, int, int], Any]:
    def run(seq_len: int, hidden: int, itemsize: int) -> Any:
        return count_of(predict(seq_len, hidden, itemsize))

    run.__name__ = "predict_leak"
    return run


@checker(
    "1.1",
    library_answers=[predicted_leak_bytes, predicted_leak_sites, measure_slope, leak_formula],
    where=(
        "section 1's description of the toy pipeline and the mechanism the PR names: what the stored output's "
        "grad_fn keeps reachable on the last stage, and what backward has written onto it by then"
    ),
    question=(
        "Take a smaller case: S = 2 tokens, H = 3, float32. After one micro-batch's forward and backward, which "
        "tensors on the last stage can you still reach from the stored output, by its grad_fn or as the output "
        "itself? For each one, how many values does it hold? Which did backward create, and which did it free?"
    ),
    method=(
        "List what stays alive after one micro-batch's backward, then size each item. Follow the stored output's "
        "graph back to its leaves on the last stage and ask which of them is new in every micro-batch; ask what "
        "backward writes onto a leaf that requires grad, and whether anything clears it; ask whether the stored "
        "output itself is meant to stay. Leave out what backward frees. Size each surviving tensor from its shape "
        "and the bytes per element you are given, and check your total against the measured bytes per micro-batch."
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
    """Exercise 1.1: `predict(seq_len, hidden, itemsize)` must equal the bytes the tracker measures per micro-batch.

    Contract. Returns the bytes one leaking micro-batch leaves alive on the last stage (the receive buffer,
    the gradient backward wrote into it, and the stored per-token output), as a number: an int, or the same
    whole value as a float, a numpy number or a one-value tensor (the lesson does not teach the type; a
    fraction of a byte, a count wrapped by a 32-bit integer or rounded by float32 is wrong). Pure arithmetic:
    no effect to check. Domain: S from 1 to 32768 (verl's long responses), H from 1 to 16384, itemsize 1, 2,
    4 or 8, so counts run past 2**32 bytes. `_reference_leak` is pinned to what `measure_slope` measures
    (tests/lessons/l01_memory_leak/test_checks.py).
    """
    if not callable(predict):
        raise ExerciseFailure(i18n.pick("the answer should be a function, got {kind}", kind=type(predict).__name__))
    return compare_on_inputs(
        _as_count(predict),
        _reference_leak,
        inputs=_leak_inputs(),
        edge_cases=LEAK_CASES,
        mistakes=name_leak_mistake(predict),
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
    "score_cache+table": "cache_scores",
    "activation_log+table": "record_activation_stats",
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


# Beside a planted leak, a one-off larger than any growth: a table built in the first micro-batch and kept, never
# grown (an answer that counts the first micro-batch, or totals instead of growth, names it)
TABLE_SITE = "build_position_table"
_TABLES: list[Any] = []


def build_position_table(seq_len: int, hidden: int) -> None:
    """A one-off: a (64 S) x H float32 table built on the first micro-batch only, kept for the whole run."""
    if not _TABLES:
        _TABLES.append(torch.zeros(64 * seq_len, hidden))


ONE_OFF_SITES = ("backward_step", "stage_forward", "p2p_copy", TABLE_SITE)
WHAT_IS_PLANTED = {
    "score_cache": "score cache planted",
    "activation_log": "activation log planted",
    None: "nothing planted",
    "score_cache+counters": "score cache planted, and a site keeping three tiny tensors per micro-batch",
    "activation_log+snapshot": "activation log planted, and a site keeping one larger tensor per micro-batch",
    "score_cache+table": "score cache planted, and a large table built once in the first micro-batch",
    "activation_log+table": "activation log planted, and a large table built once in the first micro-batch",
}


# A compound spec: the leak planted in the pipeline, and the site that grows beside it, called after each
# micro-batch with (seq_len, hidden)
_GROWS_BESIDE: dict[str, tuple[str, Callable[[int, int], None]]] = {
    "score_cache+counters": ("score_cache", lambda seq_len, hidden: keep_step_counters()),
    "activation_log+snapshot": ("activation_log", keep_debug_snapshot),
    "score_cache+table": ("score_cache", build_position_table),
    "activation_log+table": ("activation_log", build_position_table),
}


def _spec_config(spec: tuple[Any, ...]) -> PipelineConfig:
    _, seq_len, hidden, vocab, layers = spec
    return PipelineConfig(seq_len=seq_len, hidden=hidden, vocab=vocab, layers_per_stage=layers)


def _show_spec(args: tuple[Any, ...], kwargs: Any) -> str:
    planted, s, h, v, layers = args[0]
    return i18n.pick(
        "a pipeline with the fix applied, {planted} (S={s}, H={h}, V={v}, {layers} layer(s)/stage)",
        planted=i18n._(WHAT_IS_PLANTED[planted]),
        s=s,
        h=h,
        v=v,
        layers=layers,
    )


def _growth_inputs() -> Any:
    from hypothesis import strategies as st

    spec = st.tuples(
        st.sampled_from(sorted(PLANTED_SITES, key=str)),
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
    Case(
        (("score_cache+table", 16, 8, 32, 1),),
        "the first micro-batch builds a table larger than anything that grows, and keeps it",
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
    _TABLES.clear()


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
            return i18n._("return the function's name as a string (a Site's .function), not the object itself")
        if got.startswith(f"{want} ("):
            return i18n._("return the function's name only (Site.function), not the site's label with file and line")
        if got.endswith(".py") or "/" in got:
            return i18n._("that is a file name: return the name of the function that allocated (Site.function)")
        if got == TABLE_SITE:
            return i18n._(
                "that site allocated once, in the first micro-batch, and never again: it holds many bytes but does "
                "not grow"
            )
        if got in ONE_OFF_SITES:
            return i18n._(
                "that site allocates once, in the first micro-batch (one-off allocations such as the parameter "
                "gradients), so it is not growth"
            )
        if got == COUNTER_SITE:
            return i18n._(
                "that site makes the most allocations per micro-batch, but they are tiny: growth is measured in "
                "bytes kept, not in how many tensors"
            )
        if got == SNAPSHOT_SITE:
            return i18n._(
                "that site keeps the single largest tensor per micro-batch, but another site keeps more bytes in "
                "all, spread over several smaller tensors"
            )
        if got == "create_tensor_recv_prev":
            return i18n._("that was the unfixed pipeline's leak; these pipelines have the fix applied")
        if got == PLANTED_SITES[None]:
            return i18n._("that site grows too (the stored outputs), but it is not the site that grows the most")
        if got in PLANTED_SITES.values():
            return i18n._(
                "that is a site of another pipeline, not of the one you were handed: did you return a fixed name? "
                "Read the answer off the tracker each time"
            )
        return i18n._("that is not the site that grows the most from one micro-batch to the next")

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
    question=(
        "Suppose micro-batch 1 leaves 10 MB alive at site A and 1 MB at site B, and micro-batch 2 leaves nothing "
        "new at A and another 1 MB at B. Which site is the leak, and what would a table of everything alive after "
        "micro-batch 2 rank first? What would you need to be able to ask the tracker to see only micro-batch 2?"
    ),
    reveals=["tracker.top_sites(5, since=last_mb)", "warm-up: one-off allocations happen here"],
)
def check_growth_site(find: Callable[[AllocationTracker, Callable[[], None]], str]) -> str:
    """Exercise 1.2: `find(tracker, run_micro_batch)` must name the function whose allocations grow.

    Contract. Returns, as a str, the name of the function whose live allocations grow the most in bytes from
    one micro-batch to the next (not its Site, its label or its file), however often it runs the micro-batch
    function (at least twice: one-off allocations happen in the first). Effects: the pipeline's planted
    stores and helpers are emptied by the checker after each run, whatever the answer did. Domain: toy
    pipelines with the fix applied and a score cache, an activation log or nothing planted; S, H from 4 to 48,
    a vocabulary of 8 to 64, one to three layers per stage; beside the leak, a site making more but tiny
    allocations, a site making the single largest allocation, or a one-off table larger than any growth.
    """
    if not callable(find):
        raise ExerciseFailure(i18n.pick("the answer should be a function, got {kind}", kind=type(find).__name__))
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
        max_examples=8,
    )
