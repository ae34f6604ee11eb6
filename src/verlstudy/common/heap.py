"""Pausing Python's garbage collector around work that makes many objects and no garbage cycles (lessons 02-04, 09).

A lesson kernel holds torch's large heap. Building many new objects (parsing an engine file, the DTensor and
compiler modules torch imports on a process's first jagged tensor) sets off collections of the oldest
generation, and each walks every object not frozen. Those objects are kept (or freed by reference counting),
so the walks find nothing; pausing automatic collection around the work skips them. `gc.collect()` still works
inside the block.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic garbage collection inside the block; the collector is left on or off as it was found."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
