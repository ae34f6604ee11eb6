"""Lesson 06's parameters, validated in one call (the notebook's set-up cell stays short)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from verlstudy.kit.devices import pick_device
from verlstudy.kit.lesson_start import start_lesson
from verlstudy.kit.params import check_float


@dataclass(frozen=True)
class Params:
    device: torch.device
    timeout_s: float


def lesson_params(device: str, timeout_s: object, seed: object) -> Params:
    """Check every parameter (a ValueError/TypeError names a bad one), seed, reset the claims, say the device."""
    p = Params(
        device=pick_device(device),
        timeout_s=check_float("timeout_s", timeout_s, minimum=1.0, maximum=120.0),
    )
    start_lesson(p.device, seed)  # the seed last: a bad lesson parameter is named before a bad seed
    return p
