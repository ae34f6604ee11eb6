"""Specification of verlstudy.trees: detach_tree (upstream semantics, verl #7874) and the contract helpers."""

from __future__ import annotations

import collections
import importlib.util
from pathlib import Path
from typing import NamedTuple

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from verlstudy.common.trees import (
    count_new_tensors,
    detach_tree,
    detach_tree_always,
    grad_attached_paths,
    is_namedtuple,
    tensor_leaves,
)
from verlstudy.lessons.l02_detach.trees import (
    PLACEMENTS,
    ContractError,
    TinyCheckpointedLM,
    assert_detached,
    assert_nonzero_grad,
    assert_requires_grad,
    bandit_advantages,
    check_train_step,
    low_var_kl,
    policy_step,
    saved_input_lifetime,
    train_placement_bandit,
)


def live(*shape: int) -> torch.Tensor:
    # A non-leaf tensor with a grad_fn, like an engine's log-probs.
    return torch.randn(*shape, requires_grad=True) * 2


class Pair(NamedTuple):
    log_probs: torch.Tensor
    entropy: torch.Tensor


# --- detach_tree: tensors --------------------------------------------------------------------


def test_detached_tensor_comes_back_as_the_same_object() -> None:
    t = torch.randn(3)
    assert detach_tree(t) is t


def test_grad_requiring_tensor_is_detached_with_shared_storage() -> None:
    t = live(4)
    out = detach_tree(t)
    assert out is not t
    assert not out.requires_grad and out.grad_fn is None
    assert out.data_ptr() == t.data_ptr()
    assert torch.equal(out, t)


def test_leaf_parameter_is_detached() -> None:
    p = torch.nn.Parameter(torch.ones(2))
    out = detach_tree({"w": p})
    assert not out["w"].requires_grad
    assert p.requires_grad  # the parameter itself is untouched


def test_jagged_nested_tensor_is_detached_keeping_offsets() -> None:
    a, b = live(3), live(5)
    nt = torch.nested.as_nested_tensor([a, b], layout=torch.jagged)
    assert nt.requires_grad
    out = detach_tree({"log_probs": nt})["log_probs"]
    assert out.is_nested and out.layout == torch.jagged
    assert not out.requires_grad
    assert torch.equal(out.offsets(), nt.offsets())
    assert torch.equal(out.values(), nt.values())


def test_detached_jagged_tensor_is_returned_as_is() -> None:
    nt = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)], layout=torch.jagged)
    assert detach_tree(nt) is nt


# --- detach_tree: containers -----------------------------------------------------------------


def test_dict_becomes_a_new_dict_and_input_is_not_mutated() -> None:
    t = live(2)
    tree = {"log_probs": t, "meta": {"n": 3}}
    out = detach_tree(tree)
    assert out is not tree and out["meta"] is not tree["meta"]
    assert tree["log_probs"] is t and t.requires_grad  # input untouched
    assert out["meta"] == {"n": 3}


def test_dict_subclass_comes_back_as_plain_dict_like_upstream() -> None:
    tree = collections.OrderedDict(a=torch.ones(1))
    out = detach_tree(tree)
    assert type(out) is dict
    assert list(out) == ["a"]


def test_list_and_tuple_keep_their_type() -> None:
    t = live(2)
    out = detach_tree({"l": [t, 1], "t": (t, "s")})
    assert type(out["l"]) is list and type(out["t"]) is tuple
    assert out["l"][1] == 1 and out["t"][1] == "s"
    assert not out["l"][0].requires_grad and not out["t"][0].requires_grad


def test_namedtuple_is_rebuilt_field_by_field() -> None:
    pair = Pair(live(2), torch.zeros(2))
    out = detach_tree(pair)
    assert type(out) is Pair
    assert not out.log_probs.requires_grad
    assert out.entropy is pair.entropy


def test_one_field_namedtuple_keeps_its_value_not_a_generator() -> None:
    # Upstream's type(obj)(generator) would store the generator object here.
    One = collections.namedtuple("One", "x")
    out = detach_tree(One(live(1)))
    assert isinstance(out.x, torch.Tensor) and not out.x.requires_grad


def test_upstream_style_rebuild_fails_on_namedtuple() -> None:
    # Documents why we differ: the plain type(obj)(gen) rebuild cannot construct a 2-field namedtuple.
    pair = Pair(torch.ones(1), torch.ones(1))
    with pytest.raises(TypeError):
        type(pair)(v for v in pair)


def test_is_namedtuple() -> None:
    assert is_namedtuple(Pair(torch.ones(1), torch.ones(1)))
    assert not is_namedtuple((1, 2))
    assert not is_namedtuple([1, 2])


@pytest.mark.parametrize("leaf", [None, 3, 2.5, "text", b"raw", {1, 2}])
def test_non_tensor_leaves_are_returned_unchanged(leaf: object) -> None:
    assert detach_tree(leaf) is leaf


