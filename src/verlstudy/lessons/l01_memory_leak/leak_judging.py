"""How exercise 1.1 is judged: a byte count read as a number of any numeric type, on the sizes of real models,
and a wrong count named by what the learner's function does over many sizes, not by one coincidence.

`count_of` reads a result the way a byte count is meant (an int, a whole float, a numpy number or a one-value
tensor are the same count). `LeakMistake` probes the learner's function on a fixed set of sizes and fits its
result to the terms a count of tensors can have (S x H x itemsize, S x itemsize, H x itemsize, the same without
itemsize, constants): the mistake is named from the terms it has, so a count that coincides with another mistake
at one small size is not blamed on that one.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from verlstudy.common.memtrace import ALLOCATOR_GRANULARITY, allocator_block
from verlstudy.kit import i18n

# Sizes where every term a count could hold differs from every other (no two are proportional over them)
PROBES = (
    (3, 5, 2), (7, 3, 4), (5, 11, 1), (13, 7, 8), (2, 9, 4), (17, 4, 2),
    (6, 13, 8), (11, 2, 1), (4, 17, 4), (9, 6, 2), (19, 8, 1), (8, 19, 8),
)  # fmt: skip
NOTEBOOK_EXAMPLE = (64, 32, 4)  # the notebook's own S, H and float32: a constant right only there
TERMS = ("SHb", "Sb", "Hb", "SH", "S", "H", "b", "1")
RIGHT = {"SHb": 2, "Sb": 1}
# a count in another unit, by its ratio to the bytes: one whole sentence each, for translation
UNITS = {
    8: "your count is in bits, eight times too many: the tracker counts bytes",
    Fraction(1, 1024): "your count is in KiB: the tracker counts bytes",
    Fraction(1, 1000): "your count is in kB: the tracker counts bytes",
    Fraction(1, 2**20): "your count is in MiB: the tracker counts bytes",
}


def count_of(got: Any) -> Any:
    """A byte count as an int where `got` is one in any numeric type (a whole float, numpy, a one-value tensor)."""
    if type(got).__module__.startswith("torch") and hasattr(got, "numel") and got.numel() == 1:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, numbers.Real):
        return got
    value = float(got) if not isinstance(got, numbers.Integral) else int(got)
    if isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
        return got
    return int(value)


def _monomials(s: int, h: int, b: int) -> list[int]:
    return [s * h * b, s * b, h * b, s * h, s, h, b, 1]


def fit_terms(fn: Callable[[int, int, int], Any]) -> dict[str, Fraction] | None:
    """The terms of `fn`'s count when it is a sum of them over every probe (exact), else None."""
    try:
        values = [count_of(fn(*p)) for p in PROBES]
    except Exception:
        return None
    if not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values):
        return None
    rows = np.array([_monomials(*p) for p in PROBES], dtype=np.float64)
    coefs, *_ = np.linalg.lstsq(rows, np.array(values, dtype=np.float64), rcond=None)
    terms = {t: Fraction(float(c)).limit_denominator(2**21) for t, c in zip(TERMS, coefs, strict=True)}
    for p, v in zip(PROBES, values, strict=True):
        fitted = sum(terms[t] * m for t, m in zip(TERMS, _monomials(*p), strict=True))
        if not math.isclose(float(fitted), float(v), rel_tol=1e-9, abs_tol=1e-6):
            return None
    return {t: c for t, c in terms.items() if c != 0}


def leak_formula(s: int, h: int, b: int) -> int:
    """1.1's answer, the one copy: the receive buffer, its gradient and the stored per-token output, in bytes."""
    buffer = s * h * b
    return buffer + buffer + s * b


def _same_as(fn: Callable[[int, int, int], Any], other: Callable[[int, int, int], int]) -> bool:
    try:
        return all(count_of(fn(*p)) == other(*p) for p in PROBES)
    except Exception:
        return False


