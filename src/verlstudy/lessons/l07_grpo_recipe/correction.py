"""The rest of the #7788 recipe's loss: rollout correction (IS weights, rejection) and the KL loss.

Facts from verl 0.9.1 (written here from scratch, not copied):
- ``verl/trainer/ppo/rollout_corr_helper.py``: the log-ratio is ``old_log_prob - rollout_log_prob``
  (the trainer's recomputed log-prob over the inference engine's), clamped to +-20.
  ``compute_rollout_correction_weights`` with ``rollout_is="token"`` and a single threshold
  (truncated IS): weight = min(exp(log_ratio), threshold), 0 on padding, detached; with
  ``rollout_is_batch_normalize`` divided by their masked mean over all response tokens of the batch passed in
  (the original mask, before rejection; ``distributed_masked_mean`` across ranks where torch.distributed is
  initialised). In the recipe's decoupled mode that batch is the whole step's batch, on the driver; here it is
  the toy batch (the single-rank case).
  ``compute_rollout_rejection_mask`` with ``token_k1`` and ``"lower_upper"``: keeps a token when
  ``-log_ratio`` lies in [log lower, log upper], i.e. pi_rollout / pi_train in [lower, upper].
  ``compute_rollout_correction_and_rejection_mask`` computes both from the same original mask.
- ``verl/trainer/ppo/core_algos.py::compute_policy_loss_vanilla`` multiplies the per-token clipped
  loss by the IS weights before aggregating; ``kl_penalty(..., "low_var_kl")`` is the k3 estimator
  exp(ref - logp) - (ref - logp) - 1 with ref - logp clamped to +-20 and the result to +-10.
- ``verl/workers/utils/losses.py::ppo_loss``: policy loss + ``kl_loss_coef`` x the KL aggregated
  the same way (token-mean) over the same response mask, which rejection has already cut.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch

from verlstudy.lessons.l07_grpo_recipe.grpo import _check_clips, _check_tensor, _clipped_terms

SAFETY_BOUND = 20.0  # upstream's clamp of the log-ratio before exp
KL_CLAMP = 10.0  # upstream clamps the low_var_kl value to +-10


def _masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (values * mask).sum() / mask.sum()


def _check_pair(a_name: str, a: object, b_name: str, b: object) -> tuple[torch.Tensor, torch.Tensor]:
    a, b = _check_tensor(a_name, a), _check_tensor(b_name, b)
    if a.shape != b.shape:
        raise ValueError(f"{a_name} has shape {tuple(a.shape)} but {b_name} has {tuple(b.shape)}; they must match")
    return a, b


def _positive(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not float(value) > 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def token_is_weights(
    log_ratio: torch.Tensor, mask: torch.Tensor, threshold: float = 2.0, batch_normalize: bool = True
) -> torch.Tensor:
    """Truncated token-level IS weights min(pi_train/pi_rollout, threshold), optionally scaled to mean 1."""
    log_ratio, mask = _check_pair("log_ratio", log_ratio, "mask", mask)
    threshold = _positive("threshold", threshold)
    if not isinstance(batch_normalize, bool):
        raise TypeError(f"batch_normalize must be True or False, got {batch_normalize!r}")
    if float(mask.sum()) <= 0:
        raise ValueError("mask selects no tokens: at least one entry must be 1")
    raw = torch.exp(torch.clamp(log_ratio, -SAFETY_BOUND, SAFETY_BOUND)) * mask
    weights = raw.clamp(max=threshold).detach()  # IS weights change the measure, carry no gradient
    return weights / _masked_mean(weights, mask) if batch_normalize else weights


def parse_k1_bounds(spec: str | float) -> tuple[float, float]:
    """``"0.6_1.6"`` -> (0.6, 1.6); a single number u means (1/u, u), as upstream's token_k1 parser."""
    if isinstance(spec, bool) or not isinstance(spec, str | numbers.Real):
        raise TypeError(f"spec must be a 'lower_upper' string or a number, got {spec!r}")
    text = str(spec).strip()
    try:
        lower, upper = (float(p) for p in text.split("_", 1)) if "_" in text else (1 / float(text), float(text))
    except ValueError as e:
        raise ValueError(f"spec must look like '0.6_1.6' or '2.0', got {spec!r}") from e
    if not 0 < lower <= upper < math.inf:  # '1e999' reads as inf: no bound at all
        raise ValueError(f"token_k1 bounds need 0 < lower <= upper, both finite, got {spec!r}")
    return lower, upper


