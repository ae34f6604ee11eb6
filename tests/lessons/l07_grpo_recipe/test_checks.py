"""Lesson 07's checkers: the references pass; plausible wrong answers fail, each with a message naming the mistake."""

import pytest
import torch

from verlstudy.kit.exercises import ExerciseFailure, check_exercise, exercise_results
from verlstudy.lessons.l07_grpo_recipe.checks import check_advantages
from verlstudy.lessons.l07_grpo_recipe.grpo import clipped_token_loss, group_advantages
from verlstudy.lessons.l07_grpo_recipe.parallel import ParallelLayout


def reference_dp_sizes(world: int, tp: int, pp: int, cp: int, ep: int, etp: int) -> tuple[int, int]:
    if world % (tp * cp * pp) or world % (etp * ep * pp):
        raise ValueError("does not divide")
    return world // (tp * cp * pp), world // (etp * ep * pp)


class TestExerciseChecker:
    def test_the_reference_answer_passes(self, capsys):
        check_exercise("7.1", reference_dp_sizes)
        assert capsys.readouterr().out.startswith("exercise 7.1: correct")

    def test_dividing_by_cp_for_experts_gets_the_hint(self, capsys):
        def wrong(world, tp, pp, cp, ep, etp):
            if world % (tp * cp * pp) or world % (etp * ep * pp):
                raise ValueError
            return world // (tp * cp * pp), world // (etp * ep * pp * cp)

        check_exercise("7.1", wrong)
        out = capsys.readouterr().out
        assert "not yet right" in out and "cp does not enter" in out

    def test_forgetting_to_raise_gets_the_hint(self, capsys):
        check_exercise("7.1", lambda w, tp, pp, cp, ep, etp: (w // (tp * cp * pp), w // (etp * ep * pp)))
        out = capsys.readouterr().out
        assert "does not divide, so raise ValueError" in out

    def test_a_stub_is_not_attempted_yet(self, capsys):
        def stub(*args):
            raise NotImplementedError("exercise 7.1")

        check_exercise("7.1", stub)
        assert capsys.readouterr().out.strip() == "exercise 7.1: not attempted"
        assert exercise_results()["7.1"] == "not attempted"


def reference_token_loss(ratio: float, advantage: float, clip_low: float, clip_high: float, clip_c: float) -> float:
    clipped_ratio = min(max(ratio, 1 - clip_low), 1 + clip_high)
    loss = max(-advantage * ratio, -advantage * clipped_ratio)
    if advantage < 0:
        loss = min(loss, -advantage * clip_c)
    return loss


def reference_advantages(rewards: list[float]) -> list[float]:
    n = len(rewards)
    mean = sum(rewards) / n
    std = (sum((r - mean) ** 2 for r in rewards) / (n - 1)) ** 0.5
    return [(r - mean) / (std + 1e-6) for r in rewards]


class TestExerciseCheckers:
    def test_reference_answers_pass(self, capsys):
        check_exercise("7.2", reference_token_loss)
        check_exercise("7.3", reference_advantages)
        out = capsys.readouterr().out.splitlines()
        assert out[0].startswith("exercise 7.2: correct") and out[1].startswith("exercise 7.3: correct")

    @pytest.mark.parametrize(
        ("wrong", "hint"),
        [
            (lambda r, a, lo, hi, c: max(-a * r, -a * min(max(r, 1 - lo), 1 + hi)), "the dual clip is missing"),
            (
                lambda r, a, lo, hi, c: min(max(-a * r, -a * min(max(r, 1 - lo), 1 + hi)), -a * c),
                "the dual clip applies only when A < 0",
            ),
            (lambda r, a, lo, hi, c: reference_token_loss(r, a, lo, lo, c), "1 + clip_high, not 1 + clip_low"),
            (lambda r, a, lo, hi, c: 0.0, "wrong for the ratio inside [1 - clip_low, 1 + clip_high]"),
        ],
    )
    def test_typical_wrong_losses_get_their_hint(self, wrong, hint, capsys):
        check_exercise("7.2", wrong)
        out = capsys.readouterr().out
        assert "not yet right" in out and hint in out

    def test_population_std_and_missing_epsilon_get_their_hints(self, capsys):
        def population(rewards):
            mean = sum(rewards) / len(rewards)
            std = (sum((r - mean) ** 2 for r in rewards) / len(rewards)) ** 0.5
            return [(r - mean) / (std + 1e-6) for r in rewards]

        def no_epsilon(rewards):
            mean = sum(rewards) / len(rewards)
            std = (sum((r - mean) ** 2 for r in rewards) / (len(rewards) - 1)) ** 0.5
            return [(r - mean) / std if std else float("nan") for r in rewards]

        check_exercise("7.3", population)
        check_exercise("7.3", no_epsilon)
        out = capsys.readouterr().out
        assert "unbiased std" in out and "add epsilon" in out

    def test_plain_python_without_epsilon_gets_the_epsilon_hint_not_a_crash(self, capsys):
        def no_epsilon(rewards):
            mean = sum(rewards) / len(rewards)
            std = (sum((r - mean) ** 2 for r in rewards) / (len(rewards) - 1)) ** 0.5
            return [(r - mean) / std for r in rewards]  # ZeroDivisionError on a constant group

        with pytest.raises(ExerciseFailure, match=r"\[1\.0, 1\.0, 1\.0, 1\.0\] raised ZeroDivisionError.*add epsilon"):
            check_advantages(no_epsilon)
        check_exercise("7.3", no_epsilon)
        out = capsys.readouterr().out
        assert out.startswith("exercise 7.3: not yet right:") and "add epsilon=1e-06" in out
        assert "your code raised" not in out

    def test_a_zero_division_on_a_varied_group_is_reported_as_the_learners_crash(self, capsys):
        check_exercise("7.3", lambda rewards: [r / 0 for r in rewards])
        assert "your code raised ZeroDivisionError" in capsys.readouterr().out

    def test_stubs_are_not_attempted_yet(self, capsys):
        def stub(*args):
            raise NotImplementedError("exercise")

        check_exercise("7.2", stub)
        check_exercise("7.3", stub)
        assert capsys.readouterr().out.splitlines() == [
            "exercise 7.2: not attempted",
            "exercise 7.3: not attempted",
        ]


def test_7_1_rejects_requiring_the_dense_and_expert_grids_to_be_equal(assert_wrong):
    def same_grid(world, tp, pp, cp, ep, etp):
        if tp * cp != etp * ep:
            raise ValueError("grids differ")
        return reference_dp_sizes(world, tp, pp, cp, ep, etp)

    assert_wrong("7.1", same_grid, mentions="raised ValueError")


def test_the_mechanisms_own_functions_are_refused(assert_wrong):
    def layout_dp_sizes(world, tp, pp, cp, ep, etp):
        layout = ParallelLayout(nodes=1, devices_per_node=world, tp=tp, pp=pp, cp=cp, ep=ep, etp=etp)
        return layout.dp, layout.edp

    assert_wrong("7.1", ParallelLayout, mentions="library's own ParallelLayout")
    assert_wrong(
        "7.2",
        lambda r, a, lo, hi, c: float(clipped_token_loss(torch.tensor([r]), torch.tensor([a]), lo, hi, c)[0]),
        mentions="calls the library's own clipped_token_loss",
    )
    assert_wrong(
        "7.3",
        lambda rewards: group_advantages(torch.tensor([rewards]))[0].tolist(),
        mentions="calls the library's own group_advantages",
    )
    assert layout_dp_sizes(512, 8, 8, 1, 64, 1) == (8, 1)  # the recipe's layout still helps a learner check by hand


@pytest.mark.parametrize("exercise_id", ["7.1", "7.2", "7.3"])
def test_no_mechanism_function_passes(assert_mechanism_does_not_pass, exercise_id):
    assert_mechanism_does_not_pass(exercise_id, "verlstudy.lessons.l07_grpo_recipe", exclude=["train_clip_bandit"])


def _advantages_with(epsilon: float, guard: bool = False):
    def answer(rewards):
        n = len(rewards)
        mean = sum(rewards) / n
        std = (sum((r - mean) ** 2 for r in rewards) / (n - 1)) ** 0.5
        if guard and std == 0:
            return [0.0] * n
        return [(r - mean) / (std + epsilon) for r in rewards]

    return answer


@pytest.mark.parametrize(
    ("answer", "mentions"),
    [
        (_advantages_with(1e-8), "matches epsilon=1e-08"),
        (_advantages_with(1e-5), "matches epsilon=1e-05"),
        (_advantages_with(0.0, guard=True), "matches epsilon=0"),
        (_advantages_with(1e-3), "matches epsilon=0.001"),
    ],
)
def test_7_3_rejects_a_wrong_epsilon_and_names_it(assert_wrong, answer, mentions):
    assert_wrong("7.3", answer, mentions=mentions)


def test_7_3_rejects_epsilon_inside_the_square_root(assert_wrong):
    def in_variance(rewards):
        n = len(rewards)
        mean = sum(rewards) / n
        var = sum((r - mean) ** 2 for r in rewards) / (n - 1)
        return [(r - mean) / (var + 1e-6) ** 0.5 for r in rewards]

    assert_wrong("7.3", in_variance, mentions="not to the variance")


def test_7_3_rejects_forgetting_the_mean_and_non_numbers(assert_wrong):
    assert_wrong("7.3", lambda rewards: [float(r) for r in rewards], mentions="subtract the group mean")
    assert_wrong("7.3", lambda rewards: ["0"] * len(rewards), mentions="return numbers")


def test_7_1_rejects_three_typical_mistakes(assert_wrong):
    def swapped(world, tp, pp, cp, ep, etp):
        return tuple(reversed(reference_dp_sizes(world, tp, pp, cp, ep, etp)))

    def expert_uses_tp(world, tp, pp, cp, ep, etp):
        if world % (tp * cp * pp) or world % (tp * ep * pp):
            raise ValueError("does not divide")
        return world // (tp * cp * pp), world // (tp * ep * pp)

    assert_wrong("7.1", swapped, mentions="expected (dp, edp)")
    assert_wrong("7.1", expert_uses_tp, mentions=("expected (dp, edp)", "raised ValueError", "raise ValueError"))
    assert_wrong(
        "7.1", lambda w, tp, pp, cp, ep, etp: (w // (tp * cp * pp), w // (etp * ep * pp)), mentions="raise ValueError"
    )
