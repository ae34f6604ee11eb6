"""The library-answer guard at run time (issue 39 item 5): the five routes around the name check, each refused.

Each route is a learner's answer to exercise 7.3 (GRPO's group advantages) or 7.1 (the data-parallel sizes) that
hands the work to the course's own code in a way `handed_over` cannot read from names: the reference solution's
text run as code, a checker's `_reference*` wrapped, a library function kept in a list, fetched with `__import__` or
`vars(module)[...]` at call time. Each is refused with one line; code the checker hands to an answer stays callable.
"""

from __future__ import annotations

import builtins
import sys

import pytest
import torch

from verlstudy.kit import answer_guard
from verlstudy.kit.exercises import ExerciseFailure, attempts_held, check_exercise, find_checker, solution_source
from verlstudy.lessons.l07_grpo_recipe import checks as l07_checks
from verlstudy.lessons.l07_grpo_recipe import grpo


def _own_advantages(rewards):
    mean = sum(rewards) / len(rewards)
    spread = (sum((r - mean) ** 2 for r in rewards) / (len(rewards) - 1)) ** 0.5
    return [(r - mean) / (spread + 1e-6) for r in rewards]


def _judged(answer):
    with attempts_held("7.3"):
        return find_checker("7.3")(answer)


def test_a_written_answer_still_passes_and_the_guarded_code_is_restored_after():
    code = grpo.group_advantages.__code__
    _judged(_own_advantages)
    assert grpo.group_advantages.__code__ is code
    assert not hasattr(builtins, "__verlstudy_guarded_call__")
    assert grpo.group_advantages(torch.tensor([[1.0, 0.0]]))[0].tolist() == pytest.approx(
        [0.7071063, -0.7071063], rel=1e-5
    )


def test_the_reference_solutions_text_run_as_code_is_refused():
    namespace: dict[str, object] = {}
    exec(solution_source("7.3"), namespace)
    answer = next(v for k, v in namespace.items() if callable(v) and not k.startswith("__") and k != "torch")
    with pytest.raises(ExerciseFailure, match="reference solution's text run as code"):
        _judged(answer)


def test_a_lambda_around_a_checkers_own_reference_is_refused():
    reference = vars(l07_checks)["_reference_dp_sizes"]
    answer = lambda *size: reference(*size)  # noqa: E731
    refused = "course's own _reference_dp_sizes while it is checked"
    with pytest.raises(ExerciseFailure, match=refused), attempts_held("7.1"):
        find_checker("7.1")(answer)


def test_a_library_function_kept_in_a_list_is_refused():
    kept = [grpo.group_advantages]

    def answer(rewards):
        return kept[0](rewards)

    with pytest.raises(ExerciseFailure, match="course's own group_advantages while it is checked"):
        _judged(answer)


def test_a_library_function_imported_at_call_time_is_refused():
    def answer(rewards):
        module = __import__("verlstudy.lessons.l07_grpo_recipe.grpo", fromlist=["group_advantages"])
        return module.group_advantages(rewards)

    with pytest.raises(ExerciseFailure, match="course's own group_advantages while it is checked"):
        _judged(answer)


def test_a_library_function_read_from_a_modules_dict_is_refused():
    def answer(rewards):
        return vars(grpo)["group_" + "advantages"](rewards)

    with pytest.raises(ExerciseFailure, match="course's own group_advantages while it is checked"):
        _judged(answer)


def test_a_refusal_is_the_verdict_line_with_no_traceback(capsys):
    kept = [grpo.group_advantages]
    with attempts_held("7.3"):
        check_exercise("7.3", lambda rewards: kept[0](rewards))
    out = capsys.readouterr().out
    verdict = out.splitlines()[0]
    assert "calls the course's own group_advantages while it is checked" in verdict and "Traceback" not in out


def test_a_function_the_checker_hands_to_the_answer_may_be_called():
    def library_split(x):
        return x * 2

    def guard(split):  # a learner's guard judges the implementation it is given
        return split(3)

    def run_checker():
        assert guard(library_split) == 6

    with answer_guard.refusing([library_split], boundary=run_checker.__code__):
        run_checker()


def test_a_function_fetched_by_the_learner_is_refused_even_deep_in_library_code():
    def library_fn():
        return 1

    def answer():
        return sorted([0], key=lambda _: library_fn())  # through the stdlib's sorted: still the learner's call

    def run_checker():
        return answer()

    with pytest.raises(answer_guard.LibraryCallRefused), answer_guard.refusing([library_fn], run_checker.__code__):
        run_checker()
    assert library_fn() == 1


def test_a_default_argument_is_not_a_hand_over():
    def library_fn():
        return 1

    def answer(fn=library_fn):
        return fn()

    def run_checker():
        return answer()

    with pytest.raises(answer_guard.LibraryCallRefused), answer_guard.refusing([library_fn], run_checker.__code__):
        run_checker()


def test_closures_and_non_functions_are_left_alone():
    x = 1

    def closure():
        return x

    assert answer_guard.guardable([closure, len, 3]) == {}


def test_the_refusal_is_not_an_exception_an_answer_could_swallow():
    assert not issubclass(answer_guard.LibraryCallRefused, Exception)


def test_packages_a_venv_reads_through_a_pth_file_are_library_code(tmp_path, monkeypatch):
    # make hub-env layers the course's venv over a hub venv made from another Python: torch and hypothesis then
    # live in a site directory that is not this interpreter's, and calling a reference from there is not the learner
    layered = tmp_path / "course-venv" / "lib" / "python3.11" / "site-packages"
    learner = tmp_path / "home" / "alice"
    monkeypatch.setattr(sys, "path", [*sys.path, str(layered), str(learner)])
    roots = answer_guard._installed_roots()
    assert str(layered / "torch" / "__init__.py").startswith(roots)
    assert not str(learner / "cell.py").startswith(roots)
    assert not str(tmp_path / "site-packages-notes" / "cell.py").startswith(roots)  # a prefix is not a folder
