"""The steps every lesson takes before its first cell of substance: device, seed, a fresh claims table."""

from __future__ import annotations

import gc
import importlib
import re
import sys

import torch

from verlstudy.kit.claims import reset_claims
from verlstudy.kit.devices import pick_device
from verlstudy.kit.exercises import _offer_help
from verlstudy.kit.params import check_int
from verlstudy.kit.seeding import seed_everything

SEED_MAXIMUM = 2**32 - 1  # numpy's seed is an unsigned 32-bit integer
_LESSON_MODULE = re.compile(r"verlstudy\.lessons\.l(\d\d)_[^.]+")


def _lesson_started() -> int | None:
    """The lesson whose set-up is running: the first caller inside a lesson package (`lesson_setup`), else the one
    lesson whose modules the notebook has imported so far (its set-up cell imports `setup`), else None."""
    frame = sys._getframe(1)
    while frame is not None:
        found = _LESSON_MODULE.match(str(frame.f_globals.get("__name__", "")))
        if found:
            return int(found.group(1))
        frame = frame.f_back
    imported = {int(m.group(1)) for name in list(sys.modules) if (m := _LESSON_MODULE.match(name))}
    return imported.pop() if len(imported) == 1 else None


def prepare_checks(lesson: int | None) -> None:
    """Pay the checkers' one-off costs at the set-up, not in the learner's first check: import the lesson's checks
    module (what `check_exercise` would import on the first check), run the functions it lists in `WARM_UP` (a
    lesson's own first-use cost, such as torch's first jagged tensor), and run hypothesis once
    (`kit.properties.warm_up`). Nothing here draws from the seeded generators: `start_lesson` seeds after it."""
    from verlstudy.kit.exercises import lesson_checks_module
    from verlstudy.kit.properties import warm_up

    if lesson is not None:
        checks = importlib.import_module(lesson_checks_module(lesson))
        for warm in getattr(checks, "WARM_UP", ()):
            warm()
    warm_up()


def start_lesson(
    device: str | torch.device, seed: object, *, announce: bool = True, lesson: int | None = None
) -> tuple[torch.device, int]:
    """Pick the device, check and apply the seed, reset the claims, and (if `announce`) print `running on <type>`.

    Lessons call it last in their set-up: `pick_device` first, their own parameters next, then this, so a bad
    value is named before anything is reset, seeded or printed. The device is checked before the seed, each with
    kit's own message (`device='tpu' is not allowed; ...`,
    `parameter seed=-1 is out of range; ...`). A lesson that checks other parameters between the two passes the
    device it already picked with `pick_device`; it is checked again, so asking for a missing GPU still fails.

    It also freezes the garbage collector's view of what exists so far (`gc.freeze()`): the imports' heap is never
    garbage, and a lesson's later collections (and `gc.collect()` calls) then scan only the objects it made.

    It puts `exercise_hint` and `show_solution` in the notebook's namespace (a name the learner bound is kept), so
    they answer before any check has run. Before seeding it pays the exercise checkers' one-off costs
    (`prepare_checks`: the lesson's checks imported, hypothesis run once), so a learner's first check answers as
    fast as the next one. The lesson is `lesson`, or else the lesson package that called this or that the notebook
    imported (`_lesson_started`).

    Returns (device, seed).
    """
    if isinstance(device, torch.device):
        pick_device(device.type)  # a picked device still has to be one this machine has
        dev = device
    else:
        dev = pick_device(device)
    checked = check_int("seed", seed, minimum=0, maximum=SEED_MAXIMUM)
    _offer_help(sys._getframe(1).f_globals)  # exercise_hint and show_solution answer from the first cell on
    prepare_checks(lesson if lesson is not None else _lesson_started())
    checked_seed = seed_everything(checked)
    reset_claims()
    gc.freeze()  # the imports' long-lived heap (torch's) is set aside: later collections scan only the lesson's objects
    if announce:
        print(f"running on {dev.type}")
    return dev, checked_seed
