"""Lesson 04's picture of the zigzag split: one sequence over the CP ranks, each rank's part cut for TP.

`zigzag_layout` says, for every position of an aligned sequence, which CP rank holds it and which TP rank's
sequence-parallel slice it falls in on that CP rank; `plot_zigzag` draws it and prints the same numbers.
"""

from __future__ import annotations

import matplotlib.figure
import matplotlib.patches
import matplotlib.pyplot as plt
import torch

from verlstudy.kit.params import positive_int
from verlstudy.kit.plots import COLORS, apply_style, fit_layout
from verlstudy.lessons.l04_thd.thd import zigzag_split


def zigzag_layout(seq_len: int, tp: int, cp: int) -> tuple[list[int], list[int]]:
    """(cp rank, tp rank) of every position 0..seq_len-1 under zigzag CP, then SP over TP on each CP rank.

    `seq_len` must divide by the alignment (tp*cp*2 with cp > 1, else tp): ValueError otherwise.
    """
    seq_len, tp, cp = positive_int("seq_len", seq_len), positive_int("tp", tp), positive_int("cp", cp)
    align = tp * cp * 2 if cp > 1 else tp
    if seq_len % align:
        raise ValueError(f"seq_len={seq_len} must divide by the alignment {align} at tp={tp}, cp={cp}")
    cp_of, tp_of = [0] * seq_len, [0] * seq_len
    positions = torch.arange(seq_len)
    for c in range(cp):
        local = zigzag_split(positions, cp, c).tolist()
        per_tp = len(local) // tp
        for i, pos in enumerate(local):
            cp_of[pos], tp_of[pos] = c, i // per_tp
    return cp_of, tp_of


def zigzag_text(seq_len: int, tp: int, cp: int) -> str:
    """One line per CP rank: the positions it holds, cut into its TP ranks' slices."""
    cp_of, tp_of = zigzag_layout(seq_len, tp, cp)
    chunks = 2 * cp if cp > 1 else 1
    lines = [f"seq_len={seq_len}, tp={tp}, cp={cp}: {chunks} chunk(s) of {seq_len // chunks}"]
    for c in range(cp):
        slices = []
        for t in range(tp):
            held = [p for p in range(seq_len) if cp_of[p] == c and tp_of[p] == t]
            slices.append(f"tp{t}: {_ranges(held)}")
        lines.append(f"cp rank {c}: " + " | ".join(slices))
    return "\n".join(lines)


def _ranges(positions: list[int]) -> str:
    parts, start = [], positions[0]
    for prev, cur in zip(positions, [*positions[1:], None], strict=True):
        if cur != prev + 1:
            parts.append(f"{start}-{prev}" if prev > start else f"{start}")
            start = cur if cur is not None else start
    return ",".join(parts)


def plot_zigzag(seq_len: int, tp: int, cp: int, show: bool = True) -> matplotlib.figure.Figure:
    """Draw one sequence's positions coloured by CP rank, each TP slice outlined; print `zigzag_text`."""
    cp_of, tp_of = zigzag_layout(seq_len, tp, cp)
    apply_style()
    fig, ax = plt.subplots(figsize=(7.0, 1.6))
    for pos in range(seq_len):
        ax.add_patch(matplotlib.patches.Rectangle((pos, 0), 1, 1, color=COLORS[cp_of[pos] % len(COLORS)], alpha=0.85))
        ax.text(pos + 0.5, 0.5, str(tp_of[pos]), ha="center", va="center", fontsize=7, color="white")
    for pos in range(1, seq_len):
        if (cp_of[pos], tp_of[pos]) != (cp_of[pos - 1], tp_of[pos - 1]):
            ax.plot([pos, pos], [0, 1], color="black", linewidth=1.2)
    ax.set(
        xlim=(0, seq_len),
        ylim=(0, 1),
        xlabel="position in the sequence (digit: TP rank of its SP slice)",
        title=f"zigzag CP over {cp} ranks, SP over tp={tp} inside each rank",
    )
    ax.set_yticks([])
    ax.grid(False)
    handles = [matplotlib.patches.Patch(color=COLORS[c % len(COLORS)], label=f"cp rank {c}") for c in range(cp)]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fit_layout(fig)
    print(zigzag_text(seq_len, tp, cp))
    if show:
        plt.show()
    return fig
