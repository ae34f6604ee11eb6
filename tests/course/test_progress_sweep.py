"""`verlstudy progress` over an awkward class (issue 43 item 5): --verify keeps verdicts made before a stop,
repairs its own cache, says what it executes and a line per notebook; log mode follows symlinks, skips `init`'s
full edition, names a learner by its folder, refuses reports inside a learner's folder and a root or home class."""

import json
from pathlib import Path

import nbformat
import pytest

from tests.course.test_progress_modes import CELL, NB_00, NB_01, _class, _learner_notebook, _log
from verlstudy.course import cli, progress, progress_verify, registry, student
from verlstudy.course.class_progress import find_learners, read_class


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("edition") / "student"
    student.write_student_edition(out, [registry.get_lesson(0)])
    return out


def test_a_root_or_home_folder_is_not_a_class(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="the root folder"):
        find_learners(["/"])
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ValueError, match="your home folder"):
        find_learners([tmp_path])


def test_a_symlinked_learner_is_followed_once(tmp_path, edition):
    room = _class(tmp_path, edition, names=("ada",))
    (room / "ben").symlink_to(room / "ada")  # the same folder twice: one walk each, no loop
    (room / "ada" / "loop").symlink_to(room)
    elsewhere = _class(tmp_path / "other", edition, names=("cy",))
    (room / "cy").symlink_to(elsewhere / "cy")
    names = set(find_learners([room]).learners)
    assert "cy" in names and len(names) == 2  # ada (or ben, the same folder) and cy


def test_an_init_copys_full_edition_is_skipped(tmp_path, edition):
    copy = tmp_path / "class" / "ada"
    for part in ("notebooks", "student"):
        _learner_notebook(copy / part, NB_00, "0.1")
    layout = find_learners([tmp_path / "class"])
    assert list(layout.learners) == ["ada/student"] and layout.full_editions == (copy / "notebooks",)
    from verlstudy.course.class_progress import matrix_text

    assert "full edition (skipped): ada/notebooks (a verlstudy init copy)" in matrix_text(
        read_class([tmp_path / "class"])
    )


def test_a_learners_own_folder_is_named_by_its_name(tmp_path, edition):
    room = _class(tmp_path, edition, names=("ada",))
    assert list(find_learners([room / "ada"]).learners) == ["ada"]


def test_a_report_inside_a_learners_folder_is_refused(tmp_path, edition, capsys):
    room = _class(tmp_path, edition)
    assert cli.main(["progress", str(room), "--csv", str(room / "ada" / "p.csv")]) == 2
    assert "inside learner ada's folder" in capsys.readouterr().err
    assert not (room / "ada" / "p.csv").exists()


def test_a_folder_named_like_a_notebook_does_not_stop_the_class(tmp_path, edition, capsys):
    room = _class(tmp_path, edition)
    (room / "ben" / NB_01).mkdir()  # a folder with a lesson notebook's name
    _log(room / "ada", "0.1", "correct")
    assert cli.main(["progress", str(room)]) == 0
    assert [nb.name for _, nb in progress_verify._interleaved(find_learners([room]))] == [NB_00, NB_00]


def _stopping_notebook(folder):
    """A check that finishes, then an endless loop: a time limit stops it after its verdict."""
    first = CELL.replace("ID", "0.1").replace("WAIT", "")
    cells = [nbformat.v4.new_code_cell(first), nbformat.v4.new_code_cell("while True:\n    pass")]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / NB_00)


@pytest.mark.slow
def test_verify_keeps_verdicts_before_a_time_limit_and_does_not_blame_the_log(tmp_path, capsys):
    room, build = tmp_path / "class", tmp_path / "build"
    _stopping_notebook(room / "ada")
    _log(room / "ada", "0.1", "correct")
    rows = progress_verify.collect([room], build, workers=1, timeout_s=5)
    assert ("0.1", "correct") in {(r.exercise, r.verdict) for r in rows}
    assert any(r.verdict == "broken notebook" and "longer than 5 s" in r.message for r in rows)
    err = capsys.readouterr().err
    assert "the log says" not in err
    assert "executes the learners' notebooks (their code, with your rights)" in err
    assert f"[1] ada/{Path(NB_00).stem}: broken notebook: the notebook ran longer than 5 s" in err


@pytest.mark.slow
def test_a_damaged_cache_is_repaired_and_the_table_printed(tmp_path, capsys):
    room, build = tmp_path / "class", tmp_path / "build"
    _learner_notebook(room / "ada", NB_00, "0.1")
    _learner_notebook(room / "ben", NB_00, "0.1")
    progress_verify.collect([room], build, workers=2, timeout_s=120)
    cache = build / progress_verify.CACHE
    data = json.loads(cache.read_text())
    data["notebooks"][f"ben/{NB_00}"]["rows"] = "damaged"
    cache.write_text(json.dumps(data))
    layout = find_learners([room])
    again = progress_verify.verify(layout, [room], build, workers=2, timeout_s=120)
    assert again.executed == [f"ben/{NB_00}"] and again.cached == [f"ada/{NB_00}"]
    cache.write_text('{"format": 1, "noteb')  # not JSON at all
    third = progress_verify.verify(layout, [room], build, workers=2, timeout_s=120)
    assert len(third.executed) == 2 and {(r.learner, r.verdict) for r in third.rows if r.exercise == "0.1"} == {
        ("ada", "correct"),
        ("ben", "correct"),
    }
    assert json.loads(cache.read_text())["format"] == progress_verify.CACHE_FORMAT
    assert progress.table(third.rows).startswith("| learner |")


