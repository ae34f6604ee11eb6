"""One validation helper for everything: a notebook's papermill parameters and every helper's arguments.

A bad value gets a TypeError/ValueError that names it (`parameter steps=0 ...` in a notebook,
`argument topk=0 ...` in a helper) and says what is allowed.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from verlstudy.kit import i18n


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
    if i18n.language() is not None:  # no article outside English: "得到的是 float", not "得到的是 a float"
        return name
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def got(value: object) -> str:
    """What a message says it got, on one line and short: `int 7`, `NoneType None`, `str 'abc...'`."""
    try:
        shown = repr(value)
    except Exception:  # a repr that fails still gets its type named
        shown = "<unprintable>"
    shown = " ".join(shown.split())
    return f"{type(value).__name__} {shown[:60]}{'...' if len(shown) > 60 else ''}"


def check_str(name: str, value: object, *, what: str = "a str", kind: str = "argument") -> str:
    """Return `value` if it is a str, else a one-line TypeError: `argument text must be shell text (a str), got ...`."""
    if not isinstance(value, str):
        raise TypeError(f"{kind} {name} must be {what}, got {got(value)}")
    return value


def check_path(name: str, value: object, *, what: str = "a path (str or Path)", kind: str = "argument") -> Path:
    """Return `value` as a Path if it is a str or os.PathLike (not bytes), else a one-line TypeError naming it."""
    if isinstance(value, str) or (isinstance(value, os.PathLike) and isinstance(os.fspath(value), str)):
        return Path(value)
    raise TypeError(f"{kind} {name} must be {what}, got {got(value)}")


def check_instance(name: str, value: object, cls: type | tuple[type, ...], *, what: str, kind: str = "argument") -> Any:
    """Return `value` if it is an instance of `cls`, else a one-line TypeError: `argument tree must be a ConfigTree
    (from parse_yaml), got NoneType None`. `what` says what is allowed, in the reader's words."""
    if not isinstance(value, cls):
        raise TypeError(f"{kind} {name} must be {what}, got {got(value)}")
    return value


def check_items(
    name: str, value: object, cls: type | tuple[type, ...], *, what: str, kind: str = "argument"
) -> list[Any]:
    """Return `value` as a list if it is an iterable (not a str, bytes or mapping) whose every item is a `cls`,
    else a one-line TypeError naming the argument or its first bad item: `argument pins[2] must be a Pin, got ...`.
    `what` names one item (`a Pin`). An iterator is read into the list returned: use that list, not the iterator."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise TypeError(f"{kind} {name} must be a list, each item {what}, got {got(value)}")
    items = list(value)
    for i, item in enumerate(items):
        if not isinstance(item, cls):
            raise TypeError(f"{kind} {name}[{i}] must be {what}, got {got(item)}")
    return items


def check_callable(name: str, value: object, *, what: str = "a function", kind: str = "argument") -> Any:
    """Return `value` if it can be called, else a one-line TypeError: `argument ours must be a function, got int 7`."""
    if not callable(value):
        raise TypeError(f"{kind} {name} must be {what}, got {got(value)}")
    return value
