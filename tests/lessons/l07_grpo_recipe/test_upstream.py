"""Lesson 07's comparisons with upstream: their arguments are named when of the wrong type (no verl needed)."""

from __future__ import annotations

import pytest

from verlstudy.lessons.l07_grpo_recipe import upstream as up


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"cases": None}, r"argument cases must be a positive integer, got NoneType None"),
        ({"cases": "3"}, r"argument cases must be a positive integer"),
        ({"seed": [1]}, r"argument seed must be an integer, got list"),
        ({"ours": 7}, r"argument ours must be a function \(the code under comparison\) or None, got int 7"),
    ],
)
def test_compare_policy_loss_names_an_argument_of_the_wrong_type(args, named):
    # issue 43 item 8: cases=None ended in "'NoneType' object cannot be interpreted as an integer"
    with pytest.raises(TypeError, match=named):
        up.compare_policy_loss(**args)
    with pytest.raises(TypeError, match=r"argument cases must be a positive integer"):
        up.upstream_check(None)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"cases": None}, r"argument cases must be a positive integer, got NoneType None"),
        ({"cases": "3"}, r"argument cases must be a positive integer"),
        ({"seed": [1]}, r"argument seed must be an integer, got list"),
        ({"ours": 7}, r"argument ours must be a function \(the code under comparison\) or None, got int 7"),
    ],
)
def test_compare_group_advantages_names_an_argument_of_the_wrong_type(args, named):
    # issue 43 item 8: cases=None ended in "'NoneType' object cannot be interpreted as an integer"
    with pytest.raises(TypeError, match=named):
        up.compare_group_advantages(**args)
    with pytest.raises(TypeError, match=r"argument cases must be a positive integer"):
        up.upstream_check(None)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"cases": None}, r"argument cases must be a positive integer, got NoneType None"),
        ({"cases": "3"}, r"argument cases must be a positive integer"),
        ({"seed": [1]}, r"argument seed must be an integer, got list"),
        ({"ours": 7}, r"argument ours must be a function \(the code under comparison\) or None, got int 7"),
    ],
)
def test_compare_recipe_loss_names_an_argument_of_the_wrong_type(args, named):
    # issue 43 item 8: cases=None ended in "'NoneType' object cannot be interpreted as an integer"
    with pytest.raises(TypeError, match=named):
        up.compare_recipe_loss(**args)
    with pytest.raises(TypeError, match=r"argument cases must be a positive integer"):
        up.upstream_check(None)
