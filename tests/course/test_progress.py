"""`verlstudy progress`: a row per exercise for each learner, from their own notebooks, never touching them."""

import csv
import io
import shutil

import nbformat
import pytest

from verlstudy.course import cli, progress, registry, student

LESSON_00 = registry.get_lesson(0)


def _wrong_answer_edition(path):
    """Lesson 00's student edition where the learner answered 0.1 with something that runs but is wrong."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if "exercise-0.1" in cell.metadata.get("tags", []) and "exercise" in cell.metadata.get("tags", []):
            cell.source = cell.source.replace('raise NotImplementedError("exercise 0.1")', "return [0] * n")
    nbformat.write(nb, path)


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    room = tmp_path_factory.mktemp("classroom")
    fresh, full, wrong, broken = (room / name for name in ("ada", "ben", "cy", "dee"))
    student.write_student_edition(fresh, [LESSON_00])
    full.mkdir()
    shutil.copy(LESSON_00.notebook, full / LESSON_00.notebook.name)
    student.write_student_edition(wrong, [LESSON_00])
    _wrong_answer_edition(wrong / LESSON_00.notebook.name)
    broken.mkdir()
    (broken / LESSON_00.notebook.name).write_text("{ this is not json")
    before = {p: p.read_bytes() for p in room.rglob("*") if p.is_file()}
    rows = progress.collect([room], tmp_path_factory.mktemp("build"), workers=2)
    after = {p: p.read_bytes() for p in room.rglob("*") if p.is_file()}
    return rows, (before, after)


def _verdicts(rows, learner):
    return {r.exercise: r.verdict for r in rows if r.learner.split("/")[-1] == learner}


@pytest.mark.slow
def test_a_fresh_student_edition_shows_every_exercise_not_attempted(classroom):
    rows, _ = classroom
    assert _verdicts(rows, "ada") == {"0.1": "not attempted", "0.2": "not attempted"}


@pytest.mark.slow
def test_the_full_edition_shows_every_exercise_correct(classroom):
    rows, _ = classroom
    assert _verdicts(rows, "ben") == {"0.1": "correct", "0.2": "correct"}


@pytest.mark.slow
def test_a_wrong_answer_is_not_yet_right_with_the_checkers_message(classroom):
    rows, _ = classroom
    mine = [r for r in rows if r.learner.split("/")[-1] == "cy"]
    assert {r.exercise: r.verdict for r in mine} == {"0.1": "not yet right", "0.2": "not attempted"}
    assert next(r for r in mine if r.exercise == "0.1").message


@pytest.mark.slow
def test_a_broken_notebook_is_reported_on_its_row_and_the_others_still_run(classroom):
    rows, _ = classroom
    mine = [r for r in rows if r.learner.split("/")[-1] == "dee"]
    assert mine[0].exercise == "-" and mine[0].verdict == "broken notebook"
    assert {r.verdict for r in mine[1:]} == {"not attempted"}
    assert {r.learner.split("/")[-1] for r in rows} == {"ada", "ben", "cy", "dee"}


@pytest.mark.slow
def test_nothing_in_the_learners_folders_is_modified(classroom):
    _, (before, after) = classroom
    assert after == before, "progress must write its executed copies elsewhere and change nothing"


@pytest.mark.slow
def test_totals_csv_and_junit_agree_with_the_rows(classroom):
    rows, _ = classroom
    text = progress.table(rows)
    assert "| correct | not yet right | not attempted |" in text
    assert progress.to_csv(rows).splitlines()[0] == "learner,lesson,exercise,verdict,message"
    assert progress.to_junit(rows).count("<failure") == sum(
        r.verdict in ("not yet right", "broken notebook") for r in rows
    )


def test_a_folder_without_lesson_notebooks_is_refused_by_name(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("x")
    assert cli.main(["progress", str(tmp_path)]) == 2
    assert "holds no lesson notebooks" in capsys.readouterr().err


def test_the_build_folder_may_not_lie_in_a_learners_folder(tmp_path, capsys):
    student.write_student_edition(tmp_path / "ada", [LESSON_00])
    assert cli.main(["progress", str(tmp_path / "ada"), "--build", str(tmp_path / "ada" / "b")]) == 2
    assert "lies inside" in capsys.readouterr().err


def test_no_csv_cell_starts_a_formula_whatever_a_learner_named_a_folder_or_wrote(tmp_path):
    # issue 43 Z1: a learner's folder '=HYPERLINK("http:evil")' became a formula cell in a spreadsheet
    rows = [
        progress.Row('=HYPERLINK("http:evil")/student', "00_start_here", "0.1", "not yet right", "+1 @x"),
        progress.Row("-ben", "00_start_here", "-", "broken notebook", "\t=cmd|' /C calc'!A0"),
        progress.Row("ada", "00_start_here", "0.2", "correct", "-"),
    ]
    cells = list(csv.reader(io.StringIO(progress.to_csv(rows))))[1:]
    assert cells == [
        ['\'=HYPERLINK("http:evil")/student', "00_start_here", "0.1", "not yet right", "'+1 @x"],
        ["'-ben", "00_start_here", "-", "broken notebook", "'\t=cmd|' /C calc'!A0"],
        ["ada", "00_start_here", "0.2", "correct", "-"],  # the bare "-" placeholder is no formula
    ]


def test_a_folder_name_cannot_split_a_table_row_or_break_the_junit_xml(tmp_path):
    import xml.etree.ElementTree as ET

    rows = [progress.Row("a|b\x1b[2J", "00_start_here", "0.1", "not yet right", "x | y\nz\x00")]
    table = progress.table(rows)
    assert "| a\\|b\\x1b[2J | 00_start_here | 0.1 | not yet right | x \\| y z\\x00 |" in table.splitlines()
    suite = ET.fromstring(progress.to_junit(rows)).find("testsuite")  # parses: no control character left
    assert suite.get("name") == "a|b\\x1b[2J"
    assert suite.find("testcase/failure").get("message") == "not yet right: x | y\nz\\x00"
