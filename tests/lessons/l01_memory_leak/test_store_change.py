"""The toy's fix as a change of its own function (issue 41 item 1): `store_output_as_is` (before #7874) and
`store_output` (the fix), picked by `store_for` (all in store.py); the leaking and the fixed runs go through them."""

from __future__ import annotations

import torch

from verlstudy.common.trees import grad_attached_paths
from verlstudy.kit.show import change_view
from verlstudy.lessons.l01_memory_leak import pipeline as pl
from verlstudy.lessons.l01_memory_leak import store


def _output() -> dict:
    return {"model_output": {"log_probs": torch.randn(3, requires_grad=True) * 2.0}}


def test_as_is_stores_the_live_dict_and_the_fix_stores_a_detached_copy():
    leaked, fixed, output = [], [], _output()
    store.store_output_as_is(leaked, output)
    store.store_output(fixed, output)
    assert leaked[0] is output and grad_attached_paths(leaked[0]) != []
    assert grad_attached_paths(fixed[0]) == [] and grad_attached_paths(output) != []  # the caller's dict untouched


def test_the_fix_uses_the_detach_function_it_is_given():
    calls, kept = [], []
    store.store_output(kept, _output(), lambda tree: calls.append(tree) or "detached")
    assert kept == ["detached"] and len(calls) == 1


def test_store_for_picks_the_function_each_run_uses():
    assert store.store_for(False) is store.store_output_as_is and store.store_for(True) is store.store_output


def test_the_runs_store_through_them(monkeypatch):
    used = []
    for name in ("store_output_as_is", "store_output"):
        real = getattr(store, name)
        monkeypatch.setattr(store, name, lambda *a, _real=real, _name=name: used.append(_name) or _real(*a))
    config = pl.PipelineConfig(seq_len=4, hidden=4, vocab=8)
    pl.run_pipeline(config, 1)
    pl.run_pipeline(config, 1, detach_outputs=True)
    assert used == ["store_output_as_is", "store_output"]


def test_the_change_shown_is_the_one_line_of_the_fix():
    diff = change_view(store.store_output_as_is, store.store_output).lines()
    assert "-    forward_data_store.append(output)" in diff
    assert "+    forward_data_store.append(detach_fn(output))" in diff
