"""Colab: every notebook's first cell installs the course there, and does nothing anywhere else.

The cell cannot import verlstudy (on Colab it is not installed yet), so it is plain Python: FIRST_CELL is its exact
source, and `install_on_colab` is the same logic as a function the tests (and a script) can call. Off Colab, or
with the course already importable, neither runs anything or prints anything, so no stored output changes.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import Any

# pip's requirement for the course: Colab already has torch, so only the course and its other packages install.
SOURCE = "verlstudy @ git+https://github.com/verlstudy/verlstudy"
COLAB_MODULE = "google.colab"  # imported by every Colab runtime before the first cell runs

FIRST_CELL = f"""\
# On Colab this installs the course (a minute); anywhere else it does nothing and prints nothing.
import importlib.util, subprocess, sys
if "{COLAB_MODULE}" in sys.modules and importlib.util.find_spec("verlstudy") is None:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "{SOURCE}"], check=True)
    importlib.invalidate_caches()"""


def pip_command(source: str = SOURCE, python: str = sys.executable) -> list[str]:
    """The command the first cell runs on Colab."""
    if not isinstance(source, str) or not source.strip():
        raise ValueError(f"source must be a pip requirement such as {SOURCE!r}, got {source!r}")
    return [python, "-m", "pip", "install", "-q", source]


def install_on_colab(
    source: str = SOURCE,
    *,
    modules: Mapping[str, Any] | None = None,
    find_spec: Callable[[str], Any] = importlib.util.find_spec,
    run: Callable[..., Any] = subprocess.run,
) -> bool:
    """Install the course when running on Colab without it; True when it installed, False when nothing was needed."""
    command = pip_command(source)
    if COLAB_MODULE not in (sys.modules if modules is None else modules) or find_spec("verlstudy") is not None:
        return False
    run(command, check=True)
    importlib.invalidate_caches()
    return True
