"""Lesson 09's exercise checkers, registered by id: a notebook reaches them only as check_exercise("N.M", answer).

The checker bodies still live beside the mechanism (moving them and their reference answers here is open work)."""

from __future__ import annotations

from verlstudy.kit.exercises import checker
from verlstudy.lessons.l09_dead_config.configs import check_attribute_reads, check_yaml_only_keys

checker("9.1")(check_attribute_reads)
checker("9.2")(check_yaml_only_keys)
