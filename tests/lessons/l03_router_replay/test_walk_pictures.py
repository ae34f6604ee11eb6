"""Lesson 03's walk pictures: each walk's order, who answers (or what is met twice), and the same table printed."""

import matplotlib.pyplot as plt
import pytest

from verlstudy.lessons.l03_router_replay.moe import TinyMoE
from verlstudy.lessons.l03_router_replay.text_config import (
    ToyConfig,
    bfs_config_attr,
    get_text_config_attr,
)
from verlstudy.lessons.l03_router_replay.walk_pictures import draw_router_walks, draw_walks, router_table, walk_table


def omni():
    text = ToyConfig("Text", hidden_size=4096)
    audio = ToyConfig("Audio", hidden_size=1280, num_mel_bins=128)
    return ToyConfig("Omni", hidden_size=1024, text_config=text, audio_config=audio, code2wav_config=ToyConfig("C2W"))


def test_the_table_orders_both_walks_and_names_who_answers():
    rows, naive, text = walk_table(omni(), "hidden_size")
    assert [(r.path, r.bfs_order, r.text_order) for r in rows] == [
        ("<root>", 1, 2),
        ("text_config", 2, 1),
        ("audio_config", 3, None),
        ("code2wav_config", 4, None),
    ]
    assert (naive, text) == ("<root>", "text_config")


@pytest.mark.parametrize("name", ["hidden_size", "num_mel_bins"])
def test_who_answers_agrees_with_the_walks_themselves(name):
    config = omni()
    rows, naive, text = walk_table(config, name)
    values = {r.path: r.value for r in rows}
    assert values[naive] == bfs_config_attr(config, name)
    if text is None:
        with pytest.raises(AttributeError):
            get_text_config_attr(config, name)
    else:
        assert values[text] == get_text_config_attr(config, name)


def test_the_picture_prints_what_it_draws(capsys):
    fig = draw_walks(omni(), "hidden_size", show=False)
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "naive BFS answers from: <root>; text walk answers from: text_config"
    assert any(line.startswith("audio_config") and line.rstrip().endswith("never") for line in out)
    plt.close(fig)


def test_a_bad_attribute_name_is_refused():
    with pytest.raises(ValueError, match="valid attribute name"):
        walk_table(omni(), "not a name")


def test_the_router_table_shows_the_decoder_walk_skipping_the_mtp_sibling():
    model = TinyMoE(hidden=8, num_experts=4, topk=2, mtp_layers=1, registry=[])
    routers = [
        (r.path, r.layer_number, r.every_module_order, r.decoder_order) for r in router_table(model) if r.layer_number
    ]
    assert routers == [
        ("decoder.0.router", 1, 1, 1),
        ("decoder.1.router", 2, 2, 2),
        ("decoder.2.router", 3, 3, 3),
        ("mtp.0.router", 1, 4, None),
    ]


def test_the_router_picture_prints_the_layer_met_twice(capsys):
    fig = draw_router_walks(TinyMoE(hidden=8, num_experts=4, topk=2, mtp_layers=1, registry=[]), show=False)
    assert capsys.readouterr().out.splitlines()[-1] == "layer numbers met twice by the every-module walk: [1]"
    plt.close(fig)
    with pytest.raises(TypeError, match=r"torch\.nn\.Module"):
        router_table("not a model")
