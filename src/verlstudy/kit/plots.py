"""One house style for every figure, and the rule that a figure also prints the numbers it plots.

nbval does not compare PNGs, so the printed numbers are what the tests check.
Showing a figure costs one draw: `fit_layout` lays it out once and `apply_style` has Jupyter's inline
backend print it at its own size (its default, bbox_inches='tight', measures every figure with an extra draw).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

import matplotlib
import matplotlib.figure
import matplotlib.pyplot as plt

from verlstudy.kit.params import check_instance

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
    """Set the course's matplotlib style (small, readable, the same colours in every lesson).

    In a Jupyter kernel it also has the inline backend print figures untrimmed (see `untrimmed_inline_figures`).
    """
    plt.rcParams.update(STYLE)
    untrimmed_inline_figures()


def untrimmed_inline_figures() -> bool:
    """In an IPython kernel, make the inline backend print a figure at its own size; True if it now does.

    The inline backend's default bbox_inches='tight' draws every shown figure once more just to measure
    it; figures laid out by `fit_layout` already fill their canvas, so the picture is the same without it.
    A setting other than that default (the learner's own) is left alone.
    """
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:  # a plain Python process: no inline backend to configure
        return False
    from matplotlib_inline.config import InlineBackend

    inline = InlineBackend.instance(parent=shell)
    kwargs = inline.print_figure_kwargs
    if kwargs.get("bbox_inches") == "tight":
        kwargs["bbox_inches"] = None  # read when the backend registers its png formatter, at the first figure
        if inline.shell is not None:  # the backend is already active: register the formatter again
            from IPython.core.pylabtools import select_figure_formats

            select_figure_formats(inline.shell, inline.figure_formats, **kwargs)
    return kwargs.get("bbox_inches") is None


def fit_layout(fig: matplotlib.figure.Figure) -> matplotlib.figure.Figure:
    """`fig.tight_layout()` once, then detach the placeholder layout engine it leaves on the figure.

    While a figure has a layout engine, even that placeholder, saving it draws it twice (a layout pass,
    then the render); the layout is done, so one draw is enough. Returns `fig`.
    """
    check_instance("fig", fig, matplotlib.figure.Figure, what="a matplotlib Figure")
    fig.tight_layout()
    fig.set_layout_engine(None)
    return fig


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
        for i, (x, y) in enumerate(zip(xs, ys, strict=True)):  # before any figure exists: a bad value leaves none
            _check_number(f"series[{label!r}] x[{i}]", x)
            _check_number(f"series[{label!r}] y[{i}]", y)


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
    fit_layout(fig)
    print(f"{title}:")
    for label, (xs, ys) in series.items():
        pairs = ", ".join(f"{_fmt(x, digits)}:{_fmt(y, digits)}" for x, y in zip(xs, ys, strict=True))
        print(f"  {label} ({xlabel}:{ylabel}) {pairs}")
    if show:
        plt.show()
    return fig


def _check_number(where: str, value: object) -> None:
    """TypeError, one line naming where, for a value a plot cannot place (None, a string, a list); NaN and
    infinity are numbers and are printed as such."""
    number = not isinstance(value, str | bytes)
    if number:
        try:
            float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError, RuntimeError):  # RuntimeError: a tensor of more than one value
            number = False
    if not number:
        raise TypeError(f"{where} is {type(value).__name__} {value!r}, not a number; plot numbers only")


def bar_plot(
    values: Mapping[str, float],
    *,
    title: str,
    ylabel: str,
    digits: int = 4,
    show: bool = True,
    log: bool = False,
    labelrotation: float = 15,
    labelalign: str = "center",
) -> matplotlib.figure.Figure:
    """Bar chart of label -> value, printed as `label: value` lines too.

    `log` draws a logarithmic value axis (bars of 256 bytes beside MiB stay visible; values must be > 0);
    `labelrotation` turns long x labels so they do not overlap; `labelalign="right"` ends each turned label
    at its bar (steeply slanted long labels).
    """
    if not isinstance(values, Mapping) or not values:
        raise ValueError("values must be a non-empty mapping of label -> number")
    for label, value in values.items():
        _check_number(f"values[{label!r}]", value)
    if log and any(float(v) <= 0 for v in values.values()):
        raise ValueError("a log axis needs every value > 0")
    if labelalign not in ("center", "right", "left"):
        raise ValueError(f"labelalign must be 'center', 'right' or 'left', got {labelalign!r}")
    apply_style()
    fig, ax = plt.subplots()
    labels = list(values)
    ax.bar(labels, [float(values[k]) for k in labels], color=COLORS[: len(labels)] or None)
    ax.set(title=title, ylabel=ylabel)
    if log:
        ax.set_yscale("log")
    ax.tick_params(axis="x", labelrotation=labelrotation)
    plt.setp(ax.get_xticklabels(), ha=labelalign)
    fit_layout(fig)
    print(f"{title} ({ylabel}):")
    for k in labels:
        print(f"  {k}: {_fmt(values[k], digits)}")
    if show:
        plt.show()
    return fig
