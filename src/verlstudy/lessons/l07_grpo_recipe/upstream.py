"""Lesson 07's comparison with upstream verl's own functions, on generated cases (`verlstudy verify-upstream`)."""

from __future__ import annotations

import collections
import functools
import random
import types
from collections.abc import Callable

import numpy as np
import torch

from verlstudy.kit import upstream
from verlstudy.kit.upstream import Comparison, report_check
from verlstudy.lessons.l07_grpo_recipe.grpo import group_advantages, policy_loss


class _ActorConfig(dict):
    """Stand-in for verl's ActorConfig: attribute access plus .get, all the vanilla loss reads."""

    __getattr__ = dict.__getitem__


@functools.lru_cache(maxsize=1)
def core_algos_functions() -> dict[str, Callable]:
    """verl's vanilla policy loss and GRPO outcome advantage, loaded from source with stand-in collaborators."""

    def masked_sum(values, mask, axis=None):
        return (values * mask).sum() if axis is None else (values * mask).sum(axis)

    def masked_mean(values, mask, axis=None):
        return masked_sum(values, mask, axis) / (mask.sum() if axis is None else mask.sum(axis))

    def keep(_name):  # the registries only matter for verl's own lookup by name
        return lambda fn: fn

    provided = {
        "torch": torch,
        "np": np,
        "defaultdict": collections.defaultdict,
        "verl_F": types.SimpleNamespace(masked_sum=masked_sum, masked_mean=masked_mean),
        "AlgoConfig": type("AlgoConfig", (), {}),
        "register_policy_loss": keep,
        "register_adv_est": keep,
        "AdvantageEstimator": types.SimpleNamespace(GRPO="grpo"),
    }
    names = ["compute_policy_loss_vanilla", "compute_grpo_outcome_advantage"]
    return upstream.load_upstream("trainer/ppo/core_algos.py", names, provided)


def upstream_policy_loss(logp, old_logp, advantages, mask, clip_low, clip_high, clip_c):
    """Upstream's vanilla loss on one rank, token-mean: (loss, pg_clipfrac, pg_clipfrac_lower, ppo_kl)."""
    fn = core_algos_functions()["compute_policy_loss_vanilla"]
    config = _ActorConfig(
        clip_ratio=clip_low,
        clip_ratio_low=clip_low,
        clip_ratio_high=clip_high,
        clip_ratio_c=clip_c,
        global_batch_info={},
    )
    loss, metrics = fn(old_logp, logp, advantages, mask, "token-mean", config)
    keys = ("actor/pg_clipfrac", "actor/pg_clipfrac_lower", "actor/ppo_kl")
    return (float(loss), *(float(metrics[k]) for k in keys))


def _close(a: float, b: float, tol: float = 1e-9) -> bool:
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def compare_policy_loss(cases: int = 300, seed: int = 0, ours: Callable[..., object] | None = None) -> Comparison:
    ours = ours or policy_loss
    name = "verl/trainer/ppo/core_algos.py::compute_policy_loss_vanilla"
    gen = torch.Generator().manual_seed(seed)
    rng = random.Random(seed)
    for i in range(cases):
        shape = (rng.randint(1, 3), rng.randint(1, 6))
        spread = rng.choice([0.05, 0.3, 1.0, 30.0])  # 30: log-ratios beyond upstream's +-20 clamp
        old = -torch.rand(shape, generator=gen, dtype=torch.float64) * 3
        logp = old + torch.randn(shape, generator=gen, dtype=torch.float64) * spread
        adv = torch.randn(shape, generator=gen, dtype=torch.float64)
        mask = (torch.rand(shape, generator=gen) < 0.8).double()
        mask.view(-1)[0] = 1.0
        clips = (0.2, rng.choice([0.2, 0.28]), rng.choice([3.0, 10.0]))
        out = ours(logp, old, adv, mask, *clips)
        mine = (float(out.loss), out.pg_clipfrac, out.pg_clipfrac_lower, out.ppo_kl)  # type: ignore[attr-defined]
        theirs = upstream_policy_loss(logp, old, adv, mask, *clips)
        if not all(_close(a, b) for a, b in zip(mine, theirs, strict=True)):
            detail = f"case {i}: shape {shape}, clips {clips}: (loss, clipfrac, lower, kl) {mine} vs {theirs}"
            return Comparison("07", name, upstream.verl_version(), i + 1, "differ", detail)
    return Comparison("07", name, upstream.verl_version(), cases, "agree", "token-mean on one rank")


def compare_group_advantages(cases: int = 300, seed: int = 0, ours: Callable[..., object] | None = None) -> Comparison:
    ours = ours or group_advantages
    name = "verl/trainer/ppo/core_algos.py::compute_grpo_outcome_advantage"
    theirs = core_algos_functions()["compute_grpo_outcome_advantage"]
    rng = random.Random(seed)
    for i in range(cases):
        groups, n = rng.randint(1, 4), rng.randint(1, 6)
        rewards = torch.tensor(
            [[float(rng.choice([0, 1, 1, 0.5, -1])) for _ in range(n)] for _ in range(groups)], dtype=torch.float64
        )
        scale = rng.random() < 0.8
        token_rewards = torch.zeros(groups * n, 3, dtype=torch.float64)
        token_rewards[:, -1] = rewards.flatten()  # an outcome reward sits on the last response token
        index = np.repeat(np.arange(groups), n)
        up, _ = theirs(token_rewards, torch.ones(groups * n, 3), index, norm_adv_by_std_in_grpo=scale)
        mine = ours(rewards, scale_by_std=scale).flatten()  # type: ignore[attr-defined]
        # 1e-6: for a group of one upstream divides by a float32 1.0 + epsilon, which rounds at ~1e-7
        if not torch.allclose(mine, up[:, 0].to(mine.dtype), rtol=1e-6, atol=1e-9):
            detail = f"case {i}: rewards {rewards.tolist()}, scale_by_std={scale}"
            return Comparison("07", name, upstream.verl_version(), i + 1, "differ", detail)
    return Comparison(
        "07", name, upstream.verl_version(), cases, "agree", "groups of 1..6, incl. constant groups; rtol 1e-6"
    )


COMPARISONS = (compare_policy_loss, compare_group_advantages)


def upstream_check(cases: int = 50) -> None:
    """The lesson's upstream cell: one line per comparison, a skip line without verl; raises if upstream differs."""
    report_check("07", [lambda: compare_policy_loss(cases), lambda: compare_group_advantages(cases)])
