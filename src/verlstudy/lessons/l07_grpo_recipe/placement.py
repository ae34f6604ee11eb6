"""Where each rank of a `ParallelLayout` sits: its node, its pipeline stage, its TP group, its EP group.

Stock Megatron-core numbers the ranks of each parallel group with the order ``"tp-cp-ep-dp-pp"``
(``megatron/core/parallel_state.py::initialize_model_parallel``'s default at ``core_v0.18.0``; verl 0.9.1's
``workers/engine/megatron/transformer_impl.py`` passes no ``order``), tp varying fastest. Whether the Ascend
stack's patches (MindSpeed, MegatronAdaptor) change that default is not checked here: this is stock Megatron's
numbering.

- dense (attention) weights: ``rank = tp + TP * (cp + CP * (dp + DP * pp))``
- expert (MoE) weights:      ``rank = etp + ETP * (ep + EP * (edp + EDP * pp))``

The node of a rank is ``rank // devices_per_node``: the course assumes global ranks are numbered node by
node. `draw_placement` draws the grid (one column per node, one row per device) and prints what it draws.
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.collections import LineCollection
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from verlstudy.kit.plots import COLORS, apply_style, fit_layout
from verlstudy.lessons.l07_grpo_recipe.parallel import ParallelLayout

_STAGE_COLORS = (*COLORS, "#8c8c8c", "#b07aa1")


@dataclass(frozen=True)
class Place:
    """One rank: where it sits and its coordinate in every parallel dimension."""

    rank: int
    node: int
    device: int  # index inside the node
    pp: int
    tp: int
    cp: int
    dp: int
    etp: int
    ep: int
    edp: int


def _check_layout(layout: object) -> ParallelLayout:
    if not isinstance(layout, ParallelLayout):
        raise TypeError(f"layout must be a ParallelLayout, got {type(layout).__name__}")
    return layout


def rank_place(layout: ParallelLayout, rank: int) -> Place:
    """The coordinates of `rank` in `layout`, with Megatron-core's default order (tp fastest, pp slowest)."""
    layout = _check_layout(layout)
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < layout.world_size:
        raise ValueError(f"rank must be an int in [0, {layout.world_size}), got {rank!r}")
    etp = int(layout.etp or 1)
    tp, rest = rank % layout.tp, rank // layout.tp
    cp, rest = rest % layout.cp, rest // layout.cp
    dp, pp = rest % layout.dp, rest // layout.dp
    e_tp, rest = rank % etp, rank // etp
    ep, rest = rest % layout.ep, rest // layout.ep
    edp = rest % layout.edp
    node, device = divmod(rank, layout.devices_per_node)
    return Place(rank, node, device, pp, tp, cp, dp, e_tp, ep, edp)


def placement(layout: ParallelLayout) -> list[Place]:
    """Every rank's `Place`, in rank order."""
    layout = _check_layout(layout)
    return [rank_place(layout, r) for r in range(layout.world_size)]


def _groups(places: list[Place], vary: str) -> dict[tuple[int, ...], list[Place]]:
    """Ranks grouped by every coordinate except `vary` (and the ones that index the other weight kind)."""
    dense, expert = ("pp", "tp", "cp", "dp"), ("pp", "etp", "ep", "edp")
    fixed = [k for k in (dense if vary in dense else expert) if k != vary]
    groups: dict[tuple[int, ...], list[Place]] = {}
    for p in places:
        groups.setdefault(tuple(getattr(p, k) for k in fixed), []).append(p)
    return groups


def group_nodes(layout: ParallelLayout, vary: str) -> list[tuple[int, ...]]:
    """For each group of dimension `vary` ('tp', 'cp', 'dp', 'pp', 'etp', 'ep', 'edp'), the nodes it spans."""
    if vary not in ("tp", "cp", "dp", "pp", "etp", "ep", "edp"):
        raise ValueError(f"vary must be one of tp, cp, dp, pp, etp, ep, edp; got {vary!r}")
    groups = _groups(placement(layout), vary)
    return [tuple(sorted({p.node for p in g})) for g in groups.values()]


def stage_nodes(layout: ParallelLayout) -> dict[int, tuple[int, ...]]:
    """Pipeline stage -> the nodes holding it."""
    out: dict[int, set[int]] = {}
    for p in placement(layout):
        out.setdefault(p.pp, set()).add(p.node)
    return {s: tuple(sorted(nodes)) for s, nodes in sorted(out.items())}


def _span(nodes: tuple[int, ...]) -> str:
    return f"node {nodes[0]}" if len(nodes) == 1 else f"nodes {nodes[0]}-{nodes[-1]}"


