"""Lesson 06 and upstream verl: why there is no single upstream function to compare (`verlstudy verify-upstream`)."""

from __future__ import annotations

from verlstudy.kit.upstream import NotComparable, report_not_comparable

NOT_COMPARABLE = NotComparable(
    lesson="06",
    upstream="verl/__init__.py VERL_USE_EXTERNAL_MODULES",
    why="runs at verl import time, which needs verl's dependencies",
)
COMPARISONS = ()


def upstream_check(cases: int = 50) -> None:
    """The lesson's upstream cell: says why this lesson has no upstream function to compare."""
    report_not_comparable(NOT_COMPARABLE)
