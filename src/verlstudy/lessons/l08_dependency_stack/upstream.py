"""Lesson 08 and upstream verl: why there is no single upstream function to compare (`verlstudy verify-upstream`)."""

from __future__ import annotations

from verlstudy.kit.upstream import NotComparable, report_not_comparable

NOT_COMPARABLE = NotComparable(
    lesson="08",
    upstream="docker/ and scripts/ refs",
    why="Dockerfiles and install scripts are not shipped in the verl package",
)
COMPARISONS = ()


def upstream_check(cases: int = 50) -> None:
    """The lesson's upstream cell: says why this lesson has no upstream function to compare."""
    report_not_comparable(NOT_COMPARABLE)
