"""Lesson 04's exercise checkers, registered by id: a notebook reaches them only as check_exercise("N.M", answer).

The checker bodies still live beside the mechanism (moving them and their reference answers here is open work)."""

from __future__ import annotations

from verlstudy.kit.exercises import checker
from verlstudy.lessons.l04_thd.thd import check_aligned_length, check_minimal_alignment, check_zigzag_positions

checker("4.1")(check_aligned_length)
checker("4.2")(check_zigzag_positions)
checker("4.3")(check_minimal_alignment)
