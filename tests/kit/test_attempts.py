"""The attempt log: one JSON line per check, beside the notebook, never in the package, never breaking a check."""

import json
import os

import pytest

from verlstudy.kit import attempts, exercises
from verlstudy.kit.exercises import ExerciseFailure, check_exercise, checker


@checker("99.7", method="return twice x, as steps in words", where="the doubling section")
def _double(fn):
    if fn(3) != 6:
        raise ExerciseFailure("double(3) should be 6")
    return "right"


@pytest.fixture
def log_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(attempts.SWITCH_ENV, "1")
    monkeypatch.setenv(attempts.DIR_ENV, str(tmp_path / "logs"))
    monkeypatch.setenv(attempts.NOTEBOOK_ENV, "/somewhere/99_demo.ipynb")
    exercises.reset_exercises()
    return tmp_path / "logs"


def lines(log_dir):
    return [json.loads(line) for line in (log_dir / attempts.LOG_FILE).read_text().splitlines()]


def test_every_check_appends_one_versioned_record(log_dir, capsys):
    check_exercise("99.7", lambda x: x + 1)
    check_exercise("99.7", lambda x: 2 * x)
    first, second = lines(log_dir)
    assert set(first) == set(attempts.FIELDS)
    assert (first["format"], first["exercise"], first["verdict"], first["try"]) == (1, "99.7", "not yet right", 1)
    assert first["message"] == "double(3) should be 6" and first["notebook"] == "99_demo.ipynb"
    assert (second["verdict"], second["try"]) == ("correct", 2)
    assert first["answer_sha256"] != second["answer_sha256"] and len(first["answer_sha256"]) == 16
    assert first["kernel"] == second["kernel"]


def test_demonstrations_inside_attempts_held_are_not_logged(log_dir, capsys):
    with exercises.attempts_held("99.7"):
        check_exercise("99.7", lambda x: 0)
    assert not (log_dir / attempts.LOG_FILE).exists()


def test_show_solution_is_logged_as_such(log_dir, capsys):
    exercises.show_solution("4.1")
    assert [r["verdict"] for r in lines(log_dir)] == ["solution shown"]


def test_the_log_can_be_switched_off_and_is_never_written_into_the_package(log_dir, monkeypatch, capsys):
    monkeypatch.setenv(attempts.SWITCH_ENV, "0")
    assert attempts.log_path() is None
    monkeypatch.setenv(attempts.SWITCH_ENV, "1")
    monkeypatch.setenv(attempts.DIR_ENV, os.path.dirname(attempts.__file__))
    assert attempts.log_path() is None
    monkeypatch.setenv(attempts.DIR_ENV, "/usr/lib/python3/site-packages/verlstudy/_course/notebooks/.verlstudy")
    assert attempts.log_path() is None


def test_without_a_folder_setting_the_log_sits_in_a_hidden_folder_of_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(attempts.SWITCH_ENV, "1")
    monkeypatch.delenv(attempts.DIR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert attempts.log_path() == tmp_path / ".verlstudy" / "attempts.jsonl"


def test_an_unwritable_log_never_breaks_a_check(log_dir, capsys):
    log_dir.parent.joinpath("logs").write_text("a file where the folder should be")
    check_exercise("99.7", lambda x: 2 * x)
    assert capsys.readouterr().out.startswith("exercise 99.7: correct")
    assert "could not be written" in attempts.last_log_error()


def test_reading_skips_torn_and_foreign_lines(tmp_path):
    log = tmp_path / "attempts.jsonl"
    good = {"format": 1, "exercise": "1.1", "verdict": "correct"}
    log.write_text(
        json.dumps(good) + "\n" + '{"format": 1, "exerc' + "\n" + json.dumps({"format": 9, "exercise": "1.1"}) + "\n"
    )
    assert attempts.scan_log(log).records == [good]
    assert attempts.scan_log(tmp_path / "missing.jsonl").records == []


def test_the_answer_hash_follows_the_source_and_reveals_nothing():
    def mine(x):
        return 2 * x

    assert attempts.answer_hash((mine,)) == attempts.answer_hash((mine,))
    assert "2 * x" not in attempts.answer_hash((mine,))
    assert attempts.answer_hash((mine,)) != attempts.answer_hash((lambda x: x,))
