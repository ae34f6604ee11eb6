"""Lesson 09's config errors, and the removal table that turns an old key into a way forward.

A key the schema does not have is an `UnknownKeyError` suggesting the closest valid names; a key that
existed once is a `RemovedKeyError` naming the release and the replacement (verl PR #7544 removed
`grad_offload` in 0.9.1).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


class ConfigError(ValueError):
    """A config could not be loaded or does not fit its dataclass; the message says where and why."""


class UnknownKeyError(ConfigError):
    """A key that the config schema does not have (the message suggests the closest valid names)."""


class RemovedKeyError(UnknownKeyError):
    """A key that existed once and was removed; the message names the release and the replacement."""


class StaleGeneratedConfigError(ConfigError):
    """The generated flat config differs from a fresh regeneration; `.diff` holds the unified diff."""

    def __init__(self, message: str, diff: str) -> None:
        super().__init__(message)
        self.diff = diff


@dataclass(frozen=True)
class Removal:
    """One removed config key: where it went and what to use instead."""

    key: str
    removed_in: str
    use_instead: str
    why: str
    pr: int

    def message(self) -> str:
        return (
            f"{self.key!r} was removed in {self.removed_in} (PR #{self.pr}): {self.why}. "
            f"Use {self.use_instead!r} instead and delete {self.key!r} from your config."
        )


# verl 0.9.0 still ships grad_offload; 0.9.1 does not (checked in both wheels).
REMOVED_KEYS: dict[str, Removal] = {
    "grad_offload": Removal(
        key="grad_offload",
        removed_in="verl 0.9.1",
        use_instead="param_offload",
        why="it was never read; gradient buffers are offloaded together with the parameters when param_offload=True",
        pr=7544,
    ),
}


def unknown_key_error(
    key: str,
    valid: Sequence[str],
    *,
    where: str,
    owner: str,
    removals: Mapping[str, Removal] = REMOVED_KEYS,
) -> UnknownKeyError:
    """The error for a key that `owner` does not have: a migration message if the key was removed,
    else the closest valid names (difflib) or, failing that, the full list."""
    if key in removals:
        return RemovedKeyError(f"{where}: {owner} has no key {key!r}: {removals[key].message()}")
    # a removed key is never a useful suggestion
    candidates = [v for v in valid if v not in removals]
    close = difflib.get_close_matches(key, candidates, n=3, cutoff=0.6)
    if close:
        hint = f"did you mean {close[0]!r}?"
        if len(close) > 1:
            hint += " (also close: " + ", ".join(repr(c) for c in close[1:]) + ")"
    else:
        hint = "valid keys: " + ", ".join(sorted(valid))
    return UnknownKeyError(f"{where}: {owner} has no key {key!r}; {hint}")