def token_k1_keep(log_ratio: torch.Tensor, mask: torch.Tensor, lower: float = 0.6, upper: float = 1.6) -> torch.Tensor:
    """The response mask after token_k1 rejection: keep where pi_rollout/pi_train is in [lower, upper]."""
    log_ratio, mask = _check_pair("log_ratio", log_ratio, "mask", mask)
    lower, upper = _positive("lower", lower), _positive("upper", upper)
    if lower > upper:
        raise ValueError(f"lower must be <= upper, got {lower} > {upper}")
    k1 = -torch.clamp(log_ratio, -SAFETY_BOUND, SAFETY_BOUND)
    keep = (k1 >= math.log(lower)) & (k1 <= math.log(upper))
    return mask * keep.to(mask.dtype)


def low_var_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(pi || pi_ref): exp(d) - d - 1 with d = ref - logp (clamped)."""
    logp, ref_logp = _check_pair("logp", logp, "ref_logp", ref_logp)
    d = torch.clamp(ref_logp - logp, -SAFETY_BOUND, SAFETY_BOUND)
    return torch.clamp(torch.exp(d) - d - 1, -KL_CLAMP, KL_CLAMP)


@dataclass(frozen=True)
class RecipeLoss:
    """The recipe's loss built up term by term (scalars), and what the correction did to the tokens."""

    clip_only: float  # verl's clipped loss, no correction, no KL
    with_rejection: float  # ... over the tokens token_k1 keeps
    with_is: float  # ... and each token weighted by its truncated, normalised IS weight
    kl: float  # token-mean low_var_kl over the kept tokens
    total: float  # with_is + kl_loss_coef * kl
    rejected_fraction: float  # share of response tokens token_k1 drops
    truncated_fraction: float  # share of response tokens whose raw IS weight exceeded the threshold
    weights: torch.Tensor  # the IS weights applied (after normalisation)
    kept_mask: torch.Tensor


def recipe_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    rollout_logp: torch.Tensor,
    ref_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clips: tuple[float, float, float] = (0.2, 0.28, 10.0),
    is_threshold: float = 2.0,
    is_batch_normalize: bool = True,
    rs_bounds: tuple[float, float] = (0.6, 1.6),
    kl_loss_coef: float = 0.002,
) -> RecipeLoss:
    """The #7788 recipe's actor loss on one rank (token-mean), term by term."""
    for name, value in (("old_logp", old_logp), ("rollout_logp", rollout_logp), ("ref_logp", ref_logp)):
        _check_pair("logp", logp, name, value)
    _check_pair("logp", logp, "advantages", advantages)
    _check_pair("logp", logp, "mask", mask)
    if isinstance(kl_loss_coef, bool) or not isinstance(kl_loss_coef, numbers.Real) or kl_loss_coef < 0:
        raise ValueError(f"kl_loss_coef must be a number >= 0, got {kl_loss_coef!r}")
    low, high, c = _check_clips(*clips)
    log_ratio = old_logp - rollout_logp
    kept = token_k1_keep(log_ratio, mask, *rs_bounds)
    if float(kept.sum()) <= 0:
        raise ValueError("token_k1 rejected every token: widen rs_bounds")
    weights = token_is_weights(log_ratio, mask, is_threshold, is_batch_normalize)  # from the original mask
    ratio = torch.exp(torch.clamp(logp - old_logp, -SAFETY_BOUND, SAFETY_BOUND))
    per_token = _clipped_terms(ratio, advantages, low, high, c)[0]
    kl = _masked_mean(low_var_kl(logp, ref_logp), kept)
    with_is = _masked_mean(per_token * weights, kept)
    raw = torch.exp(torch.clamp(log_ratio, -SAFETY_BOUND, SAFETY_BOUND))
    return RecipeLoss(
        clip_only=float(_masked_mean(per_token, mask)),
        with_rejection=float(_masked_mean(per_token, kept)),
        with_is=float(with_is),
        kl=float(kl),
        total=float(with_is + kl_loss_coef * kl),
        rejected_fraction=float(_masked_mean(1 - kept, mask)),
        truncated_fraction=float(_masked_mean((raw > is_threshold).to(mask.dtype), mask)),
        weights=weights,
        kept_mask=kept,
    )
