"""Rank functions to hand `verlstudy.common.dist.run_local`: one collective, a rank that raises or hangs, what a
rank listens on. The tests of `run_local` and the benchmarks use them; they live at module level so that a spawned
rank can import them by name. Each takes (rank, world_size, *args) as `run_local` calls it.
"""

from __future__ import annotations

import time
from typing import Any

import torch


def all_reduce_rank_sum(rank: int, world_size: int, scale: float = 1.0) -> torch.Tensor:
    """Each rank contributes `scale * (rank + 1)`; returns the all-reduced sum (same on every rank)."""
    import torch.distributed as dist

    t = torch.full((2,), float(rank + 1) * scale)
    dist.all_reduce(t)
    return t


def count_in(rank: int, world_size: int, counter: Any) -> int:
    """Add 1 to `counter` (a shared `multiprocessing` Value) and return the rank: shows a rank has started."""
    with counter.get_lock():
        counter.value += 1
    return rank


def raise_on_rank(rank: int, world_size: int, bad_rank: int = 1) -> int:
    """Raise ValueError on `bad_rank` before any collective; other ranks return their rank."""
    if rank == bad_rank:
        raise ValueError(f"rank {rank} was told to fail (bad_rank={bad_rank})")
    return rank


def hang_on_rank(rank: int, world_size: int, bad_rank: int = 1, seconds: float = 60.0) -> int:
    """Sleep `seconds` on `bad_rank` (a rank that never finishes); other ranks return at once."""
    if rank == bad_rank:
        time.sleep(seconds)
    return rank


def raise_then_hang_on_peer(rank: int, world_size: int) -> int:
    """Rank 1 raises at once; rank 0 sleeps without touching the group (so only run_local can stop it)."""
    if rank == 1:
        raise ValueError("rank 1 failed first")
    time.sleep(60)
    return rank


def listening_addresses(rank: int, world_size: int) -> list[str]:
    """The addresses this rank's process listens on once the group is up (every rank after a barrier)."""
    import psutil
    import torch.distributed as dist

    dist.barrier()
    sockets = psutil.Process().net_connections(kind="inet")
    return sorted({c.laddr.ip for c in sockets if c.status == psutil.CONN_LISTEN})


def raise_on_rank_then_all_reduce(rank: int, world_size: int, bad_rank: int = 1) -> torch.Tensor:
    """`bad_rank` raises instead of joining the all_reduce; the others are left waiting in it."""
    import torch.distributed as dist

    if rank == bad_rank:
        raise ValueError(f"rank {rank} raised instead of joining the all_reduce")
    t = torch.ones(1)
    dist.all_reduce(t)
    return t


def peer_sockets_after_a_raise(rank: int, world_size: int, linger_s: float = 0.2) -> list[str]:
    """Rank 1 raises at once; rank 0 waits `linger_s` and returns the states of its TCP connections. A peer that
    left at once (its sockets closed) shows as CLOSE_WAIT: ranks must leave together, a raising one too."""
    import psutil

    if rank == 1:
        raise ValueError("rank 1 raised early")
    time.sleep(linger_s)
    return sorted({c.status for c in psutil.Process().net_connections(kind="tcp")})
