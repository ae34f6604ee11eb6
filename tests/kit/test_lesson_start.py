"""A lesson's first steps in one call: device picked, seed checked and applied, claims reset, device said."""

import random
import re

import numpy as np
import pytest
import torch

from verlstudy.kit import claims
from verlstudy.kit.devices import visible_accelerators
from verlstudy.kit.lesson_start import start_lesson

on_cpu_only = pytest.mark.skipif(bool(visible_accelerators()), reason="checks CPU-only behaviour")


def test_cpu_is_picked_and_the_seed_comes_back_as_an_int(capsys):
    dev, seed = start_lesson("cpu", np.int64(5), announce=False)
    assert dev == torch.device("cpu")
    assert seed == 5 and type(seed) is int


def test_auto_takes_an_accelerator_when_present_else_the_cpu():
    expected = visible_accelerators()[0] if visible_accelerators() else "cpu"
    assert start_lesson("auto", 0, announce=False)[0].type == expected


def test_a_device_already_picked_is_kept():
    assert start_lesson(torch.device("cpu"), 0, announce=False)[0] == torch.device("cpu")


@pytest.mark.parametrize(
    ("device", "error", "message"),
    [
        ("tpu", ValueError, "device='tpu' is not allowed; choose one of 'auto', 'cpu', 'cuda', 'npu'"),
        ("CUDA", ValueError, "device='CUDA' is not allowed; choose one of 'auto', 'cpu', 'cuda', 'npu'"),
        (0, TypeError, "device must be a string, one of ('auto', 'cpu', 'cuda', 'npu'); got int 0"),
        (torch.device("meta"), ValueError, "device='meta' is not allowed; choose one of 'auto', 'cpu', 'cuda', 'npu'"),
    ],
)
def test_a_bad_device_gives_kits_message(device, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        start_lesson(device, 0)


@on_cpu_only
@pytest.mark.parametrize("device", ["cuda", torch.device("cuda")])
def test_asking_for_a_missing_gpu_fails_even_as_a_picked_device(device):
    with pytest.raises(ValueError, match="device='cuda' was asked for, but no CUDA device is visible here"):
        start_lesson(device, 0)


@pytest.mark.parametrize(
    ("seed", "error", "message"),
    [
        (-1, ValueError, "parameter seed=-1 is out of range; allowed: 0 <= seed <= 4294967295"),
        (2**32, ValueError, "parameter seed=4294967296 is out of range; allowed: 0 <= seed <= 4294967295"),
        ("3", TypeError, "parameter seed must be an integer, got str '3'"),
        (True, TypeError, "parameter seed must be an integer, got bool True"),
        (1.0, TypeError, "parameter seed must be an integer, got float 1.0"),
        (None, TypeError, "parameter seed must be an integer, got NoneType None"),
    ],
)
def test_a_bad_seed_gives_the_parameters_message_and_changes_nothing(seed, error, message, capsys):
    claims.reset_claims()
    claims.claim("recorded before the bad call", True)
    capsys.readouterr()
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        start_lesson("cpu", seed)
    assert len(claims.recorded_claims()) == 1  # nothing reset, nothing said, when the seed is refused
    assert capsys.readouterr().out == ""
    claims.reset_claims()


@pytest.mark.parametrize("device", ["tpu", torch.device("meta")])
def test_the_device_is_checked_before_the_seed(device):
    # every lesson's one placement: pick_device first, then its other parameters, start_lesson(dev, seed) last;
    # a device handed over as a string or already picked is still checked before the seed
    with pytest.raises(ValueError, match=r"^device='(tpu|meta)' is not allowed"):
        start_lesson(device, -1)


def test_the_largest_seed_is_allowed():
    assert start_lesson("cpu", 2**32 - 1, announce=False)[1] == 2**32 - 1


def test_one_seed_gives_the_same_numbers_from_torch_numpy_and_random():
    start_lesson("cpu", 7, announce=False)
    first = (torch.rand(3), np.random.rand(3), random.random())
    start_lesson("cpu", 7, announce=False)
    second = (torch.rand(3), np.random.rand(3), random.random())
    assert torch.equal(first[0], second[0]) and np.array_equal(first[1], second[1]) and first[2] == second[2]
    start_lesson("cpu", 8, announce=False)
    assert not torch.equal(torch.rand(3), first[0])


def test_claims_left_by_an_earlier_run_are_forgotten(capsys):
    claims.claim("left over from an earlier run", True)
    assert claims.recorded_claims()
    start_lesson("cpu", 0, announce=False)
    assert claims.recorded_claims() == []


def test_announce_prints_one_line_naming_the_device_type(capsys):
    dev, _ = start_lesson("cpu", 0)
    assert capsys.readouterr().out == f"running on {dev.type}\n"


def test_announce_off_prints_nothing(capsys):
    start_lesson("cpu", 0, announce=False)
    assert capsys.readouterr() == ("", "")


def test_the_imports_heap_is_set_aside_and_later_garbage_is_still_collected():
    import gc
    import weakref

    gc.unfreeze()
    start_lesson("cpu", 0, announce=False)
    assert gc.get_freeze_count() > 0, "the set-up's heap is frozen, so a lesson's collections skip it"

    class Node:
        pass

    a, b = Node(), Node()
    a.other, b.other = b, a  # a cycle: only the collector frees it
    gone = weakref.ref(a)
    del a, b
    gc.collect()
    assert gone() is None, "a lesson's own cyclic garbage is still collected after the freeze"
    gc.unfreeze()


def test_the_set_up_pays_the_checkers_one_off_costs_before_seeding():
    # issue 39 item 8: the lesson's checks imported and hypothesis run once here, not in the learner's first check;
    # the seeded numbers are those of the seed alone (nothing drawn after seeding)
    import gc
    import sys

    from verlstudy.kit import properties
    from verlstudy.kit.seeding import seed_everything

    start_lesson("cpu", 11, announce=False, lesson=8)
    gc.unfreeze()  # as the test of the freeze does: later tests in this process start with the heap as it was
    drawn = (torch.rand(3), np.random.rand(3), random.random())
    assert "verlstudy.lessons.l08_dependency_stack.checks" in sys.modules and properties._warmed_up
    seed_everything(11)
    again = (torch.rand(3), np.random.rand(3), random.random())
    assert torch.equal(drawn[0], again[0]) and np.array_equal(drawn[1], again[1]) and drawn[2] == again[2]


def test_the_lesson_is_the_lesson_package_that_starts_it():
    from verlstudy.kit import lesson_start

    namespace = {**vars(lesson_start), "__name__": "verlstudy.lessons.l07_grpo_recipe.params"}
    found = eval("_lesson_started()", namespace)  # called from a module of lesson 07's package
    assert found == 7


def test_the_set_up_makes_hint_and_solution_answer_before_any_check():
    import gc

    # a notebook's namespace is __main__'s: run the set-up there and ask for the solution first (a learner did)
    namespace = {"__name__": "__main__", "start_lesson": start_lesson}
    exec("dev, seed = start_lesson('cpu', 0, announce=False)", namespace)
    assert callable(namespace["show_solution"]) and callable(namespace["exercise_hint"])
    mine = {"__name__": "__main__", "start_lesson": start_lesson, "exercise_hint": "my own"}
    exec("start_lesson('cpu', 0, announce=False)", mine)
    assert mine["exercise_hint"] == "my own"  # a name the learner bound is kept
    module = {"__name__": "some_module", "start_lesson": start_lesson}
    exec("start_lesson('cpu', 0, announce=False)", module)
    assert "show_solution" not in module  # only a notebook's or console's namespace is touched
    gc.unfreeze()  # start_lesson froze the heap: later tests in this process start with it as it was
