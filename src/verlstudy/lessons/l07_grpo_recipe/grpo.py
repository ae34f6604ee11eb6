"""GRPO's pieces on a CPU: group advantages, verl's clipped policy loss, and a toy bandit to train.

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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

from verlstudy.kit.params import check_int, got, positive_int

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


@dataclass(frozen=True)
class BanditRun:
    """Curves of a bandit run: mean policy entropy in nats (steps + 1 values, the first before any
    update), mean reward of each step's samples and that step's mean pg_clipfrac (steps values each)."""

    entropy: tuple[float, ...]
    reward: tuple[float, ...]
    clipfrac: tuple[float, ...]


def bandit_problem(
    prompts: int, arms: int, correct: int, seed: int, *, success: float = 0.7, favourite_logit: float = 3.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """A seeded tabular bandit: initial logits (prompts, arms) and each arm's chance of reward 1.

    Each prompt has ``correct`` equally good arms that a noisy verifier passes with probability
    ``success``; the other arms never pass. One correct arm starts as the favourite (logit
    ``favourite_logit``), the rest start near 0: whether the policy keeps the other good arms
    alive, or collapses onto its favourite, is the exploration question.
    """
    for name, value in (("prompts", prompts), ("arms", arms), ("correct", correct)):
        positive_int(name, value)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if not 2 <= correct < arms:
        raise ValueError(f"correct must be in [2, arms) so there is a choice to keep, got correct={correct}")
    if isinstance(success, bool) or not isinstance(success, numbers.Real) or not 0 < success <= 1:
        raise ValueError(f"success must be a probability in (0, 1], got {success!r}")
    if isinstance(favourite_logit, bool) or not isinstance(favourite_logit, numbers.Real):
        raise TypeError(f"favourite_logit must be a real number, got {favourite_logit!r}")
    gen = torch.Generator().manual_seed(seed)
    order = torch.argsort(torch.rand(prompts, arms, generator=gen), dim=1)
    pass_prob = torch.zeros(prompts, arms)
    pass_prob.scatter_(1, order[:, :correct], float(success))
    logits = torch.randn(prompts, arms, generator=gen) * 0.3
    logits.scatter_(1, order[:, :1], float(favourite_logit))
    return logits, pass_prob


def tabular_policy_gradient(
    logits: torch.Tensor,
    actions: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    clip_low: float,
    clip_high: float,
    clip_c: float,
) -> tuple[torch.Tensor, float]:
    """Gradient of the token-mean policy loss w.r.t. tabular logits (prompts, arms), in closed form.

    Each sample k of prompt p contributes g_k * (onehot(a_k) - softmax(logits_p)) with
    g_k = -A_k * r_k / N where the unclipped branch is active and 0 where a clip holds it constant.
    The tests check it against autograd through `policy_loss`; it exists because it is several times faster.
    Returns (gradient, pg_clipfrac).
    """
    for name, value in (("logits", logits), ("actions", actions), ("old_logp", old_logp), ("advantages", advantages)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__} {value!r:.60}")
    if logits.dim() != 2 or actions.shape != old_logp.shape or actions.shape != advantages.shape:
        raise ValueError(
            "logits must be (prompts, arms) and actions, old_logp, advantages all (prompts, n); got "
            f"{tuple(logits.shape)}, {tuple(actions.shape)}, {tuple(old_logp.shape)}, {tuple(advantages.shape)}"
        )
    if actions.shape[0] != logits.shape[0]:
        raise ValueError(f"actions has {actions.shape[0]} rows but logits has {logits.shape[0]} prompts")
    clip_low, clip_high, clip_c = _check_clips(clip_low, clip_high, clip_c)
    grad, clipped = _tabular_gradient(
        logits, actions, old_logp, advantages, (clip_low, clip_high, clip_c), actions.numel()
    )
    return grad, float(clipped.to(logits.dtype).mean())


def _tabular_gradient(
    logits: torch.Tensor,
    actions: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    clips: tuple[float | torch.Tensor, float | torch.Tensor, float | torch.Tensor],
    samples: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(gradient, where the clipped term is the larger) without checks; ``samples`` is the token-mean's N.

    The clips may be numbers or (rows, 1) columns, one setting per row (runs stacked by train_clip_bandits).
    """
    logp_all = torch.log_softmax(logits, dim=-1)
    logp = logp_all.gather(1, actions)
    log_ratio = logp - old_logp
    ratio = torch.exp(torch.clamp(log_ratio, -LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))
    per_token, unclipped, clipped, _ = _clipped_terms(ratio, advantages, *clips)
    # The unclipped branch carries the gradient; the clamp of the log-ratio also cuts it outside +-20.
    in_range = (log_ratio.abs() < LOG_RATIO_CLAMP).to(logits.dtype)
    active = (per_token == unclipped).to(logits.dtype) * in_range
    g = -advantages * ratio * active / samples
    grad = torch.zeros_like(logits).scatter_add_(1, actions, g)
    grad -= g.sum(dim=1, keepdim=True) * logp_all.exp()
    return grad, clipped > unclipped


