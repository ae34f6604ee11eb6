"""Lesson 08 and upstream verl: why there is no single upstream function to compare (`verlstudy verify-upstream`)."""

from __future__ import annotations

from verlstudy.kit.upstream import NotComparable, report_not_comparable

NOT_COMPARABLE = NotComparable(
    lesson="08",
    upstream="docker/ and scripts/ refs",
    why="Dockerfiles and install scripts are not shipped in the verl package",
    how=(
        "facts read from verl 0.9.1 (megatron.yaml, constants_ppo.py, model_forward_1f1b_overlap.py), from "
        "docker/ and scripts/ files at ead7f6c51, 5ba5f2f51 (verl-project/verl), 3d36367 (wwj-git-rgb/verl), "
        "6fc912f07 (yellowbee686/verl), and from PR threads #7604, #7827"
    ),
)
COMPARISONS = ()


def upstream_check(cases: int = 50) -> None:
    """The lesson's upstream cell: says why this lesson has no upstream function to compare."""
    report_not_comparable(NOT_COMPARABLE)
