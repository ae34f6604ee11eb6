"""Lesson 01's set-up helper: every parameter checked, the toy's config built, torch on one thread."""

import pytest
import torch

from verlstudy.kit import claims
from verlstudy.lessons.l01_memory_leak.setup import lesson_setup


@pytest.fixture
def threads_kept():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_good_parameters_give_the_config_and_one_thread(threads_kept):
    dev, seed, cfg, n = lesson_setup("cpu", 3, 16, 8, "float32", 4)
    assert (dev.type, seed, cfg.seq_len, cfg.hidden, n) == ("cpu", 3, 16, 8, 4)
    assert torch.get_num_threads() == 1


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("cpu", -1, 16, 8, "float32", 4), "seed"),
        (("cpu", 0, 0, 8, "float32", 4), "seq_len"),
        (("cpu", 0, 16, 8, "float16", 4), "dtype"),
        (("cpu", 0, 16, 8, "float32", 2), "num_micro_batches"),
        (("tpu", 0, 16, 8, "float32", 4), "device"),
        (("cpu", -1, 0, 8, "float32", 4), "seq_len"),  # the seed is checked last, after every size
        (("cpu", -1, 16, 8, "float32", 2), "num_micro_batches"),
        (("tpu", -1, 0, 8, "float32", 4), "device"),  # the device first
    ],
)
def test_a_bad_value_is_named(args, named, threads_kept):
    with pytest.raises((ValueError, TypeError), match=f"^(parameter )?{named}\\b"):
        lesson_setup(*args)


def test_a_bad_size_leaves_the_claims_the_seed_and_the_threads_alone(threads_kept, capsys):
    claims.reset_claims()
    claims.claim("recorded before the set-up", True)
    capsys.readouterr()
    threads, state = torch.get_num_threads(), torch.random.get_rng_state()
    with pytest.raises(ValueError, match=r"^parameter seq_len=0"):
        lesson_setup("cpu", 5, 0, 8, "float32", 4)
    assert len(claims.recorded_claims()) == 1 and capsys.readouterr() == ("", "")
    assert torch.equal(torch.random.get_rng_state(), state) and torch.get_num_threads() == threads
    claims.reset_claims()
