"""The house plot style prints what it draws; the hygiene patterns find what breaks nbval."""

import matplotlib.pyplot as plt
import pytest

from verlstudy.kit.hygiene import (
    sanitize,
    unstable_fragments,
)
from verlstudy.kit.plots import bar_plot, line_plot


def test_line_plot_prints_every_point_it_draws(capsys):
    fig = line_plot(
        {"leak": ([1, 2], [10.0, 20.0]), "fixed": ([1, 2], [10.0, 10.0])},
        title="Live bytes",
        xlabel="micro-batch",
        ylabel="bytes",
        show=False,
    )
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "Live bytes:",
        "  leak (micro-batch:bytes) 1:10, 2:20",
        "  fixed (micro-batch:bytes) 1:10, 2:10",
    ]
    assert len(fig.axes[0].lines) == 2
    plt.close(fig)


def test_bar_plot_prints_label_value_lines(capsys):
    fig = bar_plot({"PP=1": 0.25, "PP=2": 1.0}, title="Bytes", ylabel="MiB", show=False)
    assert capsys.readouterr().out.splitlines() == ["Bytes (MiB):", "  PP=1: 0.25", "  PP=2: 1"]
    plt.close(fig)


@pytest.mark.parametrize(
    ("series", "message"),
    [({}, "non-empty"), ({"a": ([1, 2], [1])}, "xs has 2 values but ys has 1"), ({"a": [1, 2, 3]}, "pair")],
)
def test_line_plot_bad_series(series, message):
    with pytest.raises(ValueError, match=message):
        line_plot(series, title="t", xlabel="x", ylabel="y", show=False)


def test_unstable_fragments_finds_each_kind_in_order():
    text = "pid 42 at 0x7f00deadbeef took 1.5 s on 2026-12-02, saved /tmp/x/y.pt via localhost:29500"
    kinds = [kind for kind, _ in unstable_fragments(text)]
    assert kinds == ["process id", "memory address", "timing", "date or time", "temporary path", "local port"]
    assert unstable_fragments("loss 0.3125 after 3 steps; 4096 bytes") == []


def test_sanitize_replaces_fragments_with_their_kind():
    assert sanitize("took 0.42 s at 0xdeadbeef00") == "took <timing> at <memory address>"
    with pytest.raises(TypeError):
        unstable_fragments(b"bytes")  # type: ignore[arg-type]


def test_bar_plot_can_draw_a_log_axis_and_refuses_values_it_cannot_draw_there(capsys):
    import matplotlib.pyplot as plt

    from verlstudy.kit.plots import bar_plot

    fig = bar_plot({"leak": 16640.0, "fixed": 256.0}, title="t", ylabel="bytes", show=False, log=True, labelrotation=30)
    assert fig.axes[0].get_yscale() == "log"
    assert fig.axes[0].get_xticklabels()[0].get_rotation() == 30
    plt.close(fig)
    with pytest.raises(ValueError, match="log axis needs every value > 0"):
        bar_plot({"a": 0.0}, title="t", ylabel="y", show=False, log=True)


def test_fit_layout_leaves_no_layout_engine_so_saving_draws_the_figure_once(monkeypatch):
    import io

    import matplotlib.figure

    from verlstudy.kit.plots import fit_layout

    fig = bar_plot({"a": 1.0, "b": 2.0}, title="t", ylabel="y", show=False)
    assert fig.get_layout_engine() is None  # bar_plot lays out with fit_layout
    fig.tight_layout()  # what fit_layout avoids: the engine tight_layout leaves behind
    assert fig.get_layout_engine() is not None
    draws = []
    original = matplotlib.figure.Figure.draw
    monkeypatch.setattr(matplotlib.figure.Figure, "draw", lambda self, r: (draws.append(1), original(self, r))[1])
    fig.savefig(io.BytesIO(), format="png")
    assert len(draws) == 2
    draws.clear()
    assert fit_layout(fig) is fig and fig.get_layout_engine() is None
    fig.savefig(io.BytesIO(), format="png")
    assert len(draws) == 1
    plt.close(fig)


def test_bar_plot_right_aligns_slanted_labels_on_request():
    fig = bar_plot(
        {"a long label": 1.0, "b": 2.0}, title="t", ylabel="y", show=False, labelrotation=35, labelalign="right"
    )
    assert [label.get_ha() for label in fig.axes[0].get_xticklabels()] == ["right", "right"]
    plt.close(fig)
    with pytest.raises(ValueError, match="labelalign must be"):
        bar_plot({"a": 1.0}, title="t", ylabel="y", show=False, labelalign="middle")


def test_untrimmed_inline_figures_sets_the_inline_default_only(monkeypatch):
    import IPython
    import IPython.core.pylabtools
    from matplotlib_inline.config import InlineBackend
    from traitlets.config import Configurable

    from verlstudy.kit.plots import untrimmed_inline_figures

    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    assert untrimmed_inline_figures() is False  # no kernel: nothing to configure
    shell = Configurable()  # stands in for the kernel's shell: the backend's config only needs a parent
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    registered = []
    monkeypatch.setattr(IPython.core.pylabtools, "select_figure_formats", lambda *a, **kw: registered.append(kw))
    InlineBackend.clear_instance()
    try:
        inline = InlineBackend.instance(parent=shell)
        inline.print_figure_kwargs.update(pil_kwargs={"compress_level": 6})
        assert untrimmed_inline_figures() is True  # before the first figure: read when the backend starts
        assert inline.print_figure_kwargs == {"bbox_inches": None, "pil_kwargs": {"compress_level": 6}}
        assert registered == []
        inline.print_figure_kwargs["bbox_inches"] = "tight"
        monkeypatch.setattr(InlineBackend, "shell", shell)  # the backend is active: it already showed a figure
        assert untrimmed_inline_figures() is True
        assert registered == [{"bbox_inches": None, "pil_kwargs": {"compress_level": 6}}]
        inline.print_figure_kwargs["bbox_inches"] = "standard"  # a learner's own choice stays
        assert untrimmed_inline_figures() is False
        assert inline.print_figure_kwargs["bbox_inches"] == "standard" and len(registered) == 1
    finally:
        InlineBackend.clear_instance()


def test_a_value_that_is_not_a_number_is_named_by_its_label():
    # issue 43 item 8: bar_plot({"a": None}) was float()'s TypeError naming no label; line_plot drew a None
    with pytest.raises(TypeError, match=r"values\['a'\] is NoneType None, not a number"):
        bar_plot({"a": None}, title="t", ylabel="y", show=False)
    with pytest.raises(TypeError, match=r"series\['s'\] y\[1\] is str '2', not a number"):
        line_plot({"s": ([0, 1], [1.0, "2"])}, title="t", xlabel="x", ylabel="y", show=False)
    plt.close("all")


def test_a_bad_value_leaves_no_figure_open():
    import matplotlib.pyplot as plt

    plt.close("all")
    with pytest.raises((TypeError, ValueError), match=r"series\['a'\] y\[1\]"):
        line_plot({"a": ([0, 1], [1, None])}, title="t", xlabel="x", ylabel="y", show=False)
    assert plt.get_fignums() == []  # the values are checked before the figure is made
