"""pp_gather: the collective that assembles every pipeline stage's routes (lesson 03, verl PR #7805).

As the dense (VPP with BSHD inputs) branch of upstream's `verl/utils/megatron/router_replay_utils.py::pp_gather`
(verl 0.9.1): layer counts first, padding on the layer dim only, int16 routes sent as a bit-exact uint8
view (`to_wire`, `from_wire`: NCCL has no int16). (Upstream's default, non-VPP path gathers a nested map
with `all_gather_object` instead.) A stage that owns no MoE layer joins with a 0-layer map. (The course's
own design, not upstream's:) a stage that has routers but captured nothing (`MissingRoutes`) still joins
the header exchange, and then every rank raises together; verl 0.9.1 instead raises in
`merge_router_topk_indices`, before `pp_gather`. The run_local workers and outcome formatting of the lesson's gloo
demonstrations live here too.
"""

from __future__ import annotations

import multiprocessing.synchronize
import re
import time
from collections.abc import Callable, Iterable, Sequence
from multiprocessing.sharedctypes import Synchronized
from typing import Any

import torch
import torch.distributed as dist

from verlstudy.common.dist import RankOutcome
from verlstudy.kit.params import check_int, check_items, got, positive_int
from verlstudy.lessons.l03_router_replay.moe import ROUTE_DTYPE
from verlstudy.lessons.l03_router_replay.routes import MissingRoutes

__all__ = [
    "GLOO_TIMEOUT_TEXT",
    "failed_outcomes",
    "from_wire",
    "outcome_lines",
    "pp_gather",
    "pp_gather_worker",
    "raise_instead_of_joining",
    "stage_layer_numbers",
    "to_wire",
    "toy_global_routes",
]


# ---------------------------------------------------------------------------------------------
# pp_gather: the collective over pipeline ranks
# ---------------------------------------------------------------------------------------------

_HEADER = 5  # layer count, missing flag, batch, seq, topk


def to_wire(routes: torch.Tensor, max_layers: int) -> torch.Tensor:
    """int16 routes (B, S, L, k) -> uint8 payload (B, S, max_layers, 2k): a bit view, zero-padded on layers."""
    if not isinstance(routes, torch.Tensor) or routes.dtype != ROUTE_DTYPE or routes.dim() != 4:
        raise TypeError("routes must be an int16 tensor (batch, seq, layers, topk)")
    if isinstance(max_layers, bool) or not isinstance(max_layers, int) or max_layers < routes.shape[2]:
        raise ValueError(f"max_layers must be an int >= the local layer count {routes.shape[2]}, got {max_layers!r}")
    payload = routes.contiguous().view(torch.uint8)  # reinterpret the bytes: no value is cast
    if payload.shape[2] == max_layers:
        return payload
    padded = payload.new_zeros((payload.shape[0], payload.shape[1], max_layers, payload.shape[3]))
    padded[:, :, : payload.shape[2]] = payload
    return padded


def from_wire(payload: torch.Tensor, layer_count: int) -> torch.Tensor:
    """uint8 payload (B, S, L_padded, 2k) -> int16 routes (B, S, layer_count, k), padding stripped."""
    if not isinstance(payload, torch.Tensor) or payload.dtype != torch.uint8 or payload.dim() != 4:
        raise TypeError("payload must be a uint8 tensor (batch, seq, padded layers, 2*topk)")
    if isinstance(layer_count, bool) or not isinstance(layer_count, int) or not 0 <= layer_count <= payload.shape[2]:
        raise ValueError(f"layer_count must be an int in [0, {payload.shape[2]}], got {layer_count!r}")
    if payload.shape[3] % 2:
        raise ValueError(f"payload's last dim must be even (2 bytes per int16 route), got {payload.shape[3]}")
    return payload[:, :, :layer_count].contiguous().view(ROUTE_DTYPE)


