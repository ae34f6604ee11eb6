"""Lesson 05's exercise checkers, registered by id: a notebook reaches them only as check_exercise("N.M", answer).

The checker bodies still live beside the mechanism (moving them and their reference answers here is open work)."""

from __future__ import annotations

from verlstudy.kit.exercises import checker
from verlstudy.lessons.l05_checkpoint.checkpoint import check_missing_audit, check_prefix_matcher

checker("5.1")(check_prefix_matcher)
checker("5.2")(check_missing_audit)
