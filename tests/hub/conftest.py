"""tests/hub: fast checks of `verlstudy hub init` run everywhere; the live hub (marker `hub`) runs under make hub-test.

The live tests start a real JupyterHub with system users: they need root, JupyterHub and its plugins in the Python
running pytest and configurable-http-proxy, which `make hub-test` provides (VERLSTUDY_HUB_TEST=1).
"""

from __future__ import annotations

import os

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "hub: starts a real JupyterHub on localhost (make hub-test)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("VERLSTUDY_HUB_TEST") == "1":
        return
    skip = pytest.mark.skip(reason="a real JupyterHub: run make hub-test")
    for item in items:
        if item.get_closest_marker("hub"):
            item.add_marker(skip)
