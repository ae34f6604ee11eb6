"""assert_detached keeps its promise wherever a stored output hides a grad tensor."""

from dataclasses import dataclass

import pytest
import torch

from verlstudy.common.trees import detach_tree
from verlstudy.lessons.l02_detach.trees import ContractError, assert_detached


@dataclass
class Stored:
    log_probs: torch.Tensor


def _attached() -> torch.Tensor:
    return torch.randn(3, requires_grad=True) * 2


@pytest.mark.parametrize("container", [lambda t: {t}, lambda t: frozenset([t]), lambda t: Stored(t)])
def test_assert_detached_refuses_what_detach_tree_leaves_alone(container):
    stored = {"model_output": container(_attached())}
    with pytest.raises(ContractError, match="still require grad"):
        assert_detached(detach_tree(stored), "stored")
