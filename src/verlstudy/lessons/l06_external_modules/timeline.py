"""The experiments as a picture: each process's imports in order, where verl's hook runs, and whether the library
ended up patched (as measured in the subprocess).

One row per process (a worker child gets its own row under its driver), one box per import. The same rows are
printed first, so nbval checks what the figure shows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from verlstudy.kit.params import check_instance, check_items
from verlstudy.kit.plots import COLORS, apply_style, fit_layout
from verlstudy.lessons.l06_external_modules.modules_env import (
    ADAPTOR,
    HOOK_PACKAGE,
    LIBRARY,
    Outcome,
    split_like_verl_091,
)

KINDS = {
    "hook imports the adaptor": COLORS[0],
    "hook runs, imports nothing": "#bbbbbb",
    "adaptor imported directly": COLORS[5],
    "library: patched": COLORS[2],
    "library: unpatched": COLORS[1],
    "other import": "#dddddd",
}


def _kind(module: str, env_value: str | None, patched: bool) -> str:
    if module == HOOK_PACKAGE:
        return "hook imports the adaptor" if ADAPTOR in split_like_verl_091(env_value) else "hook runs, imports nothing"
    if module == ADAPTOR:
        return "adaptor imported directly"
    if module == LIBRARY:
        return "library: patched" if patched else "library: unpatched"
    return "other import"


def timeline_rows(
    outcomes: Sequence[Outcome], stands_for: Mapping[str, str]
) -> list[tuple[str, list[tuple[str, str]], bool]]:
    """(row label, [(module, what its import does), ...] in order, patched) per process; a worker is its own row."""
    outcomes = check_items("outcomes", outcomes, Outcome, what="an Outcome (from run_experiments)")
    check_instance("stands_for", stands_for, Mapping, what="a mapping {experiment name: row label}")
    if not outcomes:
        raise ValueError("outcomes must hold at least one experiment's outcome")
    rows = []
    for o in outcomes:
        e = o.experiment
        label = stands_for.get(e.name, e.name)
        rows.append((label, [(m, _kind(m, e.env_value, o.patched)) for m in e.imports], o.patched))
        if e.worker_imports is not None:
            worker_label = stands_for.get(e.name + " / worker", "  its worker")
            kinds = [(m, _kind(m, e.env_value, bool(o.worker_patched))) for m in e.worker_imports]
            rows.append((worker_label, kinds, bool(o.worker_patched)))
    return rows


def draw_timeline(outcomes: Sequence[Outcome], stands_for: Mapping[str, str], *, show: bool = True) -> Figure:
    """Print, then draw, each process's imports in order, coloured by what they do (see `KINDS`)."""
    rows = timeline_rows(outcomes, stands_for)
    width = max(len(label) for label, _, _ in rows)
    for label, steps, patched in rows:
        chain = " -> ".join(f"{module} ({kind})" for module, kind in steps)
        print(f"{label:<{width}} | {chain} => {'patched' if patched else 'UNPATCHED'}")
    apply_style()
    fig, ax = plt.subplots(figsize=(6.4, 0.36 * len(rows) + 1.6))
    boxes = [(y, x, KINDS[kind]) for y, (_, steps, _) in enumerate(rows) for x, (_, kind) in enumerate(steps)]
    ys, lefts, colors = zip(*boxes, strict=True)
    ax.barh(ys, 0.92, left=lefts, color=colors, edgecolor="white")  # every box in one call: one container
    for y, (_, steps, patched) in enumerate(rows):
        for x, (module, _) in enumerate(steps):  # inside its box: tight_layout need not measure it
            ax.text(x + 0.46, y, module, ha="center", va="center", fontsize=6.5, in_layout=False)
        ax.text(
            len(steps) + 0.05,
            y,
            "patched" if patched else "unpatched",
            va="center",
            fontsize=7,
            color=COLORS[2] if patched else COLORS[1],
        )
    longest = max(len(steps) for _, steps, _ in rows)
    ax.set_yticks(range(len(rows)), [label for label, _, _ in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xticks([i + 0.46 for i in range(longest)], [f"import {i + 1}" for i in range(longest)])
    ax.set_xlim(0, longest + 0.8)
    ax.grid(False)
    handles = [Patch(color=colour, label=kind) for kind, colour in KINDS.items() if kind != "other import"]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.35, -0.12), ncol=3, fontsize=6.5)
    ax.set_title("Each process's imports in order: a patch acts only before the library", fontsize=8)
    fit_layout(fig)
    if show:
        plt.show()
    return fig
