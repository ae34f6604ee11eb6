"""pipeline: the store semantics behind verl #7874's leak, its fix, and the pieces named as upstream names them."""

from __future__ import annotations

import pytest
import torch

from verlstudy.common.memtrace import AllocationTracker
from verlstudy.lessons.l01_memory_leak import pipeline as pl
from verlstudy.lessons.l01_memory_leak.pipeline import PipelineConfig, predicted_leak_bytes, run_pipeline
from verlstudy.lessons.l01_memory_leak.store import consume_store, graph_leaves

CFG = PipelineConfig(seq_len=16, hidden=8, vocab=12)


def test_stored_model_output_is_per_token_and_keeps_its_graph_without_the_fix() -> None:
    run = run_pipeline(CFG, 3)
    assert len(run.forward_data_store) == 3
    for out in run.forward_data_store:
        assert set(out) == {"model_output"} and set(out["model_output"]) == {"log_probs"}
        assert out["model_output"]["log_probs"].shape == (CFG.seq_len,)
        assert out["model_output"]["log_probs"].grad_fn is not None


def test_the_fix_detaches_what_is_stored() -> None:
    run = run_pipeline(CFG, 3, detach_outputs=True)
    for out in run.forward_data_store:
        assert not out["model_output"]["log_probs"].requires_grad and out["model_output"]["log_probs"].grad_fn is None


def test_the_store_is_consumed_at_the_end_and_then_everything_it_pinned_is_freed() -> None:
    tracker = AllocationTracker()
    run = run_pipeline(CFG, 3, tracker=tracker)
    store = run.forward_data_store
    expected = torch.cat([o["model_output"]["log_probs"].detach() for o in store])
    assert tracker.live_bytes() > 3 * sum(predicted_leak_bytes(CFG).values())
    merged = consume_store(store)["log_probs"]
    assert store == [] and merged.shape == (3 * CFG.seq_len,) and torch.equal(merged.detach(), expected)
    assert merged.grad_fn is not None and tracker.live_bytes() > 0, "the merge keeps the graphs, like upstream's"
    del merged
    assert tracker.live_bytes() == 0
    fixed_tracker = AllocationTracker()
    fixed = run_pipeline(CFG, 3, tracker=fixed_tracker, detach_outputs=True)
    assert fixed_tracker.live_bytes() == 3 * CFG.seq_len * CFG.itemsize  # only the stored outputs are left
    assert not consume_store(fixed.forward_data_store)["log_probs"].requires_grad and fixed_tracker.live_bytes() == 0


@pytest.mark.parametrize(
    ("store", "exc", "match"),
    [
        ([], ValueError, "non-empty list"),
        ((), ValueError, "non-empty list"),
        ([{"loss": 1.0}], TypeError, r"forward_data_store\[0\] must be a dict holding"),
        ([{"model_output": torch.ones(2)}], TypeError, r"'model_output' dict of tensors"),
        ([{"model_output": {"log_probs": torch.ones(2)}}, [1]], TypeError, r"forward_data_store\[1\]"),
        (
            [{"model_output": {"log_probs": torch.ones(2)}}, {"model_output": {"entropy": torch.ones(2)}}],
            ValueError,
            r"forward_data_store\[1\] has model_output keys \['entropy'\]",
        ),
    ],
)
def test_consume_store_bad_input(store: object, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        consume_store(store)  # type: ignore[arg-type]


def test_loss_and_gradients_are_bit_identical_with_and_without_the_fix() -> None:
    leak = run_pipeline(CFG, 4)
    fixed = run_pipeline(CFG, 4, detach_outputs=True)
    assert leak.losses == fixed.losses
    assert leak.grads.keys() == fixed.grads.keys() and len(leak.grads) > 0
    for name in leak.grads:
        assert torch.equal(leak.grads[name], fixed.grads[name]), name
    assert any(g.abs().sum() > 0 for g in fixed.grads.values())


def test_graph_leaves_reach_the_receive_buffer_only_without_the_fix() -> None:
    leak = run_pipeline(CFG, 2)
    leaves = graph_leaves(leak.forward_data_store[-1]["model_output"]["log_probs"])
    buffers = [t for t in leaves if not isinstance(t, torch.nn.Parameter)]
    assert len(buffers) == 1 and buffers[0].shape == (CFG.seq_len, CFG.hidden)
    assert buffers[0].grad is not None and buffers[0].grad.shape == buffers[0].shape
    fixed = run_pipeline(CFG, 2, detach_outputs=True)
    assert graph_leaves(fixed.forward_data_store[-1]["model_output"]["log_probs"]) == []
    with pytest.raises(TypeError, match=r"torch\.Tensor"):
        graph_leaves([1])  # type: ignore[arg-type]


def test_forward_only_builds_no_gradients() -> None:
    run = run_pipeline(CFG, 2, forward_only=True)
    assert run.grads == {}


def test_backward_step_matches_autograd_backward() -> None:
    model_a = pl.ToyPipelineModel(CFG, seed=3)
    model_b = pl.ToyPipelineModel(CFG, seed=3)
    ids = torch.arange(CFG.seq_len) % CFG.vocab
    grad = torch.randn(CFG.seq_len, CFG.hidden)
    pl.backward_step(pl.stage_forward(model_a, 0, ids), grad)
    torch.autograd.backward(pl.stage_forward(model_b, 0, ids), grad_tensors=grad)
    for (name, pa), pb in zip(model_a.named_parameters(), model_b.parameters(), strict=True):
        if pa.grad is not None or pb.grad is not None:
            assert torch.equal(pa.grad, pb.grad), name
    with pytest.raises(ValueError, match="expected the output's shape"):
        pl.backward_step(pl.stage_forward(model_a, 0, ids), grad[:2])


def test_loss_func_returns_the_mean_nll_and_per_token_log_probs() -> None:
    logits = torch.randn(5, 7)
    labels = torch.tensor([0, 6, 3, 3, 1])
    loss, out = pl.loss_func(logits, labels)
    expected = torch.log_softmax(logits, -1)[torch.arange(5), labels]
    assert torch.equal(out["model_output"]["log_probs"], expected) and set(out["model_output"]) == {"log_probs"}
    assert torch.allclose(loss, torch.nn.functional.cross_entropy(logits, labels))


def test_create_tensor_recv_prev_is_fresh_and_requires_grad() -> None:
    a = pl.create_tensor_recv_prev((4, 2), torch.float32, "cpu")
    b = pl.create_tensor_recv_prev((4, 2), torch.float32, "cpu")
    assert a.requires_grad and a.is_leaf and a.shape == (4, 2)
    assert a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr()


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"seq_len": 0}, ValueError, "seq_len=0 is out of range"),
        ({"hidden": 2.0}, TypeError, "hidden must be an int"),
        ({"pp_size": 9}, ValueError, "pp_size=9"),
        ({"dtype": "int8"}, ValueError, "dtype='int8' is not allowed"),
        ({"device": "npu"}, ValueError, "device must be 'cpu' or 'cuda'"),
    ],
)
def test_config_validation(kwargs: dict, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        PipelineConfig(**kwargs)


def test_run_pipeline_bad_arguments() -> None:
    with pytest.raises(TypeError, match="PipelineConfig"):
        run_pipeline({}, 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="planted_leak"):
        run_pipeline(CFG, 2, planted_leak="nope")
    with pytest.raises(ValueError, match=r"entropy must be None or one of \('stored', 'in_loss'\)"):
        run_pipeline(CFG, 2, entropy="unread")
    with pytest.raises(TypeError, match="detach_fn must be a function"):
        run_pipeline(CFG, 2, detach_outputs=True, detach_fn="detach_tree")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="entropy must be None"):
        predicted_leak_bytes(CFG, "yes")
    with pytest.raises(ValueError, match="num_micro_batches"):
        run_pipeline(CFG, 0)
    with pytest.raises(TypeError, match="tracker"):
        run_pipeline(CFG, 2, tracker=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="slope needs a run with a tracker"):
        _ = run_pipeline(CFG, 2).slope


