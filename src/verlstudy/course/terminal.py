"""The terminal a `verlstudy` command prints to: characters it cannot show printed as escapes, a write error on
standard output named as such, and a closed pipe quiet (issue 43: E6, L4, `list | head`)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator


def readable_output() -> None:
    """Print what a terminal cannot encode as escapes (PYTHONIOENCODING=ascii, LANG=C): never a crash at the end."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError, OSError):  # not a text stream (a capture), or closed
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]


STDOUT_NAME = "standard output"


class _NamedStream:
    """A text stream whose write errors name it (an OSError from print has no file name of its own)."""

    def __init__(self, stream: object, name: str) -> None:
        self._stream, self._name = stream, name

    def _named(self, call: Callable[[], object]) -> object:
        try:
            return call()
        except OSError as e:
            e.filename = e.filename or self._name
            raise

    def write(self, text: str) -> object:
        return self._named(lambda: self._stream.write(text))  # type: ignore[attr-defined]

    def flush(self) -> object:
        return self._named(self._stream.flush)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


@contextlib.contextmanager
def stdout_named() -> Iterator[None]:
    """Within the block, a write error on the process's standard output names it (`list > /dev/full`)."""
    if sys.stdout is not sys.__stdout__ or sys.stdout is None:  # a test's capture, or no stdout: left alone
        yield
        return
    real = sys.stdout
    sys.stdout = _NamedStream(real, STDOUT_NAME)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout = real


def quiet_stdout() -> None:
    """Point stdout at /dev/null, so Python's own flush at exit meets no closed pipe either."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
