"""Lesson 03's exercise checkers, registered by id: a notebook reaches them only as check_exercise("N.M", answer).

The checker bodies still live beside the mechanism (moving them and their reference answers here is open work)."""

from __future__ import annotations

from verlstudy.kit.exercises import checker
from verlstudy.lessons.l03_router_replay.router_replay import (
    check_stack_by_layer,
    check_text_config_attr,
    check_wire_roundtrip,
)

checker("3.1")(check_stack_by_layer)
checker("3.2")(check_wire_roundtrip)
checker("3.3")(check_text_config_attr)