# ---------------------------------------------------------------- entropy in model_output


def test_entropy_from_logits_is_the_shannon_entropy_of_the_softmax() -> None:
    logits = torch.randn(6, 9)
    p = torch.softmax(logits, -1)
    assert torch.allclose(pl.entropy_from_logits(logits), -(p * p.log()).sum(-1), atol=1e-6)


def test_loss_func_with_entropy_stored_or_in_the_loss() -> None:
    logits = torch.randn(5, 7, requires_grad=True)
    labels = torch.tensor([0, 6, 3, 3, 1])
    plain, _ = pl.loss_func(logits, labels)
    for mode in ("stored", "in_loss"):
        loss, out = pl.loss_func(logits, labels, mode)
        assert set(out["model_output"]) == {"log_probs", "entropy"}
        assert torch.equal(loss, plain), "entropy_coeff = 0.0 leaves the loss value bit-identical"
        assert torch.equal(out["model_output"]["entropy"].detach(), pl.entropy_from_logits(logits).detach())


def test_an_unread_entropy_keeps_its_graph_after_backward_and_a_read_one_does_not() -> None:
    def saved_softmax_alive(mode: str) -> bool:
        logits = torch.randn(4, 6, requires_grad=True)
        loss, out = pl.loss_func(logits, torch.tensor([1, 2, 3, 0]), mode)
        loss.backward()
        # The entropy's graph: sub <- (logsumexp, sum <- mul <- softmax). Its saved softmax is still
        # readable only if backward never visited the node.
        mul = out["model_output"]["entropy"].grad_fn.next_functions[1][0].next_functions[0][0]
        try:
            return mul._saved_self is not None
        except RuntimeError:  # "Trying to backward through the graph a second time": freed
            return False

    assert saved_softmax_alive("stored") and not saved_softmax_alive("in_loss")


def test_the_fix_can_store_another_detach_function() -> None:
    calls: list[int] = []

    def counting_detach(obj: object) -> object:
        calls.append(1)
        return pl.detach_tree(obj)

    run = run_pipeline(CFG, 3, detach_outputs=True, entropy="stored", detach_fn=counting_detach)
    assert len(calls) == 3
    assert all(not t.requires_grad for out in run.forward_data_store for t in out["model_output"].values())
    assert run_pipeline(CFG, 3, detach_fn=counting_detach).forward_data_store[0]["model_output"]["log_probs"].grad_fn
    assert len(calls) == 3, "without detach_outputs the function is not called"


@pytest.mark.parametrize("value", [None, 7, "x", {"pp_size": 2}])
def test_pipeline_helpers_name_a_config_of_the_wrong_type(value):
    # issue 43 item 8: predicted_leak_bytes(None) ended in "'NoneType' object has no attribute 'seq_len'"
    for call in (
        lambda v: predicted_leak_bytes(v),
        lambda v: pl.predicted_leak_sites(v),
        lambda v: pl.config_with(v, pp_size=3),
    ):
        with pytest.raises(TypeError, match=r"argument config must be a PipelineConfig \(e\.g\. PipelineConfig"):
            call(value)