def _check_bandit_args(n: int, steps: int, epochs: int, lr: float) -> None:
    for name, value in (("n", n), ("steps", steps), ("epochs", epochs)):
        positive_int(name, value)
    if n < 2:
        raise ValueError(f"n must be >= 2 so a group has a spread, got {n}")
    if isinstance(lr, bool) or not isinstance(lr, numbers.Real) or lr <= 0:
        raise ValueError(f"lr must be a positive number, got {lr!r}")


def train_clip_bandit(
    clip_low: float,
    clip_high: float,
    clip_c: float = 10.0,
    *,
    prompts: int = 64,
    arms: int = 8,
    correct: int = 4,
    success: float = 0.7,
    n: int = 8,
    steps: int = 40,
    epochs: int = 4,
    lr: float = 0.1,
    seed: int = 0,
) -> BanditRun:
    """Train a tabular softmax policy with GRPO: sample n arms per prompt, group advantages, PPO epochs.

    Vectorised over prompts; each step reuses its samples for ``epochs`` SGD updates, which is what
    lets the ratio leave 1 and the clip bind (one update per sample would never clip). ``lr`` is the
    step per sample: the token-mean loss divides each sample's gradient by prompts * n and the step
    multiplies it back, so each prompt's bandit learns the same whatever the number of prompts.
    """
    (run,) = train_clip_bandits(
        [(clip_low, clip_high, clip_c)],
        [seed],
        prompts=prompts,
        arms=arms,
        correct=correct,
        success=success,
        n=n,
        steps=steps,
        epochs=epochs,
        lr=lr,
    )[seed]
    return run


def train_clip_bandits(
    clips: Sequence[tuple[float, float, float]],
    seeds: Iterable[int],
    *,
    prompts: int = 64,
    arms: int = 8,
    correct: int = 4,
    success: float = 0.7,
    n: int = 8,
    steps: int = 40,
    epochs: int = 4,
    lr: float = 0.1,
) -> dict[int, list[BanditRun]]:
    """`train_clip_bandit` for every (clip_low, clip_high, clip_c) in ``clips`` on every seed, trained together.

    Returns {seed: [one BanditRun per entry of clips]}. Each run is the one `train_clip_bandit` gives for its
    setting and seed: it starts from its seed's problem and samples from its own generator. The runs are
    only stepped side by side, their tables stacked along the prompt dimension, so one step's tensor
    operations serve every run (a handful of small operations is what a step costs, whatever its size).
    """
    _check_bandit_args(n, steps, epochs, lr)
    if not isinstance(clips, Sequence) or not clips:
        raise ValueError(f"clips must be a non-empty list of (clip_low, clip_high, clip_c), got {clips!r}")
    for i, setting in enumerate(clips):
        if isinstance(setting, str) or not isinstance(setting, Sequence) or len(setting) != 3:
            raise TypeError(f"argument clips[{i}] must be a (clip_low, clip_high, clip_c) triple, got {got(setting)}")
    checked = [_check_clips(*setting) for setting in clips]
    if isinstance(seeds, str) or not isinstance(seeds, Iterable):
        raise TypeError(f"argument seeds must be a list of distinct int seeds, got {got(seeds)}")
    seeds = [check_int(f"seeds[{i}]", s, kind="argument") for i, s in enumerate(seeds)]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be a non-empty list of distinct seeds, got {seeds!r}")
    runs = [(setting, s) for s in seeds for setting in checked]  # run r holds rows r*prompts .. (r+1)*prompts - 1
    problems = {s: bandit_problem(prompts, arms, correct, s, success=success) for s in seeds}
    logits = torch.cat([problems[s][0] for _, s in runs])
    pass_prob = torch.cat([problems[s][1] for _, s in runs])
    rows = [slice(r * prompts, (r + 1) * prompts) for r in range(len(runs))]
    low, high, cap = _clip_columns([setting for setting, _ in runs], prompts)
    gens = [torch.Generator().manual_seed(s + 1) for _, s in runs]
    samples = prompts * n  # one run's token-mean divides by its own sample count
    ent, rew, clipfrac = [_run_means(entropy(logits), rows)], [], []
    for _ in range(steps):
        with torch.no_grad():  # rollout: each run samples from its own generator, then all are scored at once
            probs = torch.softmax(logits, dim=-1)
            actions = torch.cat(
                [
                    torch.multinomial(probs[rows_r], n, replacement=True, generator=g)
                    for rows_r, g in zip(rows, gens, strict=True)
                ]
            )
            chances = pass_prob.gather(1, actions)
            rewards = torch.cat(
                [torch.bernoulli(chances[rows_r], generator=g) for rows_r, g in zip(rows, gens, strict=True)]
            )
            adv = group_advantages(rewards)
            old_logp = torch.log_softmax(logits, dim=-1).gather(1, actions)
        step_clipfrac = [0.0] * len(runs)
        for _ in range(epochs):
            grad, clipped = _tabular_gradient(logits, actions, old_logp, adv, (low, high, cap), samples)
            logits -= lr * samples * grad  # SGD; lr is per sample, undoing the token-mean's 1/N
            fracs = clipped.to(logits.dtype).view(len(runs), samples).mean(dim=1).tolist()
            step_clipfrac = [acc + frac / epochs for acc, frac in zip(step_clipfrac, fracs, strict=True)]
        ent.append(_run_means(entropy(logits), rows))
        rew.append(_run_means(rewards, rows))
        clipfrac.append(step_clipfrac)
    out: dict[int, list[BanditRun]] = {s: [] for s in seeds}
    for r, (_, s) in enumerate(runs):
        out[s].append(BanditRun(*(tuple(curve[r] for curve in curves) for curves in (ent, rew, clipfrac))))
    return out


