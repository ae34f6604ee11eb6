"""Lesson 09's parameters, validated in one call (the notebook's set-up cell stays short)."""

from __future__ import annotations

import torch

from verlstudy.kit.claims import reset_claims
from verlstudy.kit.devices import pick_device
from verlstudy.kit.params import check_int
from verlstudy.kit.seeding import seed_everything


def lesson_params(device: object, hidden: object, diff_context: object, seed: object) -> tuple[torch.device, int, int]:
    """Check every parameter (a bad one raises naming it and what is allowed), seed, reset the claims, say the
    device. Returns (device, hidden, diff_context)."""
    dev = pick_device(device)
    hidden = check_int("hidden", hidden, minimum=1, maximum=4096)
    diff_context = check_int("diff_context", diff_context, minimum=0, maximum=10)
    seed_everything(check_int("seed", seed, minimum=0, maximum=2**32 - 1))
    reset_claims()
    print(f"running on {dev.type}")
    return dev, hidden, diff_context
