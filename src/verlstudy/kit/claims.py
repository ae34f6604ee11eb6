"""Checked claims and expected errors: what keeps a notebook's prose honest.

Every number a lesson states goes through `claim(...)`: it is asserted within its tolerance and
printed as one stable line, so nbval compares a fixed string rather than a raw float. The last
cell of a lesson prints `claims_table()`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from fractions import Fraction

from verlstudy.kit import exercises, i18n, records, tables
from verlstudy.kit.params import a_kind

CLAIM_PREFIX = "[claim]"
CLAIMS_HEADER = ("claim", "upstream", "ours", "reproduced")


class ClaimError(AssertionError):
    """A lesson's claim did not hold: the notebook's prose no longer matches what the code does."""


@dataclass(frozen=True)
class Claim:
    name: str
    ours: str
    expected: str
    upstream: str
    reproduced: bool


_CLAIMS: list[Claim] = []


def _format(value: object, digits: int) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        v = float(value)
        if v == 0:
            return "0"
        return f"{v:.{digits}g}"
    return str(value)


def _close(ours: object, expected: object, rtol: float, atol: float) -> bool:
    if isinstance(ours, bool) or isinstance(expected, bool):
        return ours == expected
    if isinstance(ours, numbers.Real) and isinstance(expected, numbers.Real):
        try:
            o, e = float(ours), float(expected)
        except OverflowError:  # an int beyond float's range (10**400): compared exactly, as fractions
            o, e = Fraction(ours), Fraction(expected)  # type: ignore[arg-type]
            return abs(o - e) <= Fraction(atol) + Fraction(rtol) * abs(e)
        if math.isnan(o) or math.isnan(e):
            return False
        return abs(o - e) <= atol + rtol * abs(e)
    return ours == expected


def _why_not(ours: object, expected: object) -> str:
    """What a learner should know about a failed comparison beyond the two values (NaN, or two kinds of value)."""
    is_number = [isinstance(v, numbers.Real) and not isinstance(v, bool) for v in (ours, expected)]
    if all(is_number) and any(v != v for v in (ours, expected)):  # NaN is the one value unequal to itself
        return "; NaN equals nothing, itself included"
    if is_number[0] != is_number[1]:
        return f"; ours is {a_kind(ours)}, expected {a_kind(expected)}"
    return ""


def claim(
    name: str,
    ours: object,
    expected: object = None,
    *,
    rtol: float = 0.0,
    atol: float = 0.0,
    upstream: str | None = None,
    unit: str = "",
    digits: int = 4,
) -> None:
    """Assert `ours` matches `expected` (within rtol/atol for numbers), print one line, record it.

    With `expected=None`, `ours` must be the boolean True (a yes/no claim, e.g. "the slope is zero").
    `upstream` quotes upstream's own figure (usually a GPU measurement) beside ours; it is shown,
    never compared. Raises ClaimError when the claim does not hold.
    """
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"claim name must be a non-empty string, got {name!r}")
    for label, tol in (("rtol", rtol), ("atol", atol)):
        if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or tol < 0:
            raise ValueError(f"{label} must be a non-negative number, got {tol!r}")
    if upstream is not None and not isinstance(upstream, str):
        raise TypeError(f"upstream must be a string quoting upstream's figure, got {type(upstream).__name__}")
    if isinstance(digits, bool) or not isinstance(digits, int) or not 1 <= digits <= 17:
        raise ValueError(f"claim {name!r}: digits must be an int from 1 to 17 (significant digits), got {digits!r}")
    if expected is None:
        if not isinstance(ours, bool):
            raise TypeError(
                f"claim {name!r}: without `expected`, `ours` must be a bool (a yes/no claim); "
                f"got {type(ours).__name__} {ours!r}. Pass expected=... for a figure."
            )
        ok = ours
        expected_text = "True"
    else:
        ok = _close(ours, expected, float(rtol), float(atol))
        expected_text = _format(expected, digits)
    suffix = f" {unit}" if unit else ""
    record = Claim(
        name=name,
        ours=_format(ours, digits) + suffix,
        expected=expected_text + (suffix if expected is not None else ""),
        upstream=upstream or "-",
        reproduced=bool(ok),
    )
    if not ok:
        tol = f" (rtol={rtol}, atol={atol})" if expected is not None else ""
        why = _why_not(ours, expected) if expected is not None else ""
        raise ClaimError(f"claim {name!r} does not hold: ours {record.ours}, expected {record.expected}{tol}{why}")
    # Re-running a cell replaces the earlier record instead of duplicating it.
    _CLAIMS[:] = [c for c in _CLAIMS if c.name != name]
    _CLAIMS.append(record)
    line = f"{CLAIM_PREFIX} {i18n._(name)}: {record.ours}"  # the name and the upstream note as the learner reads them
    if expected is not None:
        line += i18n.pick(" (expected {expected})", expected=record.expected)
    if upstream:
        line += i18n.pick(" | upstream: {upstream}", upstream=i18n._(upstream))
    print(line)
    records.emit({"kind": "claim", **asdict(record)})


def recorded_claims() -> list[Claim]:
    """The claims recorded in this process so far, in order."""
    return list(_CLAIMS)


def reset_claims() -> None:
    """Forget recorded claims and exercise verdicts (a lesson's first cell calls it for a clean table)."""
    _CLAIMS.clear()
    exercises.reset_exercises()


def claims_table_view() -> tables.Table:
    """The lesson's claims as a Table (claim, upstream, ours, reproduced), the counts and exercise verdicts as notes."""
    if not _CLAIMS:
        raise ValueError("no claims recorded yet: call claim(...) in the lesson before claims_table()")
    rows = [(i18n._(c.name), i18n._(c.upstream), c.ours, i18n._("yes" if c.reproduced else "no")) for c in _CLAIMS]
    done = sum(c.reproduced for c in _CLAIMS)
    notes = [i18n.pick("{done}/{total} claims reproduced", done=done, total=len(_CLAIMS))]
    verdicts = exercises.exercise_results()
    if verdicts:  # where the learner stands, beside the lesson's own claims
        correct = sum(v == "correct" for v in verdicts.values())
        shown = ", ".join(f"{i} {i18n._(v)}" for i, v in verdicts.items())
        notes.append(
            i18n.pick("{correct}/{total} exercises correct: {shown}", correct=correct, total=len(verdicts), shown=shown)
        )
    return tables.Table.of([i18n._(h) for h in CLAIMS_HEADER], rows, notes)


def claims_table() -> None:
    """Display the lesson's claims as a table (claim, upstream, ours, reproduced), then the exercise verdicts:
    Markdown for JupyterLab and the site, the same pipe lines as plain text for nbval. Returns None."""
    tables.show_table(claims_table_view())


@contextmanager
def expect_error(exc_type: type[BaseException], match: str | None = None) -> Iterator[None]:
    """Run a block that must raise `exc_type`; print `expected <Type>: <message>` and carry on.

    papermill stops on any error output, so a failure a lesson wants to show goes through this.
    If nothing is raised (the bug did not happen) it raises AssertionError; if another exception
    type is raised, that exception propagates unchanged.
    """
    if not (isinstance(exc_type, type) and issubclass(exc_type, BaseException)):
        raise TypeError(f"exc_type must be an exception class, got {exc_type!r}")
    try:
        yield
    except exc_type as e:
        message = str(e).strip()
        if match is not None and match not in message:
            raise AssertionError(f"expected {exc_type.__name__} mentioning {match!r}, got: {message}") from e
        print(i18n.pick("expected {error}: {text}", error=type(e).__name__, text=message))
    else:
        raise AssertionError(f"expected {exc_type.__name__}, but nothing was raised")