@pytest.mark.parametrize("empty", [{}, [], ()])
def test_empty_containers(empty: object) -> None:
    out = detach_tree(empty)
    assert out == empty and type(out) is type(empty)


def test_deep_nesting() -> None:
    t = live(1)
    tree = {"a": [({"b": [t]},)]}
    out = detach_tree(tree)
    assert not out["a"][0][0]["b"][0].requires_grad
    assert grad_attached_paths(out, "tree") == []
    assert grad_attached_paths(tree, "tree") == ["tree.a[0][0].b[0]"]


# --- cost: new tensors -----------------------------------------------------------------------


def test_no_new_tensors_for_already_detached_tree() -> None:
    tree = {f"k{i}": torch.ones(1) for i in range(10)}
    assert count_new_tensors(tree, detach_tree(tree)) == 0
    assert count_new_tensors(tree, detach_tree_always(tree)) == 10


def test_naive_variant_gives_equal_values() -> None:
    tree = {"a": [live(2), torch.ones(3)], "b": Pair(live(1), torch.zeros(1))}
    ours, naive = tensor_leaves(detach_tree(tree)), tensor_leaves(detach_tree_always(tree))
    assert [p for p, _ in ours] == [p for p, _ in naive]
    assert all(torch.equal(a, b) and not b.requires_grad for (_, a), (_, b) in zip(ours, naive, strict=True))


def test_count_new_tensors_rejects_different_shapes() -> None:
    with pytest.raises(ValueError, match="same tree structure"):
        count_new_tensors({"a": torch.ones(1)}, {"b": torch.ones(1)})


# --- paths and contract helpers --------------------------------------------------------------


def test_grad_attached_paths_format() -> None:
    t = live(1)
    tree = {"log_probs": [torch.ones(1), torch.ones(1), t], "odd key": t, 7: t, "pair": Pair(t, torch.ones(1))}
    assert grad_attached_paths(tree, "model_output") == [
        "model_output.log_probs[2]",
        "model_output['odd key']",
        "model_output[7]",
        "model_output.pair.log_probs",
    ]


def test_grad_attached_paths_rejects_bad_name() -> None:
    with pytest.raises(TypeError, match="name must be a non-empty string"):
        grad_attached_paths({}, "")


def test_assert_detached_names_the_offending_path() -> None:
    with pytest.raises(ContractError, match=r"model_output\.log_probs\[1\] still require grad"):
        assert_detached({"log_probs": [torch.ones(1), live(1)]}, "model_output")
    assert_detached(detach_tree({"log_probs": [live(1)]}), "model_output")


def test_assert_detached_truncates_long_lists() -> None:
    with pytest.raises(ContractError, match=r"\(and 2 more\)"):
        assert_detached([live(1) for _ in range(7)], "outs")


def test_assert_requires_grad() -> None:
    assert_requires_grad(live(1).sum(), "loss")
    with pytest.raises(ContractError, match="loss does not require grad"):
        assert_requires_grad(torch.ones(()), "loss")
    with pytest.raises(TypeError, match=r"loss must be a torch\.Tensor, got float"):
        assert_requires_grad(1.0, "loss")


def test_assert_nonzero_grad() -> None:
    lin = torch.nn.Linear(2, 1)
    with pytest.raises(ContractError, match=r"policy\.weight has no gradient"):
        assert_nonzero_grad(lin.named_parameters(), "policy")
    (lin(torch.ones(1, 2)) * 0).sum().backward()
    with pytest.raises(ContractError, match=r"policy\.weight has an all-zero gradient"):
        assert_nonzero_grad(lin.named_parameters(), "policy")
    lin.zero_grad()
    lin(torch.ones(1, 2)).sum().backward()
    assert_nonzero_grad(lin.named_parameters(), "policy")


def test_assert_nonzero_grad_skips_frozen_and_rejects_bad_input() -> None:
    frozen = torch.nn.Parameter(torch.ones(1), requires_grad=False)
    assert_nonzero_grad([("frozen", frozen), ("w", _with_grad())], "m")
    with pytest.raises(ValueError, match="at least one"):
        assert_nonzero_grad([], "m")
    with pytest.raises(TypeError, match=r"must be a torch\.Tensor"):
        assert_nonzero_grad([("w", 1.0)], "m")


def _with_grad() -> torch.Tensor:
    w = torch.ones(1, requires_grad=True)
    (w * 3).sum().backward()
    return w


# --- properties over random trees ------------------------------------------------------------

_leaves = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=3),
    st.booleans().map(lambda g: torch.randn(2, requires_grad=g)),
    st.booleans().map(lambda g: torch.randn(2, requires_grad=True) * 1 if g else torch.randn(2)),
)
_trees = st.recursive(
    _leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=4), children, max_size=4),
        st.tuples(children, children).map(lambda xy: Pair(*xy)),
    ),
    max_leaves=20,
)


