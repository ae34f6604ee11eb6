"""Lesson 08's checkers: the references pass; plausible wrong answers fail, each with a message naming the mistake."""

import pytest

from verlstudy.common.refs import ref_naming_problem
from verlstudy.kit.exercises import ExerciseFailure, check_exercise, exercise_results
from verlstudy.kit.resources import data_dir
from verlstudy.lessons.l08_dependency_stack.checks import check_fix_ref, check_pip_line
from verlstudy.lessons.l08_dependency_stack.manifests import StackManifest, load_manifest, render_install_script

DATA = data_dir()
MANIFESTS = [load_manifest(DATA / "stacks" / f"ascend_megatron_{v}.toml") for v in ("0.18", "0.16")]


def _naive_swap(repo: str, ref: str) -> str:
    """Swaps whenever the ref breaks the scheme, without checking that the swap fits."""
    if ref_naming_problem(repo, ref) is None:
        return ref
    return ref.replace("core_r", "core_v") if "core_r" in ref else ref.replace("core_v", "core_r")


def _fix_ref(repo: str, ref: str) -> str:
    swapped = _naive_swap(repo, ref)
    return swapped if ref_naming_problem(repo, swapped) is None else ref


def _pip_line(m: StackManifest) -> str:
    args = [f"{c.repo[5:]}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in m.components]
    return "pip install " + " ".join(args)


def _stub(*_args):
    raise NotImplementedError("exercise")


def verdict(exercise_id, checker, *args):
    check_exercise(exercise_id, *args)
    return exercise_results()[exercise_id]


def test_fix_ref_checker(capsys):
    assert verdict("8.1", check_fix_ref, _fix_ref) == "correct"
    with pytest.raises(ExerciseFailure, match="swap r and v"):
        check_fix_ref(lambda repo, ref: ref)
    with pytest.raises(ExerciseFailure, match="return it unchanged"):
        check_fix_ref(lambda repo, ref: ref.replace("core_r", "core_X").replace("core_v", "core_r").replace("X", "v"))
    assert verdict("8.1", check_fix_ref, _stub) == "not attempted"
    assert "exercise 8.1: not attempted" in capsys.readouterr().out


def test_pip_line_checker():
    manifests = [
        load_manifest(DATA / "stacks" / "ascend_megatron_0.18.toml"),
        load_manifest(DATA / "stacks" / "ascend_megatron_0.16.toml"),
    ]
    assert verdict("8.2", check_pip_line, _pip_line, manifests) == "correct"
    only_pypi = lambda m: "pip install " + " ".join(f"{c.repo[5:]}=={c.ref}" for c in m.components if c.is_pypi)  # noqa: E731
    with pytest.raises(ExerciseFailure, match="git\\+<repo URL>@<ref>"):
        check_pip_line(only_pypi, manifests)
    with pytest.raises(ExerciseFailure, match="starting with 'pip install'"):
        check_pip_line(lambda m: None, manifests)
    with pytest.raises(ExerciseFailure, match="does not parse"):
        check_pip_line(lambda m: "pip install 'a==1", manifests)
    assert verdict("8.2", check_pip_line, _stub, manifests) == "not attempted"
    with pytest.raises(ValueError, match="at least one manifest"):
        check_pip_line(_pip_line, [])


@pytest.mark.parametrize(
    ("wrong", "mentions"),
    [
        (lambda repo, ref: ref.replace("core_r", "core_v"), "swap r and v"),  # knows only NVIDIA's scheme
        (lambda repo, ref: ref.replace("core_r", "core_X").replace("core_v", "core_r").replace("X", "v"), "unchanged"),
        (lambda repo, ref: ref.replace("core_v", "core_r"), "swap r and v"),  # knows only Ascend's scheme
        (_naive_swap, "swapped ref still breaks the scheme"),  # MindSpeed core_v0.18.0rc1 -> core_r0.18.0rc1
        (lambda repo, ref: _naive_swap(repo, ref) if "rc" not in ref else ref, "still breaks"),  # core_r0.18
    ],
    ids=["always-v", "always-swap", "always-r", "swap-unchecked", "swap-unchecked-no-patch"],
)
def test_8_1_rejects(assert_wrong, wrong, mentions):
    assert_wrong("8.1", wrong, mentions=mentions)


def test_8_2_rejects_the_install_script_in_place_of_one_pip_line(assert_wrong):
    assert_wrong("8.2", render_install_script, MANIFESTS, mentions="library's own render_install_script")
    assert_wrong("8.2", lambda m: render_install_script(m), MANIFESTS, mentions="starting with 'pip install'")


@pytest.mark.parametrize(
    ("exercise_id", "answer"),
    [("8.1", lambda fn: (fn,)), ("8.2", lambda fn: (fn, MANIFESTS))],
)
def test_no_mechanism_function_passes(assert_mechanism_does_not_pass, exercise_id, answer):
    assert_mechanism_does_not_pass(exercise_id, "verlstudy.lessons.l08_dependency_stack", answer=answer)
