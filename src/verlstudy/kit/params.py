"""One validation helper for everything: a notebook's papermill parameters and every helper's arguments.

A bad value gets a TypeError/ValueError that names it (`parameter steps=0 ...` in a notebook,
`argument topk=0 ...` in a helper) and says what is allowed.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable


def allowed_range(name: str, minimum: float | None, maximum: float | None) -> str:
    """How every range reads, the same for every parameter: `1 <= steps <= 50`, `seed >= 0`, `lr <= 1`."""
    if minimum is not None and maximum is not None:
        return f"{minimum} <= {name} <= {maximum}"
    if minimum is not None:
        return f"{name} >= {minimum}"
    return f"{name} <= {maximum}"


def check_choice(name: str, value: object, allowed: Iterable[object], *, kind: str = "parameter") -> object:
    """Return `value` if it is one of `allowed`, else ValueError naming the parameter."""
    allowed = tuple(allowed)
    if value not in allowed:
        raise ValueError(f"{kind} {name}={value!r} is not allowed; choose one of {', '.join(repr(a) for a in allowed)}")
    return value


def check_int(
    name: str, value: object, *, minimum: int | None = None, maximum: int | None = None, kind: str = "parameter"
) -> int:
    """Return `value` if it is an int within [minimum, maximum], else a clear TypeError/ValueError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{kind} {name} must be an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ValueError(f"{kind} {name}={value} is out of range; allowed: {allowed_range(name, minimum, maximum)}")
    return value


def check_float(
    name: str,
    value: object,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    kind: str = "parameter",
) -> float:
    """Return `value` as a float if it is a real number within [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{kind} {name} must be a number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{kind} {name}={value} is not a finite number; NaN and infinity are not allowed")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ValueError(f"{kind} {name}={value} is out of range; allowed: {allowed_range(name, minimum, maximum)}")
    return value


def positive_int(name: str, value: object) -> int:
    """A helper's argument that must be an int >= 1 (sizes, counts, ranks per group)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"argument {name} must be a positive integer, got {type(value).__name__} {value!r}")
    if int(value) < 1:
        raise ValueError(f"argument {name} must be a positive integer (>= 1), got {value}")
    return int(value)


def a_kind(value: object) -> str:
    """How a value's kind reads in a message, with its article: "a list", "an int". A value a checker made to stand
    for an outcome (a raise compared like a result) says itself how it reads, through `described_as`. Lessons use it
    too wherever a message names what the learner returned or passed."""
    described = getattr(value, "described_as", None)
    if isinstance(described, str):
        return described
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"
