"""Lesson 00 and upstream verl: why there is no single upstream function to compare (`verlstudy verify-upstream`)."""

from __future__ import annotations

from verlstudy.kit.upstream import NotComparable, report_not_comparable

NOT_COMPARABLE = NotComparable(
    lesson="00",
    upstream="-",
    why="about the course itself; no upstream function",
    how=(
        "the glossary's facts read from the verl source, each citing its file (the rest is about the course "
        "itself; no upstream function to compare)"
    ),
)
COMPARISONS = ()


def upstream_check(cases: int = 50) -> None:
    """The lesson's upstream cell: says why this lesson has no upstream function to compare."""
    report_not_comparable(NOT_COMPARABLE)
