"""Lesson 05's shard map (what each export did to each source tensor) and its one-call parameter check."""

import matplotlib

matplotlib.use("Agg")

import pytest

from verlstudy.lessons.l05_checkpoint.checkpoint import TinyLM, TinyLMWithMTP
from verlstudy.lessons.l05_checkpoint.export import export_hf_weights, source_index
from verlstudy.lessons.l05_checkpoint.params import lesson_params
from verlstudy.lessons.l05_checkpoint.shard_map import shard_map, tensor_states


def test_states_per_export_and_the_printed_table(capsys):
    index = source_index(TinyLMWithMTP().state_dict(), 3)
    model = TinyLM()
    pinned = export_hf_weights(model.state_dict(), index, strict=True, bridge="v0.5.0")
    newer = export_hf_weights(model.state_dict(), index, strict=True, bridge="v0.6.0")
    old, new = tensor_states(index, pinned, "mtp."), tensor_states(index, newer, "mtp.")
    assert old["head.weight"] == "lost: real tensor" and old["mtp.proj.weight"] == "lost: MTP"
    assert new["head.weight"] == "written" and new["mtp.proj.weight"] == "not expected (ignored)"
    shard_map(index, {"v0.5.0": pinned, "v0.6.0": newer})
    assert "lost: real tensor" in capsys.readouterr().out
    with pytest.raises(ValueError):
        shard_map(index, {})


def test_lesson_params_validates_and_reports(capsys):
    p = lesson_params("cpu", 32, 16, 2, 3, 64, 0)
    assert (p.vocab, p.n_shards) == (32, 3) and "running on cpu" in capsys.readouterr().out
    with pytest.raises(ValueError, match="n_shards"):
        lesson_params("cpu", 32, 16, 2, 9, 64, 0)
