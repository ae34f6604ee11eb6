"""Lesson 07's comparison with upstream verl's own functions, on generated cases (`verlstudy verify-upstream`)."""

from __future__ import annotations

import collections
import functools
import math
import random
import types
from collections.abc import Callable

import numpy as np
import torch

from verlstudy.kit import upstream
from verlstudy.kit.claims import claim
from verlstudy.kit.params import check_callable, check_int, positive_int
from verlstudy.kit.upstream import Comparison, report_check
from verlstudy.lessons.l07_grpo_recipe.correction import RecipeLoss, recipe_loss
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
    cases = positive_int("cases", cases)
    seed = check_int("seed", seed, minimum=0, kind="argument")
    if ours is not None:
        check_callable("ours", ours, what="a function (the code under comparison) or None")
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
    cases = positive_int("cases", cases)
    seed = check_int("seed", seed, minimum=0, kind="argument")
    if ours is not None:
        check_callable("ours", ours, what="a function (the code under comparison) or None")
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


@functools.lru_cache(maxsize=1)
def recipe_loss_functions() -> dict[str, Callable]:
    """verl's rollout-correction helpers, kl_penalty and the vanilla loss, with verl's own masked_sum/mean."""
    verl_f = types.SimpleNamespace(
        **upstream.load_upstream("utils/torch_functional.py", ["masked_sum", "masked_mean"], {"torch": torch})
    )
    correction = upstream.load_upstream(
        "trainer/ppo/rollout_corr_helper.py",
        ["compute_rollout_correction_weights", "compute_rollout_rejection_mask"],
        {"torch": torch, "math": math, "verl_F": verl_f},
    )
    provided = {
        "torch": torch,
        "np": np,
        "verl_F": verl_f,
        "register_policy_loss": lambda _name: lambda fn: fn,
        "AlgoConfig": type("AlgoConfig", (), {}),
    }
    core = upstream.load_upstream(
        "trainer/ppo/core_algos.py", ["compute_policy_loss_vanilla", "kl_penalty", "agg_loss"], provided
    )
    return {**correction, **core}


def upstream_recipe_loss(logp, old_logp, rollout_logp, ref_logp, advantages, mask) -> dict[str, object]:
    """The #7788 loss by upstream's functions, wired as verl 0.9.1 wires them.

    ray_trainer, then the sum losses.ppo_loss forms (ppo_loss itself is not run).
    """
    fns = recipe_loss_functions()
    log_ratio = old_logp - rollout_logp  # rollout_corr_helper: log(pi_train / pi_rollout)
    weights, _ = fns["compute_rollout_correction_weights"](log_ratio, mask, "token", 2.0, True)
    kept, _ = fns["compute_rollout_rejection_mask"](log_ratio, mask, "token_k1", "0.6_1.6")
    config = _ActorConfig(
        clip_ratio=0.2, clip_ratio_low=0.2, clip_ratio_high=0.28, clip_ratio_c=10.0, global_batch_info={}
    )
    pg_loss, _ = fns["compute_policy_loss_vanilla"](old_logp, logp, advantages, kept, "token-mean", config, weights)
    kld = fns["kl_penalty"](logp, ref_logp, "low_var_kl")
    kl = fns["agg_loss"](kld, kept, "token-mean")
    return {
        "weights": weights,
        "kept_mask": kept,
        "with_is": float(pg_loss),
        "kl": float(kl),
        "total": float(pg_loss + 0.002 * kl),
    }


def _agrees(ours: RecipeLoss, theirs: dict[str, object], tol: float = 1e-6) -> str:
    """'' when every term agrees, else the name of the first that does not."""
    if not torch.equal(ours.kept_mask, theirs["kept_mask"]):  # type: ignore[arg-type]
        return "kept_mask"
    if not torch.allclose(ours.weights, theirs["weights"], rtol=tol, atol=tol):  # type: ignore[arg-type]
        return "weights"
    for key in ("with_is", "kl", "total"):
        if not _close(getattr(ours, key), theirs[key], tol):  # type: ignore[arg-type]
            return key
    return ""


