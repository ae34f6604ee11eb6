"""GRPO's pieces on a CPU: group advantages and verl's clipped policy loss (the bandit they train: `bandit`).

Facts from verl 0.9.1, ``verl/trainer/ppo/core_algos.py`` (written here from scratch, not copied):
- ``compute_grpo_outcome_advantage``: a response's score minus its group's mean, divided by the
  group's (unbiased) std + epsilon (1e-6); a group of one gets mean 0 and std 1.
- ``compute_policy_loss_vanilla``: ratio = exp(clamp(logp - old_logp, -20, 20));
  loss = max(-A*r, -A*clip(r, 1-clip_low, 1+clip_high)); for A < 0 also min(that, -A*clip_c)
  (dual clip, clip_c > 1); metrics pg_clipfrac, pg_clipfrac_lower, ppo_kl; aggregated by
  ``agg_loss`` (here: "token-mean" on one rank). Upstream reads the clip ratios from an
  ``ActorConfig`` and the token count from ``config.global_batch_info``; here they are arguments.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch

LOG_RATIO_CLAMP = 20.0  # upstream clamps logp - old_logp to [-20, 20] before exp (overflow guard)
GRPO_EPSILON = 1e-6  # upstream's default epsilon added to the group std


def _check_tensor(name: str, value: object) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if not value.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {value.dtype}")
    return value


def _check_clips(clip_low: float, clip_high: float, clip_c: float) -> tuple[float, float, float]:
    values = {"clip_low": clip_low, "clip_high": clip_high, "clip_c": clip_c}
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(float(value)):
            raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    if not 0.0 <= float(clip_low) < 1.0:
        raise ValueError(f"clip_low must be in [0, 1) so that 1 - clip_low > 0, got {clip_low}")
    if float(clip_high) < 0.0:
        raise ValueError(f"clip_high must be >= 0, got {clip_high}")
    if float(clip_c) <= 1.0:
        raise ValueError(f"clip_c must be > 1 for dual-clip PPO (verl asserts this too), got {clip_c}")
    return float(clip_low), float(clip_high), float(clip_c)


def group_advantages(rewards: torch.Tensor, epsilon: float = GRPO_EPSILON, scale_by_std: bool = True) -> torch.Tensor:
    """GRPO outcome advantages for rewards shaped (groups, n): (r - group mean) / (group std + epsilon).

    The std is torch's unbiased one, as upstream. A group of one response (n == 1) gets mean 0 and
    std 1, so its advantage is its reward / (1 + epsilon). With ``scale_by_std=False`` only the mean
    is removed (Dr.GRPO). A group whose rewards are all equal gets advantage 0, never NaN.
    """
    rewards = _check_tensor("rewards", rewards)
    if rewards.dim() != 2 or rewards.numel() == 0:
        raise ValueError(f"rewards must be 2-D (groups, n) and non-empty, got shape {tuple(rewards.shape)}")
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real) or epsilon <= 0:
        raise ValueError(f"epsilon must be a positive number, got {epsilon!r}")
    if not isinstance(scale_by_std, bool):
        raise TypeError(f"scale_by_std must be True (GRPO) or False (Dr.GRPO), got {scale_by_std!r}")
    if rewards.shape[1] == 1:
        mean = torch.zeros_like(rewards)
        std = torch.ones_like(rewards)
    else:
        mean = rewards.mean(dim=1, keepdim=True)
        std = rewards.std(dim=1, keepdim=True)
    centred = rewards - mean
    return centred / (std + epsilon) if scale_by_std else centred


def _clipped_terms(
    ratio: torch.Tensor, advantages: torch.Tensor, clip_low: float, clip_high: float, clip_c: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(per-token loss, unclipped term, clipped term, dual cap) without argument checks (hot loop)."""
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    pessimistic = torch.maximum(unclipped, clipped)
    # Dual clip: for A < 0 the loss may not exceed -A * clip_c however large the ratio grows.
    dual_cap = -advantages * clip_c
    per_token = torch.where(advantages < 0, torch.minimum(pessimistic, dual_cap), pessimistic)
    return per_token, unclipped, clipped, dual_cap


def clipped_token_loss(
    ratio: torch.Tensor, advantages: torch.Tensor, clip_low: float, clip_high: float, clip_c: float
) -> torch.Tensor:
    """Per-token PPO loss with asymmetric clip and dual clip, from ratios (the loss surface)."""
    ratio = _check_tensor("ratio", ratio)
    advantages = _check_tensor("advantages", advantages)
    if ratio.shape != advantages.shape:
        raise ValueError(f"ratio has shape {tuple(ratio.shape)} but advantages has {tuple(advantages.shape)}")
    clip_low, clip_high, clip_c = _check_clips(clip_low, clip_high, clip_c)
    return _clipped_terms(ratio, advantages, clip_low, clip_high, clip_c)[0]


