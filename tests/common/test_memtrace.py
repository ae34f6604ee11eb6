"""verlstudy.common.memtrace: the CPU allocation tracker, the slope, and the CUDA snapshot reader."""

from __future__ import annotations

import gc
import pickle
import sys
import weakref
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from verlstudy.common.memtrace import (
    ALLOCATOR_GRANULARITY,
    AllocationTracker,
    Frame,
    Site,
    allocator_block,
    bytes_per_step,
    group_sites,
    load_snapshot,
    short_file,
    snapshot_blocks,
    snapshot_from_tracker,
    snapshot_top_sites,
)

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "memory" / "pipeline_leak_snapshot.pickle"


def allocate_kept(n: int) -> torch.Tensor:
    return torch.zeros(n)


def allocate_other(n: int) -> torch.Tensor:
    return torch.ones(n, dtype=torch.float64)


def test_records_new_storages_with_size_and_creating_function() -> None:
    with AllocationTracker() as tracker:
        a = allocate_kept(100)
    assert tracker.live_bytes() == 400
    (alloc,) = tracker.live()
    assert alloc.nbytes == 400
    assert alloc.site.function == "allocate_kept"
    assert alloc.site.file == "common/test_memtrace.py"
    assert alloc.frames[1].function == "test_records_new_storages_with_size_and_creating_function"
    assert "aten.zeros" in alloc.op
    del a


def test_a_freed_tensor_leaves_the_live_set() -> None:
    with AllocationTracker() as tracker:
        a = allocate_kept(10)
        b = allocate_other(10)
        assert tracker.live_bytes() == 40 + 80
        del a
        assert tracker.live_bytes() == 80
    del b
    assert tracker.live_bytes() == 0, "frees after leaving the context are still seen"
    assert tracker.timeline == [40, 120, 80, 0]
    assert tracker.total_allocated == 120


def test_views_and_inplace_ops_do_not_double_count() -> None:
    with AllocationTracker() as tracker:
        a = allocate_kept(64)
        v = a[10:20]
        d = a.detach()
        r = a.view(8, 8).t()
        a.add_(1)
        a.mul_(2)
        assert tracker.live_bytes() == 256
        del a, d, r
        assert tracker.live_bytes() == 256, "the view keeps the storage alive"
        del v
        assert tracker.live_bytes() == 0


def test_storages_created_before_the_tracker_are_not_counted() -> None:
    before = torch.zeros(1000)
    with AllocationTracker() as tracker:
        before.add_(1)
        alias = before[:10]
    assert tracker.live_bytes() == 0
    del alias


def test_the_tracker_does_not_keep_storages_alive() -> None:
    with AllocationTracker() as tracker:
        a = allocate_kept(32)
    ref = weakref.ref(a.untyped_storage())
    del a
    gc.collect()
    assert ref() is None
    assert tracker.live() == []


def test_backward_allocations_are_seen_and_attributed() -> None:
    w = torch.randn(4, 4, requires_grad=True)
    with AllocationTracker() as tracker:
        mark = tracker.mark()
        loss = (allocate_kept(4) + 1) @ w
        loss.sum().backward()
        del loss
    sites = tracker.top_sites(5, since=mark)
    assert [s.function for s in sites] == ["test_backward_allocations_are_seen_and_attributed"]
    assert sites[0].bytes == w.grad.untyped_storage().nbytes()


def test_top_sites_groups_by_line_and_orders_by_bytes_then_first_allocation() -> None:
    with AllocationTracker() as tracker:
        kept = [allocate_kept(10) for _ in range(3)]  # 3 x 40 bytes at one site
        other = allocate_other(15)  # 120 bytes at another site
        mark = tracker.mark()
        late = allocate_other(1)
    sites = tracker.top_sites(5)
    assert [(s.function, s.bytes, s.count) for s in sites] == [("allocate_other", 128, 2), ("allocate_kept", 120, 3)]
    assert sites[0].label().startswith("allocate_other (common/test_memtrace.py:")
    assert tracker.top_sites(1) == sites[:1]
    assert [(s.function, s.bytes) for s in tracker.top_sites(5, since=mark)] == [("allocate_other", 8)]
    assert tracker.live_bytes(since=mark) == 8
    del kept, other, late


