"""Lesson 07's exercise checkers, registered by id: a notebook reaches them only as check_exercise("N.M", answer).

The checker bodies still live beside the mechanism (moving them and their reference answers here is open work)."""

from __future__ import annotations

from verlstudy.kit.exercises import checker
from verlstudy.lessons.l07_grpo_recipe.grpo import check_advantages, check_token_loss
from verlstudy.lessons.l07_grpo_recipe.parallel import check_dp_sizes

checker("7.1")(check_dp_sizes)
checker("7.2")(check_token_loss)
checker("7.3")(check_advantages)
