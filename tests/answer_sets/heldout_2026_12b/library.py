"""Answers that hand over the course's own function instead of writing one: each should be refused."""

from verlstudy.common.trees import detach_tree
from verlstudy.kit.hygiene import unstable_fragments
from verlstudy.lessons.l03_router_replay.text_config import get_text_config_attr
from verlstudy.lessons.l04_thd.thd import aligned_length
from verlstudy.lessons.l05_checkpoint.checkpoint import matches_prefix
from verlstudy.lessons.l06_external_modules.modules_env import parse_module_list
from verlstudy.lessons.l07_grpo_recipe.grpo import group_advantages


def lib_packed_length(lengths, tp, cp):
    # a thin wrapper: the course's per-sequence aligned_length, summed
    return sum(int(aligned_length(n, tp, cp)) for n in lengths)


def lib_advantages(rewards):
    # a thin wrapper around the course's group_advantages
    return group_advantages(list(rewards))


LIBRARY = {
    "2.1: the course's detach_tree": ("2.1", (detach_tree,)),
    "0.2: the kit's unstable_fragments": ("0.2", (unstable_fragments,)),
    "3.3: the lesson's get_text_config_attr": ("3.3", (get_text_config_attr,)),
    "5.1: the lesson's matches_prefix": ("5.1", (matches_prefix,)),
    "6.1: the lesson's parse_module_list": ("6.1", (parse_module_list,)),
    "7.3: the lesson's group_advantages": ("7.3", (group_advantages,)),
    "4.1: wrapper summing the lesson's aligned_length": ("4.1", (lib_packed_length,)),
    "7.3: wrapper around group_advantages": ("7.3", (lib_advantages,)),
}