def run_linear(layer: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return layer(x)


def test_frames_inside_torch_are_trimmed_from_the_stack() -> None:
    layer = torch.nn.Linear(4, 3)
    x = torch.ones(2, 4)
    with AllocationTracker() as tracker:
        y = run_linear(layer, x)  # goes through Module.__call__ and Linear.forward (torch's Python code)
    (alloc,) = tracker.live()
    assert alloc.nbytes == 2 * 3 * 4
    assert alloc.site == alloc.frames[0] and alloc.site.function == "run_linear"
    assert alloc.frames[1].function == "test_frames_inside_torch_are_trimmed_from_the_stack"
    assert not {"forward", "_call_impl", "_wrapped_call_impl"} & {f.function for f in alloc.frames}
    assert not any(f.file.startswith("modules/") for f in alloc.frames)  # torch/nn/modules/*.py
    del y


def test_ties_go_to_the_earliest_site() -> None:
    items = [(Frame("a.py", 2, "second"), 10, 5), (Frame("a.py", 1, "first"), 10, 1)]
    assert [s.function for s in group_sites(items)] == ["first", "second"]


@pytest.mark.parametrize(
    ("items", "named"),
    [
        (None, r"argument items must be a list of \(Frame, bytes, order\) triples, got NoneType None"),
        (7, "argument items must be a list of"),
        ("abc", "argument items must be a list of"),
        ([1], r"argument items\[0\] must be a \(Frame, bytes, order\) triple, got int 1"),
        ([("a.py", 1, 2)], r"argument items\[0\] must be a \(Frame, bytes, order\) triple, got tuple"),
    ],
)
def test_group_sites_names_items_of_the_wrong_type(items, named) -> None:
    # issue 43 item 8: these ended in a raw TypeError ('NoneType' object is not iterable)
    with pytest.raises(TypeError, match=named):
        group_sites(items)


def test_bad_arguments() -> None:
    tracker = AllocationTracker()
    with pytest.raises(ValueError, match="n must be a positive int"):
        tracker.top_sites(0)
    with pytest.raises(ValueError, match="since must be a mark"):
        tracker.live(since=-1)
    with pytest.raises(ValueError, match="since must be a mark"):
        tracker.top_sites(3, since="0")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        short_file(None)  # type: ignore[arg-type]


def test_short_file_is_stable() -> None:
    assert short_file("/home/u/proj/src/verlstudy/pipeline.py") == "verlstudy/pipeline.py"
    assert short_file("/tmp/ipykernel_4242/1234567.py") == "<cell>"
    assert short_file("x.py") == "x.py"


def test_entering_the_tracker_does_not_import_dynamo_or_sympy() -> None:
    # A lesson pays for every import: torch._dynamo drags in sympy (seconds). Check in a fresh process.
    import subprocess

    code = (
        "import sys, torch\n"
        "from verlstudy.common.memtrace import AllocationTracker\n"
        "with AllocationTracker():\n    torch.ones(2) + 1\n"
        "print('torch._dynamo' in sys.modules, 'sympy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# -- the slope --------------------------------------------------------------------------------


def test_bytes_per_step_is_exact_for_linear_growth() -> None:
    assert bytes_per_step([100, 16740, 33380, 50020]) == 16640.0
    assert bytes_per_step([5, 5, 5]) == 0.0
    assert bytes_per_step([10, 30, 50], steps=[1, 3, 5]) == 10.0


@given(
    st.integers(-(10**9), 10**9),
    st.integers(-(10**6), 10**6),
    st.integers(2, 40),
)
def test_bytes_per_step_recovers_any_integer_slope(base: int, slope: int, n: int) -> None:
    assert bytes_per_step([base + slope * i for i in range(n)]) == slope


def test_bytes_per_step_least_squares_on_noise() -> None:
    assert bytes_per_step([0, 1, 0, 1]) == pytest.approx(0.2)


@pytest.mark.parametrize(
    ("samples", "steps", "exc", "match"),
    [
        ([1], None, ValueError, "at least 2"),
        ([1, 2], [1], ValueError, "steps has 1"),
        ([1, 2], [3, 3], ValueError, "not all be equal"),
        ("12", None, TypeError, "sequence of numbers"),
        ([1, float("nan")], None, TypeError, "real numbers"),
        ([1, True], None, TypeError, "real numbers"),
    ],
)
def test_bytes_per_step_bad_input(samples: object, steps: object, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        bytes_per_step(samples, steps)  # type: ignore[arg-type]


# -- snapshots --------------------------------------------------------------------------------


def _snapshot_of_two_sites() -> tuple[dict, list]:
    with AllocationTracker() as tracker:
        kept = [allocate_kept(300) for _ in range(2)] + [allocate_other(10)]
    return snapshot_from_tracker(tracker), kept


def test_constructed_snapshot_has_the_cuda_snapshot_shape() -> None:
    snap, kept = _snapshot_of_two_sites()
    assert set(snap) == {"segments", "device_traces"}
    seg = snap["segments"][0]
    assert {"address", "total_size", "allocated_size", "active_size", "stream", "segment_type", "blocks"} <= set(seg)
    block = seg["blocks"][0]
    assert block["state"] == "active_allocated"
    assert block["size"] == 1536 and block["requested_size"] == 1200  # 1200 B rounded up to 3 blocks of 512
    assert set(block["frames"][0]) == {"filename", "line", "name"}
    assert [e["action"] for e in snap["device_traces"][0]] == ["alloc"] * 3
    del kept


@pytest.mark.parametrize(("nbytes", "block"), [(0, 0), (1, 512), (511, 512), (512, 512), (513, 1024), (1200, 1536)])
def test_the_allocator_rounds_a_request_up_to_whole_512_byte_blocks(nbytes: int, block: int) -> None:
    assert ALLOCATOR_GRANULARITY == 512
    assert allocator_block(nbytes) == block


@pytest.mark.parametrize(
    ("nbytes", "exc", "match"),
    [(-1, ValueError, "nbytes must be >= 0, got -1"), (1.5, TypeError, "got float"), (True, TypeError, "got bool")],
)
def test_allocator_block_bad_input(nbytes: object, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        allocator_block(nbytes)  # type: ignore[arg-type]


def test_snapshot_top_sites_matches_the_tracker_view() -> None:
    with AllocationTracker() as tracker:
        kept = [allocate_kept(300) for _ in range(2)] + [allocate_other(10)]
    snap = snapshot_from_tracker(tracker)
    assert snapshot_top_sites(snap) == tracker.top_sites()
    assert snapshot_top_sites(pickle.loads(pickle.dumps(snap)), n=1) == tracker.top_sites(1)
    del kept


def test_snapshot_reader_skips_torch_and_cpp_frames_and_inactive_blocks() -> None:
    frames = [
        {"filename": "??", "line": 0, "name": "c10::cuda::CUDACachingAllocator::malloc"},
        {
            "filename": "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py",
            "line": 125,
            "name": "forward",
        },
        {"filename": "/work/proj/src/verlstudy/pipeline.py", "line": 42, "name": "stage_forward"},
    ]
    snap = {
        "segments": [
            {
                "address": 0,
                "total_size": 4096,
                "blocks": [
                    {"address": 0, "size": 2048, "requested_size": 2000, "state": "active_allocated", "frames": frames},
                    {"address": 2048, "size": 2048, "requested_size": 2048, "state": "inactive", "frames": frames},
                ],
            }
        ],
        "device_traces": [],
    }
    assert snapshot_top_sites(snap) == [Site("stage_forward", "verlstudy/pipeline.py", 42, 2000, 1)]
    assert snapshot_blocks(snap)[0][1] == 2000


def test_snapshot_reader_names_unrecorded_blocks_and_reads_the_legacy_format() -> None:
    frames = [{"filename": "/w/src/verlstudy/pipeline.py", "line": 7, "name": "create_tensor_recv_prev"}]
    snap = {
        "segments": [
            {
                "address": 0,
                "blocks": [
                    {"address": 0, "size": 512, "requested_size": 100, "state": "active_allocated", "frames": []},
                    {
                        "address": 512,
                        "size": 1024,
                        "state": "active_allocated",
                        "history": [{"addr": 512, "real_size": 1000, "frames": frames}],
                    },
                ],
            }
        ]
    }
    assert [(s.function, s.bytes) for s in snapshot_top_sites(snap)] == [
        ("create_tensor_recv_prev", 1000),
        ("<no Python stack>", 100),  # before recording, or on autograd's CUDA device thread
    ]


def test_snapshot_reader_reads_a_pickle_file(tmp_path: Path) -> None:
    snap, kept = _snapshot_of_two_sites()
    path = tmp_path / "snap.pickle"
    path.write_bytes(pickle.dumps(snap))
    assert load_snapshot(path) == snap
    assert load_snapshot(str(path)) == snap
    del kept


@pytest.mark.parametrize(
    ("source", "exc", "match"),
    [
        (3, TypeError, "snapshot dict or a path"),
        ({"blocks": []}, ValueError, "'segments' list"),
        ({"segments": [{"address": 0}]}, ValueError, "segment 0 has no 'blocks'"),
        ("/nonexistent/snapshot.pickle", ValueError, "not found: snapshot.pickle"),
    ],
)
def test_load_snapshot_bad_input(source: object, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        load_snapshot(source)  # type: ignore[arg-type]


def test_snapshot_from_tracker_rejects_other_objects() -> None:
    with pytest.raises(TypeError, match="AllocationTracker"):
        snapshot_from_tracker({})  # type: ignore[arg-type]


def test_the_stored_fixture_attributes_the_leak_to_the_receive_buffer() -> None:
    sites = snapshot_top_sites(FIXTURE, n=3)
    assert [s.function for s in sites] == ["create_tensor_recv_prev", "backward_step", "loss_func"]
    assert sites[0].bytes == sites[1].bytes
    assert sites[0].count == sites[2].count


def test_a_corrupt_snapshot_file_is_named_not_a_pickle_traceback(tmp_path) -> None:
    for name, payload in (("truncated.pickle", b"\x80\x04\x95"), ("text.pickle", b"not a pickle at all")):
        path = tmp_path / name
        path.write_bytes(payload)
        with pytest.raises(ValueError, match=rf"{name}: not a snapshot pickle"):
            load_snapshot(path)
