"""`verlstudy init DIR` (course.learner_copy): a copy of the course in a folder the learner owns, never mixed into
a learner's own working folder."""

import json

import pytest

from verlstudy.course import cli, learner_copy, registry, run_out
from verlstudy.course.run_out import ATTEMPT_LOG

LESSON0 = registry.get_lesson(0)


def _learner(folder, *, log=False):
    folder.mkdir(parents=True)
    (folder / LESSON0.notebook.name).write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4}))
    if log:
        (folder / ATTEMPT_LOG).parent.mkdir()
        (folder / ATTEMPT_LOG).write_text("")
    return folder


@pytest.mark.parametrize("log", [True, False])
@pytest.mark.parametrize("below", ["", "sub/deeper"])
def test_init_refuses_a_learners_folder_and_any_folder_inside_one(log, below, tmp_path, monkeypatch, capsys):
    # I10: init into class/ada/student added notebooks/ and student/ inside her work; `progress` then dropped her
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    ada = _learner(tmp_path / "class" / "ada" / "student", log=log)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    target = ada / below if below else ada
    assert cli.main(["init", str(target)]) == 2
    err = capsys.readouterr().err
    what = f"their attempt log {ATTEMPT_LOG}" if log else f"lesson notebooks ({LESSON0.notebook.name})"
    assert f"a learner's folder (it holds {what})" in err and len(err.strip().splitlines()) == 1, err
    assert ("is inside" in err) == bool(below)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_init_still_updates_its_own_copy_and_one_a_run_wrote_into(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    mine = tmp_path / "verlstudy"
    learner_copy.init_course(mine)
    executed = mine / LESSON0.notebook.name  # `run 00 --out DIR` beside notebooks/ and student/: a run's output
    executed.write_text(json.dumps({"cells": [], "metadata": {"papermill": {}}, "nbformat": 4}))
    assert run_out.learners_work(mine) is None
    assert run_out.learners_work(mine / "student") is not None  # its student/ is where the learner works
    report = learner_copy.init_course(mine)
    assert report.written == [] and report.kept_edits == []


def test_a_home_folder_with_a_stray_notebook_is_no_learners_folder(tmp_path, monkeypatch):
    home = _learner(tmp_path / "home")  # a notebook downloaded into the home folder: ~/verlstudy stays allowed
    monkeypatch.setenv("HOME", str(home))
    run_out.refuse_learners_folder(home / "verlstudy", "init")


def test_a_student_edition_may_refresh_a_learners_folder_but_never_nest_inside_one(tmp_path, monkeypatch, capsys):
    # I10's cause for `student --out`: an edition inside a learner's folder takes her place in `progress`
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    ada = _learner(tmp_path / "class" / "ada", log=True)
    assert cli.main(["student", "00", "--out", str(ada / "sub")]) == 2
    err = capsys.readouterr().err
    assert f"--out {ada / 'sub'} is inside {ada}, which is a learner's folder" in err, err
    assert not (ada / "sub").exists()
    (ada / LESSON0.notebook.name).unlink()  # her own folder: refreshed, her edits kept by the manifest
    assert cli.main(["student", "00", "--out", str(ada)]) == 0