def placement_table(layout: ParallelLayout) -> str:
    """One line per node: its ranks, its pipeline stage(s), its TP groups (with their dp index), its EP group."""
    places = placement(layout)
    lines = [f"{'node':>4} | ranks   | stage | TP groups (dp index)           | EP group spans"]
    ep_span = {
        (g[0].pp, g[0].etp, g[0].edp): tuple(sorted({p.node for p in g})) for g in _groups(places, "ep").values()
    }
    for node in range(layout.nodes):
        here = [p for p in places if p.node == node]
        stages = sorted({p.pp for p in here})
        tps: dict[tuple[int, int, int], list[int]] = {}
        for p in here:
            tps.setdefault((p.pp, p.cp, p.dp), []).append(p.rank)
        tp_text = ", ".join(f"dp{dp} [{r[0]}-{r[-1]}]" for (_, _, dp), r in tps.items())
        eps = sorted({ep_span[(p.pp, p.etp, p.edp)] for p in here})
        lines.append(
            f"{node:>4} | {here[0].rank:>3}-{here[-1].rank:<3} | {','.join(map(str, stages)):>5} | "
            f"{tp_text:<30} | {'; '.join(_span(e) for e in eps)}"
        )
    return "\n".join(lines)


def _boundaries(places: list[Place], layout: ParallelLayout, key: str) -> list[tuple[tuple[float, float], ...]]:
    """Cell edges (in the node x device grid) between neighbours whose `key` group differs."""
    grid = {(p.node, p.device): p for p in places}

    def group(p: Place) -> tuple[int, ...]:
        if key == "tp":
            return (p.pp, p.cp, p.dp)
        return (p.pp,)

    segments = []
    for (x, y), p in grid.items():
        right, below = grid.get((x + 1, y)), grid.get((x, y + 1))
        if right is not None and group(right) != group(p):
            segments.append(((x + 0.5, y - 0.5), (x + 0.5, y + 0.5)))
        if below is not None and group(below) != group(p):
            segments.append(((x - 0.5, y + 0.5), (x + 0.5, y + 0.5)))
    return segments


def draw_placement(layout: ParallelLayout, *, show: bool = True) -> Figure:
    """Draw every device of `layout`: one column per node, one row per device in the node, coloured by pipeline
    stage, TP groups outlined (labelled with their dense data-parallel index), each EP group bracketed above.
    Prints the same facts first (`placement_table`), so the numbers the picture shows are checked as text."""
    layout = _check_layout(layout)
    places = placement(layout)
    print(placement_table(layout))
    apply_style()
    fig, ax = plt.subplots(figsize=(7.0, 3.8))
    grid = [[0] * layout.nodes for _ in range(layout.devices_per_node)]
    for p in places:
        grid[p.device][p.node] = p.pp
    colors = [_STAGE_COLORS[s % len(_STAGE_COLORS)] for s in range(layout.pp)]
    ax.imshow(
        grid, cmap=ListedColormap(colors), vmin=-0.5, vmax=layout.pp - 0.5, aspect="auto", interpolation="nearest"
    )
    ax.add_collection(LineCollection(_boundaries(places, layout, "tp"), colors="white", linewidths=1.0))
    ax.add_collection(LineCollection(_boundaries(places, layout, "pp"), colors="black", linewidths=1.6))
    tp_cells: dict[tuple[int, int, int], list[Place]] = {}
    for p in places:
        tp_cells.setdefault((p.pp, p.cp, p.dp), []).append(p)
    for (_, _, dp), cells in tp_cells.items():
        if len({c.node for c in cells}) == 1:  # label a TP group that sits inside one node
            ax.text(
                cells[0].node,
                sum(c.device for c in cells) / len(cells),
                f"dp{dp}",
                ha="center",
                va="center",
                fontsize=5.5,
                color="white",
                rotation=90,
                in_layout=False,  # inside its cell, so tight_layout need not measure the 64 labels
            )
    for g in _groups(places, "ep").values():
        nodes = sorted({p.node for p in g})
        ax.annotate(
            "",
            xy=(nodes[0] - 0.45, -1.0),
            xytext=(nodes[-1] + 0.45, -1.0),
            annotation_clip=False,
            arrowprops={"arrowstyle": "|-|", "color": "black", "lw": 0.8, "shrinkA": 0, "shrinkB": 0},
        )
        ax.text((nodes[0] + nodes[-1]) / 2, -1.6, f"stage {g[0].pp} · EP", ha="center", va="bottom", fontsize=6)
    ax.set_xlim(-0.5, layout.nodes - 0.5)
    ax.set_ylim(layout.devices_per_node - 0.5, -2.4)
    ax.set_xticks(range(0, layout.nodes, max(1, layout.nodes // 8)))
    ax.set_yticks(range(0, layout.devices_per_node, max(1, layout.devices_per_node // 4)))
    ax.set(xlabel="node", ylabel="device in node")
    ax.grid(False)
    ax.set_title(
        f"{layout.world_size} devices: colour = pipeline stage, white lines = TP groups "
        f"(tp={layout.tp}), brackets = EP groups (ep={layout.ep})",
        fontsize=8,
    )
    fit_layout(fig)
    if show:
        plt.show()
    return fig
