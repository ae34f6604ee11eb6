"""tools/extremes.py reads each lesson's allowed ranges from its validation cell (the runs are weekly)."""

from pathlib import Path

import pytest
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


def test_a_bound_computed_from_another_parameter_gets_its_mixed_corners():
    found = dict(extremes.corners(registry.get_lesson(3)))
    assert found["minimum"]["num_experts"] == 2 and found["minimum"]["topk"] == 1
    assert found["maximum"]["topk"] == 63, "topk's maximum is num_experts - 1, evaluated at the corner"
    assert found["topk low, num_experts high"] == {"num_experts": 64, "topk": 2}
    assert found["n_tokens low, num_experts high"] == {"num_experts": 64, "n_tokens": 8}


@pytest.mark.parametrize(
    ("n_tokens", "hidden", "num_experts", "topk", "refused"),
    [(8, 2, 2, 1, "16 <= n_tokens"), (32, 8, 64, 1, "2 <= topk <= 63")],
)
def test_lesson_03_refuses_the_corners_where_a_claim_did_not_hold(n_tokens, hidden, num_experts, topk, refused):
    from verlstudy.lessons.l03_router_replay.setup import check_parameters

    with pytest.raises(ValueError, match=refused):
        check_parameters(n_tokens, hidden, num_experts, topk, 1.0, [2, 0, 1], 1.0)
    check_parameters(16, hidden, num_experts, 2 if num_experts > 32 else topk, 1.0, [2, 0, 1], 1.0)
