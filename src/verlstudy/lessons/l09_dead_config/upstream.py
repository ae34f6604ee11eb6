"""Lesson 09 and upstream verl: why there is no single upstream function to compare (`verlstudy verify-upstream`)."""

from __future__ import annotations

from verlstudy.kit.upstream import NotComparable, report_not_comparable

NOT_COMPARABLE = NotComparable(
    lesson="09",
    upstream="verl/workers/config/engine.py::EngineConfig",
    why=(
        "a dataclass tree with verl's base config classes; the removed field is checked with "
        "dataclasses.fields in the lesson"
    ),
)
COMPARISONS = ()


def upstream_check(cases: int = 50) -> None:
    """The lesson's upstream cell: says why this lesson has no upstream function to compare."""
    report_not_comparable(NOT_COMPARABLE)
