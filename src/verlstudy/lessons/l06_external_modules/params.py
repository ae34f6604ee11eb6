"""Lesson 06's parameters, validated in one call (the notebook's set-up cell stays short)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from verlstudy.kit.claims import reset_claims
from verlstudy.kit.devices import pick_device
from verlstudy.kit.params import check_float, check_int
from verlstudy.kit.seeding import seed_everything


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
    seed_everything(check_int("seed", seed, minimum=0, maximum=2**32 - 1))
    reset_claims()
    print(f"running on {p.device.type}")
    return p
