"""Lesson 09's test fixtures: the fixture config package data/engine_config, imported fresh or copied."""

from pathlib import Path

import pytest

from verlstudy.lessons.l09_dead_config import workspace

PKG = Path(__file__).resolve().parents[3] / "data" / "engine_config"


@pytest.fixture
def pkg():
    """The original fixture package, imported afresh (so `_target_` paths resolve to its classes)."""
    return workspace.import_fresh(PKG)


@pytest.fixture
def tmp_pkg(tmp_path):
    """A copy of the fixture package in a temporary folder, free to edit."""
    return workspace.copy_package(PKG, tmp_path)
