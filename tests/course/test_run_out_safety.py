"""`run --out` never overwrites a learner's notebook, and its paths are taken literally (issue 43 items 2 and 7)."""

import json
import shutil
from pathlib import Path

import nbformat
import pytest

from verlstudy.course import files, registry, run_out, runner

LESSON = registry.get_lesson(2)


def run_output(folder: Path, edit=None) -> Path:
    """The lesson's notebook as a papermill run leaves it (its metadata, an injected-parameters cell)."""
    nb = nbformat.read(LESSON.notebook, as_version=4)
    nb.metadata["papermill"] = {"parameters": {"seed": 1}}
    injected = nbformat.v4.new_code_cell("seed = 1")
    injected.metadata["tags"] = ["injected-parameters"]
    nb.cells.insert(1, injected)
    if edit:
        edit(nb)
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / LESSON.notebook.name)
    return folder / LESSON.notebook.name


def test_a_runs_own_earlier_output_of_todays_notebook_may_be_replaced(tmp_path):
    run_output(tmp_path / "out")
    run_out.check_run_out(tmp_path / "out", [LESSON.notebook.resolve()])


def answer(nb):
    solution = next(c for c in nb.cells if "solution" in c.metadata.get("tags", []))
    solution.source = "def my_answer():\n    return 42\n"


def test_a_learners_edited_notebook_with_papermills_metadata_is_refused(tmp_path):
    # issue 43: a learner's folder without a manifest, a notebook once run by papermill, her answers in it
    mine = run_output(tmp_path / "ada", answer)
    before = mine.read_bytes()
    with pytest.raises(files.WouldOverwriteWork, match=LESSON.notebook.name):
        run_out.check_run_out(tmp_path / "ada", [LESSON.notebook.resolve()])
    assert mine.read_bytes() == before


def test_a_notebook_beside_an_attempt_log_is_refused_even_unchanged(tmp_path):
    run_output(tmp_path / "ada")
    (tmp_path / "ada" / ".verlstudy").mkdir()
    (tmp_path / "ada" / ".verlstudy" / "attempts.jsonl").write_text("")
    with pytest.raises(files.WouldOverwriteWork, match=r"learner.s folder .*attempt log"):
        run_out.check_run_out(tmp_path / "ada", [LESSON.notebook.resolve()])
    run_out.check_run_out(tmp_path / "ada", [registry.get_lesson(3).notebook.resolve()])  # nothing there to lose


def test_a_notebook_that_is_not_json_is_refused(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / LESSON.notebook.name).write_text('{"metadata": {"papermill": {}}, "cells": 3')
    with pytest.raises(files.WouldOverwriteWork):
        run_out.check_run_out(tmp_path / "out", [LESSON.notebook.resolve()])


@pytest.mark.parametrize("name", ["d{x}", "run{seed}", "a{}b", "{{x}}"])
def test_braces_in_an_out_folder_are_literal(tmp_path, monkeypatch, name):
    # issue 43: papermill formats its paths with the parameters: d{x} failed, run{seed} rewrote the path
    import papermill
    from papermill.parameterize import parameterize_path

    written = []

    def fake_execute(source, target, parameters=None, **kw):
        for path in (source, target):
            written.append(parameterize_path(path, parameters))
        shutil.copy(written[0], written[1])

    monkeypatch.setattr(papermill, "execute_notebook", fake_execute)
    out = tmp_path / name
    out.mkdir()
    source = tmp_path / name / "in.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), source)
    status, error, _ = runner.execute_with_papermill(source, out / "x.ipynb", {"seed": 3}, out)
    assert (status, error) == ("passed", "")
    assert written == [str(source.resolve()), str((out / "x.ipynb").resolve())]
    assert json.loads((out / "x.ipynb").read_text())["nbformat"] == 4


def test_the_cli_refuses_before_any_kernel_starts(tmp_path, capsys, monkeypatch):
    from verlstudy.course.cli import main

    mine = run_output(tmp_path / "ada", answer)
    before = mine.read_bytes()
    monkeypatch.setattr(runner, "run_lessons", lambda *a, **k: pytest.fail("a kernel was started"))
    assert main(["run", "02", "--no-floor", "--out", str(tmp_path / "ada")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("verlstudy run: --out") and "a learner's work?" in err and err.count("\n") == 1
    assert mine.read_bytes() == before
