"""Lesson 09's parameters, validated in one call (the notebook's set-up cell stays short)."""

from __future__ import annotations

import torch

from verlstudy.kit.devices import pick_device
from verlstudy.kit.lesson_start import start_lesson
from verlstudy.kit.params import check_int


def lesson_params(device: object, hidden: object, diff_context: object, seed: object) -> tuple[torch.device, int, int]:
    """Check every parameter (a bad one raises naming it and what is allowed), seed, reset the claims, say the
    device. Returns (device, hidden, diff_context)."""
    dev = pick_device(device)
    hidden = check_int("hidden", hidden, minimum=1, maximum=4096)
    diff_context = check_int("diff_context", diff_context, minimum=0, maximum=10)
    start_lesson(dev, seed)  # the seed last: a bad lesson parameter is named before a bad seed
    return dev, hidden, diff_context
