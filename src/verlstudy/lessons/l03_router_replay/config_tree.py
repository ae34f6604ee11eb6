"""Lesson 03's picture of the config walk: which sub-configs each walk reads, in which order, and who answers.

The tree is the config's sub-configs (reached through attributes that hold configs). For an attribute
name, each node is marked with its place in the naive breadth-first walk (`bfs_config_attr`, every
sub-config, root first) and in the text-branch walk (`get_text_config_attr`: the text config first, then
the branch deepest first, never a sibling), and the node whose value each walk returns is ringed.
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.figure
import matplotlib.pyplot as plt

from verlstudy.kit.plots import COLORS, apply_style
from verlstudy.lessons.l03_router_replay.text_config import _check_attr_name, _text_branch, _text_config, _walk_all


@dataclass(frozen=True)
class TreeNode:
    """One config of the tree: its attribute path, depth, its value of the attribute (None: absent), and the
    1-based position at which each walk reads it (None: that walk never reads it)."""

    path: str
    depth: int
    value: object
    bfs_order: int | None
    text_order: int | None


def walk_table(config: object, name: str) -> tuple[list[TreeNode], str | None, str | None]:
    """Every sub-config with both walks' read order, and the path each walk answers from (None: it raises)."""
    name = _check_attr_name(name)
    tree = list(_walk_all(config))
    bfs = {id(node): i for i, (_, node) in enumerate(tree, start=1)}
    text = _text_config(config)
    branch = ([text] if text is not None else []) + [n for n in _text_branch(config) if n is not text]
    text_order = {id(node): i for i, node in enumerate(branch, start=1)}
    rows = [
        TreeNode(path, 0 if path == "<root>" else path.count(".") + 1, getattr(node, name, None),
                 bfs[id(node)], text_order.get(id(node)))
        for path, node in tree
    ]  # fmt: skip

    def first(order: str) -> str | None:
        found = sorted((getattr(r, order), r.path) for r in rows if getattr(r, order) and r.value is not None)
        return found[0][1] if found else None

    return rows, first("bfs_order"), first("text_order")


def draw_walks(config: object, name: str, *, show: bool = True) -> matplotlib.figure.Figure:
    """Draw the config tree with both walks' read order and the node each answers from; print the same table."""
    rows, bfs_answer, text_answer = walk_table(config, name)
    apply_style()
    fig, ax = plt.subplots(figsize=(6.6, 2.6))
    by_depth: dict[int, list[TreeNode]] = {}
    for row in rows:
        by_depth.setdefault(row.depth, []).append(row)
    place = {}
    for depth, nodes in by_depth.items():
        for i, row in enumerate(nodes):
            place[row.path] = ((i + 0.5) / len(nodes), -depth)
    for row in rows:
        if row.path != "<root>":
            parent = row.path.rsplit(".", 1)[0] if "." in row.path else "<root>"
            (x0, y0), (x1, y1) = place[parent], place[row.path]
            ax.plot([x0, x1], [y0 - 0.18, y1 + 0.18], color="#999999", lw=1, zorder=1)
    for row in rows:
        x, y = place[row.path]
        on_branch = row.text_order is not None
        face = COLORS[0] if on_branch else "#dddddd"
        ring = COLORS[1] if row.path == bfs_answer else (COLORS[2] if row.path == text_answer else "none")
        label = f"{row.path.rsplit('.', 1)[-1]}\n{name}={row.value}"
        ax.text(x, y, label, ha="center", va="center", fontsize=7.5, color="white" if on_branch else "black",
                bbox={"boxstyle": "round,pad=0.35", "fc": face, "ec": ring, "lw": 2.5}, zorder=2)  # fmt: skip
        orders = f"BFS {row.bfs_order}" + (f" · text {row.text_order}" if on_branch else " · text never")
        ax.text(x, y - 0.42, orders, ha="center", va="center", fontsize=6.5, color="#444444")
    ax.set_xlim(0, 1)
    ax.set_ylim(-max(by_depth) - 0.7, 0.5)
    ax.axis("off")
    title = f"{name}: the naive BFS answers from {bfs_answer} (red ring), the text walk from {text_answer}"
    key = "blue: on the text branch; grey: a sibling the text walk never reads"
    ax.set_title(f"{title} (green ring)\n{key}", fontsize=8)
    fig.tight_layout()
    print(f"{'config':<28} {name + ' =':<16} {'BFS reads':>9} {'text walk reads':>15}")
    for row in rows:
        text = "never" if row.text_order is None else str(row.text_order)
        print(f"{row.path:<28} {row.value!s:<16} {row.bfs_order:>9} {text:>15}")
    print(f"naive BFS answers from: {bfs_answer}; text walk answers from: {text_answer}")
    if show:
        plt.show()
    return fig
