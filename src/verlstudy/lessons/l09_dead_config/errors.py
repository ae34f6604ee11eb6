"""Lesson 09's config errors, and the removal table that turns an old key into a way forward.

A key the schema does not have is an `UnknownKeyError` suggesting the closest valid names; a key that
existed once is a `RemovedKeyError` naming the release, what removing it changes (for `grad_offload`,
removed in verl 0.9.1 by PR #7544: nothing) and to delete it.
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
    """A key that existed once and was removed; the message names the release and says what to do."""


class StaleGeneratedConfigError(ConfigError):
    """The generated flat config differs from a fresh regeneration; `.diff` holds the unified diff."""

    def __init__(self, message: str, diff: str) -> None:
        super().__init__(message)
        self.diff = diff


@dataclass(frozen=True)
class Removal:
    """One removed config key: why it went, what removing it changes, and what is *not* its replacement."""

    key: str
    removed_in: str
    why: str
    pr: int
    effect: str = "removing it changes nothing"
    not_a_replacement: str = ""  # a key that looks like a replacement but does more

    def message(self) -> str:
        text = (
            f"{self.key!r} was removed in {self.removed_in} (PR #{self.pr}): {self.why}, "
            f"so {self.effect}; delete {self.key!r} from your config."
        )
        return f"{text} {self.not_a_replacement}" if self.not_a_replacement else text


# verl 0.9.0 still ships grad_offload; 0.9.1 does not (checked in both wheels). PR #7544: the option "was
# never consumed", removing it "does not change runtime behavior"; users remove it from their configs.
REMOVED_KEYS: dict[str, Removal] = {
    "grad_offload": Removal(
        key="grad_offload",
        removed_in="verl 0.9.1",
        why="it was copied into MegatronEngine._is_offload_grad and never read",
        pr=7544,
        not_a_replacement=(
            "'param_offload' is not a replacement: it offloads the parameters too (gradient buffers already follow it)."
        ),
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
