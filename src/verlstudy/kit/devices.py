"""Choosing the device a lesson runs on, and skipping accelerator cells politely on a CPU."""

from __future__ import annotations

import importlib.util

import torch

from verlstudy.kit import i18n

DEVICE_CHOICES: tuple[str, ...] = ("auto", "cpu", "cuda", "npu")
ACCELERATORS: tuple[str, ...] = ("cuda", "npu")


def _check_kind(kind: object, allowed: tuple[str, ...], name: str) -> str:
    if not isinstance(kind, str):
        raise TypeError(f"{name} must be a string, one of {allowed}; got {type(kind).__name__} {kind!r}")
    if kind not in allowed:
        raise ValueError(f"{name}={kind!r} is not allowed; choose one of {', '.join(repr(a) for a in allowed)}")
    return kind


def has_accelerator(kind: str) -> bool:
    """True when an accelerator of this kind ('cuda' or 'npu') is visible to torch."""
    _check_kind(kind, ACCELERATORS, "kind")
    if kind == "cuda":
        return bool(torch.cuda.is_available())
    # torch_npu registers torch.npu only when imported; never import it when it is absent.
    if importlib.util.find_spec("torch_npu") is None:
        return False
    import torch_npu  # noqa: F401

    return bool(getattr(torch, "npu", None) and torch.npu.is_available())


def visible_accelerators() -> list[str]:
    """The accelerator kinds present here, e.g. [] on a laptop, ['cuda'] on a GPU box."""
    return [kind for kind in ACCELERATORS if has_accelerator(kind)]


def pick_device(choice: str = "auto") -> torch.device:
    """Resolve a notebook's `device` parameter: 'auto' takes an accelerator if present, else the CPU.

    Asking for 'cuda' or 'npu' where none is visible is an error naming the parameter, not a silent
    fall-back, so a CI run that expects a GPU cannot pass on a CPU by accident.
    """
    _check_kind(choice, DEVICE_CHOICES, "device")
    if choice == "auto":
        found = visible_accelerators()
        return torch.device(found[0] if found else "cpu")
    if choice != "cpu" and not has_accelerator(choice):
        raise ValueError(
            f"device={choice!r} was asked for, but no {choice.upper()} device is visible here; "
            "use device='auto' or device='cpu'"
        )
    return torch.device(choice)


def skip_unless(kind: str) -> bool:
    """Return True when `kind` is present; otherwise print one stable skip line and return False.

    Use as the first line of an accelerator cell: `if skip_unless("cuda"): ...`.
    """
    _check_kind(kind, ACCELERATORS, "kind")
    if has_accelerator(kind):
        return True
    print(
        i18n.pick(
            "[skip] no {kind} device here: this cell runs only with one (CPU results above stand).", kind=kind.upper()
        )
    )
    return False