def _shape(obj: object) -> object:
    # The container skeleton with tensors replaced by their values (for equality checks).
    if isinstance(obj, torch.Tensor):
        return ("tensor", tuple(obj.detach().tolist()))
    if isinstance(obj, dict):
        return ("dict", tuple((k, _shape(v)) for k, v in obj.items()))
    if isinstance(obj, list | tuple):
        return (type(obj).__name__, tuple(_shape(v) for v in obj))
    return ("leaf", obj)


@settings(max_examples=150, deadline=None)
@given(_trees)
def test_property_detach_tree(tree: object) -> None:
    before_shape = _shape(tree)
    before_leaves = tensor_leaves(tree)
    before_flags = [t.requires_grad for _, t in before_leaves]
    out = detach_tree(tree)
    # same structure and values, nothing requires grad afterwards, input untouched
    assert _shape(out) == before_shape
    assert grad_attached_paths(out) == []
    assert [t.requires_grad for _, t in tensor_leaves(tree)] == before_flags
    # exactly the grad-requiring leaves became new objects
    after_leaves = tensor_leaves(out)
    assert count_new_tensors(tree, out) == sum(before_flags)
    for (_, a), (_, b) in zip(before_leaves, after_leaves, strict=True):
        assert (a is b) == (not a.requires_grad)
    # idempotent: a second pass creates nothing
    assert count_new_tensors(out, detach_tree(out)) == 0


# --- the full contract, the trap and the regression model ------------------------------------


def test_check_train_step_passes_a_correct_step_and_names_each_broken_rule() -> None:
    lin = torch.nn.Linear(2, 1)
    out = lin(torch.ones(3, 2)).squeeze(-1)
    loss = out.pow(2).mean()
    loss.backward()
    check_train_step(loss, {"model_output": detach_tree({"v": out})}, lin.named_parameters())
    with pytest.raises(ContractError, match=r"stored output\.model_output\.v still require grad"):
        check_train_step(loss, {"model_output": {"v": out}}, lin.named_parameters())
    with pytest.raises(ContractError, match="loss does not require grad"):
        check_train_step(loss.detach(), {}, lin.named_parameters())


def test_low_var_kl_is_zero_with_exactly_zero_gradient_at_the_reference() -> None:
    logp = torch.log_softmax(torch.randn(5), -1).requires_grad_(True)
    kl = low_var_kl(logp, logp.detach().clone())
    kl.sum().backward()
    assert torch.equal(kl, torch.zeros(5))
    assert torch.equal(logp.grad, torch.zeros(5))
    # away from the reference it is positive and has a gradient
    logp.grad = None
    kl2 = low_var_kl(logp, logp.detach() - 0.5)
    kl2.sum().backward()
    assert bool((kl2 > 0).all()) and bool(logp.grad.ne(0).all())


def test_low_var_kl_clamps_the_log_ratio_before_exp_like_verl() -> None:
    # A response the policy gives probability 0 (logp = -inf): without the inner clamp, exp(inf) - inf is NaN.
    logp = torch.tensor([float("-inf"), -30.0, -1.0])
    ref = torch.tensor([-1.0, 0.0, -30.0])
    kl = low_var_kl(logp, ref)
    assert torch.equal(kl, torch.tensor([10.0, 10.0, 10.0]))
    small = low_var_kl(torch.tensor([-1.0]), torch.tensor([-1.5]))
    assert torch.allclose(small, torch.exp(torch.tensor([-0.5])) + 0.5 - 1)


def test_low_var_kl_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="same shape"):
        low_var_kl(torch.zeros(2), torch.zeros(3))
    with pytest.raises(TypeError, match=r"torch\.Tensors"):
        low_var_kl([0.0], torch.zeros(1))


def test_group_advantages() -> None:
    adv = bandit_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0]), 3)
    assert adv.shape == (6,)
    assert torch.allclose(adv.view(2, 3).sum(1), torch.zeros(2), atol=1e-6)
    assert adv[0] > 0 > adv[1] and adv[5] > 0 > adv[3]
    assert torch.equal(bandit_advantages(torch.ones(4), 2), torch.zeros(4))
    with pytest.raises(ValueError, match="not a multiple of group_size=3"):
        bandit_advantages(torch.ones(4), 3)
    with pytest.raises(ValueError, match="group_size must be an int >= 2"):
        bandit_advantages(torch.ones(4), 1)
    with pytest.raises(TypeError, match="1-D"):
        bandit_advantages(torch.ones(2, 2), 2)