def _terms_message(terms: dict[str, Fraction]) -> str | None:
    """The mistake a count with these terms makes (RIGHT's terms are the tracker's)."""
    ratio = {t: terms.get(t, 0) / RIGHT[t] for t in RIGHT}
    if set(terms) == set(RIGHT) and ratio["SHb"] == ratio["Sb"] != 1:
        k = ratio["SHb"]
        return i18n._(UNITS[k]) if k in UNITS else i18n.pick("your count is {k} times", k=k)
    if terms == {"1": leak_formula(*NOTEBOOK_EXAMPLE)}:
        return i18n._(
            "that is the count for the notebook's own sizes: use the seq_len, hidden and itemsize you are given"
        )
    if set(terms) <= {"1"}:
        return i18n._("your count is the same whatever the sizes: use the seq_len, hidden and itemsize you are given")
    fixed = [t for t in ("SH", "S", "H") if t in terms]
    for k in (1, 2, 4, 8):
        if terms == {"SH": 2 * k, "S": k}:
            return i18n.pick("your count is right for an itemsize of {k} only: use the itemsize you are given", k=k)
    if terms.get("SHb") == 2 and set(terms) == {"SHb", "S"}:
        if terms["S"] == 1:
            return i18n._("your stored-output term counts elements, not bytes")
        return i18n.pick(
            "the buffer and its gradient are right, but your stored-output term uses a fixed {size} bytes per value: "
            "the output has the itemsize you are given too",
            size=terms["S"],
        )
    if fixed:
        size = terms[fixed[0]]
        if size == 1:
            return i18n._(
                "part of your count counts elements, not bytes: every tensor here holds itemsize bytes per value"
            )
        return i18n.pick(
            "part of your count uses a fixed {size} bytes per value, whatever the itemsize: every tensor here holds "
            "values of the itemsize you are given",
            size=size,
        )
    buffers = terms.get("SHb", 0)
    if buffers != 2:
        if buffers == 0:
            return i18n._(
                "nothing in your count grows with both S and H, yet the receive buffer holds a value per token per "
                "hidden unit"
            )
        if buffers == 1 and terms.get("Sb") == 1 and len(terms) == 2:
            return i18n._("you count the buffer and the stored output, but backward left something more on the buffer")
        if buffers == 1:
            return i18n._(
                "you count one tensor of the buffer's size, the receive buffer alone, but more than the buffer "
                "survives with it"
            )
        return i18n.pick(
            "you count {buffers} tensors of the buffer's size: backward has already freed the graph's saved "
            "activations, so they do not stay",
            buffers=buffers,
        )
    if "Hb" in terms and "Sb" not in terms:
        return i18n._(
            "your stored-output term grows with H: the stored output holds one value per token, not one per hidden unit"
        )
    outputs = terms.get("Sb", 0)
    if outputs == 0:
        return i18n._("the buffer's share is right, but you leave out what the store itself is meant to keep")
    if outputs != 1:
        return i18n.pick(
            "you count {outputs} per-token tensors, but the store keeps one value per token for each micro-batch",
            outputs=outputs,
        )
    if "1" in terms:
        return i18n.pick(
            "your count adds a constant {constant} bytes whatever the sizes: where does it come from?",
            constant=terms["1"],
        )
    return None


def name_leak_mistake(fn: Callable[[int, int, int], Any]) -> Callable[[tuple[Any, ...], Any, Any], str | None]:
    """Names what a wrong count shows, from `fn`'s behaviour over the probes (never the formula)."""
    terms = fit_terms(fn)

    def name(args: tuple[Any, ...], got: Any, want: int) -> str | None:
        del args  # named from the function's behaviour over the probes, not from this one input
        if isinstance(got, bool) or not isinstance(got, numbers.Real):
            return i18n._("return a number of bytes")
        if got != want and (int(got) - want) % 2**32 == 0:
            return i18n._(
                "your count wraps around at large sizes: is it computed in a 32-bit integer (numpy or a tensor)?"
            )
        if got != want and abs(got - want) <= want * 2**-23:
            return i18n._("your count is rounded at large sizes: is it computed in float32 (a tensor, numpy)?")
        for tokens, said in _OFF_BY_ONE_TOKEN.items():
            if _same_as(fn, lambda s, h, b, d=tokens: leak_formula(s + d, h, b)):
                return i18n._(said)
        if _same_as(fn, lambda s, h, b: 2 * allocator_block(s * h * b) + allocator_block(s * b)):
            return i18n.pick(
                "you rounded each tensor up to a {block}-byte block, as the CUDA caching allocator does: the tracker "
                "counts the bytes each tensor's storage holds",
                block=ALLOCATOR_GRANULARITY,
            )
        if _same_as(fn, lambda s, h, b: leak_formula(h, s, b)):
            return i18n._(
                "your count swaps the roles of seq_len and hidden: the stored output holds one value per token"
            )
        named = _terms_message(terms) if terms is not None else None
        if named:
            return named
        if isinstance(got, float) and not (math.isfinite(got) and got == int(got)):
            return i18n._("a byte count is a whole number: a tensor holds a whole number of bytes")
        extra = int(got) - want
        if extra > 0:
            return i18n.pick("you count {extra} bytes more than the tracker measures", extra=extra)
        return i18n.pick("you are {short} bytes short of what the tracker measures", short=-extra)

    return name


_OFF_BY_ONE_TOKEN = {
    1: "that is the count for S + 1 tokens, one token too many: S is what you are given",
    -1: "that is the count for S - 1 tokens, one token too few: S is what you are given",
}
