"""verify-upstream: our helpers agree with upstream verl's functions, and a planted difference is caught."""

import pytest

from verlstudy.course import registry, verify
from verlstudy.course.cli import main
from verlstudy.kit.upstream import Comparison
from verlstudy.lessons.l02_detach import upstream as l02
from verlstudy.lessons.l04_thd import upstream as l04
from verlstudy.lessons.l05_checkpoint import upstream as l05
from verlstudy.lessons.l06_external_modules import upstream as l06
from verlstudy.lessons.l07_grpo_recipe import upstream as l07

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
    assert {r.lesson for r in compared} == {"02", "03", "04", "06", "07", "09"}
    assert all(r.status == "agree" for r in compared)
    assert all(r.cases >= 300 for r in compared if "transformer_impl" not in r.upstream)
    lessons_listed = {r.lesson for r in rows}
    assert lessons_listed == {f"{n:02d}" for n in range(10)}, "every lesson has a row, comparable or not"
    assert "not comparable" in out and out.count("| agree |") == len(compared)


@needs_verl
def test_a_planted_difference_is_reported_with_the_first_differing_case(monkeypatch, capsys):
    real = l04.pad_nested

    def off_by_alignment(ids, pad, tp, cp):  # forgets the cp*2 factor of zigzag context parallelism
        return real(ids, pad, tp, 1)

    row = l04.compare_thd_padding(cases=300, ours=off_by_alignment)
    assert row.status == "differ" and row.detail.startswith("case ") and "cp=" in row.detail
    monkeypatch.setattr(l04, "pad_nested", off_by_alignment)
    assert main(["verify-upstream", "--cases", "50"]) == 1
    assert "| differ |" in capsys.readouterr().out


@needs_verl
def test_a_detach_tree_that_always_copies_is_caught():
    from verlstudy.common.trees import detach_tree_always

    row = l02.compare_detach_tree(cases=300, ours=detach_tree_always)
    assert row.status == "differ" and "same tensor object" in row.detail


def test_recording_refuses_when_anything_differs(tmp_path):
    rows = [Comparison("04", "x", "0.9.1", 3, "differ", "case 2")]
    with pytest.raises(ValueError, match="some lessons differ"):
        verify.record(rows, tmp_path / "v.json")


@needs_verl
def _printed(capsys, upstream_check, **kwargs) -> list[str]:
    upstream_check(**kwargs)
    return capsys.readouterr().out.splitlines()


def test_lesson_cell_prints_one_line_per_comparison(capsys):
    l04_lines = _printed(capsys, l04.upstream_check, cases=20)
    thd = "verl/models/mcore/util.py::build_vlm_attn_mask_thd"
    assert l04_lines[0] == f"[upstream] verl {VERL}: {thd}: agree on 20 cases"
    l07_lines = _printed(capsys, l07.upstream_check, cases=20)
    assert any(line.endswith("core_algos.py::compute_policy_loss_vanilla: agree on 20 cases") for line in l07_lines)
    assert any(line.endswith("core_algos.py::compute_grpo_outcome_advantage: agree on 20 cases") for line in l07_lines)
    l06_lines = _printed(capsys, l06.upstream_check, cases=20)
    assert l06_lines and all(line.endswith("agree on 20 cases") for line in l06_lines)
    assert any("import_external_libs" in line for line in l06_lines)
    l05_lines = _printed(capsys, l05.upstream_check)
    assert l05_lines[0].startswith(f"[upstream] verl {VERL}: checkpoint.strict")
    assert "not comparable" in l05_lines[0]


def test_lesson_cell_skips_in_one_line_without_verl(monkeypatch, capsys):
    from verlstudy.kit import upstream

    def absent(release=None):
        raise upstream.VerlNotInstalled("no verl")

    monkeypatch.setattr(upstream, "verl_root", absent)
    l02.upstream_check()
    l05.upstream_check()
    assert capsys.readouterr().out.splitlines() == [upstream.SKIP_LINE] * 2


def test_every_lesson_provides_its_upstream_rows_in_its_own_package():
    for lesson in registry.LESSONS:
        part = lesson.import_part("upstream")
        assert part is not None, f"lesson {lesson.code} has no upstream.py"
        assert bool(getattr(part, "COMPARISONS", ())) != (getattr(part, "NOT_COMPARABLE", None) is not None)
        assert callable(part.upstream_check)


def test_cases_below_one_are_refused_before_anything_runs():
    for cases in (0, -3, True, 2.5):
        with pytest.raises(ValueError, match="cases must be an integer from 1 to 100000"):
            verify.verify_all(cases=cases)


@needs_verl
def test_a_policy_loss_without_the_dual_clip_is_caught():
    from verlstudy.lessons.l07_grpo_recipe.grpo import policy_loss

    def no_dual_clip(logp, old, adv, mask, low, high, c):  # c huge: the cap for negative advantages never binds
        return policy_loss(logp, old, adv, mask, low, high, 1e9)

    row = l07.compare_policy_loss(cases=300, ours=no_dual_clip)
    assert row.status == "differ" and row.detail.startswith("case ")


@needs_verl
def test_group_advantages_with_the_population_std_are_caught():
    def population_std(rewards, scale_by_std=True):
        centred = rewards - rewards.mean(dim=1, keepdim=True)
        return centred / (rewards.std(dim=1, unbiased=False, keepdim=True) + 1e-6) if scale_by_std else centred

    row = l07.compare_group_advantages(cases=300, ours=population_std)
    assert row.status == "differ" and "rewards" in row.detail


