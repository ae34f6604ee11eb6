"""Specification of the fixture package data/engine_config: grad_offload changes nothing the engine does."""

from __future__ import annotations

import torch

# ---- the fixture engine: grad_offload changes nothing -------------------------------------


def _offloaded(pkg, **flags) -> dict[str, int]:
    engine = pkg.engine.MegatronEngine(pkg.config.McoreEngineConfig(**flags), hidden=8)
    engine.train_step(torch.ones(4, 8))
    return engine.offload("cpu")


def test_grad_offload_has_no_effect_and_grads_follow_param_offload(pkg):
    assert (
        _offloaded(pkg, grad_offload=True)
        == _offloaded(pkg, grad_offload=False)
        == {
            "model": 0,
            "grad": 0,
            "optimizer": 0,
        }
    )
    on = _offloaded(pkg, param_offload=True)
    assert on["model"] == (8 * 8 + 8) * 2  # bfloat16 parameters, copied
    assert on["grad"] == (8 * 8 + 8) * 4  # the fp32 main-grad buffers, freed
    assert _offloaded(pkg, param_offload=True, grad_offload=True) == on


def test_forward_only_engine_has_no_optimizer_state(pkg):
    assert _offloaded(pkg, optimizer_offload=True)["optimizer"] > 0
    assert _offloaded(pkg, optimizer_offload=True, forward_only=True)["optimizer"] == 0
