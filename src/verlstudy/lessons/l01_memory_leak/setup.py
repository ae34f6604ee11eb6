"""Lesson 01's parameters, validated in one call (the notebook's set-up cell)."""

from __future__ import annotations

import torch

from verlstudy.kit.devices import pick_device
from verlstudy.kit.lesson_start import start_lesson
from verlstudy.kit.params import check_choice, check_int
from verlstudy.lessons.l01_memory_leak.pipeline import PipelineConfig


def lesson_setup(
    device: object, seed: object, seq_len: object, hidden: object, dtype: object, num_micro_batches: object
) -> tuple[torch.device, int, PipelineConfig, int]:
    """Check every parameter (a bad one raises naming it and what is allowed), seed, reset the claims, and run
    torch on one thread: on toy-sized tensors a second thread only waits for a free core (milliseconds an op on
    a busy machine).

    Returns (device, seed, the pipeline's config, num_micro_batches).
    """
    dev = pick_device(device)
    cfg = PipelineConfig(
        seq_len=check_int("seq_len", seq_len, minimum=1, maximum=1024),
        hidden=check_int("hidden", hidden, minimum=1, maximum=256),
        dtype=check_choice("dtype", dtype, ("float32", "bfloat16")),
    )
    n = check_int("num_micro_batches", num_micro_batches, minimum=3, maximum=16)
    # the seed last: a bad lesson parameter is named before a bad seed, and before anything is reset or seeded
    dev, seed = start_lesson(dev, seed, announce=False)  # the notebook prints the config instead
    torch.set_num_threads(1)
    return dev, seed, cfg, n
