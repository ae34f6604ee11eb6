"""Lesson 02's exercise checkers, registered by id: a notebook reaches them only as check_exercise("N.M", answer).

The checker bodies still live beside the mechanism (moving them and their reference answers here is open work)."""

from __future__ import annotations

from verlstudy.kit.exercises import checker
from verlstudy.lessons.l02_detach.trees import check_detach_tree, check_forward_step

checker("2.1")(check_detach_tree)
checker("2.2")(check_forward_step)
