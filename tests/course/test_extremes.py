"""tools/extremes.py reads each lesson's allowed ranges from its validation cell (the runs are weekly)."""

import contextlib
import functools
import io
import types
from pathlib import Path

import pytest
import yaml

from tools import extremes
from verlstudy.course import parameters, registry, runner

ROOT = Path(__file__).resolve().parents[2]


def test_lesson_02s_ranges_are_the_ones_its_claims_hold_over():
    assert extremes.parameter_ranges(registry.get_lesson(2)) == {
        "n_leaves": (1, 100_000),
        "steps": (12, 200),
        "group_size": (4, 64),
        "lr": (0.5, 10.0),
        "kl_coef": (1e-6, 0.002),
    }


def test_every_bounded_parameter_is_a_declared_one_and_the_seed_is_left_alone():
    for lesson in registry.LESSONS:
        ranges = extremes.parameter_ranges(lesson)
        assert "seed" not in ranges
        for name, (low, high) in ranges.items():
            assert low <= high, (lesson.code, name)


def test_the_push_job_does_not_run_the_sweep():
    jobs = yaml.safe_load((ROOT / ".github/workflows/course.yml").read_text())["jobs"]
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


# ---------------------------------------------------------------- the generated sweep (issue 43 item 3)

SWEPT = 120  # parameter sets drawn per lesson in these tests (the weekly job's budget is smaller per lesson)


@functools.cache
def _validation_cell(lesson: registry.Lesson) -> tuple[types.CodeType, dict[str, object]]:
    code = [c for c in runner.read_notebook(lesson.notebook).cells if c.cell_type == "code"]
    index = next(i for i, c in enumerate(code) if "parameters" in c.metadata.get("tags", []))
    compiled = compile(code[index + 1].source, f"{lesson.code}-validation", "exec")
    return compiled, parameters.notebook_parameters(lesson.notebook)


def _validate(lesson: registry.Lesson, params: dict[str, object]) -> None:
    """Run the lesson's own validation cell (the code cell after `parameters`) on `params`: raises if refused."""
    compiled, defaults = _validation_cell(lesson)
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compiled, {**defaults, **params, "device": "cpu"})


@pytest.mark.parametrize("lesson", registry.LESSONS, ids=lambda lesson: lesson.code)
def test_the_sweep_draws_the_whole_validated_space_bounds_included(lesson):
    space = extremes.parameter_space(lesson)
    assert "seed" in space, "every lesson has a seed, and the sweep draws it"
    cases = extremes.draw_cases(lesson, SWEPT)
    assert len(cases) == SWEPT
    assert cases == extremes.draw_cases(lesson, SWEPT), "the same draws every run: a failure found is found again"
    for name, spec in space.items():
        seen = [c.params[name] for c in cases]
        if spec.kind == "choice":
            assert set(seen) == set(spec.choices), (lesson.code, name)
            continue
        if spec.kind == "list":
            low, high = spec.bounds({})
            assert {len(v) for v in seen} == set(range(spec.length[0], spec.length[1] + 1)), (lesson.code, name)
            assert {x for v in seen for x in v} == set(range(low, high + 1)), (lesson.code, name)
            continue
        lows, highs = zip(*(spec.bounds(c.params) for c in cases), strict=True)
        assert all(lo <= v <= hi for v, lo, hi in zip(seen, lows, highs, strict=True)), (lesson.code, name)
        assert any(v == lo for v, lo in zip(seen, lows, strict=True)), f"{lesson.code} {name}: never at its minimum"
        assert any(v == hi for v, hi in zip(seen, highs, strict=True)), f"{lesson.code} {name}: never at its maximum"
        if name == "seed":
            assert set(range(10)) <= set(seen), f"{lesson.code}: seeds 0-9 are not all run"
            assert any(v > 2**16 for v in seen) or list(space) == ["seed"], "large seeds are drawn too"
            continue
        low, high = min(lows), max(highs)
        if high - low >= 4:  # the inside of the range too, not only its ends
            inside = {v for v in seen if low < v < high}
            assert len(inside) >= 3, f"{lesson.code} {name}: only {sorted(inside)} inside ({low}, {high})"


