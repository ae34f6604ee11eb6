"""Lesson 05's parameters, validated in one call (the notebook's set-up cell stays short)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from verlstudy.kit.devices import pick_device
from verlstudy.kit.lesson_start import start_lesson
from verlstudy.kit.params import check_int


@dataclass(frozen=True)
class Params:
    device: torch.device
    vocab: int
    hidden: int
    n_layers: int
    n_shards: int
    n_tokens: int


def lesson_params(
    device: str, vocab: object, hidden: object, n_layers: object, n_shards: object, n_tokens: object, seed: object
) -> Params:
    """Check every parameter (a ValueError/TypeError names a bad one), seed, reset the claims, say the device."""
    p = Params(
        device=pick_device(device),
        vocab=check_int("vocab", vocab, minimum=2, maximum=1024),
        hidden=check_int("hidden", hidden, minimum=1, maximum=256),
        n_layers=check_int("n_layers", n_layers, minimum=2, maximum=8),
        n_shards=check_int("n_shards", n_shards, minimum=1, maximum=4),
        n_tokens=check_int("n_tokens", n_tokens, minimum=1, maximum=4096),
    )
    start_lesson(p.device, seed)  # the seed last: a bad lesson parameter is named before a bad seed
    return p
