"""Lesson 02's parameters, validated in one call (the notebook's set-up cell)."""

from __future__ import annotations

import torch

from verlstudy.kit.devices import pick_device
from verlstudy.kit.lesson_start import start_lesson
from verlstudy.kit.params import check_float, check_int

RANGE_REASONS = {
    "steps": "with fewer steps the right placement's reward gain over the wrong one sits inside the sampling noise "
    "(at 8 steps, 3 of seeds 0-5 end within 0.1)",
    "group_size": "smaller groups leave too few batches with non-zero advantages to show the trap",
    "kl_coef": "a larger KL coefficient lets the right placement's KL term alone move its loss more than 0.01 from the "
    "wrong one's (0.015 at 0.005 over 200 steps), so the loss curves no longer look the same",
}


def lesson_setup(
    device: str, seed: object, n_leaves: object, steps: object, group_size: object, lr: object, kl_coef: object
) -> tuple[torch.device, int, int, int, int, float, float]:
    """Check every parameter (a bad one raises naming it and what is allowed), seed, reset the claims.

    Returns (device, seed, n_leaves, steps, group_size, lr, kl_coef), checked.

    The ranges are the ones over which every claim of the lesson holds for seeds 0-5 (tools/extremes.py draws
    more); a value outside one is refused with the reason, `RANGE_REASONS`.
    """
    dev = pick_device(device)
    try:
        checked = (
            check_int("n_leaves", n_leaves, minimum=1, maximum=100_000),
            check_int("steps", steps, minimum=12, maximum=200),
            check_int("group_size", group_size, minimum=4, maximum=64),
            check_float("lr", lr, minimum=0.5, maximum=10.0),
            check_float("kl_coef", kl_coef, minimum=1e-6, maximum=0.002),
        )
    except ValueError as e:
        name = str(e).removeprefix("parameter ").split("=", 1)[0]
        if name in RANGE_REASONS and "out of range" in str(e):
            raise ValueError(f"{e}: {RANGE_REASONS[name]}") from None
        raise
    # the seed last: a bad lesson parameter is named before a bad seed, and before anything is reset or seeded
    return (*start_lesson(dev, seed, announce=False), *checked)  # the notebook says the device itself
