"""The held-out answers run as a learner's first tries, with no attempt log written."""

import pytest


@pytest.fixture(autouse=True)
def _no_attempt_log(monkeypatch):
    monkeypatch.setenv("VERLSTUDY_ATTEMPTS", "0")
