"""update_until_rerouted: the lesson's "an update moves routing" holds at every seed (issue 41 item 3)."""

import pytest
import torch

from verlstudy.kit.seeding import seed_everything
from verlstudy.lessons.l03_router_replay import routes
from verlstudy.lessons.l03_router_replay.controller import ReplayController
from verlstudy.lessons.l03_router_replay.moe import TinyMoE


def _recorded(seed: int, hidden: int = 2, n_tokens: int = 32):
    seed_everything(seed)
    tokens, targets = torch.randint(0, 16, (n_tokens,)), torch.randint(0, 16, (n_tokens,))
    model = TinyMoE(hidden=hidden, num_experts=4, topk=2)
    r2 = ReplayController("R2")
    r2.begin(model, forward_only=True)
    with torch.no_grad():
        model(tokens)
    return model, tokens, targets, r2.end(model)


def _one_step_moves(seed: int) -> bool:
    model, tokens, targets, recorded = _recorded(seed)
    torch.nn.functional.cross_entropy(model(tokens), targets).backward()
    routes.sgd_step(model, 1.0)
    with torch.no_grad():
        model(tokens)
    return routes.rerouted_tokens(recorded, routes.routes_used(model)) > 0


def test_a_seed_where_one_step_moves_nothing_gets_more_steps_until_a_route_moves():
    stuck = next(s for s in range(400) if not _one_step_moves(s))  # about 1 seed in 20 at hidden 2
    updates, moved = routes.update_until_rerouted(*_recorded(stuck), lr=1.0)
    assert updates > 1 and moved > 0


def test_where_one_step_moves_routes_one_update_is_taken_and_its_count_returned():
    moving = next(s for s in range(20) if _one_step_moves(s))
    model, tokens, targets, recorded = _recorded(moving)
    updates, moved = routes.update_until_rerouted(model, tokens, targets, recorded, lr=1.0)
    assert updates == 1 and moved == routes.rerouted_tokens(recorded, routes.routes_used(model)) > 0


def test_no_route_moving_at_all_is_an_error_not_an_endless_loop(monkeypatch):
    monkeypatch.setattr(routes, "rerouted_tokens", lambda reference, other: 0)
    with pytest.raises(RuntimeError, match=f"{routes.MAX_UPDATES} updates from lr 1.0 up moved no token"):
        routes.update_until_rerouted(*_recorded(0), lr=1.0)
