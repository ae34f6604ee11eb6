"""`verlstudy run` says where it is: a plain line per finished notebook on stderr, whatever TQDM_DISABLE says."""

from verlstudy.course import registry, runner
from verlstudy.course.cli import main
from verlstudy.course.run_command import progress_line

LESSON1 = registry.get_lesson(1)


def test_a_passed_lesson_line_counts_names_and_times_it():
    result = runner.RunResult(LESSON1, "passed", 4.25)
    assert progress_line(3, 11, result) == f"[ 3/11] 01 {LESSON1.title}: passed (4.2 s)"


def test_a_failed_lesson_line_shouts_and_gives_the_first_line_of_its_reason():
    result = runner.RunResult(LESSON1, "failed", 2.0, error="cell 7 raised ValueError\ntraceback...")
    assert progress_line(1, 2, result).endswith(": FAILED: cell 7 raised ValueError (2.0 s)")
    assert progress_line(2, 2, runner.RunResult(None, "passed", 5.0)).startswith("[2/2] floor (import torch")


def test_the_run_prints_its_plan_then_one_line_per_notebook_even_with_tqdm_disabled(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TQDM_DISABLE", "1")

    def fake_run_lessons(lessons, out, params, *, workers, with_floor, on_done, **options):
        floor = runner.RunResult(None, "passed", 5.0)
        results = [runner.RunResult(lesson, "passed", 1.0) for lesson in lessons]
        for result in [floor, *results]:
            on_done(result)
        return results, floor

    monkeypatch.setattr(runner, "run_lessons", fake_run_lessons)
    code = main(["run", "01", "--out", str(tmp_path / "out"), "--report", str(tmp_path / "r.md")])
    err = capsys.readouterr().err.splitlines()
    assert code == 0
    assert err[0] == f"verlstudy run: 2 notebooks, 2 at a time, into {tmp_path / 'out'}"
    assert [line[:5] for line in err[1:3]] == ["[1/2]", "[2/2]"]
    assert "01 Attributing" in err[2]
