"""The 1F1B picture's numbers: steps after their inputs, stage 0 bounded by depth, the leaking store by count."""

import matplotlib
import pytest

from verlstudy.lessons.l01_memory_leak.schedule import pinned_graphs, plot_schedule, schedule_timeline

matplotlib.use("Agg")


@pytest.mark.parametrize(("pp", "n"), [(1, 3), (2, 1), (2, 6), (4, 8), (3, 2)])
def test_every_step_runs_once_after_its_inputs_and_a_stage_runs_one_step_at_a_time(pp, n):
    slots = schedule_timeline(pp, n)
    assert len(slots) == 2 * pp * n
    end = {(s.stage, s.kind, s.micro_batch): s.start + 1 for s in slots}
    for s in slots:
        if s.kind == "F" and s.stage > 0:
            assert s.start >= end[(s.stage - 1, "F", s.micro_batch)]
        if s.kind == "B":
            assert s.start >= end[(s.stage, "F", s.micro_batch)]
            if s.stage < pp - 1:
                assert s.start >= end[(s.stage + 1, "B", s.micro_batch)]
    for r in range(pp):
        starts = [s.start for s in slots if s.stage == r]
        assert len(set(starts)) == len(starts)


@pytest.mark.parametrize(("pp", "n"), [(2, 6), (4, 8), (4, 16)])
def test_in_flight_graphs_are_bounded_by_depth_and_the_leaking_store_grows_to_every_micro_batch(pp, n):
    slots = schedule_timeline(pp, n)
    assert max(pinned_graphs(slots, 0, store_keeps_graphs=False)) == min(pp, n)
    assert max(pinned_graphs(slots, pp - 1, store_keeps_graphs=False)) == 1
    leak = pinned_graphs(slots, pp - 1, store_keeps_graphs=True)
    assert leak[-1] == n and leak == sorted(leak)


def test_the_plot_prints_what_it_draws(capsys):
    held = plot_schedule(2, 3, show=False)
    out = capsys.readouterr().out
    assert "stage 0: F0@0 F1@1 B0@3" in out and "stage 1: F0@1 B0@2 F1@3" in out
    assert held["last stage, store keeps graphs (leak)"][-1] == 3


@pytest.mark.parametrize("value", [None, "2", [1], float("nan")])
def test_schedule_helpers_name_an_argument_of_the_wrong_type(value):
    # issue 43 item 8: schedule_timeline(None, 4) ended in "'NoneType' object cannot be interpreted as an integer"
    with pytest.raises(TypeError, match=r"argument pp_size must be a positive integer"):
        schedule_timeline(value, 4)
    with pytest.raises(TypeError, match=r"argument num_micro_batches must be a positive integer"):
        plot_schedule(2, value, show=False)
    with pytest.raises(TypeError, match=r"argument slots(\[0\])? must be (a list, each item )?a Slot"):
        pinned_graphs(value, 0, store_keeps_graphs=True)
    with pytest.raises(TypeError, match=r"argument stage must be an integer"):
        pinned_graphs(schedule_timeline(2, 2), value, store_keeps_graphs=True)
