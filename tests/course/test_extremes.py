"""tools/extremes.py reads each lesson's allowed ranges from its validation cell (the runs are weekly)."""

from pathlib import Path

import yaml

from tools import extremes
from verlstudy.course import registry

ROOT = Path(__file__).resolve().parents[2]


def test_lesson_02s_ranges_are_the_ones_its_claims_hold_over():
    assert extremes.parameter_ranges(registry.get_lesson(2)) == {
        "n_leaves": (1, 100_000),
        "steps": (8, 200),
        "group_size": (4, 64),
        "lr": (0.5, 10.0),
        "kl_coef": (1e-6, 0.005),
    }


def test_every_bounded_parameter_is_a_declared_one_and_the_seed_is_left_alone():
    for lesson in registry.LESSONS:
        ranges = extremes.parameter_ranges(lesson)
        assert "seed" not in ranges
        for name, (low, high) in ranges.items():
            assert low <= high, (lesson.code, name)


def test_the_weekly_job_runs_the_corners():
    jobs = yaml.safe_load((ROOT / ".github/workflows/course.yml").read_text())["jobs"]
    assert any(step.get("run") == "make extremes" for step in jobs["newest-verl"]["steps"])
    assert not any("extremes" in step.get("run", "") for step in jobs["test"]["steps"])
