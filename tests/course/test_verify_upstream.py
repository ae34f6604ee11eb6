"""verify-upstream: our helpers agree with upstream verl's functions, and a planted difference is caught."""

import pytest

from verlstudy.course.cli import main
from verlstudy.course import verify

pytest.importorskip("verlstudy.kit.upstream")
try:
    from verlstudy.kit.upstream import verl_version

    VERL = verl_version()
except ImportError:  # pragma: no cover - make setup installs verl
    VERL = None
needs_verl = pytest.mark.skipif(VERL is None, reason="verl is not installed (make setup installs it)")


@needs_verl
def test_every_comparable_lesson_agrees_on_at_least_300_cases(capsys):
    assert main(["verify-upstream", "--cases", "300"]) == 0
    out = capsys.readouterr().out
    rows = verify.verify_all(cases=300)
    compared = [r for r in rows if r.status != "not comparable"]
    assert {r.lesson for r in compared} == {"02", "03", "04", "07"}
    assert all(r.status == "agree" for r in compared)
    assert all(r.cases >= 300 for r in compared if "transformer_impl" not in r.upstream)
    lessons_listed = {r.lesson for r in rows}
    assert lessons_listed == {f"{n:02d}" for n in range(10)}, "every lesson has a row, comparable or not"
    assert "not comparable" in out and out.count("| agree |") == len(compared)


@needs_verl
def test_a_planted_difference_is_reported_with_the_first_differing_case(monkeypatch, capsys):
    import verlstudy.lessons.l04_thd.thd as thd

    real = thd.pad_nested

    def off_by_alignment(ids, pad, tp, cp):  # forgets the cp*2 factor of zigzag context parallelism
        return real(ids, pad, tp, 1)

    row = verify.compare_thd_padding(cases=300, ours=off_by_alignment)
    assert row.status == "differ" and row.detail.startswith("case ") and "cp=" in row.detail
    monkeypatch.setattr(thd, "pad_nested", off_by_alignment)
    assert main(["verify-upstream", "--cases", "50"]) == 1
    assert "| differ |" in capsys.readouterr().out


@needs_verl
def test_a_detach_tree_that_always_copies_is_caught():
    from verlstudy.common.trees import detach_tree_always

    row = verify.compare_detach_tree(cases=300, ours=detach_tree_always)
    assert row.status == "differ" and "same tensor object" in row.detail


def test_recording_refuses_when_anything_differs(tmp_path):
    rows = [verify.Comparison("04", "x", "0.9.1", 3, "differ", "case 2")]
    with pytest.raises(ValueError, match="some lessons differ"):
        verify.record(rows, tmp_path / "v.json")


@needs_verl
def test_lesson_cell_prints_one_line_per_comparison(capsys):
    verify.upstream_check("04", cases=20)
    verify.upstream_check("07", cases=20)
    verify.upstream_check("05")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"[upstream] verl {VERL}: verl/models/mcore/util.py::build_vlm_attn_mask_thd: agree on 20 cases"
    assert lines[1].endswith("core_algos.py::compute_policy_loss_vanilla: agree on 20 cases")
    assert lines[2].endswith("core_algos.py::compute_grpo_outcome_advantage: agree on 20 cases")
    assert lines[3].startswith(f"[upstream] verl {VERL}: checkpoint.strict in the GLM recipe: not comparable")


def test_lesson_cell_skips_in_one_line_without_verl(monkeypatch, capsys):
    from verlstudy.kit import upstream

    def absent():
        raise upstream.VerlNotInstalled("no verl")

    monkeypatch.setattr(upstream, "verl_version", absent)
    verify.upstream_check("02")
    assert capsys.readouterr().out.count("\n") == 1
    with pytest.raises(ValueError, match="unknown lesson '42'"):
        verify.upstream_check("42")


@needs_verl
def test_a_policy_loss_without_the_dual_clip_is_caught():
    from verlstudy.lessons.l07_grpo_recipe.grpo import policy_loss

    def no_dual_clip(logp, old, adv, mask, low, high, c):  # c huge: the cap for negative advantages never binds
        return policy_loss(logp, old, adv, mask, low, high, 1e9)

    row = verify.compare_policy_loss(cases=300, ours=no_dual_clip)
    assert row.status == "differ" and row.detail.startswith("case ")


@needs_verl
def test_group_advantages_with_the_population_std_are_caught():
    def population_std(rewards, scale_by_std=True):
        centred = rewards - rewards.mean(dim=1, keepdim=True)
        return centred / (rewards.std(dim=1, unbiased=False, keepdim=True) + 1e-6) if scale_by_std else centred

    row = verify.compare_group_advantages(cases=300, ours=population_std)
    assert row.status == "differ" and "rewards" in row.detail
