"""The export's shard map as a picture: which source tensors each export wrote, dropped, or did not expect.

One column per export (e.g. Megatron-Bridge v0.5.0 strict, v0.6.0 strict, strict=False), one row per source
tensor grouped by shard; each cell says what happened to that tensor. The same table is printed, so nbval
checks what the figure shows.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
from matplotlib.colors import ListedColormap

from verlstudy.kit.params import check_instance, check_str, got
from verlstudy.kit.plots import COLORS, apply_style, fit_layout
from verlstudy.lessons.l05_checkpoint.export import ExportResult

STATES = ("written", "not expected (ignored)", "lost: MTP", "lost: real tensor")


def _weight_map(index: object) -> Mapping[str, str]:
    """The index's weight_map; a one-line TypeError when `index` is not a source_index dict."""
    if not isinstance(index, Mapping) or not isinstance(index.get("weight_map"), Mapping):
        raise TypeError(f"argument index must be a source_index dict holding a 'weight_map' mapping, got {got(index)}")
    return index["weight_map"]


def tensor_states(index: Mapping[str, object], result: ExportResult, mtp_prefix: str) -> dict[str, str]:
    """Source tensor -> one of STATES for one export."""
    weight_map = _weight_map(index)
    check_str("mtp_prefix", mtp_prefix, what="the MTP tensors' name prefix (a str, like 'mtp.')")
    if not isinstance(result, ExportResult):
        raise TypeError(f"result must be an ExportResult, got {type(result).__name__}")
    states = {}
    for key in weight_map:
        if key in result.weight_map:
            states[key] = STATES[0]
        elif key in result.ignored:
            states[key] = STATES[1]
        else:
            states[key] = STATES[2] if key.startswith(mtp_prefix) else STATES[3]
    return states


def shard_map(index: Mapping[str, object], results: Mapping[str, ExportResult], mtp_prefix: str = "mtp.") -> None:
    """Draw and print the shard map of each export in `results` (label -> ExportResult)."""
    check_instance("results", results, Mapping, what="a mapping {label: ExportResult}")
    if not results:
        raise ValueError("results must name at least one export")
    weight_map = _weight_map(index)
    keys = sorted(weight_map, key=lambda k: (weight_map[k], k))
    columns = {label: tensor_states(index, r, mtp_prefix) for label, r in results.items()}
    width, files = max(len(k) for k in keys), max(len(str(weight_map[k])) for k in keys)
    cell = max(max(len(label) for label in columns), max(len(state) for state in STATES))
    print(f"{'shard':<{files}} {'tensor':<{width}} | " + " | ".join(f"{label:<{cell}}" for label in columns))
    for key in keys:
        states = " | ".join(f"{c[key]:<{cell}}" for c in columns.values())
        print(f"{weight_map[key]:<{files}} {key:<{width}} | {states}".rstrip())
    apply_style()
    grid = [[STATES.index(c[k]) for c in columns.values()] for k in keys]
    fig, ax = plt.subplots(figsize=(6.0, 0.22 * len(keys) + 1.2))
    cmap = ListedColormap([COLORS[2], "#bbbbbb", COLORS[3], COLORS[1]])
    ax.imshow(grid, cmap=cmap, vmin=0, vmax=len(STATES) - 1, aspect="auto")
    ax.set_xticks(range(len(columns)), list(columns))
    ax.set_yticks(range(len(keys)), [f"{weight_map[k].split('-')[1]} · {k}" for k in keys], fontsize=7)
    ax.grid(False)
    for state, colour in zip(STATES, cmap.colors, strict=True):
        ax.plot([], [], "s", color=colour, label=state)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    ax.set_title("Source tensors by shard: what each export did")
    fit_layout(fig)
    plt.show()
