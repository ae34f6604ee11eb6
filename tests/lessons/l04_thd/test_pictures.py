"""Lesson 04's pictures: the zigzag layout as numbers, as text, and drawn once when shown."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from verlstudy.lessons.l04_thd.pictures import plot_zigzag, zigzag_layout, zigzag_text
from verlstudy.lessons.l04_thd.thd import plot_packing


def test_zigzag_layout_gives_each_position_its_cp_rank_and_tp_slice() -> None:
    # 8 tokens, cp=2: chunks of 2, rank 0 holds chunks 0 and 3, rank 1 chunks 1 and 2; each rank's 4 cut for tp=2
    assert zigzag_layout(8, 2, 2) == ([0, 0, 1, 1, 1, 1, 0, 0], [0, 0, 0, 0, 1, 1, 1, 1])
    assert zigzag_layout(4, 2, 1) == ([0, 0, 0, 0], [0, 0, 1, 1])
    with pytest.raises(ValueError, match="must divide by the alignment 8"):
        zigzag_layout(12, 2, 2)


def test_zigzag_text_names_each_ranks_slices() -> None:
    assert zigzag_text(24, 3, 2).splitlines() == [
        "seq_len=24, tp=3, cp=2: 4 chunk(s) of 6",
        "cp rank 0: tp0: 0-3 | tp1: 4-5,18-19 | tp2: 20-23",
        "cp rank 1: tp0: 6-9 | tp1: 10-13 | tp2: 14-17",
    ]


@pytest.mark.parametrize(
    ("draw", "printed"),
    [
        (lambda: plot_zigzag(24, 3, 2, show=False), zigzag_text(24, 3, 2)),
        (lambda: plot_packing([3, 5], tp=2, cp=2, show=False), None),
    ],
    ids=["zigzag", "packing"],
)
def test_pictures_are_laid_out_once_and_print_their_numbers(draw, printed, capsys: pytest.CaptureFixture[str]) -> None:
    fig = draw()
    try:
        assert fig.get_layout_engine() is None  # laid out already: showing it draws it once, not twice
        legend = fig.axes[0].get_legend()
        assert legend is not None and legend.get_texts()[0].get_text() in ("cp rank 0", "real token")
    finally:
        plt.close(fig)
    if printed is not None:
        assert capsys.readouterr().out.strip() == printed
