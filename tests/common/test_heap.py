"""collector_paused: no automatic collection inside, the collector's state restored after, even on an error."""

from __future__ import annotations

import gc

import pytest

from verlstudy.common.heap import collector_paused


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_paused_inside_and_left_as_found(enabled: bool) -> None:
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with collector_paused():
            assert not gc.isenabled()
            with collector_paused():  # nested: the inner block leaves it paused for the outer one
                assert not gc.isenabled()
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        with pytest.raises(RuntimeError, match="boom"), collector_paused():
            raise RuntimeError("boom")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_an_explicit_collection_still_frees_a_cycle_inside_the_block() -> None:
    class Node:
        pass

    with collector_paused():
        a, b = Node(), Node()
        a.other, b.other = b, a  # a reference cycle: only the collector frees it
        del a, b
        assert gc.collect() >= 2
