"""Answers that hand over the course's own function instead of writing one: a checker should refuse each.

Names and call shapes come from the notebooks' own import lines and cells.
"""

from verlstudy.common.trees import detach_tree, detach_tree_always
from verlstudy.lessons.l03_router_replay.routes import stack_routes
from verlstudy.lessons.l03_router_replay.text_config import get_text_config_attr
from verlstudy.lessons.l04_thd.thd import aligned_length
from verlstudy.lessons.l05_checkpoint.checkpoint import matches_prefix
from verlstudy.lessons.l06_external_modules.modules_env import predict_patched
from verlstudy.lessons.l07_grpo_recipe.grpo import group_advantages


def packed_length_from_course(lengths, tp, cp):
    # a thin sum over the course's aligned_length(length, tp, cp): the per-sequence rule is handed over
    return sum(aligned_length(n, tp, cp) for n in lengths)


LIBRARY = {
    "course detach_tree for 2.1": ("2.1", (detach_tree,)),
    "course detach_tree_always for 2.1": ("2.1", (detach_tree_always,)),
    "course stack_routes for 3.1": ("3.1", (stack_routes,)),
    "course get_text_config_attr for 3.3": ("3.3", (get_text_config_attr,)),
    "course aligned_length summed for 4.1": ("4.1", (packed_length_from_course,)),
    "course matches_prefix for 5.1": ("5.1", (matches_prefix,)),
    "course predict_patched for 6.2": ("6.2", (predict_patched,)),
    "course group_advantages for 7.3": ("7.3", (group_advantages,)),
}
