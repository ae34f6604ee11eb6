"""Lesson 01 and upstream verl: why there is no single upstream function to compare (`verlstudy verify-upstream`)."""

from __future__ import annotations

from verlstudy.kit.upstream import NotComparable, report_not_comparable

NOT_COMPARABLE = NotComparable(
    lesson="01",
    upstream="megatron 1F1B forward_data_store",
    why=(
        "a pipeline schedule over real ranks and GPU memory; the mechanism is pinned by lesson 02's "
        "weakref test and call-site check instead"
    ),
)
COMPARISONS = ()


def upstream_check(cases: int = 50) -> None:
    """The lesson's upstream cell: says why this lesson has no upstream function to compare."""
    report_not_comparable(NOT_COMPARABLE)
