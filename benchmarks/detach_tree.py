"""Benchmark: what detach_tree costs on a tree of already-detached leaves, against always-detach.

Reports, for a dict of N already-detached tensors (engine outputs computed under no_grad, masks,
advantages): the new tensor objects each version creates (by identity, and by counting `aten.detach`
calls with a TorchDispatchMode), and the time of detach_tree as a ratio to the always-detach variant.
Also a mixed tree (every tenth leaf requires grad) for contrast.

    .venv/bin/python benchmarks/detach_tree.py [--leaves 1000] [--repeat 7] [--number 200]
"""

from __future__ import annotations

import argparse
import statistics
import timeit
from collections.abc import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from verlstudy.common.trees import count_new_tensors, detach_tree, detach_tree_always


class DetachCounter(TorchDispatchMode):
    """Counts aten.detach calls: each one makes a new tensor object."""

    def __init__(self) -> None:
        super().__init__()
        self.detaches = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        if func is torch.ops.aten.detach.default:
            self.detaches += 1
        return func(*args, **(kwargs or {}))


def dispatched_detaches(fn: Callable[[object], object], tree: object) -> int:
    with DetachCounter() as counter:
        fn(tree)
    return counter.detaches


def median_seconds(fn: Callable[[object], object], tree: object, repeat: int, number: int) -> float:
    times = timeit.repeat(lambda: fn(tree), repeat=repeat, number=number)
    return statistics.median(times) / number


def build_tree(leaves: int, grad_every: int | None) -> dict[str, torch.Tensor]:
    tree = {}
    for i in range(leaves):
        t = torch.zeros(4)
        if grad_every and i % grad_every == 0:
            t = torch.zeros(4, requires_grad=True) * 1.0  # a live output with a grad_fn
        tree[f"k{i}"] = t
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--leaves", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=200)
    args = parser.parse_args()
    if args.leaves < 1 or args.repeat < 1 or args.number < 1:
        parser.error("--leaves, --repeat and --number must be positive")
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, {args.leaves} leaves, median of {args.repeat} x {args.number} calls")
    for label, grad_every in (("already-detached", None), ("mixed (1 in 10 requires grad)", 10)):
        tree = build_tree(args.leaves, grad_every)
        ours_new = count_new_tensors(tree, detach_tree(tree))
        naive_new = count_new_tensors(tree, detach_tree_always(tree))
        ours_ops = dispatched_detaches(detach_tree, tree)
        naive_ops = dispatched_detaches(detach_tree_always, tree)
        ours_s = median_seconds(detach_tree, tree, args.repeat, args.number)
        naive_s = median_seconds(detach_tree_always, tree, args.repeat, args.number)
        print(f"\n{label} tree")
        print(f"  new tensors      detach_tree {ours_new:>6}   always-detach {naive_new:>6}")
        print(f"  aten.detach ops  detach_tree {ours_ops:>6}   always-detach {naive_ops:>6}")
        print(f"  time per call    detach_tree {ours_s * 1e6:8.1f} us   always-detach {naive_s * 1e6:8.1f} us")
        print(f"  time ratio detach_tree / always-detach: {ours_s / naive_s:.3f}")


if __name__ == "__main__":
    main()