def toy_recipe_batch(shape: tuple[int, int], seed: int, spread: float = 0.8, mismatch: float = 0.3):
    """(logp, old_logp, rollout_logp, ref_logp, advantages, mask): a batch whose engine log-probs drift."""
    gen = torch.Generator().manual_seed(seed)
    old = -torch.rand(shape, generator=gen, dtype=torch.float64) * 3
    logp = old + torch.randn(shape, generator=gen, dtype=torch.float64) * spread
    rollout = old + torch.randn(shape, generator=gen, dtype=torch.float64) * mismatch
    ref = old + torch.randn(shape, generator=gen, dtype=torch.float64) * 0.2
    adv = torch.randn(shape, generator=gen, dtype=torch.float64)
    mask = (torch.rand(shape, generator=gen) < 0.85).double()
    mask.view(-1)[0] = 1.0
    return logp, old, rollout, ref, adv, mask


def compare_recipe_loss(cases: int = 300, seed: int = 0, ours: Callable[..., RecipeLoss] | None = None) -> Comparison:
    cases = positive_int("cases", cases)
    seed = check_int("seed", seed, minimum=0, kind="argument")
    if ours is not None:
        check_callable("ours", ours, what="a function (the code under comparison) or None")
    ours = ours or recipe_loss
    name = "verl/trainer/ppo/rollout_corr_helper.py + core_algos.py::kl_penalty, compute_policy_loss_vanilla"
    rng = random.Random(seed)
    for i in range(cases):
        shape = (rng.randint(1, 4), rng.randint(2, 12))
        batch = toy_recipe_batch(shape, seed * 100003 + i, rng.choice([0.05, 0.3, 1.0]), rng.choice([0.05, 0.3, 1.0]))
        try:
            mine = ours(*batch)
        except ValueError:  # token_k1 rejected every token: upstream's loss would be 0/0 too
            continue
        differs = _agrees(mine, upstream_recipe_loss(*batch))
        if differs:
            return Comparison(
                "07", name, upstream.verl_version(), i + 1, "differ", f"case {i}: shape {shape}: {differs}"
            )
    return Comparison("07", name, upstream.verl_version(), cases, "agree", "IS weights, token_k1 mask, KL, total")


def check_recipe_loss_cell(batch: tuple[torch.Tensor, ...], ours: RecipeLoss) -> None:
    """The lesson body's upstream cell: upstream's functions on the toy batch, beside ours, as claims."""
    theirs = upstream_recipe_loss(*batch)
    where = "verl 0.9.1 verl/trainer/ppo/rollout_corr_helper.py"
    claim(
        "upstream token_k1 keeps the same tokens",
        torch.equal(ours.kept_mask, theirs["kept_mask"]),
        upstream=f"{where}::compute_rollout_rejection_mask",
    )
    claim(
        "upstream truncated, normalised IS weights match",
        torch.allclose(ours.weights, theirs["weights"], rtol=1e-5),
        upstream=f"{where}::compute_rollout_correction_weights",
    )
    claim(
        "upstream loss with IS weights",
        theirs["with_is"],
        ours.with_is,
        rtol=1e-5,
        digits=4,
        upstream="verl 0.9.1 verl/trainer/ppo/core_algos.py::compute_policy_loss_vanilla",
    )
    claim(
        "upstream low_var_kl loss",
        theirs["kl"],
        ours.kl,
        rtol=1e-5,
        digits=4,
        upstream="verl 0.9.1 verl/trainer/ppo/core_algos.py::kl_penalty",
    )
    claim(
        "upstream total (pg + 0.002 kl)",
        theirs["total"],
        ours.total,
        rtol=1e-5,
        digits=4,
        upstream="verl 0.9.1 core_algos.py compute_policy_loss_vanilla + kl_penalty + agg_loss, added as "
        "losses.py::ppo_loss adds them (ppo_loss itself not run)",
    )


COMPARISONS = (compare_policy_loss, compare_group_advantages, compare_recipe_loss)


def upstream_check(cases: int = 50) -> None:
    """The lesson's upstream cell: one line per comparison, a skip line without verl; raises if upstream differs."""
    cases = positive_int("cases", cases)
    report_check(
        "07",
        [
            lambda: compare_policy_loss(cases),
            lambda: compare_group_advantages(cases),
            lambda: compare_recipe_loss(max(cases // 5, 1)),  # a case costs ~4x one of the others; verify runs 300
        ],
    )
