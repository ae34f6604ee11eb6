"""The steps every lesson takes before its first cell of substance: device, seed, a fresh claims table."""

from __future__ import annotations

import torch

from verlstudy.kit.claims import reset_claims
from verlstudy.kit.devices import pick_device
from verlstudy.kit.params import check_int
from verlstudy.kit.seeding import seed_everything

SEED_MAXIMUM = 2**32 - 1  # numpy's seed is an unsigned 32-bit integer


def start_lesson(device: str | torch.device, seed: object, *, announce: bool = True) -> tuple[torch.device, int]:
    """Pick the device, check and apply the seed, reset the claims, and (if `announce`) print `running on <type>`.

    Lessons call it last in their set-up: `pick_device` first, their own parameters next, then this, so a bad
    value is named before anything is reset, seeded or printed. The device is checked before the seed, each with
    kit's own message (`device='tpu' is not allowed; ...`,
    `parameter seed=-1 is out of range; ...`). A lesson that checks other parameters between the two passes the
    device it already picked with `pick_device`; it is checked again, so asking for a missing GPU still fails.

    Returns (device, seed).
    """
    if isinstance(device, torch.device):
        pick_device(device.type)  # a picked device still has to be one this machine has
        dev = device
    else:
        dev = pick_device(device)
    checked_seed = seed_everything(check_int("seed", seed, minimum=0, maximum=SEED_MAXIMUM))
    reset_claims()
    if announce:
        print(f"running on {dev.type}")
    return dev, checked_seed
