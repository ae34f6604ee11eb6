"""Stopping a run: Ctrl-C, SIGTERM and SIGHUP alike, the lesson kernels killed, what finished kept for the report."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator

STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
OWN_KILL_QUIET_S = 30.0  # how long after verlstudy killed a kernel a kernel's death is ours, not news
_last_kill = [float("-inf")]


def killed_recently() -> bool:
    """True within OWN_KILL_QUIET_S of verlstudy killing a kernel (a stop or a notebook's time limit)."""
    return time.monotonic() - _last_kill[0] < OWN_KILL_QUIET_S


def kill_kernels() -> None:
    """Kill this process's child processes (the lesson kernels), so a Ctrl-C stops within seconds."""
    import psutil

    _last_kill[0] = time.monotonic()
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):  # it may have exited already
            child.kill()


def kill_tree(pid: int) -> None:
    """Kill one process (a kernel) and everything it started."""
    import psutil

    _last_kill[0] = time.monotonic()
    try:
        parent = psutil.Process(pid)
        family = [*parent.children(recursive=True), parent]
    except psutil.Error:
        return
    for process in family:
        with contextlib.suppress(psutil.Error):
            process.kill()


# ---------------------------------------------------------------- Ctrl-C, SIGTERM and SIGHUP stop a run the same way


class _StopState:
    def __init__(self) -> None:
        self.signal: int | None = None  # the signal that stopped the run
        self.stopping = False  # further signals are ignored while the run stops and reports


STOP = _StopState()


def _on_stop_signal(number: int, frame: object) -> None:
    if STOP.stopping or STOP.signal is not None:
        return  # already stopping: a second Ctrl-C must not cut the report short
    STOP.signal = number
    raise KeyboardInterrupt


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """Within the block, SIGINT, SIGTERM and SIGHUP raise KeyboardInterrupt once (the pool then stops and reports).

    SIGTERM is how `timeout`, CI cancels and process managers stop a job, SIGHUP what a closed terminal or ssh
    session sends; a SIGINT inherited as ignored (a run
    started with `&` from a non-interactive script) is handled too, so Ctrl-C or `kill -INT` still stops it.
    Outside the main thread this does nothing (Python delivers signals there only).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    STOP.signal, STOP.stopping = None, False
    for number in previous:
        signal.signal(number, _on_stop_signal)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)


def stop_exit_code() -> int:
    """The exit code of a stopped run: 128 + the signal (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP)."""
    return 128 + (STOP.signal or signal.SIGINT)


def stop_name() -> str:
    """The stop as a user would name it: "Ctrl-C" for SIGINT, else the signal's name."""
    number = STOP.signal or signal.SIGINT
    return "Ctrl-C" if number == signal.SIGINT else signal.Signals(number).name
