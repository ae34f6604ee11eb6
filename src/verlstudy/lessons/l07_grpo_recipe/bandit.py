"""The clip-higher bandit: a toy many-armed GRPO problem on which clip ranges are compared (lesson 07's section 6).

`train_clip_bandit` runs GRPO with `grpo.policy_loss` on tabular policies and records entropy, reward and the
clip fraction per step; `train_clip_bandits` runs several clip settings over several seeds at once.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

from verlstudy.kit.params import check_int, got, positive_int
from verlstudy.lessons.l07_grpo_recipe.grpo import (
    LOG_RATIO_CLAMP,
    _check_clips,
    _clipped_terms,
    entropy,
    group_advantages,
)


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
