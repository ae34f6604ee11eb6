"""Lesson 05 and upstream verl: why there is no single upstream function to compare (`verlstudy verify-upstream`)."""

from __future__ import annotations

from verlstudy.kit.upstream import NotComparable, report_not_comparable

NOT_COMPARABLE = NotComparable(
    lesson="05",
    upstream="checkpoint.strict in the GLM recipe",
    why="a flag passed to Megatron-Bridge's HF weight export (save_hf_weights); no pure function",
)
COMPARISONS = ()


def upstream_check(cases: int = 50) -> None:
    """The lesson's upstream cell: says why this lesson has no upstream function to compare."""
    report_not_comparable(NOT_COMPARABLE)
