"""benchmarks/check_latency.py: its exercises, its table, one cheap exercise measured for real (no timing asserted)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "check_latency.py"
spec = importlib.util.spec_from_file_location("bench_check_latency", SCRIPT)
assert spec is not None and spec.loader is not None
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def test_every_exercise_of_the_course_has_a_held_out_right_answer_to_time():
    from verlstudy.course import registry
    from verlstudy.kit.exercises import registered_exercises

    course = [e for lesson in registry.LESSONS for e in registered_exercises(lesson.number)]
    assert bench.exercises() == course


def test_the_table_marks_each_time_over_the_limit_and_counts_the_first_checks_over_it():
    rows = [
        {"exercise": "5.1", "first_s": 0.2, "second_s": 0.1},
        {"exercise": "4.3", "first_s": 3.5, "second_s": 0.6},
    ]
    text = bench.table(rows)
    assert "| 5.1 | 0.20 | 0.10 |" in text and "| 4.3 | 3.50 **over** | 0.60 **over** |" in text
    assert text.endswith("1 of 2 first checks over 0.5 s")


def test_one_exercise_is_measured_in_a_fresh_process_with_a_right_answer():
    row = bench.measure("5.1")
    assert row["exercise"] == "5.1" and row["verdict"] == "correct"
    assert row["first_s"] > 0 and row["second_s"] > 0


def test_the_notebook_mode_runs_the_lessons_parameters_set_up_and_imports_on_the_cpu():
    code = bench.notebook_setup_code("4.3")
    assert 'device = "cpu"' in code and "start_lesson(" in code and "from verlstudy.lessons.l04_thd" in code


def test_one_exercise_is_measured_after_its_notebooks_set_up():
    row = bench.measure("5.1", as_notebook=True)
    assert row["verdict"] == "correct" and row["setup_s"] > 0 and row["first_s"] > 0
    assert "notebook set-up (s)" in bench.table([row])


def test_an_unknown_exercise_is_one_line(capsys):
    with pytest.raises(SystemExit):
        bench.main(["9.9"])
    assert "no held-out answers for 9.9" in capsys.readouterr().err
