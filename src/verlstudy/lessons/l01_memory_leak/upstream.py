"""Lesson 01 and upstream verl: upstream's own `detach_tree` as the fix, and its entropy formula.

The lesson body stores the output of verl's own `verl/workers/engine/utils.py::detach_tree` (loaded
from the installed source by `verlstudy.kit.upstream`) beside the course's, and computes entropy
with verl's `verl/utils/torch_functional.py::entropy_from_logits` beside the toy's. `verlstudy
verify-upstream` lists the lesson as not comparable: its subject is a schedule over ranks, not one
function, and `detach_tree` itself is compared on generated trees in lesson 02.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from verlstudy.common.memtrace import AllocationTracker
from verlstudy.kit.upstream import NotComparable, load_upstream, report_not_comparable
from verlstudy.lessons.l01_memory_leak.pipeline import (
    PipelineConfig,
    ToyPipelineModel,
    entropy_from_logits,
    make_micro_batches,
    run_pipeline,
    stage_forward,
)

UPSTREAM_DETACH = "verl/workers/engine/utils.py::detach_tree"
UPSTREAM_ENTROPY = "verl/utils/torch_functional.py::entropy_from_logits"

NOT_COMPARABLE = NotComparable(
    lesson="01",
    upstream="megatron 1F1B forward_data_store",
    why=(
        "a pipeline schedule over real ranks and GPU memory; the lesson body stores upstream's own "
        "detach_tree output as the fix, and lesson 02 compares detach_tree on generated trees"
    ),
)
COMPARISONS = ()


def upstream_detach_tree(release: str | None = None) -> Callable[[Any], Any]:
    """verl's own `detach_tree`, compiled from the installed source (or an earlier fetched release)."""
    return load_upstream("workers/engine/utils.py", ["detach_tree"], {"torch": torch}, release)["detach_tree"]


def upstream_entropy_from_logits(release: str | None = None) -> Callable[[torch.Tensor], torch.Tensor]:
    """verl's own `entropy_from_logits`, compiled from the installed source."""
    loaded = load_upstream("utils/torch_functional.py", ["entropy_from_logits"], {"torch": torch}, release)
    return loaded["entropy_from_logits"]


@dataclass(frozen=True)
class FixComparison:
    """The fix run twice, storing the course's and upstream's `detach_tree` output."""

    course_slope: int  # bytes retained per micro-batch
    upstream_slope: int
    same_outputs: bool  # same keys, bit-equal values, nothing grad-attached, in both stores
    same_losses: bool
    same_grads: bool

    @property
    def agree(self) -> bool:
        return self.course_slope == self.upstream_slope and self.same_outputs and self.same_losses and self.same_grads


def _detached_equal(a: object, b: object) -> bool:
    if not (isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys()):
        return False
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, dict):
            if not _detached_equal(x, y):
                return False
        elif not (isinstance(y, torch.Tensor) and torch.equal(x, y)) or x.requires_grad or y.requires_grad:
            return False
    return True


def compare_fix_with_upstream(
    config: PipelineConfig,
    num_micro_batches: int = 4,
    *,
    entropy: str | None = "stored",
    seed: int = 0,
    theirs: Callable[[Any], Any] | None = None,
) -> FixComparison:
    """Run the fixed pipeline storing the course's detach_tree output, then upstream's (or `theirs`)."""
    theirs = theirs if theirs is not None else upstream_detach_tree()
    runs = []
    for detach in (None, theirs):
        tracker = AllocationTracker()
        kwargs = {} if detach is None else {"detach_fn": detach}
        run = run_pipeline(
            config, num_micro_batches, detach_outputs=True, entropy=entropy, tracker=tracker, seed=seed, **kwargs
        )
        runs.append(run)
    ours, up = runs
    same_outputs = len(ours.forward_data_store) == len(up.forward_data_store) and all(
        _detached_equal(a, b) for a, b in zip(ours.forward_data_store, up.forward_data_store, strict=True)
    )
    same_grads = ours.grads.keys() == up.grads.keys()
    same_grads = same_grads and all(torch.equal(ours.grads[k], up.grads[k]) for k in ours.grads)
    return FixComparison(int(ours.slope), int(up.slope), same_outputs, ours.losses == up.losses, same_grads)


def toy_logits(config: PipelineConfig, seed: int = 0) -> torch.Tensor:
    """The last stage's logits for the first micro-batch (S x V): the input both entropy functions get."""
    model = ToyPipelineModel(config, seed)
    tokens = make_micro_batches(config, 1, seed + 1)[0][:-1]
    with torch.no_grad():
        h = tokens
        for stage in range(config.pp_size):
            h = stage_forward(model, stage, h)
        return model.head(h)


def compare_entropy_with_upstream(config: PipelineConfig, seed: int = 0) -> tuple[bool, torch.Tensor]:
    """Whether the toy's entropy equals upstream's bit for bit on the toy's logits, and the values."""
    logits = toy_logits(config, seed)
    ours, theirs = entropy_from_logits(logits), upstream_entropy_from_logits()(logits)
    return torch.equal(ours, theirs), ours


def upstream_check(cases: int = 50) -> None:
    """The lesson's closing upstream cell: says why verify-upstream has no single function for this lesson."""
    report_not_comparable(NOT_COMPARABLE)
