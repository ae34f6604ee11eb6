"""Answers that hand over verl's or the course's own function instead of writing one: all should be refused.

LIBRARY: label -> (exercise id, args for check_exercise). Torch-heavy modules are imported on first call so this
file imports quickly; the light modules_env functions are handed over as the very objects.
"""

import importlib

from verlstudy.lessons.l06_external_modules.modules_env import parse_module_list, predict_patched


def _fn(module, name):
    return getattr(importlib.import_module(module), name)


def lib_course_detach_tree(obj):
    # the course's own detach_tree (notebook 02 imports it from verlstudy.common.trees)
    return _fn("verlstudy.common.trees", "detach_tree")(obj)


def lib_verl_detach_tree(obj):
    # verl's detach_tree, loaded by the lesson's own helper
    return _fn("verlstudy.lessons.l02_detach.upstream", "upstream_detach_tree")()(obj)


def lib_course_text_attr(config, name):
    # the lesson's get_text_config_attr (notebook 03)
    return _fn("verlstudy.lessons.l03_router_replay.text_config", "get_text_config_attr")(config, name)


def lib_verl_get_hf_config_attr(config, name):
    # verl 0.9.1's own get_hf_config_attr
    return _fn("verl.utils.megatron_utils", "get_hf_config_attr")(config, name)


def lib_course_aligned_length(lengths, tp, cp):
    # the lesson's aligned_length, summed per sequence (notebook 04)
    aligned_length = _fn("verlstudy.lessons.l04_thd.thd", "aligned_length")
    return sum(int(aligned_length(n, tp, cp)) for n in lengths)


def lib_course_matches_prefix(key, pattern):
    # the lesson's matcher (notebook 05 imports matches_prefix from l05_checkpoint.checkpoint)
    return _fn("verlstudy.lessons.l05_checkpoint.checkpoint", "matches_prefix")(key, pattern)


def lib_course_group_advantages(rewards):
    # the lesson's group_advantages (notebook 07)
    return _fn("verlstudy.lessons.l07_grpo_recipe.grpo", "group_advantages")(rewards)


def lib_course_parse_modules(value):
    # a wrapper around the course's parse_module_list
    return parse_module_list(value)


LIBRARY = {
    "course detach_tree (2.1)": ("2.1", (lib_course_detach_tree,)),
    "verl detach_tree (2.1)": ("2.1", (lib_verl_detach_tree,)),
    "course get_text_config_attr (3.3)": ("3.3", (lib_course_text_attr,)),
    "verl get_hf_config_attr (3.3)": ("3.3", (lib_verl_get_hf_config_attr,)),
    "course aligned_length summed (4.1)": ("4.1", (lib_course_aligned_length,)),
    "course matches_prefix (5.1)": ("5.1", (lib_course_matches_prefix,)),
    "course parse_module_list, the object (6.1)": ("6.1", (parse_module_list,)),
    "course parse_module_list, wrapped (6.1)": ("6.1", (lib_course_parse_modules,)),
    "course predict_patched, the object (6.2)": ("6.2", (predict_patched,)),
    "course group_advantages (7.3)": ("7.3", (lib_course_group_advantages,)),
}