def _bandit_batch() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    policy = torch.nn.Sequential(torch.nn.Embedding(3, 4), torch.nn.Linear(4, 5))
    states = torch.tensor([0, 0, 1, 1, 2, 2])
    actions = torch.tensor([1, 2, 0, 4, 3, 3])
    with torch.no_grad():
        old = torch.log_softmax(policy(states), -1).gather(-1, actions[:, None]).squeeze(-1)
    adv = bandit_advantages(torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 0.0]), 2)
    return policy, (states, actions, old, adv, old.clone())


def test_policy_step_placements_give_equal_loss_but_only_one_gradient() -> None:
    grads = {}
    losses = {}
    for placement in PLACEMENTS:
        policy, batch = _bandit_batch()
        loss, output = policy_step(policy, *batch, kl_coef=0.1, placement=placement)
        assert loss.requires_grad  # the KL term keeps backward running in both
        assert_detached(output, "output")  # both store detached outputs
        loss.backward()
        losses[placement] = loss.item()
        grads[placement] = torch.cat([p.grad.reshape(-1) for p in policy.parameters()])
    assert losses["after_loss"] == losses["before_loss"]
    assert bool(grads["after_loss"].ne(0).any())
    assert torch.equal(grads["before_loss"], torch.zeros_like(grads["before_loss"]))


def test_policy_step_rejects_unknown_placement() -> None:
    policy, batch = _bandit_batch()
    with pytest.raises(ValueError, match="placement must be one of"):
        policy_step(policy, *batch, kl_coef=0.1, placement="early")


def test_train_bandit_right_placement_learns_wrong_one_does_not() -> None:
    right, wrong = train_placement_bandit("after_loss", steps=10), train_placement_bandit("before_loss", steps=10)
    assert right.losses[0] == wrong.losses[0]
    assert all(g == 0.0 for g in wrong.grad_norms)
    assert wrong.param_change == 0.0 and right.param_change > 0.0
    assert all(g > 0.0 for g in right.grad_norms)
    assert right.rewards[-1] > right.rewards[0]
    assert max(abs(a - b) for a, b in zip(right.losses, wrong.losses, strict=True)) < 1e-3
    with pytest.raises(ValueError, match="steps must be a positive int"):
        train_placement_bandit("after_loss", steps=0)


def test_checkpoint_saved_input_is_freed_with_the_loss_only_when_detached() -> None:
    assert saved_input_lifetime(detach=True) == (True, False, [])
    assert saved_input_lifetime(detach=False) == (True, True, ["output.model_output.log_probs"])


def test_saved_input_lifetime_wants_a_bool() -> None:
    with pytest.raises(TypeError, match="detach must be True or False, got str 'yes'"):
        saved_input_lifetime("yes")  # type: ignore[arg-type]


def test_tiny_model_embedding_is_frozen_but_its_output_requires_grad() -> None:
    model = TinyCheckpointedLM()
    assert not model.embed.weight.requires_grad
    assert model.embed(torch.tensor([1, 2])).requires_grad


def test_benchmark_counts_detach_ops_like_the_identity_count() -> None:
    path = Path(__file__).resolve().parents[3] / "benchmarks" / "detach_tree.py"
    spec = importlib.util.spec_from_file_location("bench_detach_tree", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    tree = bench.build_tree(20, grad_every=10)
    assert bench.dispatched_detaches(detach_tree, tree) == count_new_tensors(tree, detach_tree(tree)) == 2
    assert bench.dispatched_detaches(detach_tree_always, tree) == 20


def test_jagged_view_from_values_keeps_offsets_object() -> None:
    # The engines' construction: a view over live packed values with cu_seqlens offsets.
    values = torch.randn(6, requires_grad=True) * 1.0
    offsets = torch.tensor([0, 2, 6])
    nt = torch.nested.nested_tensor_from_jagged(values, offsets)
    out = detach_tree(nt)
    assert nt.requires_grad and not out.requires_grad
    assert out.offsets() is nt.offsets()
    assert torch.equal(out.values(), values.detach())


@pytest.mark.parametrize("value", [None, 7, "w", [1], float("nan")])
def test_assert_nonzero_grad_names_params_of_the_wrong_type(value):
    # issue 43 item 8: assert_nonzero_grad([1]) ended in "cannot unpack non-iterable int object"
    from verlstudy.lessons.l02_detach.trees import assert_nonzero_grad

    with pytest.raises(TypeError, match=r"argument params(\[0\])? must be (a )?\(name, parameter\) pair"):
        assert_nonzero_grad(value)


@pytest.mark.parametrize("value", [None, "0", [1]])
def test_saved_input_lifetime_names_a_seed_of_the_wrong_type(value):
    # issue 43 item 8: seed=None ended in torch's "int() argument must be a string ... not 'NoneType'"
    from verlstudy.lessons.l02_detach.trees import saved_input_lifetime

    with pytest.raises(TypeError, match=r"argument seed must be an integer"):
        saved_input_lifetime(True, seed=value)