def _clip_columns(
    settings: list[tuple[float, float, float]], prompts: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each row's (clip_low, clip_high, clip_c) as float32 columns, `prompts` rows per setting.

    A number bound is rounded to float32 once, as 1 - clip_low and 1 + clip_high; the columns are built so
    that `_clipped_terms`' 1 - low and 1 + high give those very values (exact for clip_low <= 0.5 and
    clip_high <= 1, where the float32 differences involved are exact), so a stacked run clips as it would alone.
    """

    def column(values: list[float]) -> torch.Tensor:
        return torch.tensor([[value] for value in values for _ in range(prompts)])

    lower = column([1.0 - low for low, _, _ in settings])
    upper = column([1.0 + high for _, high, _ in settings])
    return 1.0 - lower, upper - 1.0, column([c for _, _, c in settings])


def _run_means(values: torch.Tensor, rows: list[slice]) -> list[float]:
    """Each run's mean of its own rows, reduced exactly as a run alone would reduce them."""
    return [float(values[r].mean()) for r in rows]


def steps_until_below(curve: tuple[float, ...] | list[float], threshold: float) -> int:
    """Index of the first value below ``threshold``, or len(curve) if it never drops below."""
    if not isinstance(curve, tuple | list) or not all(isinstance(v, numbers.Real) for v in curve):
        raise TypeError(f"curve must be a list or tuple of numbers, got {type(curve).__name__}")
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real):
        raise TypeError(f"threshold must be a number, got {threshold!r}")
    for i, value in enumerate(curve):
        if value < threshold:
            return i
    return len(curve)


def max_prob_after_update(p_old: float, clip_high: float) -> float:
    """The highest probability a positive-advantage token can reach in one clipped update: min(1, p(1+h)).

    DAPO's argument for clip-higher in one line: a likely token (p=0.9) is not held back at all,
    a rare one (p=0.01) can gain at most p*h.
    """
    if isinstance(p_old, bool) or not isinstance(p_old, numbers.Real) or not 0 <= p_old <= 1:
        raise ValueError(f"p_old must be a probability in [0, 1], got {p_old!r}")
    if isinstance(clip_high, bool) or not isinstance(clip_high, numbers.Real) or clip_high < 0:
        raise ValueError(f"clip_high must be a number >= 0, got {clip_high!r}")
    return min(1.0, float(p_old) * (1.0 + float(clip_high)))
