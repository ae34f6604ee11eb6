"""The conditions a checker runs the learner's function under: a time limit, torch on one thread, and
hypothesis kept from depending on the kernel's state (its heap, what else is imported) and from writing into the
learner's working folder."""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from verlstudy.kit.resources import cache_root

# A learner's function that has not returned after this long is reported as not returning (an endless loop?)
CALL_TIMEOUT_S = 5.0


class NoReturn(Exception):
    """The learner's function did not return within the time limit."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise NoReturn if the block runs longer than `seconds` (main thread on POSIX; elsewhere no limit)."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise NoReturn

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


_heap_was_set_aside = False  # hypothesis collects garbage on its first test in a process only


@contextmanager
def heap_set_aside() -> Iterator[None]:
    """Inside the block a full garbage collection walks only objects made inside it (the first time only).

    hypothesis runs `gc.collect()` once per process, on its first test; after `import torch` that walk of the
    whole heap costs ~0.15 s in every lesson. `gc.freeze()` sets the existing objects aside (O(1)) and
    `gc.unfreeze()` gives them back to the collector afterwards. A heap someone else froze is left as it is;
    later calls do nothing (counting a frozen heap walks it).
    """
    global _heap_was_set_aside
    if _heap_was_set_aside or gc.get_freeze_count():
        _heap_was_set_aside = True
        yield
        return
    _heap_was_set_aside = True
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextmanager
def fixed_constant_pool() -> Iterator[None]:
    """Generated inputs that do not depend on what else is imported.

    hypothesis mixes constants read from "local" modules (anything imported from outside site-packages: an
    editable verlstudy, a learner's own file) into the inputs it draws, and caches them in `.hypothesis/` in
    the working folder. A checker's inputs would then change with the way the course was installed and with
    the notebook's earlier imports. Inside the block the local pool is empty (hypothesis's own constants stay).
    """
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # a hypothesis without local constants: nothing to fix
        yield
        return
    original, cache = getattr(providers, "_get_local_constants", None), getattr(providers, "CONSTANTS_CACHE", None)
    if original is None or cache is None or not hasattr(cache, "cache"):
        yield
        return
    empty = type(providers._local_constants)()
    providers._get_local_constants = lambda: empty
    cache.cache.clear()  # pools computed with local constants before this block
    try:
        yield
    finally:
        providers._get_local_constants = original
        cache.cache.clear()


@contextmanager
def storage_in_course_cache() -> Iterator[None]:
    """hypothesis keeps its files (the Unicode table it caches on first use) in the course's cache folder.

    Left alone, it writes `.hypothesis/` into the working folder: the learner's own. A folder the learner chose
    (HYPOTHESIS_STORAGE_DIRECTORY, or hypothesis's `set_hypothesis_home_dir`) is kept, and so is hypothesis's own
    setting after the block.
    """
    try:
        from hypothesis import configuration
    except ImportError:
        yield
        return
    chosen = getattr(configuration, "__hypothesis_home_directory", None)
    default = getattr(configuration, "__hypothesis_home_directory_default", None)
    learner_chose = os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY") or (chosen is not None and chosen != default)
    if learner_chose or not hasattr(configuration, "set_hypothesis_home_dir"):
        yield
        return
    configuration.set_hypothesis_home_dir(cache_root() / "hypothesis")
    try:
        yield
    finally:
        configuration.set_hypothesis_home_dir(chosen)


@contextmanager
def one_thread() -> Iterator[None]:
    """torch on one thread inside the block: a checker's tiny tensors run faster without the thread pool (on a busy
    laptop it costs milliseconds per op), and the learner's thread setting is restored afterwards. Where torch is not
    imported yet (a checker of plain Python, called outside a notebook) it is left unimported: that costs seconds."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