@pytest.mark.parametrize("cases", ["0", "-3"])
def test_cases_below_one_is_one_line_and_exit_2(cases, capsys):
    assert main(["verify-upstream", "--cases", cases]) == 2
    assert (
        capsys.readouterr().err.strip()
        == f"verlstudy verify-upstream: --cases must be 1 to 100000 (inputs per comparison), got {cases}"
    )


def test_a_row_that_agreed_on_zero_cases_is_never_recorded(tmp_path):
    row = Comparison("02", "verl/x.py::f", "0.9.1", 0, "agree")
    with pytest.raises(ValueError, match="agreed on 0 cases"):
        verify.record([row], tmp_path / "verified.json")
    assert not (tmp_path / "verified.json").exists()


def test_a_lesson_with_nothing_to_call_records_how_its_facts_were_read(tmp_path):
    import json

    from verlstudy.course import verify
    from verlstudy.kit.upstream import NotComparable

    rows = [
        NotComparable("08", "docker/", "not in the package", how="read from the Dockerfiles at 3d36367").row("0.9.1")
    ]
    data = json.loads(verify.record(rows, tmp_path / "v.json").read_text())
    assert data["08"]["how"] == "read from the Dockerfiles at 3d36367"
    assert data["01"]["how"].startswith("facts read from the verl source")


def test_the_recorded_how_of_lessons_00_and_08_is_what_they_declare():
    import json

    from verlstudy.course import registry
    from verlstudy.lessons.l00_start_here.upstream import NOT_COMPARABLE as L00
    from verlstudy.lessons.l08_dependency_stack.upstream import NOT_COMPARABLE as L08

    data = json.loads((registry.data_dir() / "upstream_verified.json").read_text())
    assert (data["00"]["how"], data["08"]["how"]) == (L00.how, L08.how)


def _verl_copy(tmp_path, init='__version__ = "9.9.9"\n'):
    """A copy of verl on the path ahead of the installed one: only what a test needs of it."""
    root = tmp_path / "verl"
    root.mkdir()
    (root / "__init__.py").write_text(init)
    return root


def test_a_verl_copy_ahead_of_the_installed_one_is_named_with_its_own_version(tmp_path, monkeypatch):
    # U7: PYTHONPATH=a verl tree saying 9.9.9: every row said "verl 0.9.1" and the tree read was never named
    if VERL is None:
        pytest.skip("verl is not installed")
    from verlstudy.kit import upstream

    root = _verl_copy(tmp_path)
    monkeypatch.setattr(upstream, "verl_root", lambda release=None: root)
    read = verify.verl_read()
    assert read.shadowed and read.version == "9.9.9" and read.installed == VERL
    assert f"reading verl from {root} (it says 9.9.9), not the installed verl {VERL}" in read.line()
    moved = Comparison("09", "verl/base_config.py", VERL, 0, "moved", f"verl {VERL} has no file verl/base_config.py")
    (row,) = verify.as_read([moved], read)
    assert row.version == "9.9.9" and row.detail == f"verl 9.9.9 (at {root}) has no file verl/base_config.py"
    (root / "version").mkdir()
    (root / "version" / "version").write_text("0.9.1\n")  # as verl itself keeps it
    assert verify.verl_read().version == "0.9.1"
    monkeypatch.undo()
    installed = verify.verl_read()
    assert not installed.shadowed and installed.line().startswith(f"verify-upstream: verl {VERL} from ")
    assert verify.as_read([moved], installed) == [moved]


def test_verify_upstream_will_not_record_a_verl_copy_that_is_not_the_installed_one(tmp_path, monkeypatch, capsys):
    if VERL is None:
        pytest.skip("verl is not installed")
    from verlstudy.kit import upstream

    root = _verl_copy(tmp_path)
    monkeypatch.setattr(upstream, "verl_root", lambda release=None: root)
    agree = Comparison("00", "x", VERL, 1, "agree")
    monkeypatch.setattr(verify, "verify_all", lambda **k: [agree])
    monkeypatch.setattr(verify, "record", lambda rows: pytest.fail("nothing may be recorded"))
    assert main(["verify-upstream", "--record"]) == 2
    err = capsys.readouterr().err
    assert f"reading verl from {root}" in err and f"not recording: the verl read ({root}) is not the installed" in err


def test_a_verl_file_that_does_not_parse_is_named_in_its_row(tmp_path, monkeypatch):
    # U8: "SyntaxError: invalid syntax (<unknown>, line 697)": a lesson's ast.parse(text) named no file
    import ast

    from verlstudy.kit import upstream

    root = _verl_copy(tmp_path)
    (root / "workers").mkdir()
    broken = root / "workers" / "engine.py"
    broken.write_text("x = 1\n)(\n")
    monkeypatch.setattr(upstream, "verl_root", lambda release=None: root)

    def compare_engine_config(cases, seed):
        return ast.parse(broken.read_text())  # as lesson 09 reads it: no file name given

    lesson = registry.get_lesson(9)
    row = verify._compared(lesson, compare_engine_config, 1, 0)
    assert row.status == "error" and f"(line 2) in {broken}: this verl does not parse" in row.detail, row.detail
    named = SyntaxError("invalid syntax", (str(broken), 2, 1, ")(\n"))
    assert str(broken) in verify._syntax_error_line(named)
