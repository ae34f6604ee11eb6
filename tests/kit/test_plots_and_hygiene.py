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
