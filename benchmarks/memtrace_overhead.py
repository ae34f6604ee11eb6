"""Benchmark: what the AllocationTracker costs, as a ratio to the same pipeline run untracked.

Runs lesson 01's toy pipeline (leaking, one thread) for a number of micro-batches with and without
`verlstudy.common.memtrace.AllocationTracker`, takes the median of several repeats, and reports the ratio,
the ops seen and the tracker's cost per allocation. The tracker walks a Python stack only for ops
that allocate, so the ratio falls as the model's ops get bigger (`--hidden`).

    .venv/bin/python benchmarks/memtrace_overhead.py [--micro-batches 8] [--repeat 7] [--hidden 32]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from verlstudy.common.memtrace import AllocationTracker
from verlstudy.lessons.l01_memory_leak import pipeline as pl


def _median_seconds(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--micro-batches", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=64)
    args = parser.parse_args()
    torch.set_num_threads(1)  # what the test kernels use; also steadier timings
    cfg = pl.PipelineConfig(seq_len=args.seq_len, hidden=args.hidden)
    model = pl.ToyPipelineModel(cfg)
    pl.run_pipeline(cfg, 2, model=model)  # warm-up: lazy initialisation is not the tracker's cost

    def untracked() -> object:
        return pl.run_pipeline(cfg, args.micro_batches, model=model)

    trackers: list[AllocationTracker] = []

    def tracked() -> object:
        trackers.append(AllocationTracker())
        return pl.run_pipeline(cfg, args.micro_batches, model=model, tracker=trackers[-1])

    base = _median_seconds(untracked, args.repeat)
    with_tracker = _median_seconds(tracked, args.repeat)
    allocations = trackers[-1].mark()
    print(f"pipeline: S={cfg.seq_len} H={cfg.hidden}, {args.micro_batches} micro-batches, 1 thread")
    print(f"untracked: {base * 1e3:.1f} ms; tracked: {with_tracker * 1e3:.1f} ms; ratio {with_tracker / base:.2f}")
    print(
        f"allocations recorded per run: {allocations}; tracker cost per allocation: "
        f"{(with_tracker - base) / max(allocations, 1) * 1e6:.0f} us"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
