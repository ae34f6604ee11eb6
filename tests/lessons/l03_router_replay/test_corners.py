"""Section 1 and the stale-registry claim hold where issues 41 and 43 found them failing (hidden=2 at seeds 2 and 11)
and at every seed 0-5, through the lesson's own mechanism (no notebook run): one update moves native routing, R2
replay stays on the record, and pre-#7340 positional replay misses the live routers by exactly native routing while
model-scoped replay does not."""

from __future__ import annotations

import pytest
import torch

from verlstudy.kit.seeding import seed_everything
from verlstudy.lessons.l03_router_replay.controller import (
    PositionalReplayController,
    ReplayController,
    ToyTransformerConfig,
    replay_off_record,
)
from verlstudy.lessons.l03_router_replay.moe import TinyMoE
from verlstudy.lessons.l03_router_replay.routes import rerouted_tokens, routes_used, update_until_rerouted


def _section_1_and_stale_registry(
    seed: int, hidden: int, n_tokens: int = 32, lr: float = 1.0, num_experts: int = 4, topk: int = 2
) -> dict[str, int]:
    seed_everything(seed)
    sizes = dict(hidden=hidden, num_experts=num_experts, topk=topk)
    tokens, targets = torch.randint(0, 16, (n_tokens,)), torch.randint(0, 16, (n_tokens,))
    model = TinyMoE(**sizes, registry=[])
    r2 = ReplayController("R2")
    r2.begin(model, forward_only=True)
    with torch.no_grad():
        model(tokens)
    recorded = r2.end(model)
    _, native_moved = update_until_rerouted(model, tokens, targets, recorded, lr)
    r2.begin(model, forward_only=False, routes=recorded)
    with torch.no_grad():
        model(tokens)
    replay_moved = rerouted_tokens(recorded, routes_used(model))
    shared: list = []
    TinyMoE(**sizes, registry=shared)  # built first and discarded: its routers sit in front
    live = TinyMoE(**sizes, registry=shared)
    live.load_state_dict(model.state_dict())
    positional = PositionalReplayController("R3", tf_config=ToyTransformerConfig(num_layers=3), registry=shared)
    return {
        "native": native_moved,
        "replayed": replay_moved,
        "positional": replay_off_record(positional, live, tokens, recorded),
        "model-scoped": replay_off_record(ReplayController("R3"), live, tokens, recorded),
    }


@pytest.mark.parametrize("hidden", [2, 8])
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5, 11])
def test_the_claims_hold(seed: int, hidden: int) -> None:
    moved = _section_1_and_stale_registry(seed, hidden)
    assert moved["native"] > 0 and moved["replayed"] == 0, moved
    assert moved["positional"] == moved["native"] and moved["model-scoped"] == 0, moved


CORNERS = [  # the validated space's edges (check_parameters): each size at its minimum or maximum, topk both ways
    dict(hidden=2, num_experts=2, topk=1, n_tokens=16, lr=1.0),
    dict(hidden=2, num_experts=32, topk=1, n_tokens=8, lr=1.0),  # issue 43: 'num_experts=32 topk=1 n_tokens=8'
    dict(hidden=2, num_experts=64, topk=2, n_tokens=8, lr=1.0),
    dict(hidden=2, num_experts=32, topk=31, n_tokens=8, lr=10.0),
    dict(hidden=256, num_experts=2, topk=1, n_tokens=16, lr=1.0),
]
# the largest corner takes ~10 s a seed (1024 tokens, 63 of 64 experts): one seed, among the slow tests (seeds 0-5 were
# run once by hand, 2026-12-06, and held)
LARGEST = dict(hidden=256, num_experts=64, topk=63, n_tokens=1024, lr=10.0)


@pytest.mark.parametrize("sizes", CORNERS, ids=lambda s: "-".join(f"{k}{v}" for k, v in s.items()))
@pytest.mark.parametrize("seed", range(6))
def test_the_claims_hold_at_the_corners_of_the_validated_space(seed: int, sizes: dict) -> None:
    moved = _section_1_and_stale_registry(seed, **sizes)
    assert moved["native"] > 0 and moved["replayed"] == 0, moved
    assert moved["positional"] == moved["native"] and moved["model-scoped"] == 0, moved


@pytest.mark.slow
def test_the_claims_hold_at_the_largest_corner() -> None:
    moved = _section_1_and_stale_registry(0, **LARGEST)
    assert moved["native"] > 0 and moved["replayed"] == 0, moved
    assert moved["positional"] == moved["native"] and moved["model-scoped"] == 0, moved
