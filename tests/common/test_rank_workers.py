"""common.rank_workers: the example rank functions (run through run_local in test_dist.py), also reachable from
common.dist where callers found them before the split."""

import pytest

from verlstudy.common import dist, rank_workers

NAMES = (
    "all_reduce_rank_sum",
    "count_in",
    "hang_on_rank",
    "listening_addresses",
    "peer_sockets_after_a_raise",
    "raise_on_rank",
    "raise_on_rank_then_all_reduce",
    "raise_then_hang_on_peer",
)


@pytest.mark.parametrize("name", NAMES)
def test_each_rank_function_lives_in_rank_workers_and_is_reachable_from_dist(name):
    fn = getattr(rank_workers, name)
    assert getattr(dist, name) is fn and fn.__module__ == "verlstudy.common.rank_workers"


def test_rank_functions_run_in_process_where_they_need_no_group():
    assert rank_workers.raise_on_rank(0, 2) == 0 and rank_workers.hang_on_rank(0, 2, seconds=0.0) == 0
    with pytest.raises(ValueError, match="rank 1 was told to fail"):
        rank_workers.raise_on_rank(1, 2)
