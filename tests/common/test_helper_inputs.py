"""Helpers refuse what they cannot handle honestly: token ids that are not integers, grad tensors hidden in
container types the walk did not know, and iterators that could only be checked by using them up."""

import types
from collections import OrderedDict, UserDict, UserList, deque

import numpy as np
import pytest
import torch

from verlstudy.common.trees import detach_tree, grad_attached_paths
from verlstudy.lessons.l02_detach.trees import ContractError, assert_detached
from verlstudy.lessons.l04_thd.thd import pack_sequences


@pytest.mark.parametrize(
    ("sequences", "named"),
    [
        ([[1.7, 2.0]], "float 1.7"),
        ([[1, 2], [3.0]], r"sequences\[1\] must hold integer token ids, got float 3.0"),
        ([[np.float32(1.0)]], "float32"),
        ([[True, 2]], "bool True"),
        ([[np.bool_(True)]], "bool"),
        ([np.array([0.5, 1.5])], "float64"),
        ([[None]], "NoneType None"),
    ],
)
def test_pack_sequences_refuses_what_is_not_integer_token_ids_by_name(sequences, named):
    with pytest.raises(TypeError, match=named):
        pack_sequences(sequences)


@pytest.mark.parametrize(
    ("sequences", "named"),
    [(["abc"], "got str"), ([5], "got int"), ([[[1, 2]]], "not a list of lists"), ("abc", "non-empty list")],
)
def test_pack_sequences_refuses_what_is_not_one_dimensional_by_name(sequences, named):
    with pytest.raises(ValueError, match=named):
        pack_sequences(sequences)


def test_pack_sequences_still_takes_ints_numpy_ints_and_integer_tensors():
    packed = pack_sequences([[1, 2, 3], np.array([4, 5], dtype=np.int64), [np.int32(6)], torch.tensor([7])])
    assert packed.values().tolist() == [1, 2, 3, 4, 5, 6, 7]
    assert packed.offsets().tolist() == [0, 3, 5, 6, 7]


def _grad():
    return torch.ones(2, requires_grad=True) * 2


@pytest.mark.parametrize(
    ("container", "path"),
    [
        (UserDict({"log_probs": None}), "out.log_probs"),
        (types.MappingProxyType({"log_probs": None}), "out.log_probs"),
        (OrderedDict(log_probs=None), "out.log_probs"),
        (deque([0, None]), "out[1]"),
        (UserList([None]), "out[0]"),
    ],
)
def test_assert_detached_finds_a_grad_tensor_in_any_mapping_or_sequence(container, path):
    leaf = _grad()
    if isinstance(container, types.MappingProxyType):
        container = types.MappingProxyType({"log_probs": leaf})
    elif hasattr(container, "keys"):
        container["log_probs"] = leaf
    else:
        container[-1] = leaf
    assert grad_attached_paths(container, "out") == [path]
    with pytest.raises(ContractError, match=rf"{path.replace('[', '.').replace(']', '.')}"):
        assert_detached(container, "out")
    assert_detached(detach_tree({"x": leaf.detach()}), "out")


def test_assert_detached_refuses_a_generator_instead_of_passing_it_unchecked():
    with pytest.raises(TypeError, match=r"out is a generator, which cannot be checked without consuming it"):
        assert_detached((t for t in [_grad()]), "out")
    with pytest.raises(TypeError, match=r"out\.steps is a list_iterator"):
        assert_detached({"steps": iter([_grad()])}, "out")


def test_strings_ranges_and_arrays_are_leaves_not_containers():
    assert grad_attached_paths({"s": "text", "r": range(10**12), "a": np.zeros(3)}, "out") == []


def _wrong_type_calls():
    from verlstudy.lessons.l07_grpo_recipe.bandit import tabular_policy_gradient
    from verlstudy.lessons.l08_dependency_stack.manifests import manifest_problems
    from verlstudy.lessons.l08_dependency_stack.pip_command import package_identity, repository_identity
    from verlstudy.lessons.l08_dependency_stack.real_files import component_name
    from verlstudy.lessons.l09_dead_config.verl_tree import package_files

    t = torch.zeros(2, 3)
    return [
        (lambda v: tabular_policy_gradient(v, t, t, t, 0.2, 0.28, 3.0), "logits must be a torch.Tensor"),
        (lambda v: manifest_problems(v), "manifest must be a StackManifest"),
        (lambda v: package_identity(v), "name must be a package name"),
        (lambda v: repository_identity(v), "url must be a repository URL"),
        (lambda v: component_name(v), "repo must be a repository key"),
        (lambda v: package_files(v), "root must be a package folder's path"),
    ]


@pytest.mark.parametrize("value", [None, float("inf"), "self-containing list"])
def test_lesson_helpers_name_an_argument_of_the_wrong_type(value):
    # issue 43 item 8: these ended in a raw AttributeError ('NoneType' object has no attribute 'dim', ...)
    if value == "self-containing list":
        value = [1]
        value.append(value)
    for call, named in _wrong_type_calls():
        with pytest.raises(TypeError, match=named) as info:
            call(value)
        assert "\n" not in str(info.value)
