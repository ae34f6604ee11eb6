"""pipeline: the store semantics behind verl #7874's leak, its fix, the controls, the gloo run."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from verlstudy.common.dist import run_local
from verlstudy.common.memtrace import AllocationTracker, snapshot_top_sites
from verlstudy.kit.exercises import ExerciseFailure, check_exercise
from verlstudy.lessons.l01_memory_leak import pipeline as pl
from verlstudy.lessons.l01_memory_leak.pipeline import (
    PipelineConfig,
    measure_slope,
    predicted_leak_bytes,
    run_pipeline,
)

CFG = PipelineConfig(seq_len=16, hidden=8, vocab=12)


def test_stored_model_output_is_per_token_and_keeps_its_graph_without_the_fix() -> None:
    run = run_pipeline(CFG, 3)
    assert len(run.forward_data_store) == 3
    for out in run.forward_data_store:
        assert set(out) == {"model_output"}
        assert out["model_output"].shape == (CFG.seq_len,)
        assert out["model_output"].grad_fn is not None


def test_the_fix_detaches_what_is_stored() -> None:
    run = run_pipeline(CFG, 3, detach_outputs=True)
    for out in run.forward_data_store:
        assert not out["model_output"].requires_grad and out["model_output"].grad_fn is None


def test_leak_slope_equals_the_named_prediction_exactly() -> None:
    slope, sites, _ = measure_slope(CFG, 4)
    predicted = predicted_leak_bytes(CFG)
    assert slope == sum(predicted.values()) == 2 * 16 * 8 * 4 + 16 * 4
    assert [(s.function, s.bytes) for s in sites] == [
        ("create_tensor_recv_prev", 16 * 8 * 4),
        ("backward_step", 16 * 8 * 4),
        ("loss_func", 16 * 4),
    ]


def test_predicted_sites_name_the_functions_the_tracker_names() -> None:
    _, sites, _ = measure_slope(CFG, 4)
    assert {s.function: s.bytes for s in sites} == pl.predicted_leak_sites(CFG)
    assert list(pl.predicted_leak_sites(CFG).values()) == list(predicted_leak_bytes(CFG).values())
    assert pl.predicted_leak_sites(pl.config_with(CFG, pp_size=1)) == {"loss_func": CFG.seq_len * 4}


def test_the_store_is_consumed_at_the_end_and_then_everything_it_pinned_is_freed() -> None:
    tracker = AllocationTracker()
    run = run_pipeline(CFG, 3, tracker=tracker)
    store = run.forward_data_store
    expected = torch.cat([o["model_output"].detach() for o in store])
    assert tracker.live_bytes() > 3 * sum(predicted_leak_bytes(CFG).values())
    merged = pl.consume_store(store)
    assert store == [] and merged.shape == (3 * CFG.seq_len,) and torch.equal(merged.detach(), expected)
    assert merged.grad_fn is not None and tracker.live_bytes() > 0, "the merge keeps the graphs, like upstream's"
    del merged
    assert tracker.live_bytes() == 0
    fixed_tracker = AllocationTracker()
    fixed = run_pipeline(CFG, 3, tracker=fixed_tracker, detach_outputs=True)
    assert fixed_tracker.live_bytes() == 3 * CFG.seq_len * CFG.itemsize  # only the stored outputs are left
    assert not pl.consume_store(fixed.forward_data_store).requires_grad and fixed_tracker.live_bytes() == 0


@pytest.mark.parametrize(
    ("store", "exc", "match"),
    [
        ([], ValueError, "non-empty list"),
        ((), ValueError, "non-empty list"),
        ([{"loss": 1.0}], TypeError, r"forward_data_store\[0\] must be a dict holding"),
        ([{"model_output": torch.ones(2)}, [1]], TypeError, r"forward_data_store\[1\]"),
    ],
)
def test_consume_store_bad_input(store: object, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        pl.consume_store(store)  # type: ignore[arg-type]


def test_measure_controls_and_their_table() -> None:
    controls = pl.measure_controls(CFG, 3, layers=(3,))
    leak = sum(predicted_leak_bytes(CFG).values())
    own = CFG.seq_len * CFG.itemsize
    assert controls == {
        "leak (PP=2, 1 layer/stage)": leak,
        "forward only": own,
        "PP=1": own,
        "3 layers/stage": leak,
    }
    table = pl.controls_table(controls).splitlines()
    assert table[0].startswith("| run | ours") and len(table) == 2 + len(controls)
    assert table[3] == f"| forward only | {own} | {pl.UPSTREAM_CONTROLS['forward only']} |"
    assert table[2] == f"| leak (PP=2, 1 layer/stage) | {leak} | - |"
    assert pl.controls_table({"x": 1}, {"x": "theirs"}).splitlines()[2] == "| x | 1 | theirs |"
    with pytest.raises(ValueError, match="non-empty dict"):
        pl.controls_table({})
    with pytest.raises(TypeError, match="layers must be ints"):
        pl.measure_controls(CFG, 3, layers=(2.0,))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="PipelineConfig"):
        pl.measure_controls({}, 3)  # type: ignore[arg-type]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_fix_slope_is_the_stored_outputs_own_bytes(dtype: str) -> None:
    cfg = pl.config_with(CFG, dtype=dtype)
    slope, sites, _ = measure_slope(cfg, 4, detach_outputs=True)
    assert slope == cfg.seq_len * cfg.itemsize
    assert [s.function for s in sites] == ["loss_func"]


def test_controls_forward_only_and_pp1_keep_only_the_outputs() -> None:
    s_fwd, sites_fwd, _ = measure_slope(CFG, 4, forward_only=True)
    s_pp1, sites_pp1, _ = measure_slope(pl.config_with(CFG, pp_size=1), 4)
    assert s_fwd == s_pp1 == CFG.seq_len * CFG.itemsize
    assert [s.function for s in sites_fwd] == [s.function for s in sites_pp1] == ["loss_func"]
    assert predicted_leak_bytes(pl.config_with(CFG, pp_size=1)) == {"model_output (per-token log-probs)": 64}


@pytest.mark.parametrize("layers", [1, 2, 5])
def test_leak_per_micro_batch_does_not_depend_on_depth(layers: int) -> None:
    slope, _, _ = measure_slope(pl.config_with(CFG, layers_per_stage=layers), 3)
    assert slope == sum(predicted_leak_bytes(CFG).values())


@pytest.mark.parametrize("pp_size", [3, 4])
def test_deeper_pipelines_still_pin_only_the_last_stages_buffer(pp_size: int) -> None:
    cfg = pl.config_with(CFG, pp_size=pp_size)
    slope, _, _ = measure_slope(cfg, 3)
    # Each receive buffer is a leaf: the stored graph reaches back only to the last stage's own buffer.
    assert slope == sum(predicted_leak_bytes(cfg).values()) == 2 * 16 * 8 * 4 + 16 * 4


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
    leaves = pl.graph_leaves(leak.forward_data_store[-1]["model_output"])
    buffers = [t for t in leaves if not isinstance(t, torch.nn.Parameter)]
    assert len(buffers) == 1 and buffers[0].shape == (CFG.seq_len, CFG.hidden)
    assert buffers[0].grad is not None and buffers[0].grad.shape == buffers[0].shape
    fixed = run_pipeline(CFG, 2, detach_outputs=True)
    assert pl.graph_leaves(fixed.forward_data_store[-1]["model_output"]) == []
    with pytest.raises(TypeError, match=r"torch\.Tensor"):
        pl.graph_leaves([1])  # type: ignore[arg-type]


def test_the_guard_passes_with_the_fix_and_names_the_site_without_it() -> None:
    assert pl.assert_flat_residency(CFG, 3) == CFG.seq_len * 4
    with pytest.raises(
        pl.ResidencyError, match=r"1088 bytes stay alive .* need 64; top other site: create_tensor_recv_prev"
    ):
        pl.assert_flat_residency(CFG, 3, detach_outputs=False)


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
    assert torch.equal(out["model_output"], expected)
    assert torch.allclose(loss, torch.nn.functional.cross_entropy(logits, labels))


def test_write_leak_snapshot(tmp_path: Path) -> None:
    path = pl.write_leak_snapshot(tmp_path / "snap.pickle")
    assert snapshot_top_sites(path, n=1)[0].function == "create_tensor_recv_prev"
    with pytest.raises(ValueError, match=r"must end in \.pickle"):
        pl.write_leak_snapshot(tmp_path / "snap.json")


def test_create_tensor_recv_prev_is_fresh_and_requires_grad() -> None:
    a = pl.create_tensor_recv_prev((4, 2), torch.float32, "cpu")
    b = pl.create_tensor_recv_prev((4, 2), torch.float32, "cpu")
    assert a.requires_grad and a.is_leaf and a.shape == (4, 2)
    assert a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr()


def test_planted_leaks_grow_even_with_the_fix() -> None:
    slope, sites, _ = measure_slope(CFG, 3, detach_outputs=True, planted_leak="score_cache")
    assert sites[0].function == "cache_scores"
    assert slope == CFG.seq_len * CFG.vocab * 4 + CFG.seq_len * 4
    slope, sites, _ = measure_slope(CFG, 3, detach_outputs=True, planted_leak="activation_log")
    assert sites[0].function == "record_activation_stats"
    assert slope == 2 * CFG.seq_len * CFG.hidden * 4 + CFG.seq_len * 4  # one layer on each of 2 stages
    assert pl._ACTIVATION_LOG == [] and pl._SCORE_CACHE == []


@pytest.mark.parametrize(
    ("pp", "rank", "m", "expected"),
    [
        (2, 0, 3, [("F", 0), ("F", 1), ("B", 0), ("F", 2), ("B", 1), ("B", 2)]),
        (2, 1, 3, [("F", 0), ("B", 0), ("F", 1), ("B", 1), ("F", 2), ("B", 2)]),
        (4, 0, 2, [("F", 0), ("F", 1), ("B", 0), ("B", 1)]),
        (1, 0, 2, [("F", 0), ("B", 0), ("F", 1), ("B", 1)]),
    ],
)
def test_one_f_one_b_order(pp: int, rank: int, m: int, expected: list) -> None:
    assert pl.one_f_one_b_order(pp, rank, m) == expected


def test_one_f_one_b_order_properties() -> None:
    for pp in range(1, 5):
        for rank in range(pp):
            for m in range(1, 7):
                order = pl.one_f_one_b_order(pp, rank, m)
                assert sorted(order) == sorted([("F", i) for i in range(m)] + [("B", i) for i in range(m)])
                for i in range(m):
                    assert order.index(("F", i)) < order.index(("B", i))
                # At most pp - rank micro-batches are ever in flight on this rank: O(depth), not O(m).
                live = peak = 0
                for kind, _ in order:
                    live += 1 if kind == "F" else -1
                    peak = max(peak, live)
                assert peak <= pp - rank


def test_gloo_two_ranks_only_the_last_stage_grows() -> None:
    # bounded: run_local raises TimeoutError and kills both ranks if they are not done in timeout_s
    r0, r1 = run_local(pl.gloo_pipeline_worker, 2, CFG, (1, 2, 3), False, 0, timeout_s=60)
    assert (r0["rank"], r1["rank"]) == (0, 1)
    assert r0["slope"] == 0.0
    assert r1["slope"] == sum(predicted_leak_bytes(CFG).values())
    assert {s.function for s in r1["top_sites"]} >= {"create_tensor_recv_prev", "loss_func"}
    # The same losses as the single-process schedule: the stages compute the same thing.
    assert r1["losses"] == run_pipeline(CFG, 3).losses
    assert r0["losses"] == []


def test_gloo_three_ranks_still_only_the_last_stage_grows() -> None:
    cfg = pl.config_with(CFG, pp_size=3)
    ranks = run_local(pl.gloo_pipeline_worker, 3, cfg, (1, 3), False, 0, timeout_s=60)
    assert [r["slope"] for r in ranks] == [0.0, 0.0, sum(predicted_leak_bytes(cfg).values())]
    assert ranks[2]["losses"] == run_pipeline(cfg, 3).losses


def test_gloo_with_the_fix_the_last_stage_keeps_only_outputs() -> None:
    _, r1 = run_local(pl.gloo_pipeline_worker, 2, CFG, (1, 3), True, 0, timeout_s=60)
    assert r1["slope"] == CFG.seq_len * CFG.itemsize


def test_gloo_worker_needs_a_stage_per_rank() -> None:
    with pytest.raises(ValueError, match="must equal world_size"):
        pl.gloo_pipeline_worker(0, 3, CFG, (1,))


def test_leak_snapshot_is_attributed_like_the_tracker() -> None:
    sites = snapshot_top_sites(pl.leak_snapshot(CFG, 3), n=3)
    assert [s.function for s in sites] == ["create_tensor_recv_prev", "backward_step", "loss_func"]
    assert [s.count for s in sites] == [2, 2, 2]
    with pytest.raises(ValueError, match="num_micro_batches must be an int >= 2"):
        pl.leak_snapshot(CFG, 1)


def test_stored_fixture_matches_a_fresh_construction() -> None:
    # Line numbers move when pipeline.py is edited; functions, sizes and counts must not.
    fixture = Path(__file__).resolve().parents[3] / "data" / "memory" / "pipeline_leak_snapshot.pickle"
    stored = [(s.function, s.bytes, s.count) for s in snapshot_top_sites(fixture)]
    assert stored == [(s.function, s.bytes, s.count) for s in snapshot_top_sites(pl.leak_snapshot())]


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
    with pytest.raises(ValueError, match="num_micro_batches"):
        run_pipeline(CFG, 0)
    with pytest.raises(TypeError, match="tracker"):
        run_pipeline(CFG, 2, tracker=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="slope needs a run with a tracker"):
        _ = run_pipeline(CFG, 2).slope
    with pytest.raises(ValueError, match="rank must be < pp_size"):
        pl.one_f_one_b_order(2, 2, 1)


# -- exercise checkers ---------------------------------------------------------------------------


def reference_prediction(seq_len: int, hidden: int, itemsize: int) -> int:
    return 2 * seq_len * hidden * itemsize + seq_len * itemsize


def reference_growth_site(tracker: AllocationTracker, run_micro_batch) -> str:
    run_micro_batch()  # one-off allocations (parameter gradients) happen in the first micro-batch
    mark = tracker.mark()
    run_micro_batch()
    return tracker.top_sites(1, since=mark)[0].function


def test_prediction_checker_accepts_the_reference(capsys: pytest.CaptureFixture[str]) -> None:
    check_exercise("1.1", reference_prediction)
    assert capsys.readouterr().out == "exercise 1.1: correct: matches the measured slope in 3 configurations\n"


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda s, h, i: s * h * i, "its .grad stays attached"),
        (lambda s, h, i: 2 * s * h * i, "stored model_output"),
        (lambda s, h, i: s * h * i + s * i, "missing the receive buffer's gradient"),
        (lambda s, h, i: 2 * s * h * 4 + s * 4, "itemsize you are given"),
        (lambda s, h, i: 10**9, "saved activations are freed"),
    ],
)
def test_prediction_checker_explains_wrong_answers(wrong, hint: str) -> None:
    with pytest.raises(ExerciseFailure, match=hint):
        pl.check_leak_prediction(wrong)


def test_checkers_report_a_stub_as_not_attempted(capsys: pytest.CaptureFixture[str]) -> None:
    def stub(*args: object) -> int:
        raise NotImplementedError("exercise 1.1")

    check_exercise("1.1", stub)
    check_exercise("1.2", stub)
    assert capsys.readouterr().out == "exercise 1.1: not attempted\nexercise 1.2: not attempted\n"


def test_growth_site_checker_accepts_the_reference() -> None:
    assert pl.check_growth_site(reference_growth_site).startswith("named the growing site")
    assert pl._ACTIVATION_LOG == [] and pl._SCORE_CACHE == []


def test_growth_site_checker_explains_a_naive_answer() -> None:
    def naive(tracker: AllocationTracker, run_micro_batch) -> str:
        run_micro_batch()
        return tracker.top_sites(1)[0].function  # includes the one-off parameter gradients

    with pytest.raises(ExerciseFailure, match="one-off allocations"):
        pl.check_growth_site(naive)
    with pytest.raises(ExerciseFailure, match="as a string"):
        pl.check_growth_site(lambda tracker, run: 3)  # type: ignore[arg-type,return-value]
