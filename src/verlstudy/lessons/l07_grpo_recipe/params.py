"""Lesson 07's parameters, validated in one call (the notebook's set-up cell stays short)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from verlstudy.kit.devices import pick_device
from verlstudy.kit.lesson_start import start_lesson
from verlstudy.kit.params import check_int


@dataclass(frozen=True)
class Params:
    device: torch.device
    seed: int
    bandit_steps: int
    bandit_prompts: int
    robustness_seeds: int


def lesson_params(
    device: str, seed: object, bandit_steps: object, bandit_prompts: object, robustness_seeds: object
) -> Params:
    """Check every parameter (a ValueError/TypeError names a bad one), seed, reset the claims, say the device."""
    dev = pick_device(device)
    bandit_steps = check_int("bandit_steps", bandit_steps, minimum=40, maximum=200)
    bandit_prompts = check_int("bandit_prompts", bandit_prompts, minimum=64, maximum=512)
    robustness_seeds = check_int("robustness_seeds", robustness_seeds, minimum=1, maximum=8)
    dev, checked_seed = start_lesson(dev, seed)  # the seed last: a bad lesson parameter is named before a bad seed
    return Params(dev, checked_seed, bandit_steps, bandit_prompts, robustness_seeds)
