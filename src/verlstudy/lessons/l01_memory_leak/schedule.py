"""The 1F1B schedule as a picture: when each stage runs each forward and backward, and what the last stage keeps.

`schedule_timeline` places every stage's 1F1B steps (`gloo_ranks.one_f_one_b_order`) on a clock of
unit-length slots, each step starting once its inputs exist (a forward after the previous stage's
forward of the same micro-batch, a backward after the next stage's backward). `pinned_graphs` counts,
after each slot, the autograd graphs a stage holds: the micro-batches in flight (forward done, backward
not yet), plus on the last stage, without the fix, every graph its output store still references.
`plot_schedule` draws both and prints the numbers it draws.
"""

from __future__ import annotations

from dataclasses import dataclass

from verlstudy.kit.params import check_int, check_items, positive_int
from verlstudy.lessons.l01_memory_leak.gloo_ranks import one_f_one_b_order

FORWARD, BACKWARD = "F", "B"


@dataclass(frozen=True)
class Slot:
    """One step of one stage: `kind` F or B of micro-batch `micro_batch`, run during [start, start + 1)."""

    stage: int
    kind: str
    micro_batch: int
    start: int


def schedule_timeline(pp_size: int, num_micro_batches: int) -> list[Slot]:
    """Every stage's 1F1B steps with their start slot (each step takes one slot; a stage runs one at a time)."""
    pp_size, num_micro_batches = positive_int("pp_size", pp_size), positive_int("num_micro_batches", num_micro_batches)
    orders = [one_f_one_b_order(pp_size, r, num_micro_batches) for r in range(pp_size)]
    done: dict[tuple[int, str, int], int] = {}  # (stage, kind, micro-batch) -> end slot
    position, clock = [0] * pp_size, [0] * pp_size
    slots: list[Slot] = []
    while any(position[r] < len(orders[r]) for r in range(pp_size)):
        progressed = False
        for r in range(pp_size):
            if position[r] == len(orders[r]):
                continue
            kind, i = orders[r][position[r]]
            # a forward waits for the previous stage's forward; a backward for the next stage's backward
            need: tuple[int, str, int] | None = None
            if kind == FORWARD and r > 0:
                need = (r - 1, FORWARD, i)
            elif kind == BACKWARD and r < pp_size - 1:
                need = (r + 1, BACKWARD, i)
            if need is not None and need not in done:
                continue
            start = max(clock[r], done[need] if need is not None else 0)
            slots.append(Slot(r, kind, i, start))
            done[(r, kind, i)] = clock[r] = start + 1
            position[r] += 1
            progressed = True
        if not progressed:  # pragma: no cover - one_f_one_b_order never deadlocks
            raise RuntimeError("the 1F1B orders deadlock")
    return sorted(slots, key=lambda s: (s.start, s.stage))


def pinned_graphs(slots: list[Slot], stage: int, *, store_keeps_graphs: bool) -> list[int]:
    """Autograd graphs `stage` holds at the end of each slot 0 .. last slot.

    In flight: forwards done whose backward has not run. With `store_keeps_graphs` (the last stage
    without the fix) a graph also stays while the store references it, until the mini-batch ends.
    """
    slots = check_items("slots", slots, Slot, what="a Slot (from schedule_timeline)")
    check_int("stage", stage, minimum=0, kind="argument")
    if not slots:
        raise ValueError("argument slots must hold at least one Slot (from schedule_timeline)")
    end = max(s.start for s in slots) + 1
    counts = []
    for t in range(end):
        forwards = sum(1 for s in slots if s.stage == stage and s.kind == FORWARD and s.start <= t)
        backwards = sum(1 for s in slots if s.stage == stage and s.kind == BACKWARD and s.start <= t)
        counts.append(forwards if store_keeps_graphs else forwards - backwards)
    return counts


def plot_schedule(pp_size: int, num_micro_batches: int, show: bool = True) -> dict[str, list[int]]:
    """Draw the 1F1B timeline (one row per stage) above the graphs each stage holds; print what is drawn."""
    import matplotlib.pyplot as plt

    from verlstudy.kit.plots import COLORS, apply_style, fit_layout

    slots = schedule_timeline(pp_size, num_micro_batches)
    last = pp_size - 1
    held = {
        "last stage, store keeps graphs (leak)": pinned_graphs(slots, last, store_keeps_graphs=True),
        "last stage, detach_tree (fix)": pinned_graphs(slots, last, store_keeps_graphs=False),
        "stage 0": pinned_graphs(slots, 0, store_keeps_graphs=False),
    }
    apply_style()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7.0, 4.6), sharex=True, height_ratios=(1.3, 1.0))
    colours = [COLORS[0] if s.kind == FORWARD else COLORS[1] for s in slots]
    top.barh([s.stage for s in slots], 0.92, left=[s.start for s in slots], color=colours, height=0.8)  # one call
    for s in slots:
        top.text(s.start + 0.46, s.stage, f"{s.kind}{s.micro_batch}", ha="center", va="center", color="white",
                 fontsize=7)  # fmt: skip
    top.set_yticks(range(pp_size), [f"stage {r}" for r in range(pp_size)])
    top.invert_yaxis()
    top.set_title(f"1F1B, {pp_size} stages, {num_micro_batches} micro-batches (F forward, B backward)")
    top.grid(False)
    for (label, ys), colour in zip(held.items(), (COLORS[1], COLORS[2], COLORS[0]), strict=True):
        bottom.step([t + 1 for t in range(len(ys))], ys, where="post", label=label, color=colour)
    bottom.set(xlabel="time slot", ylabel="graphs held")
    bottom.legend(loc="upper left")
    fit_layout(fig)  # laid out once: showing it is then a single draw
    for r in range(pp_size):
        steps = " ".join(f"{s.kind}{s.micro_batch}@{s.start}" for s in slots if s.stage == r)
        print(f"stage {r}: {steps}")
    for label, ys in held.items():
        print(f"graphs held, {label}: {ys}")
    if show:
        plt.show()
    return held
