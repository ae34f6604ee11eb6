"""Validating a notebook's papermill parameters: a bad value names the parameter and what is allowed."""

from __future__ import annotations

import numbers
from collections.abc import Iterable


def check_choice(name: str, value: object, allowed: Iterable[object]) -> object:
    """Return `value` if it is one of `allowed`, else ValueError naming the parameter."""
    allowed = tuple(allowed)
    if value not in allowed:
        raise ValueError(
            f"parameter {name}={value!r} is not allowed; choose one of {', '.join(repr(a) for a in allowed)}"
        )
    return value


def check_int(name: str, value: object, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return `value` if it is an int within [minimum, maximum], else a clear TypeError/ValueError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"parameter {name} must be an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        lo = "-inf" if minimum is None else minimum
        hi = "inf" if maximum is None else maximum
        raise ValueError(f"parameter {name}={value} is out of range; allowed: {lo} <= {name} <= {hi}")
    return value


def check_float(name: str, value: object, *, minimum: float | None = None, maximum: float | None = None) -> float:
    """Return `value` as a float if it is a real number within [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"parameter {name} must be a number, got {type(value).__name__} {value!r}")
    value = float(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        lo = "-inf" if minimum is None else minimum
        hi = "inf" if maximum is None else maximum
        raise ValueError(f"parameter {name}={value} is out of range; allowed: {lo} <= {name} <= {hi}")
    return value
