"""measure: bytes retained per micro-batch match the named prediction; controls, the guard, the snapshot."""

from __future__ import annotations

from pathlib import Path

import pytest

from verlstudy.common.memtrace import Site, snapshot_top_sites
from verlstudy.lessons.l01_memory_leak import pipeline as pl
from verlstudy.lessons.l01_memory_leak.measure import (
    DIGEST_CONTROLS,
    ResidencyError,
    assert_flat_residency,
    bytes_by_function,
    controls_table,
    leak_snapshot,
    measure_controls,
    measure_entropy,
    measure_slope,
    write_leak_snapshot,
)
from verlstudy.lessons.l01_memory_leak.pipeline import PipelineConfig, predicted_leak_bytes

CFG = PipelineConfig(seq_len=16, hidden=8, vocab=12)


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


def test_measure_controls_and_their_table() -> None:
    controls = measure_controls(CFG, 3, layers=(3,))
    leak = sum(predicted_leak_bytes(CFG).values())
    own = CFG.seq_len * CFG.itemsize
    assert controls == {
        "leak (PP=2, 1 layer/stage)": leak,
        "forward only": own,
        "forward only + entropy": 2 * own,
        "PP=1": own,
        "3 layers/stage": leak,
    }
    table = controls_table(controls).text().splitlines()  # a display object: these lines are its text/plain
    assert table[0].startswith("| run | ours") and len(table) == 2 + len(controls)
    assert table[4] == f"| forward only + entropy | {2 * own} | - |"
    assert table[3] == f"| forward only | {own} | {DIGEST_CONTROLS['forward only']} |"
    assert table[2] == f"| leak (PP=2, 1 layer/stage) | {leak} | - |"
    assert controls_table({"x": 1}, {"x": "theirs"}).text().splitlines()[2] == "| x | 1 | theirs |"
    with pytest.raises(ValueError, match="non-empty dict"):
        controls_table({})
    with pytest.raises(TypeError, match="layers must be ints"):
        measure_controls(CFG, 3, layers=(2.0,))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="PipelineConfig"):
        measure_controls({}, 3)  # type: ignore[arg-type]


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


def test_the_guard_passes_with_the_fix_and_names_the_site_without_it() -> None:
    assert assert_flat_residency(CFG, 3) == CFG.seq_len * 4
    with pytest.raises(
        ResidencyError, match=r"1088 bytes stay alive .* need 64; top other site: create_tensor_recv_prev"
    ):
        assert_flat_residency(CFG, 3, detach_outputs=False)


def test_planted_leaks_grow_even_with_the_fix() -> None:
    slope, sites, _ = measure_slope(CFG, 3, detach_outputs=True, planted_leak="score_cache")
    assert sites[0].function == "cache_scores"
    assert slope == CFG.seq_len * CFG.vocab * 4 + CFG.seq_len * 4
    slope, sites, _ = measure_slope(CFG, 3, detach_outputs=True, planted_leak="activation_log")
    assert sites[0].function == "record_activation_stats"
    assert slope == 2 * CFG.seq_len * CFG.hidden * 4 + CFG.seq_len * 4  # one layer on each of 2 stages
    assert pl._ACTIVATION_LOG == [] and pl._SCORE_CACHE == []


def test_write_leak_snapshot(tmp_path: Path) -> None:
    path = write_leak_snapshot(tmp_path / "snap.pickle")
    assert snapshot_top_sites(path, n=1)[0].function == "create_tensor_recv_prev"
    with pytest.raises(ValueError, match=r"must end in \.pickle"):
        write_leak_snapshot(tmp_path / "snap.json")


def test_leak_snapshot_is_attributed_like_the_tracker() -> None:
    sites = snapshot_top_sites(leak_snapshot(CFG, 3), n=3)
    assert [s.function for s in sites] == ["create_tensor_recv_prev", "backward_step", "loss_func"]
    assert [s.count for s in sites] == [2, 2, 2]
    with pytest.raises(ValueError, match="num_micro_batches must be an int >= 2"):
        leak_snapshot(CFG, 1)


def test_stored_fixture_matches_a_fresh_construction() -> None:
    # Line numbers move when pipeline.py is edited; functions, sizes and counts must not.
    fixture = Path(__file__).resolve().parents[3] / "data" / "memory" / "pipeline_leak_snapshot.pickle"
    stored = [(s.function, s.bytes, s.count) for s in snapshot_top_sites(fixture)]
    assert stored == [(s.function, s.bytes, s.count) for s in snapshot_top_sites(leak_snapshot())]


# ---------------------------------------------------------------- entropy in model_output


def test_measure_entropy_rows_scale_with_vocabulary() -> None:
    s, v, isz = CFG.seq_len, CFG.vocab, CFG.itemsize
    rows = measure_entropy(CFG, 3, vocabs=(v, 2 * v))
    base = sum(predicted_leak_bytes(CFG).values())
    assert rows == {
        "log-probs only": base,
        "entropy in the loss": base + s * isz,
        f"entropy stored, V={v}": base + 2 * s * v * isz + 2 * s * isz,
        f"entropy stored, V={2 * v}": base + 4 * s * v * isz + 2 * s * isz,
        "entropy stored + detach_tree": 2 * s * isz,
    }
    with pytest.raises(TypeError, match="vocabs must be a non-empty list"):
        measure_entropy(CFG, 3, vocabs=())
    with pytest.raises(TypeError, match="PipelineConfig"):
        measure_entropy({}, 3)  # type: ignore[arg-type]


@pytest.mark.parametrize("pp_size", [1, 2])
@pytest.mark.parametrize("entropy", [None, "stored", "in_loss"])
def test_predicted_sites_hold_with_entropy(pp_size: int, entropy: str | None) -> None:
    cfg = pl.config_with(CFG, pp_size=pp_size)
    slope, sites, _ = measure_slope(cfg, 3, entropy=entropy)
    assert slope == sum(predicted_leak_bytes(cfg, entropy).values())
    assert bytes_by_function(sites) == pl.predicted_leak_sites(cfg, entropy)


def test_bytes_by_function_sums_a_functions_lines() -> None:
    sites = [Site("f", "a.py", 1, 10, 1), Site("g", "a.py", 5, 4, 1), Site("f", "a.py", 2, 3, 2)]
    assert bytes_by_function(sites) == {"f": 13, "g": 4}
    with pytest.raises(TypeError, match="Site objects"):
        bytes_by_function([("f", 1)])  # type: ignore[list-item]


@pytest.mark.parametrize("value", [None, 7, "x", float("nan")])
def test_measure_helpers_name_an_argument_of_the_wrong_type(value):
    # issue 43 item 8: bytes_by_function(None) ended in "'NoneType' object is not iterable"
    from verlstudy.lessons.l01_memory_leak.measure import bytes_by_function, write_leak_snapshot

    with pytest.raises(TypeError, match=r"argument sites must be a list of Site objects \(from top_sites\)"):
        bytes_by_function(value)
    if not isinstance(value, str):
        with pytest.raises(TypeError, match=r"argument path must be a \.pickle file's path \(str or Path\)"):
            write_leak_snapshot(value)


@pytest.mark.parametrize("value", [None, "0", [1]])
def test_leak_snapshot_names_a_seed_of_the_wrong_type(value):
    # issue 43 item 8: leak_snapshot(seed=None) ended in torch's "int() argument must be a string ... not 'NoneType'"
    from verlstudy.lessons.l01_memory_leak.measure import leak_snapshot

    with pytest.raises(TypeError, match=r"argument seed must be an integer"):
        leak_snapshot(seed=value)