@pytest.mark.parametrize("lesson", registry.LESSONS, ids=lambda lesson: lesson.code)
def test_every_drawn_set_is_one_the_lesson_accepts(lesson):
    for case in extremes.draw_cases(lesson, 8):  # the corners at seed 0 and draws (the corners are the edges)
        _validate(lesson, case.params)  # a refusal raises here: the generator drew outside the validated space


def test_a_list_parameter_is_drawn_item_by_item_within_its_lengths():
    spec = extremes.parameter_space(registry.get_lesson(3))["pp_layer_counts"]
    assert spec.kind == "list" and spec.length == (2, 4) and spec.bounds({}) == (0, 8)
    found = dict((c.label, c.params["pp_layer_counts"]) for c in extremes.draw_cases(registry.get_lesson(3), 2))
    assert found == {"minimum seed 0": [0, 1], "maximum seed 0": [8, 8, 8, 8]}  # never all zero: 03 refuses that


def test_the_corners_at_seed_0_come_first_then_every_corner_at_seeds_1_to_9():
    lesson = registry.get_lesson(5)
    cases = extremes.draw_cases(lesson, 40)
    assert [c.label for c in cases[:2]] == ["minimum seed 0", "maximum seed 0"]
    assert {c.params["seed"] for c in cases if c.label.startswith("minimum")} == set(range(10))
    assert cases[0].params == {"vocab": 2, "hidden": 1, "n_layers": 2, "n_shards": 1, "n_tokens": 1, "seed": 0}


def test_a_planted_failing_claim_is_reported_with_the_lesson_and_its_parameters(tmp_path):
    lesson = registry.get_lesson(9)

    def planted(params: dict[str, object]) -> list[str]:
        if params["hidden"] == 4096:
            return ["planted: the engine offloads nothing at hidden=4096"]
        if params["seed"] == 1 and params["hidden"] == 1:
            raise ValueError("planted\nover two lines")
        return []

    jobs = [(case, "mechanism") for case in extremes.draw_cases(lesson, 6)]
    lines: list[str] = []
    outcomes = extremes.sweep(jobs, tmp_path, workers=2, mechanisms={9: planted}, say=lines.append)
    failures = extremes.failure_lines(outcomes)
    assert len(lines) == len(jobs) and all("\n" not in line for line in [*lines, *failures])
    assert any(
        line.startswith("FAILED lesson 09 (mechanism, maximum seed 0) at hidden=4096, diff_context=10, seed=0: ")
        and "planted: the engine offloads nothing at hidden=4096" in line
        for line in failures
    ), failures
    raised = [line for line in failures if "(mechanism, minimum seed 1)" in line]
    assert raised and raised[0].endswith("ValueError: planted over two lines"), failures
    assert not any("hidden=1, diff_context=0, seed=0" in line for line in failures), "the minimum corner held"


def test_the_sweep_command_fails_on_a_planted_claim_and_says_so(monkeypatch, capsys):
    monkeypatch.setattr(extremes, "MECHANISMS", {9: lambda params: ["planted"] if params["seed"] == 0 else []})
    monkeypatch.setattr(extremes, "NOTEBOOK_CASES", 0)  # no notebook: the planted mechanism is the whole run
    assert extremes.main(["9", "--cases", "3"]) == 1
    out, err = capsys.readouterr()
    assert "FAILED lesson 09 (mechanism, minimum seed 0) at hidden=1, diff_context=0, seed=0: planted" in err
    assert "sweep: 1 of 3 runs held every claim" in out


def test_the_weekly_sweep_job_runs_make_extremes_on_a_schedule_and_by_hand():
    workflow = yaml.safe_load((ROOT / ".github/workflows/sweep.yml").read_text())
    triggers = workflow[True] if True in workflow else workflow["on"]  # YAML 1.1 reads the key `on` as True
    assert "schedule" in triggers and "workflow_dispatch" in triggers
    runs = [step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"]]
    assert any(run.startswith("make extremes") for run in runs)
    assert "extremes:" in (ROOT / "Makefile").read_text() and "--cases $(CASES)" in (ROOT / "Makefile").read_text()
