"""One house style for every figure, and the rule that a figure also prints the numbers it plots.

nbval does not compare PNGs, so the printed numbers are what the tests check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib
import matplotlib.figure
import matplotlib.pyplot as plt

COLORS = ("#1f5aa6", "#d1495b", "#2e8b57", "#edae49", "#6c4f9e", "#00798c")
STYLE = {
    "figure.figsize": (6.0, 3.4),
    "figure.dpi": 110,  # 660x374 px: readable on a projected site page without upscaling
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": matplotlib.cycler(color=COLORS),
    "font.size": 9,
    "legend.frameon": False,
    "svg.hashsalt": "verlstudy",
}


def apply_style() -> None:
    """Set the course's matplotlib style (small, readable, the same colours in every lesson)."""
    plt.rcParams.update(STYLE)


def _fmt(value: float, digits: int) -> str:
    return f"{value:.{digits}g}" if isinstance(value, float) else str(value)


def _check_series(series: Mapping[str, tuple[Sequence[float], Sequence[float]]]) -> None:
    if not isinstance(series, Mapping) or not series:
        raise ValueError("series must be a non-empty mapping of label -> (xs, ys)")
    for label, pair in series.items():
        if not (isinstance(pair, tuple | list) and len(pair) == 2):
            raise ValueError(f"series[{label!r}] must be a pair (xs, ys)")
        xs, ys = pair
        if len(xs) != len(ys):
            raise ValueError(f"series[{label!r}]: xs has {len(xs)} values but ys has {len(ys)}")


def line_plot(
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    digits: int = 4,
    show: bool = True,
) -> matplotlib.figure.Figure:
    """Plot labelled (xs, ys) lines and print them as a table (x, then one column per series)."""
    _check_series(series)
    apply_style()
    fig, ax = plt.subplots()
    for label, (xs, ys) in series.items():
        ax.plot(list(xs), list(ys), marker="o", markersize=3, label=label)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.legend()
    fig.tight_layout()
    print(f"{title}:")
    for label, (xs, ys) in series.items():
        pairs = ", ".join(f"{_fmt(x, digits)}:{_fmt(y, digits)}" for x, y in zip(xs, ys, strict=True))
        print(f"  {label} ({xlabel}:{ylabel}) {pairs}")
    if show:
        plt.show()
    return fig


def bar_plot(
    values: Mapping[str, float],
    *,
    title: str,
    ylabel: str,
    digits: int = 4,
    show: bool = True,
    log: bool = False,
    labelrotation: float = 15,
) -> matplotlib.figure.Figure:
    """Bar chart of label -> value, printed as `label: value` lines too.

    `log` draws a logarithmic value axis (bars of 256 bytes beside MiB stay visible; values must be > 0);
    `labelrotation` turns long x labels so they do not overlap.
    """
    if not isinstance(values, Mapping) or not values:
        raise ValueError("values must be a non-empty mapping of label -> number")
    if log and any(float(v) <= 0 for v in values.values()):
        raise ValueError("a log axis needs every value > 0")
    apply_style()
    fig, ax = plt.subplots()
    labels = list(values)
    ax.bar(labels, [float(values[k]) for k in labels], color=COLORS[: len(labels)] or None)
    ax.set(title=title, ylabel=ylabel)
    if log:
        ax.set_yscale("log")
    ax.tick_params(axis="x", labelrotation=labelrotation)
    fig.tight_layout()
    print(f"{title} ({ylabel}):")
    for k in labels:
        print(f"  {k}: {_fmt(values[k], digits)}")
    if show:
        plt.show()
    return fig
