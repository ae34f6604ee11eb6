"""Lesson 01's exercise checkers, registered by id: a notebook reaches them only as check_exercise("N.M", answer).

The checker bodies still live beside the mechanism (moving them and their reference answers here is open work)."""

from __future__ import annotations

from verlstudy.kit.exercises import checker
from verlstudy.lessons.l01_memory_leak.pipeline import check_growth_site, check_leak_prediction

checker("1.1")(check_leak_prediction)
checker("1.2")(check_growth_site)
