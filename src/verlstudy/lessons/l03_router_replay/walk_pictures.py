"""Lesson 03's pictures of its two walks, each drawn as the tree it walks.

The config walk: the tree is the config's sub-configs (reached through attributes that hold configs). For an
attribute name, each node is marked with its place in the naive breadth-first walk (`bfs_config_attr`, every
sub-config, root first) and in the text-branch walk (`get_text_config_attr`: the text config first, then the
branch deepest first, never a sibling), and the node whose value each walk returns is ringed.

The router walk: the tree is the model's modules down to its routers (decoder layers, an MTP sibling). Each
router is marked with its place in the walk over every module and in the decoder-only walk (`model_routers`),
and a layer number met twice is ringed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import matplotlib.figure
import matplotlib.pyplot as plt
from torch import nn

from verlstudy.kit.plots import COLORS, apply_style, fit_layout
from verlstudy.lessons.l03_router_replay.moe import TopKRouter
from verlstudy.lessons.l03_router_replay.routes import model_routers
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


@dataclass(frozen=True)
class _Box:
    path: str  # dotted from the root ("<root>" for the root itself)
    label: str
    caption: str
    on: bool  # filled blue: on the walk that is right
    ring: str  # edge colour ("none" for no ring)


def _depth(path: str) -> int:
    return 0 if path == "<root>" else path.count(".") + 1


def _parent(path: str) -> str:
    return path.rsplit(".", 1)[0] if "." in path else "<root>"


def _draw_tree(boxes: list[_Box], title: str, *, height: float = 2.6) -> matplotlib.figure.Figure:
    """Boxes placed by depth (one row per level, spread evenly), joined to their parents."""
    apply_style()
    fig, ax = plt.subplots(figsize=(6.6, height))
    by_depth: dict[int, list[_Box]] = {}
    for box in boxes:
        by_depth.setdefault(_depth(box.path), []).append(box)
    place = {b.path: ((i + 0.5) / len(row), -d) for d, row in by_depth.items() for i, b in enumerate(row)}
    for box in boxes:
        if box.path != "<root>":
            (x0, y0), (x1, y1) = place[_parent(box.path)], place[box.path]
            ax.plot([x0, x1], [y0 - 0.18, y1 + 0.18], color="#999999", lw=1, zorder=1)
    for box in boxes:
        x, y = place[box.path]
        ax.text(x, y, box.label, ha="center", va="center", fontsize=7, color="white" if box.on else "black",
                bbox={"boxstyle": "round,pad=0.35", "fc": COLORS[0] if box.on else "#dddddd", "ec": box.ring,
                      "lw": 2.5}, zorder=2)  # fmt: skip
        ax.text(x, y - 0.42, box.caption, ha="center", va="center", fontsize=6.5, color="#444444")
    ax.set_xlim(0, 1)
    ax.set_ylim(-max(by_depth) - 0.7, 0.5)
    ax.axis("off")
    ax.set_title(title, fontsize=8)
    return fit_layout(fig)  # laid out once: showing it is then a single draw


def draw_walks(config: object, name: str, *, show: bool = True) -> matplotlib.figure.Figure:
    """Draw the config tree with both walks' read order and the node each answers from; print the same table."""
    rows, bfs_answer, text_answer = walk_table(config, name)
    boxes = [
        _Box(
            row.path,
            f"{row.path.rsplit('.', 1)[-1]}\n{name}={row.value}",
            f"BFS {row.bfs_order} · " + ("text never" if row.text_order is None else f"text {row.text_order}"),
            row.text_order is not None,
            COLORS[1] if row.path == bfs_answer else (COLORS[2] if row.path == text_answer else "none"),
        )
        for row in rows
    ]
    title = f"{name}: the naive BFS answers from {bfs_answer} (red ring), the text walk from {text_answer}"
    key = "blue: on the text branch; grey: a sibling the text walk never reads"
    fig = _draw_tree(boxes, f"{title} (green ring)\n{key}")
    print(f"{'config':<28} {name + ' =':<16} {'BFS reads':>9} {'text walk reads':>15}")
    for row in rows:
        text = "never" if row.text_order is None else str(row.text_order)
        print(f"{row.path:<28} {row.value!s:<16} {row.bfs_order:>9} {text:>15}")
    print(f"naive BFS answers from: {bfs_answer}; text walk answers from: {text_answer}")
    if show:
        plt.show()
    return fig


# ---------------------------------------------------------------- the router walk


@dataclass(frozen=True)
class RouterNode:
    """One module on the way to a router: its path, the router's layer number (None: not a router), and the
    1-based position at which each walk meets the router (None: never)."""

    path: str
    kind: str  # the module's class name
    layer_number: int | None
    every_module_order: int | None
    decoder_order: int | None


def _with_ancestors(paths: Iterable[str]) -> set[str]:
    """Each dotted module path, every path above it, and the root."""
    found = {"<root>"}
    for path in paths:
        parts = path.split(".")
        found |= {".".join(parts[: i + 1]) for i in range(len(parts))}
    return found


def router_table(model: nn.Module) -> list[RouterNode]:
    """The model's modules that hold routers (and the routers), with both walks' order of meeting each router."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    every = {id(r): i for i, (_, r) in enumerate(model_routers(model, scope="model"), start=1)}
    decoder = {id(r): i for i, (_, r) in enumerate(model_routers(model), start=1)}
    routers = {name: m for name, m in model.named_modules() if isinstance(m, TopKRouter) and m.replay is not None}
    keep = _with_ancestors(routers)  # the routers and every module above them
    rows = []
    for name, module in model.named_modules():
        path = name or "<root>"
        if path not in keep:
            continue
        router = routers.get(name)
        replay = None if router is None else router.replay
        rows.append(RouterNode(path, type(module).__name__, None if router is None else router.layer_number,
                               every.get(id(replay)), decoder.get(id(replay))))  # fmt: skip
    return rows


def draw_router_walks(model: nn.Module, *, show: bool = True) -> matplotlib.figure.Figure:
    """Draw the modules down to each router, with both walks' order; ring a layer number met twice; print it."""
    rows = router_table(model)
    numbers = [r.layer_number for r in rows if r.every_module_order is not None]
    twice = {n for n in numbers if numbers.count(n) > 1}

    walked = _with_ancestors(r.path for r in rows if r.decoder_order is not None)

    def label(row: RouterNode) -> str:
        if row.layer_number is not None:
            return f"router\nlayer {row.layer_number}"
        return row.kind if row.path == "<root>" else f"{row.path.rsplit('.', 1)[-1]}\n{row.kind}"

    def caption(row: RouterNode) -> str:
        if row.layer_number is None:
            return ""
        decoder = "never" if row.decoder_order is None else str(row.decoder_order)
        return f"all {row.every_module_order} · decoder {decoder}"

    boxes = [
        _Box(r.path, label(r), caption(r), r.path in walked, COLORS[1] if r.layer_number in twice else "none")
        for r in rows
    ]
    key = "blue: walked by the decoder-only walk; red ring: a layer number the every-module walk meets twice"
    fig = _draw_tree(boxes, f"the router walks: every module meets layers {numbers}\n{key}", height=3.0)
    print(f"{'module':<28} {'layer':>5} {'every-module walk':>18} {'decoder-only walk':>18}")
    for r in rows:
        if r.layer_number is not None:
            decoder = "never" if r.decoder_order is None else str(r.decoder_order)
            print(f"{r.path:<28} {r.layer_number:>5} {r.every_module_order:>18} {decoder:>18}")
    print(f"layer numbers met twice by the every-module walk: {sorted(twice)}")
    if show:
        plt.show()
    return fig
