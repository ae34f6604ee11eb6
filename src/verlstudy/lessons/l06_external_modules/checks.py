"""Lesson 06's exercise checkers, registered by id: a notebook reaches them only as check_exercise("N.M", answer).

The checker bodies still live beside the mechanism (moving them and their reference answers here is open work)."""

from __future__ import annotations

from verlstudy.kit.exercises import checker
from verlstudy.lessons.l06_external_modules.modules_env import check_parse_modules, check_predict_patched

checker("6.1")(check_parse_modules)
checker("6.2")(check_predict_patched)