@dataclass(frozen=True)
class PolicyLossOutput:
    """The aggregated loss (a scalar with grad) and verl's three metrics, as Python floats."""

    loss: torch.Tensor
    pg_clipfrac: float
    pg_clipfrac_lower: float
    ppo_kl: float


def _masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (values * mask).sum() / mask.sum()


def _policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_low: float,
    clip_high: float,
    clip_c: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    log_ratio = torch.clamp(logp - old_logp, -LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)
    per_token, unclipped, clipped, dual_cap = _clipped_terms(
        torch.exp(log_ratio), advantages, clip_low, clip_high, clip_c
    )
    with torch.no_grad():
        clipfrac = _masked_mean((clipped > unclipped).to(logp.dtype), mask)
        binds_lower = (torch.maximum(unclipped, clipped) > dual_cap) & (advantages < 0)
        lower = _masked_mean(binds_lower.to(logp.dtype), mask)
        kl = _masked_mean(-log_ratio, mask)
    return _masked_mean(per_token, mask), clipfrac, lower, kl


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    clip_c: float = 3.0,
) -> PolicyLossOutput:
    """verl's vanilla PPO/GRPO policy loss, token-mean aggregated over ``mask`` (one rank, dp=1).

    ``pg_clipfrac``: share of tokens where the clipped term is the larger (the clip binds);
    ``pg_clipfrac_lower``: share of tokens with A < 0 where the dual clip binds;
    ``ppo_kl``: mean of old_logp - logp (after the +-20 clamp), upstream's sign.
    Defaults are verl's (0.2, 0.2, 3.0); the #7788 recipe uses (0.2, 0.28, 10.0).
    """
    tensors = {"logp": logp, "old_logp": old_logp, "advantages": advantages}
    for name, value in tensors.items():
        _check_tensor(name, value)
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"mask must be a torch.Tensor of 0/1 (or bool), got {type(mask).__name__}")
    for name, value in (*tensors.items(), ("mask", mask)):
        if value.shape != logp.shape:
            raise ValueError(f"{name} has shape {tuple(value.shape)} but logp has {tuple(logp.shape)}; they must match")
    mask = mask.to(logp.dtype)
    if bool(((mask != 0) & (mask != 1)).any()):
        raise ValueError("mask must hold only 0 and 1 (or be a bool tensor)")
    if float(mask.sum()) <= 0:
        raise ValueError("mask selects no tokens: at least one entry must be 1")
    clip_low, clip_high, clip_c = _check_clips(clip_low, clip_high, clip_c)
    loss, clipfrac, lower, kl = _policy_loss(logp, old_logp, advantages, mask, clip_low, clip_high, clip_c)
    return PolicyLossOutput(loss=loss, pg_clipfrac=float(clipfrac), pg_clipfrac_lower=float(lower), ppo_kl=float(kl))


def loss_surface(
    ratios: torch.Tensor, advantage: float, clip_low: float, clip_high: float, clip_c: float
) -> tuple[list[float], list[float]]:
    """The per-token loss and its gradient d(loss)/d(ratio) at each ratio, for one advantage value.

    A zero gradient marks a clip region: tokens there no longer move the policy.
    """
    ratios = _check_tensor("ratios", ratios)
    if ratios.dim() != 1 or bool((ratios <= 0).any()):
        raise ValueError("ratios must be a 1-D tensor of positive values")
    if isinstance(advantage, bool) or not isinstance(advantage, numbers.Real):
        raise TypeError(f"advantage must be a real number, got {advantage!r}")
    r = ratios.detach().clone().requires_grad_(True)
    adv = torch.full_like(r, float(advantage))
    losses = clipped_token_loss(r, adv, clip_low, clip_high, clip_c)
    (grad,) = torch.autograd.grad(losses.sum(), r)
    return losses.detach().tolist(), grad.tolist()


def entropy(logits: torch.Tensor) -> torch.Tensor:
    """Entropy in nats of the softmax over the last dimension, one value per row."""
    _check_tensor("logits", logits)
    logp = torch.log_softmax(logits, dim=-1)
    return -(logp.exp() * logp).sum(dim=-1)
