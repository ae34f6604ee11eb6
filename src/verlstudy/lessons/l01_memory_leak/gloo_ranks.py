"""The toy pipeline's stages as real ranks: one stage per gloo process, 1F1B order, send/recv.

Built on `pipeline` (the same model, receive buffer, loss and backward step); each rank measures
its own live bytes at the end of a mini-batch, which shows that only the last stage, the one that
stores outputs, grows with the number of micro-batches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.utils._python_dispatch import _disable_current_modes

from verlstudy.common.memtrace import AllocationTracker, Site, bytes_per_step
from verlstudy.lessons.l01_memory_leak.pipeline import (
    PipelineConfig,
    ToyPipelineModel,
    backward_step,
    create_tensor_recv_prev,
    last_stage_step,
    make_micro_batches,
    stage_forward,
)
from verlstudy.lessons.l01_memory_leak.store import store_for

# -- 1F1B over real ranks ----------------------------------------------------------------------


def one_f_one_b_order(pp_size: int, rank: int, num_micro_batches: int) -> list[tuple[str, int]]:
    """The 1F1B order of ("F", i) / ("B", i) steps on pipeline `rank`: warm-up, steady state, cool-down."""
    for name, value, lo in (("pp_size", pp_size, 1), ("num_micro_batches", num_micro_batches, 1), ("rank", rank, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < lo:
            raise ValueError(f"{name} must be an int >= {lo}, got {value!r}")
    if rank >= pp_size:
        raise ValueError(f"rank must be < pp_size={pp_size}, got {rank}")
    warmup = min(pp_size - rank - 1, num_micro_batches)
    order = [("F", i) for i in range(warmup)]
    for i in range(num_micro_batches - warmup):
        order += [("F", warmup + i), ("B", i)]
    order += [("B", i) for i in range(num_micro_batches - warmup, num_micro_batches)]
    return order


def _untracked() -> Any:
    # Communication ops only write into existing buffers (nothing to record): run them outside the
    # tracker, so blocking send/recv never goes through Python dispatch.
    return _disable_current_modes()


def _rank_mini_batch(
    model: ToyPipelineModel,
    rank: int,
    batches: list[torch.Tensor],
    detach_outputs: bool,
    on_step: Callable[[str, int], None] | None = None,
) -> tuple[list[Any], list[float]]:
    import torch.distributed as dist

    cfg = model.config
    last = rank == cfg.pp_size - 1
    shape = (cfg.seq_len, cfg.hidden)
    store: list[Any] = []
    losses: list[float] = []
    in_flight: dict[int, tuple[torch.Tensor, torch.Tensor | None]] = {}  # i -> (output, recv buffer)
    # Pending sends hold their tensor until waited on. Wait at the first point where the peer has
    # certainly received it, so the bytes each step holds do not depend on timing.
    pending: dict[tuple[str, int], Any] = {}
    peer_warmup = cfg.pp_size - rank  # warm-up forwards of rank - 1 in 1F1B
    for kind, i in one_f_one_b_order(cfg.pp_size, rank, len(batches)):
        if kind == "F":
            inputs, labels = batches[i][:-1], batches[i][1:]
            recv = None
            if rank == 0:
                h = stage_forward(model, 0, inputs)
            else:
                recv = create_tensor_recv_prev(shape, cfg.torch_dtype, cfg.device)
                with _untracked():
                    dist.recv(recv, src=rank - 1)
                    # rank - 1 ran backward k before sending forward i: our gradient k has arrived
                    for k in [k for (what, k) in pending if what == "B" and k <= i - peer_warmup - 1]:
                        pending.pop(("B", k)).wait()
                h = recv if last else stage_forward(model, rank, recv)
            if last:
                loss, output = last_stage_step(model, h, labels)
                store_for(detach_outputs)(store, output)
                losses.append(float(loss.detach()))
                in_flight[i] = (loss, recv)
                del loss, output
            else:
                with _untracked():
                    pending[("F", i)] = dist.isend(h.detach(), dst=rank + 1)
                in_flight[i] = (h, recv)
            del h, recv
        else:
            out, recv = in_flight.pop(i)
            grad = None
            if not last:
                grad = torch.empty(shape, dtype=cfg.torch_dtype, device=cfg.device)
                with _untracked():
                    dist.recv(grad, src=rank + 1)
                    pending.pop(("F", i)).wait()  # rank + 1 received forward i before sending its gradient
            backward_step(out, grad)
            if recv is not None:
                with _untracked():
                    pending[("B", i)] = dist.isend(recv.grad, dst=rank - 1)  # type: ignore[arg-type]
            del out, recv, grad  # this micro-batch is done here: keep no local reference to it
        if on_step is not None:
            on_step(kind, i)
    for work in pending.values():
        work.wait()
    return store, losses


def gloo_pipeline_worker(
    rank: int,
    world_size: int,
    config: PipelineConfig,
    micro_batch_counts: Sequence[int],
    detach_outputs: bool = False,
    seed: int = 0,
    timeline_micro_batches: int = 0,
) -> dict[str, Any]:
    """One pipeline stage per gloo rank; for each micro-batch count, live bytes at the mini-batch's end.

    Returns {"rank", "end_bytes": {count: bytes}, "slope", "top_sites" (growth of the largest run),
    "losses" (last stage only), "timeline"}. With `timeline_micro_batches` > 0, one more mini-batch of
    that many micro-batches runs after the others (parameter gradients already exist, so only the
    schedule's own bytes move) and "timeline" lists (step, live bytes after it) for each 1F1B step,
    e.g. ("F0", 8192). Runs under `verlstudy.common.dist.run_local`.
    """
    if config.pp_size != world_size:
        raise ValueError(f"config.pp_size={config.pp_size} must equal world_size={world_size} (a stage per rank)")
    if isinstance(timeline_micro_batches, bool) or not isinstance(timeline_micro_batches, int):
        raise TypeError(f"timeline_micro_batches must be an int >= 0, got {timeline_micro_batches!r}")
    model = model_for_rank(config, seed)
    counts = [int(c) for c in micro_batch_counts]
    end_bytes: dict[int, int] = {}
    sites: list[Site] = []
    losses: list[float] = []
    for count in counts:
        model.zero_grad(set_to_none=True)
        batches = make_micro_batches(config, count, seed + 1)
        tracker = AllocationTracker()
        with tracker:
            store, losses = _rank_mini_batch(model, rank, batches, detach_outputs)
        end_bytes[count] = tracker.live_bytes()
        if count == max(counts):
            sites = tracker.top_sites(3)
        del store
    timeline: list[tuple[str, int]] = []
    if timeline_micro_batches > 0:
        model.zero_grad(set_to_none=False)  # keep the gradient buffers: backward accumulates in place
        batches = make_micro_batches(config, timeline_micro_batches, seed + 1)
        tracker = AllocationTracker()

        def record(kind: str, i: int) -> None:
            timeline.append((f"{kind}{i}", tracker.live_bytes()))

        with tracker:
            store, _ = _rank_mini_batch(model, rank, batches, detach_outputs, record)
        del store
    return {
        "rank": rank,
        "end_bytes": end_bytes,
        "slope": bytes_per_step([end_bytes[c] for c in counts], counts),
        "top_sites": sites,
        "losses": losses,
        "timeline": timeline,
    }


def gloo_pipeline_runs(
    rank: int,
    world_size: int,
    config: PipelineConfig,
    runs: Sequence[tuple[Sequence[int], bool]],
    seed: int = 0,
    timeline_micro_batches: int = 0,
) -> list[dict[str, Any]]:
    """`gloo_pipeline_worker` once per (micro_batch_counts, detach_outputs) in `runs`, each on a freshly built
    model, all in one launch of the ranks (a process start and a gloo rendezvous each saved). Returns one
    result per run, in order, each as `gloo_pipeline_worker` returns it. Runs under `run_local`."""
    if isinstance(runs, (str, bytes)) or not isinstance(runs, Sequence) or not runs:
        raise TypeError(f"runs must be a non-empty list of (micro_batch_counts, detach_outputs), got {runs!r}")
    if not all(isinstance(run, tuple) and len(run) == 2 and isinstance(run[1], bool) for run in runs):
        raise TypeError(f"each run must be a (micro_batch_counts, detach_outputs: bool) pair, got {runs!r}")
    return [
        gloo_pipeline_worker(rank, world_size, config, counts, detach, seed, timeline_micro_batches)
        for counts, detach in runs
    ]


def model_for_rank(config: PipelineConfig, seed: int) -> ToyPipelineModel:
    """Every rank builds the whole toy model from the same seed (identical weights) and runs its own stage."""
    return ToyPipelineModel(config, seed)


def levels_after(timeline: Sequence[tuple[str, int]], kind: str = "B") -> list[int]:
    """Live bytes right after each step of one kind ("F" or "B") in a rank's 1F1B timeline."""
    if kind not in ("F", "B"):
        raise ValueError(f"kind must be 'F' or 'B', got {kind!r}")
    if not isinstance(timeline, Sequence) or not all(isinstance(s, tuple) and len(s) == 2 for s in timeline):
        raise TypeError("timeline must be a list of (step, bytes) pairs, as gloo_pipeline_worker returns it")
    return [nbytes for step, nbytes in timeline if step.startswith(kind)]
