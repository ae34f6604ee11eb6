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


@pytest.mark.parametrize("value", [None, 7, "abc", [1], {"a": 1}, float("nan")])
def test_shard_map_names_an_argument_of_the_wrong_type(value):
    # issue 43 item 8: shard_map(7, {...}) ended in "'int' object is not subscriptable"
    model = TinyLM()
    index = source_index(model.state_dict())
    result = export_hf_weights(model.state_dict(), index, strict=True, bridge="v0.5.0")
    with pytest.raises(TypeError, match=r"argument index must be a source_index dict holding a 'weight_map'"):
        tensor_states(value, result, "mtp.")
    with pytest.raises(TypeError, match=r"argument index must be a source_index dict holding a 'weight_map'"):
        shard_map(value, {"strict": result})
    if not isinstance(value, dict):
        with pytest.raises(TypeError, match=r"argument results must be a mapping \{label: ExportResult\}"):
            shard_map(index, value)
    if not isinstance(value, str):
        with pytest.raises(TypeError, match=r"argument mtp_prefix must be the MTP tensors' name prefix"):
            tensor_states(index, result, value)
