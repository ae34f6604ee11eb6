"""verlstudy.common.trees: the leaf walk finds a grad tensor wherever a stored output keeps it."""

from dataclasses import dataclass

import pytest
import torch

from verlstudy.common.trees import grad_attached_paths


@dataclass
class Stored:
    log_probs: torch.Tensor
    step: int = 0


def _attached() -> torch.Tensor:
    return torch.randn(3, requires_grad=True) * 2


def test_a_grad_tensor_in_a_set_is_found():
    assert grad_attached_paths({"kept": {_attached()}}, "out") == ["out.kept{item 0}"]


def test_a_grad_tensor_in_a_dataclass_is_found_by_field():
    assert grad_attached_paths({"record": Stored(_attached())}, "out") == ["out.record.log_probs"]


def test_detached_values_in_sets_and_dataclasses_pass():
    assert grad_attached_paths({"a": {torch.zeros(2)}, "b": Stored(torch.zeros(1))}, "out") == []


@pytest.mark.parametrize("function", ["detach_tree", "detach_tree_always", "grad_attached_paths", "tensor_leaves"])
def test_a_tree_that_contains_itself_is_one_line_not_a_recursion_error(function):
    # issue 43 item 8: a self-containing list was a raw RecursionError
    from verlstudy.common import trees

    looped: list[object] = [torch.ones(1, requires_grad=True)]
    looped.append(looped)
    with pytest.raises(ValueError, match=r"contains itself .* pass a tree without cycles") as info:
        getattr(trees, function)(looped)
    assert "\n" not in str(info.value)