def pp_gather(local: torch.Tensor | MissingRoutes, group: dist.ProcessGroup | None = None) -> torch.Tensor:
    """Gather every pipeline stage's routes (B, S, L_stage, k) into (B, S, sum of L_stage, k), stage order.

    Every rank of `group` must call it (it is a collective). A stage with no MoE layer passes a
    (B, S, 0, k) int16 map and still joins. A stage that has routers but captured nothing passes
    `MissingRoutes` instead of raising: the first exchange carries a header (layer count, a missing
    flag, B, S, k) from every rank, so after it *every* rank knows and every rank raises the same
    RuntimeError; nobody is left waiting in the payload gather. Mismatched B/S/k also raise on every
    rank. Routes travel as a uint8 view of the int16 bytes (NCCL has no int16), padded only on the
    layer dim to the largest stage, and come back bit-exact.
    """
    missing = isinstance(local, MissingRoutes)
    if not missing and (not isinstance(local, torch.Tensor) or local.dtype != ROUTE_DTYPE or local.dim() != 4):
        raise TypeError("local must be an int16 tensor (batch, seq, layers, topk) or MissingRoutes")
    if not (dist.is_available() and dist.is_initialized()):
        raise RuntimeError("pp_gather needs an initialised torch.distributed process group (see verlstudy.common.dist)")
    world = dist.get_world_size(group)
    if missing:
        header = torch.tensor([len(local.layer_numbers), 1, -1, -1, -1], dtype=torch.int64)  # type: ignore[union-attr]
    else:
        b, s, n_layers, k = local.shape  # type: ignore[union-attr]
        header = torch.tensor([n_layers, 0, b, s, k], dtype=torch.int64)
    headers = [torch.empty(_HEADER, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(headers, header, group=group)  # every rank joins this, whatever it captured
    table = [h.tolist() for h in headers]
    empty_stages = [stage for stage, row in enumerate(table) if row[1] == 1]
    if empty_stages:
        raise RuntimeError(
            f"pp_gather: stage(s) {empty_stages} have routers but captured no routes; "
            "every stage raises together after the header exchange, so no stage waits in the gather"
        )
    shapes = {tuple(row[2:]) for row in table}
    if len(shapes) != 1:
        raise ValueError(f"pp_gather: stages disagree on (batch, seq, topk): {[tuple(r[2:]) for r in table]}")
    counts = [row[0] for row in table]
    if max(counts) == 0:
        return local.clone()  # type: ignore[union-attr]
    payload = to_wire(local, max(counts))  # type: ignore[arg-type]
    gathered = [torch.empty_like(payload) for _ in range(world)]
    dist.all_gather(gathered, payload, group=group)
    return torch.cat([from_wire(p, c) for p, c in zip(gathered, counts, strict=True)], dim=2)


def toy_global_routes(batch: int, seq: int, layers: int, topk: int, num_experts: int, seed: int) -> torch.Tensor:
    """A seeded full route map (B, S, layers, k) int16 with distinct experts per token (for gather demos)."""
    for name, v in (("batch", batch), ("seq", seq), ("layers", layers), ("topk", topk), ("num_experts", num_experts)):
        positive_int(name, v)
    if topk > num_experts:
        raise ValueError(f"topk={topk} must not exceed num_experts={num_experts}")
    gen = torch.Generator().manual_seed(seed)
    scores = torch.rand(batch, seq, layers, num_experts, generator=gen)
    return scores.topk(topk, dim=-1).indices.to(ROUTE_DTYPE)


def stage_layer_numbers(layer_counts: Sequence[int], stage: int) -> list[int]:
    """Global layer numbers (from 1) owned by `stage` when stages own `layer_counts` layers in order."""
    if isinstance(layer_counts, str) or not isinstance(layer_counts, Iterable):
        raise TypeError(f"argument layer_counts must be a list of ints >= 0, got {got(layer_counts)}")
    check_int("stage", stage, minimum=0, kind="argument")
    counts = list(layer_counts)
    if not counts or any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in counts):
        raise ValueError(f"layer_counts must be a non-empty list of ints >= 0, got {counts}")
    if not 0 <= stage < len(counts):
        raise ValueError(f"stage must be in [0, {len(counts)}), got {stage}")
    start = sum(counts[:stage])
    return list(range(start + 1, start + counts[stage] + 1))


def _stage_input(
    rank: int, layer_counts: Sequence[int], shape: tuple[int, int, int, int], seed: int, missing_rank: int
) -> torch.Tensor | MissingRoutes:
    batch, seq, topk, num_experts = shape
    owned = stage_layer_numbers(layer_counts, rank)
    if rank == missing_rank:
        return MissingRoutes(tuple(owned))
    full = toy_global_routes(batch, seq, max(sum(layer_counts), 1), topk, num_experts, seed)
    return full[:, :, owned[0] - 1 : owned[-1]] if owned else full[:, :, :0]


def pp_gather_worker(
    rank: int,
    world_size: int,
    layer_counts: Sequence[int],
    shape: tuple[int, int, int, int],
    seed: int,
    missing_rank: int = -1,
) -> torch.Tensor:
    """A run_local worker: stage `rank` owns `layer_counts[rank]` layers of a seeded route map
    (shape = batch, seq, topk, num_experts) and calls pp_gather; `missing_rank` captured nothing."""
    if len(layer_counts) != world_size:
        raise ValueError(f"layer_counts has {len(layer_counts)} stages but world_size is {world_size}")
    return pp_gather(_stage_input(rank, layer_counts, shape, seed, missing_rank))


def raise_instead_of_joining(
    rank: int,
    world_size: int,
    layer_counts: Sequence[int],
    shape: tuple[int, int, int, int],
    seed: int,
    failing_rank: int,
    peers_gave_up: multiprocessing.synchronize.Event,
    joined_for: Synchronized | None = None,
    hold_s: float = 10.0,
) -> torch.Tensor:
    """A run_local worker for the review's hang: `failing_rank` raises instead of joining pp_gather.

    Its process stays alive (as a Ray worker does after an exception) until the peers give up, so the
    peers sit in the collective until the process group's timeout. `hold_s` bounds that wait.
    `joined_for`, a shared float (`multiprocessing` `Value("d")`), receives the longest time a joining
    rank spent in pp_gather, clocked by the rank itself.
    """
    if rank == failing_rank:
        peers_gave_up.wait(hold_s)
        raise RuntimeError(MissingRoutes(tuple(stage_layer_numbers(layer_counts, rank))).message())
    local = _stage_input(rank, layer_counts, shape, seed, -1)
    entered = time.monotonic()
    try:
        return pp_gather(local)
    finally:
        if joined_for is not None:
            with joined_for.get_lock():
                joined_for.value = max(joined_for.value, time.monotonic() - entered)
        peers_gave_up.set()


def failed_outcomes(fn: Callable[..., Any], world_size: int, *args: Any, **kwargs: Any) -> list[Any]:
    """Run `fn` on gloo ranks (verlstudy.common.dist.run_local) when some rank must fail; return every RankOutcome.

    AssertionError if every rank succeeded (the failure the caller wanted to show did not happen).
    """
    from verlstudy.common.dist import DistributedRunError, run_local

    try:
        results = run_local(fn, world_size, *args, **kwargs)
    except DistributedRunError as e:
        return e.outcomes
    raise AssertionError(f"expected a rank to fail, but all {len(results)} ranks returned")


GLOO_TIMEOUT_TEXT = "Timed out waiting for a peer in the collective (the process group timeout)"
_GLOO_TIMEOUT = re.compile(r"Timed out waiting \d+ms for (?:send|recv) operation to complete")


def outcome_lines(outcomes: Sequence[Any]) -> list[str]:
    """One stable line per rank outcome: ok and what it returned, or the error type and message.

    gloo's timeout text ("Timed out waiting 1000ms for send operation ...", send or recv depending on
    which side of the ring gave up first) becomes one fixed sentence.
    """
    outcomes = check_items("outcomes", outcomes, RankOutcome, what="a RankOutcome (from failed_outcomes or run_local)")
    lines = []
    for o in outcomes:
        if o.ok:
            value = o.value
            what = f"tensor {tuple(value.shape)} {value.dtype}" if isinstance(value, torch.Tensor) else repr(value)
            lines.append(f"rank {o.rank}: ok, returned {what}")
        else:
            lines.append(f"rank {o.rank}: {o.error_type}: {_GLOO_TIMEOUT.sub(GLOO_TIMEOUT_TEXT, o.error_message)}")
    return lines
