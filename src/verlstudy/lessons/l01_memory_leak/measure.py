"""Measuring the toy pipeline's leak, one call per experiment.

Bytes retained per micro-batch (`measure_slope`), the control runs (`measure_controls`), the guard
a test can assert (`assert_flat_residency`), and what survives a leaking mini-batch written in the
CUDA memory snapshot format (`leak_snapshot`, `write_leak_snapshot`), all built on `pipeline`.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verlstudy.common.memtrace import AllocationTracker, Site, snapshot_from_tracker
from verlstudy.kit.params import check_int, check_path, got
from verlstudy.kit.tables import Table
from verlstudy.lessons.l01_memory_leak.pipeline import (
    PipelineConfig,
    PipelineRun,
    clear_planted_leaks,
    config_with,
    run_pipeline,
)

# -- measuring, in one call per experiment -----------------------------------------------------


def measure_slope(
    config: PipelineConfig,
    num_micro_batches: int,
    *,
    forward_only: bool = False,
    detach_outputs: bool = False,
    planted_leak: str | None = None,
    entropy: str | None = None,
    seed: int = 0,
) -> tuple[float, list[Site], PipelineRun]:
    """Bytes retained per micro-batch, and the sites of what the last micro-batch left alive."""
    clear_planted_leaks()
    tracker = AllocationTracker()
    run = run_pipeline(
        config,
        num_micro_batches,
        forward_only=forward_only,
        detach_outputs=detach_outputs,
        planted_leak=planted_leak,
        entropy=entropy,
        tracker=tracker,
        seed=seed,
    )
    sites = tracker.top_sites(8, since=run.marks[-1])
    clear_planted_leaks()
    return run.slope, sites, run


# Control figures only the course's digest of PR #7874 gives (not in the part of the PR description we could
# read; unverified). Shown beside the course's measurements, never used in a claim.
DIGEST_CONTROLS: dict[str, str] = {
    "forward only": "0.76 MiB per micro-batch",
    "PP=1": "0.31 MiB per micro-batch",
}


def measure_controls(
    config: PipelineConfig, num_micro_batches: int = 4, *, layers: Sequence[int] = (2, 4), seed: int = 0
) -> dict[str, int]:
    """Bytes retained per micro-batch: the leaking run, forward only (without and with entropy), PP=1, depth.

    Keys: "leak (PP=<pp>, <L> layer/stage)", "forward only", "forward only + entropy" (what verl 0.9.1's
    old-log-prob pass stores), "PP=1", then "<L> layers/stage" per `layers`.
    """
    if not isinstance(config, PipelineConfig):
        raise TypeError(f"config must be a PipelineConfig, got {type(config).__name__}")
    depths = list(layers)
    if any(isinstance(d, bool) or not isinstance(d, int) for d in depths):
        raise TypeError(f"layers must be ints (layers per stage), got {depths!r}")

    def slope(cfg: PipelineConfig, **kwargs: Any) -> int:
        return int(measure_slope(cfg, num_micro_batches, seed=seed, **kwargs)[0])

    controls = {
        f"leak (PP={config.pp_size}, {config.layers_per_stage} layer/stage)": slope(config),
        "forward only": slope(config, forward_only=True),
        "forward only + entropy": slope(config, forward_only=True, entropy="stored"),
        "PP=1": slope(config_with(config, pp_size=1)),
    }
    for depth in depths:
        controls[f"{depth} layers/stage"] = slope(config_with(config, layers_per_stage=depth))
    return controls


def measure_entropy(
    config: PipelineConfig, num_micro_batches: int = 4, *, vocabs: Sequence[int] = (48, 96), seed: int = 0
) -> dict[str, int]:
    """Bytes retained per micro-batch when `model_output` also holds per-token entropy.

    Keys: "log-probs only", "entropy in the loss", "entropy stored, V=<v>" per vocabulary in `vocabs`
    (the loss never reads it), and "entropy stored + detach_tree".
    """
    if not isinstance(config, PipelineConfig):
        raise TypeError(f"config must be a PipelineConfig, got {type(config).__name__}")
    sizes = list(vocabs)
    if not sizes or any(isinstance(v, bool) or not isinstance(v, int) for v in sizes):
        raise TypeError(f"vocabs must be a non-empty list of vocabulary sizes (ints), got {sizes!r}")

    def slope(cfg: PipelineConfig, **kwargs: Any) -> int:
        return int(measure_slope(cfg, num_micro_batches, seed=seed, **kwargs)[0])

    rows = {"log-probs only": slope(config), "entropy in the loss": slope(config, entropy="in_loss")}
    for vocab in sizes:
        rows[f"entropy stored, V={vocab}"] = slope(config_with(config, vocab=vocab), entropy="stored")
    rows["entropy stored + detach_tree"] = slope(config, entropy="stored", detach_outputs=True)
    return rows


def bytes_by_function(sites: Sequence[Site]) -> dict[str, int]:
    """Live bytes per allocating function (a function's several lines summed), in the sites' order."""
    if isinstance(sites, str) or not isinstance(sites, Sequence):
        raise TypeError(f"argument sites must be a list of Site objects (from top_sites), got {got(sites)}")
    totals: dict[str, int] = {}
    for site in sites:
        if not isinstance(site, Site):
            raise TypeError(f"sites must hold Site objects (from top_sites), got {type(site).__name__}")
        totals[site.function] = totals.get(site.function, 0) + site.bytes
    return totals


def controls_table(controls: dict[str, int], upstream: dict[str, str] | None = None) -> Table:
    """A table (shown with `kit.tables.show_table`) of bytes per micro-batch, the digest's figures beside ours."""
    if not isinstance(controls, dict) or not controls:
        raise ValueError("controls must be a non-empty dict of run name -> bytes per micro-batch")
    quoted = DIGEST_CONTROLS if upstream is None else upstream
    header = ["run", "ours: bytes per micro-batch", "the course's digest says (unverified)"]
    rows = [[name, nbytes, quoted.get(name, "-")] for name, nbytes in controls.items()]
    return Table.of(header, rows, align=["", "right", ""])


# -- the guard: a test that would have caught it ---------------------------------------------


class ResidencyError(AssertionError):
    """Stored outputs keep more than their own bytes per micro-batch: something pins a graph."""


def assert_flat_residency(config: PipelineConfig, num_micro_batches: int = 4, *, detach_outputs: bool = True) -> int:
    """The guard: per micro-batch, only the stored outputs' own bytes (S x itemsize) may stay alive.

    Returns the measured bytes per micro-batch; raises ResidencyError naming the top extra site.
    """
    slope, sites, _ = measure_slope(config, num_micro_batches, detach_outputs=detach_outputs)
    allowed = config.seq_len * config.itemsize
    if slope != allowed:
        extra = [s for s in sites if s.function != "loss_func"]
        top = extra[0].label() if extra else "unknown"
        raise ResidencyError(
            f"{slope:g} bytes stay alive per micro-batch, the stored outputs need {allowed}; top other site: {top}"
        )
    return int(slope)


# -- the leak in the CUDA memory snapshot format ----------------------------------------------


def leak_snapshot(config: PipelineConfig | None = None, num_micro_batches: int = 4, seed: int = 0) -> dict[str, Any]:
    """What survives a leaking mini-batch, written in the CUDA snapshot format (constructed on CPU).

    Micro-batches 2.. only (the first one makes one-off allocations), so `num_micro_batches` >= 2.
    """
    check_int("seed", seed, minimum=0, kind="argument")
    if isinstance(num_micro_batches, bool) or not isinstance(num_micro_batches, int) or num_micro_batches < 2:
        raise ValueError(f"num_micro_batches must be an int >= 2 (the first one is skipped), got {num_micro_batches!r}")
    config = config if config is not None else PipelineConfig()
    tracker = AllocationTracker()
    run = run_pipeline(config, num_micro_batches, tracker=tracker, seed=seed)
    snapshot = snapshot_from_tracker(tracker, since=run.marks[1])  # skip the first micro-batch's one-offs
    del run
    return snapshot


def write_leak_snapshot(path: str | Path) -> Path:
    """Write `leak_snapshot()` as a pickle, the file format `torch.cuda.memory._dump_snapshot` uses."""
    path = check_path("path", path, what="a .pickle file's path (str or Path)")
    if path.suffix != ".pickle":
        raise ValueError(f"path must end in .pickle, got {path.name}")
    path.write_bytes(pickle.dumps(leak_snapshot(), protocol=4))
    return path
