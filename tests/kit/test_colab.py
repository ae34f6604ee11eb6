"""The Colab first cell: installs the course on Colab only, and off Colab runs nothing and prints nothing."""

import contextlib
import importlib.util
import io
import subprocess
import sys
import types

import nbformat
import pytest

from verlstudy.kit import colab
from verlstudy.kit.resources import notebooks_dir


def _run_first_cell(monkeypatch, *, on_colab: bool, installed: bool) -> tuple[list, str]:
    """Execute FIRST_CELL's exact source with pip and the import system faked; (pip calls, what it printed)."""
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda command, **kw: calls.append((command, kw)))
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: object() if installed else None if name == "verlstudy" else real_find_spec(name, *a),
    )
    if on_colab:
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        exec(compile(colab.FIRST_CELL, "<first cell>", "exec"), {})
    return calls, printed.getvalue()


def test_off_colab_the_first_cell_runs_nothing_and_prints_nothing(monkeypatch):
    assert _run_first_cell(monkeypatch, on_colab=False, installed=False) == ([], "")
    assert _run_first_cell(monkeypatch, on_colab=False, installed=True) == ([], "")


def test_on_colab_the_first_cell_installs_the_course_once(monkeypatch):
    calls, printed = _run_first_cell(monkeypatch, on_colab=True, installed=False)
    assert calls == [([sys.executable, "-m", "pip", "install", "-q", colab.SOURCE], {"check": True})]
    assert printed == ""
    assert _run_first_cell(monkeypatch, on_colab=True, installed=True) == ([], ""), "a second run reinstalls"


def test_the_function_does_what_the_cell_does():
    calls = []

    def run(command, **kw):
        calls.append((command, kw))

    missing, present = (lambda name: None), (lambda name: object())
    assert colab.install_on_colab(modules={}, find_spec=missing, run=run) is False and calls == []
    assert colab.install_on_colab(modules={"google.colab": 1}, find_spec=present, run=run) is False and calls == []
    assert colab.install_on_colab(modules={"google.colab": 1}, find_spec=missing, run=run) is True
    assert calls == [(colab.pip_command(), {"check": True})]
    assert colab.pip_command() == [sys.executable, "-m", "pip", "install", "-q", colab.SOURCE]


def test_a_bad_source_is_refused_in_one_line():
    with pytest.raises(ValueError, match="source must be a pip requirement"):
        colab.pip_command("  ")
    with pytest.raises(ValueError, match="source must be a pip requirement"):
        colab.install_on_colab(None, modules={})  # type: ignore[arg-type]


def test_the_cell_installs_what_pyproject_names_and_keeps_colabs_torch():
    assert colab.SOURCE.startswith("verlstudy @ ") and "--no-deps" not in colab.FIRST_CELL
    assert "torch" not in colab.FIRST_CELL, "Colab's own torch (with CUDA) stays; pyproject's range accepts it"
    compile(colab.FIRST_CELL, "<first cell>", "exec")


def _first_code_sources() -> dict[str, str]:
    found = {}
    for path in sorted(notebooks_dir().glob("[0-9][0-9]_*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        found[path.name] = next(c for c in cells if c.cell_type == "code")
        found[path.name] = (found[path.name].source, found[path.name].outputs)
    return found


def test_once_one_notebook_carries_the_colab_cell_every_notebook_does_with_no_output():
    firsts = _first_code_sources()
    carrying = [name for name, (source, _) in firsts.items() if source == colab.FIRST_CELL]
    if not carrying:
        pytest.skip("no notebook carries the Colab cell yet (the lesson authors insert colab.FIRST_CELL)")
    assert carrying == sorted(firsts), f"missing or changed in: {sorted(set(firsts) - set(carrying))}"
    assert all(outputs == [] for _, outputs in firsts.values())
