"""Lesson 05 upstream helpers: verl's own save path (megatron_checkpoint_manager.py) on the course's bridge."""

from __future__ import annotations

import pytest
import torch

from verlstudy.kit.upstream import UpstreamMoved, verl_available
from verlstudy.lessons.l05_checkpoint import upstream
from verlstudy.lessons.l05_checkpoint.checkpoint import TinyLM, TinyLMWithMTP
from verlstudy.lessons.l05_checkpoint.export import ExportResult, source_index

needs_verl = pytest.mark.skipif(not verl_available(), reason="verl is not installed (make setup installs it)")


@pytest.fixture
def bridge() -> upstream.CourseBridge:
    torch.manual_seed(0)
    return upstream.CourseBridge(source_index(TinyLMWithMTP().state_dict(), 3))


def test_course_bridge_runs_the_export_and_records_it(bridge) -> None:
    bridge.save_hf_weights([TinyLM()], "hf", strict=True)
    bridge.save_hf_weights(TinyLM(), "hf", strict=False)
    assert [c["strict"] for c in bridge.calls] == [True, False]
    assert isinstance(bridge.calls[0]["outcome"], ExportResult) and bridge.calls[0]["outcome"].dropped  # v0.5.0
    assert isinstance(bridge.calls[1]["outcome"], ExportResult)


@needs_verl
@pytest.mark.parametrize("release", [None, "0.9.0"])
@pytest.mark.parametrize("strict", [True, False])
def test_verl_hands_strict_to_save_hf_weights_when_dist_checkpointing_is_off(bridge, strict, release) -> None:
    if release and not verl_available(release):
        pytest.skip(f"verl {release} not fetched")
    assert upstream.verl_save(bridge, TinyLM(), strict=strict, release=release) is True
    assert [(c["method"], c["strict"]) for c in bridge.calls] == [("save_hf_weights", strict)]


@needs_verl
def test_verl_skips_the_hf_export_with_dist_checkpointing_or_without_model(bridge) -> None:
    assert upstream.verl_save(bridge, TinyLM(), strict=True, use_dist_checkpointing=True) is False
    assert upstream.verl_save(bridge, TinyLM(), strict=True, save_contents=("optimizer",)) is False
    assert bridge.calls == []
    assert upstream.verl_save(bridge, TinyLM(), strict=True, save_contents=("hf_model",), use_dist_checkpointing=True)


@needs_verl
def test_hf_model_in_save_contents_exports_even_with_dist_checkpointing(bridge) -> None:
    contents = (*upstream.DEFAULT_SAVE_CONTENTS, "hf_model")
    assert upstream.verl_save(bridge, TinyLM(), strict=False, use_dist_checkpointing=True, save_contents=contents)
    assert [(c["method"], c["strict"]) for c in bridge.calls] == [("save_hf_weights", False)]


@needs_verl
@pytest.mark.parametrize(
    ("flags", "method"), [({"peft": True}, "save_hf_adapter"), ({"vanilla_bridge": True}, "save_weights")]
)
def test_peft_and_the_vanilla_bridge_export_without_strict(bridge, flags, method) -> None:
    assert upstream.verl_save(bridge, TinyLM(), strict=True, **flags) is True
    assert [(c["method"], c["strict"]) for c in bridge.calls] == [(method, None)]
    peft_and_vanilla = upstream.CourseBridge(bridge.source)
    assert upstream.verl_save(peft_and_vanilla, TinyLM(), strict=True, peft=True, vanilla_bridge=True)
    assert [c["method"] for c in peft_and_vanilla.calls] == ["save_weights"]  # the vanilla test comes first


@pytest.fixture
def fresh_manager_methods():
    """An empty cache of verl's manager methods, before and after: for a test that changes what it would read."""
    upstream._manager_methods.cache_clear()
    yield
    upstream._manager_methods.cache_clear()


@needs_verl
def test_verl_save_reads_verls_source_once(bridge, monkeypatch, fresh_manager_methods) -> None:
    methods = upstream.load_manager_methods()
    assert upstream.load_manager_methods() is methods
    with pytest.raises(TypeError):
        methods["should_save_hf_model"] = lambda self: False  # type: ignore[index]  # shared: read-only
    monkeypatch.setattr(upstream, "upstream_file", lambda rel, release=None: pytest.fail("read verl's source again"))
    assert upstream.verl_save(bridge, TinyLM(), strict=False)
    assert upstream.verl_save(bridge, TinyLM(), strict=True)
    assert [c["strict"] for c in bridge.calls] == [False, True]


@needs_verl
def test_load_manager_methods_says_when_verl_moved(monkeypatch, fresh_manager_methods) -> None:
    monkeypatch.setattr(upstream, "upstream_file", lambda rel, release=None: ("class Other: pass", "verl/x.py"))
    with pytest.raises(UpstreamMoved, match="no class MegatronCheckpointManager"):
        upstream.load_manager_methods()
    source = "class MegatronCheckpointManager:\n    def should_save_hf_model(self):\n        return True\n"
    monkeypatch.setattr(upstream, "upstream_file", lambda rel, release=None: (source, "verl/x.py"))
    with pytest.raises(UpstreamMoved, match="_save_model_as_hf_via_bridge"):
        upstream.load_manager_methods()


def test_verl_save_rejects_bad_arguments(bridge) -> None:
    with pytest.raises(TypeError, match="CourseBridge"):
        upstream.verl_save(object(), TinyLM(), strict=True)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="True or False"):
        upstream.verl_save(bridge, TinyLM(), strict="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="peft"):
        upstream.verl_save(bridge, TinyLM(), strict=True, peft=1)  # type: ignore[arg-type]