@pytest.mark.slow
def test_an_unreadable_notebook_is_its_learners_row_and_the_rest_is_verified(tmp_path, monkeypatch):
    room, build = tmp_path / "class", tmp_path / "build"
    _learner_notebook(room / "ada", NB_00, "0.1")
    _learner_notebook(room / "ben", NB_00, "0.1")
    real = Path.read_bytes

    def locked(self):
        if self.parent.name == "ben" and self.name == NB_00:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", locked)
    done = progress_verify.verify(find_learners([room]), [room], build, workers=1, timeout_s=120)
    assert done.executed == [f"ada/{NB_00}"]
    assert ("ben", "broken notebook") in {(r.learner, r.verdict) for r in done.rows}
    assert ("ada", "0.1", "correct") in {(r.learner, r.exercise, r.verdict) for r in done.rows}


@pytest.mark.parametrize("where", ["learner elsewhere", "inside one", "a class", "root"])
def test_the_build_folder_is_never_anyones_learner_folder_nor_over_one(tmp_path, where, monkeypatch, capsys):
    # issue 43 DL2: --build class/ada (a learner of another class) got amy's executed notebook and was then counted
    _learner_notebook(tmp_path / "vc" / "amy", NB_00, "0.1")
    other = tmp_path / "class"
    _learner_notebook(other / "ada", NB_00, "0.1")
    build = {"learner elsewhere": other / "ada", "inside one": other / "ada" / "b", "a class": other, "root": "/"}
    before = sorted(other.rglob("*"))
    monkeypatch.setattr(progress, "_rows_for", lambda *a, **k: pytest.fail("a notebook was executed"))
    assert cli.main(["progress", str(tmp_path / "vc"), "--verify", "--build", str(build[where])]) == 2
    err = capsys.readouterr().err
    expected = {
        "learner elsewhere": f"lies inside {other / 'ada'}, a learner's folder",
        "inside one": f"lies inside {other / 'ada'}, a learner's folder",
        "a class": "holds lesson notebooks verlstudy did not put there (ada/",
        "root": "is the root folder",
    }
    assert expected[where] in err and len(err.strip().splitlines()) == 1, err
    assert sorted(other.rglob("*")) == before


def test_a_folder_of_its_own_copies_is_a_build_folder_again(tmp_path, monkeypatch):
    # the refusal above must not refuse --verify's own earlier copies (listed in the build folder's manifest)
    _learner_notebook(tmp_path / "vc" / "amy", NB_00, "0.1")
    build = tmp_path / "build"

    def fake_rows(learner, notebook, build, timeout_s, manifest):
        target = progress._target(build, learner, notebook)
        manifest.pending([target])
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(notebook.read_bytes())
        manifest.record([target])
        return [progress.Row(learner, notebook.stem, "0.1", "correct")]

    monkeypatch.setattr(progress, "_rows_for", fake_rows)
    layout = find_learners([tmp_path / "vc"])
    assert progress_verify.verify(layout, [tmp_path / "vc"], build).executed == [f"amy/{NB_00}"]
    (tmp_path / "vc" / "amy" / NB_00).write_text((tmp_path / "vc" / "amy" / NB_00).read_text() + " ")
    assert progress_verify.verify(layout, [tmp_path / "vc"], build).executed == [f"amy/{NB_00}"]


def test_a_file_that_is_no_notebook_is_named_as_the_log_mode_names_it_and_not_executed(tmp_path, monkeypatch):
    # issue 43 V13: '{"cells": 5}' came back as "TypeError: 'int' object is not iterable" from the execution
    (tmp_path / "vd" / "ada").mkdir(parents=True)
    (tmp_path / "vd" / "ada" / NB_00).write_text('{"cells": 5}')
    monkeypatch.setattr(progress, "_rows_for", lambda *a, **k: pytest.fail("a broken notebook was executed"))
    done = progress_verify.verify(find_learners([tmp_path / "vd"]), [tmp_path / "vd"], tmp_path / "build")
    stem = NB_00[:-6]
    assert done.rows == [
        progress.Row("ada", stem, "-", "broken notebook", f"{NB_00} is not a notebook (no nbformat 4 header)"),
        progress.Row("ada", stem, "0.1", "not attempted", progress_verify.NOT_OPENED),
        progress.Row("ada", stem, "0.2", "not attempted", progress_verify.NOT_OPENED),
    ]
    assert progress_verify.disagreements([progress.Row("ada", stem, "0.1", "correct")], done.rows) == []


def test_a_cell_without_an_id_warns_nobody(tmp_path, monkeypatch, capsys):
    # issue 43 V14: nbformat's MissingIDFieldWarning (three lines, with a source line) reached the facilitator
    import warnings

    from nbformat.warnings import MissingIDFieldWarning

    _learner_notebook(tmp_path / "vc" / "amy", NB_00, "0.1")

    def warns(learner, notebook, *rest):
        warnings.warn("Cell is missing an id field", MissingIDFieldWarning, stacklevel=1)
        return [progress.Row(learner, notebook.stem, "0.1", "correct")]

    monkeypatch.setattr(progress, "_rows_for", warns)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        progress_verify.collect([tmp_path / "vc"], tmp_path / "build", workers=1)
    assert not [w for w in seen if issubclass(w.category, MissingIDFieldWarning)]
