"""Lesson 07's checkers: the references pass; plausible wrong answers fail, each with a message naming the mistake."""

import math

import numpy as np
import pytest
import torch

from conftest import Wrong, checker_tests, verdict_of
from verlstudy.kit.exercises import check_exercise, exercise_results
from verlstudy.lessons.l07_grpo_recipe.grpo import clipped_token_loss, group_advantages
from verlstudy.lessons.l07_grpo_recipe.parallel import ParallelLayout


def reference_dp_sizes(world, tp, pp, cp, ep, etp):
    if world % (tp * cp * pp) or world % (etp * ep * pp):
        raise ValueError("does not divide")
    return world // (tp * cp * pp), world // (etp * ep * pp)


def reference_token_loss(ratio, advantage, clip_low, clip_high, clip_c):
    clipped_ratio = min(max(ratio, 1 - clip_low), 1 + clip_high)
    loss = max(-advantage * ratio, -advantage * clipped_ratio)
    if advantage < 0:
        loss = min(loss, -advantage * clip_c)
    return loss


def advantages_with(epsilon, guard=False, ddof=1):
    def answer(rewards):
        n = len(rewards)
        mean = sum(rewards) / n
        std = (sum((r - mean) ** 2 for r in rewards) / (n - ddof)) ** 0.5
        if guard and std == 0:
            return [0.0] * n
        return [(r - mean) / (std + epsilon) for r in rewards]

    return answer


reference_advantages = advantages_with(1e-6)


# ---------------------------------------------------------------- 7.1


def dp_cp_in_experts(world, tp, pp, cp, ep, etp):
    if world % (tp * cp * pp) or world % (etp * ep * pp * cp):
        raise ValueError
    return world // (tp * cp * pp), world // (etp * ep * pp * cp)


def dp_never_raises(world, tp, pp, cp, ep, etp):
    return world // (tp * cp * pp), world // (etp * ep * pp)


def dp_swapped(world, tp, pp, cp, ep, etp):
    return tuple(reversed(reference_dp_sizes(world, tp, pp, cp, ep, etp)))


def dp_floats(world, tp, pp, cp, ep, etp):
    _, edp = reference_dp_sizes(world, tp, pp, cp, ep, etp)
    return world / (tp * cp * pp), float(edp)


def dp_no_cp(world, tp, pp, cp, ep, etp):
    if world % (tp * pp) or world % (etp * ep * pp):
        raise ValueError
    return world // (tp * pp), world // (etp * ep * pp)


def dp_etp_ignored(world, tp, pp, cp, ep, etp):
    if world % (tp * cp * pp) or world % (ep * pp):
        raise ValueError
    return world // (tp * cp * pp), world // (ep * pp)


def dp_hard_coded(world, tp, pp, cp, ep, etp):  # the recipe's answer, whatever the layout
    return 8, 1


def dp_same_grid(world, tp, pp, cp, ep, etp):
    if tp * cp != etp * ep:
        raise ValueError("grids differ")
    return reference_dp_sizes(world, tp, pp, cp, ep, etp)


def dp_dense_only_check(world, tp, pp, cp, ep, etp):
    if world % (tp * cp * pp):
        raise ValueError
    return world // (tp * cp * pp), world // (etp * ep * pp)


def dp_asserts(world, tp, pp, cp, ep, etp):  # the adversary's 7.1 W8: an assert, not a ValueError
    assert world % (tp * cp * pp) == 0 and world % (etp * ep * pp) == 0, "x"
    return reference_dp_sizes(world, tp, pp, cp, ep, etp)


def dp_from_dp(world, tp, pp, cp, ep, etp):  # the adversary's 7.1 W12: edp derived from dp, raising where it divides
    dp = world // (tp * cp * pp)
    if dp * tp * cp * pp != world or dp % ep:
        raise ValueError("x")
    return dp, dp * tp // (ep * etp)


def dp_with_divmod(world, tp, pp, cp, ep, etp):
    dense, rest_d = divmod(world, tp * cp * pp)
    expert, rest_e = divmod(world, pp * ep * etp)
    if rest_d or rest_e:
        raise ValueError(f"{world} devices do not divide")
    return [dense, expert]


def dp_numpy(world, tp, pp, cp, ep, etp):
    grid = np.array([tp * cp * pp, etp * ep * pp])
    if (world % grid).any():
        raise ValueError("no whole replicas")
    return tuple(int(x) for x in world // grid)


# ---------------------------------------------------------------- 7.2


def loss_no_dual(r, a, lo, hi, c):
    return max(-a * r, -a * min(max(r, 1 - lo), 1 + hi))


def loss_dual_always(r, a, lo, hi, c):
    return min(loss_no_dual(r, a, lo, hi, c), -a * c)


def loss_symmetric(r, a, lo, hi, c):
    return reference_token_loss(r, a, lo, lo, c)


def loss_min(r, a, lo, hi, c):
    return min(-a * r, -a * min(max(r, 1 - lo), 1 + hi))


def loss_objective(r, a, lo, hi, c):
    return -reference_token_loss(r, a, lo, hi, c)


def loss_zero(r, a, lo, hi, c):
    return 0.0


def loss_rounded(r, a, lo, hi, c):  # the adversary's 7.2 W11: right, but rounded to 3 decimals
    return round(reference_token_loss(r, a, lo, hi, c), 3)


def loss_cap_at_c(r, a, lo, hi, c):  # the adversary's 7.2 W10: the cap is clip_c, not scaled by the advantage
    loss = max(-a * r, -a * min(max(r, 1 - lo), 1 + hi))
    return min(loss, c) if a < 0 else loss


def loss_tensor(r, a, lo, hi, c):
    ratio, adv = torch.tensor(r, dtype=torch.float64), torch.tensor(a, dtype=torch.float64)
    loss = torch.maximum(-adv * ratio, -adv * torch.clamp(ratio, 1 - lo, 1 + hi))
    return torch.where(adv < 0, torch.minimum(loss, -adv * c), loss)


def loss_as_objective(r, a, lo, hi, c):
    objective = min(a * r, a * min(max(r, 1 - lo), 1 + hi))
    if a < 0:
        objective = max(objective, a * c)
    return -objective


# ---------------------------------------------------------------- 7.3


def adv_zero_division(rewards):
    mean = sum(rewards) / len(rewards)
    std = (sum((r - mean) ** 2 for r in rewards) / (len(rewards) - 1)) ** 0.5
    return [(r - mean) / std for r in rewards]


def adv_in_variance(rewards):
    n = len(rewards)
    mean = sum(rewards) / n
    var = sum((r - mean) ** 2 for r in rewards) / (n - 1)
    return [(r - mean) / (var + 1e-6) ** 0.5 for r in rewards]


def adv_sorted_in_place(rewards):
    rewards.sort()
    return reference_advantages(rewards)


def adv_sorted(rewards):  # the adversary's 7.3 W10
    return sorted(reference_advantages(rewards))


def adv_eps_after_division(rewards):  # the adversary's 7.3 W11: (r - m) / s + eps
    mean = sum(rewards) / len(rewards)
    std = (sum((r - mean) ** 2 for r in rewards) / (len(rewards) - 1)) ** 0.5
    return [(r - mean) / std + 1e-6 if std else 0.0 for r in rewards]


def adv_clamped(rewards):  # the tester's 7.3: epsilon as a floor under the std
    mean = sum(rewards) / len(rewards)
    std = (sum((r - mean) ** 2 for r in rewards) / (len(rewards) - 1)) ** 0.5
    return [(r - mean) / max(std, 1e-6) for r in rewards]


def adv_by_range(rewards):  # the tester's 7.3: the range for the spread
    mean = sum(rewards) / len(rewards)
    return [(r - mean) / (max(rewards) - min(rewards) + 1e-6) for r in rewards]


def adv_zero_d_tensors(rewards):  # the tester's 7.3 extra: right values, each a 0-d tensor, in a list
    t = torch.tensor(rewards, dtype=torch.float64)
    return [(r - t.mean()) / (t.std() + 1e-6) for r in t]


def adv_numpy(rewards):
    x = np.asarray(rewards, dtype=np.float64)
    return (x - x.mean()) / (x.std(ddof=1) + 1e-6)


def adv_torch(rewards):
    x = torch.tensor(rewards, dtype=torch.float64)
    return ((x - x.mean()) / (x.std() + 1e-6)).tolist()


WRONG = {
    "7.1": [
        Wrong(dp_cp_in_experts, "edp is cp times too small", why="cp in the expert grid"),
        Wrong(dp_never_raises, "raise ValueError", why="never raises"),
        Wrong(dp_swapped, "swapped", why="dp and edp swapped"),
        Wrong(dp_floats, "int", why="floats where ints are asked"),
        Wrong(dp_no_cp, "dp is cp times too large", why="cp ignored"),
        Wrong(dp_etp_ignored, "edp is etp times too large", why="etp ignored"),
        Wrong(dp_hard_coded, "read its arguments", why="the recipe's answer hard-coded"),
        Wrong(dp_same_grid, "raised ValueError", why="requires equal grids"),
        Wrong(dp_dense_only_check, "raise ValueError", why="checks only the dense grid"),
        Wrong(dp_asserts, "asks for a ValueError", why="AssertionError, not ValueError"),
        Wrong(dp_from_dp, "but this layout divides", why="raises where the layout divides"),
    ],
    "7.2": [
        Wrong(loss_rounded, "rounded", why="rounded to 3 decimals"),
        Wrong(loss_no_dual, "dual clip is missing", why="no dual clip"),
        Wrong(loss_dual_always, "only when A < 0", why="dual clip for every sign"),
        Wrong(loss_symmetric, "not 1 + clip_low", why="clip_high ignored"),
        Wrong(loss_min, ("optimistic", "unclipped"), why="min instead of max"),
        Wrong(loss_objective, "sign is flipped", why="returns the objective"),
        Wrong(lambda r, a, lo, hi, c: -a * r, ("unclipped", "optimistic"), why="no clip"),
        Wrong(loss_zero, "nothing clips", why="hard-coded"),
        Wrong(lambda r, a, lo, hi, c: "0.0", "number", why="a string"),
        Wrong(loss_cap_at_c, "clip_c itself", why="the cap not scaled by the advantage"),
    ],
    "7.3": [
        Wrong(advantages_with(1e-6, ddof=0), "population", why="population std"),
        Wrong(adv_in_variance, "inside the square root", why="epsilon in the square root"),
        Wrong(advantages_with(1e-8), "matches epsilon=1e-08", why="epsilon 1e-8"),
        Wrong(advantages_with(0.0, guard=True), "matches epsilon=0", why="no epsilon, guarded"),
        Wrong(adv_zero_division, "ZeroDivisionError", why="divides by a zero spread"),
        Wrong(lambda rewards: [float(r) for r in rewards], "subtract the group mean", why="no centring"),
        Wrong(lambda rewards: [r - sum(rewards) / len(rewards) for r in rewards], "not scaled", why="no scaling"),
        Wrong(lambda rewards: ["0"] * len(rewards), "number", why="strings"),
        Wrong(adv_sorted_in_place, "changed its input", why="input mutated"),
        Wrong(lambda rewards: reference_advantages(rewards)[:2], "one advantage per reward", why="first two only"),
        Wrong(adv_sorted, "another order", why="sorted, the order of the rewards lost"),
        Wrong(adv_eps_after_division, "after the division", why="epsilon added after dividing"),
        Wrong(lambda rewards: [round(a, 3) for a in reference_advantages(rewards)], "rounded", why="3 decimals"),
        Wrong(lambda rewards: [round(a, 4) for a in reference_advantages(rewards)], "rounded", why="4 decimals"),
        Wrong(adv_clamped, "a floor", why="the std clamped at 1e-6 (the tester's), not padded"),
        Wrong(adv_by_range, "not scaled", why="the range (max - min) for the std: 1 on a 0/1 group"),
        Wrong(adv_zero_d_tensors, "numbers are right", why="a list of 0-d tensors, a container the text does not list"),
    ],
}
RIGHT = {
    "7.1": [dp_with_divmod, dp_numpy],
    "7.2": [loss_tensor, loss_as_objective],
    "7.3": [adv_numpy, adv_torch],
}
test_wrong_answers_fail_naming_the_mistake, test_right_answers_written_differently_pass = checker_tests(WRONG, RIGHT)


@pytest.mark.parametrize(
    ("exercise_id", "reference"),
    [("7.1", reference_dp_sizes), ("7.2", reference_token_loss), ("7.3", reference_advantages)],
)
def test_references_pass_and_stubs_are_not_attempted(exercise_id, reference):
    check_exercise(exercise_id, reference)
    assert exercise_results()[exercise_id] == "correct"

    def stub(*args):
        raise NotImplementedError("exercise")

    check_exercise(exercise_id, stub)
    assert exercise_results()[exercise_id] == "not attempted"


def test_a_numpy_array_of_advantages_is_accepted():
    """Issue 27's false rejection: 7.3 refused a numpy array of the right values."""
    assert isinstance(adv_numpy([0.0, 1.0]), np.ndarray) and math.isclose(
        adv_numpy([0.0, 1.0])[1], 0.7071, rel_tol=1e-3
    )
    check_exercise("7.3", adv_numpy)
    assert exercise_results()["7.3"] == "correct"


def test_the_mechanisms_own_functions_are_refused(assert_wrong):
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


@pytest.mark.parametrize("exercise_id", ["7.1", "7.2", "7.3"])
def test_no_mechanism_function_passes(assert_mechanism_does_not_pass, exercise_id):
    assert_mechanism_does_not_pass(exercise_id, "verlstudy.lessons.l07_grpo_recipe", exclude=["train_clip_bandit"])


# The rule's wording, which no first try may print, in its message or in the named case's label the kit appends
# ("[cp enters dp, not edp]" once gave 7.1 away): which sizes shard which grid (so which product must divide the
# world), which loss term is kept and for which sign the dual clip applies, and where epsilon goes
RULE_WORDS = {
    "7.1": (
        "enters dp", "not edp", "enters edp", "does not enter", "expert grid", "dense grid", "dense weights",
        "split by cp", "etp is ignored", "only when etp is 1", "experts do not divide", "the experts do not",
        "not a multiple of", "no whole dp", "(dp 12)",
    ),
    "7.2": ("take the max", "never applies"),
    "7.3": ("to the std", "not to the variance", "belongs in the divisor"),
}  # fmt: skip


@pytest.mark.parametrize(
    ("exercise_id", "answer", "mentions", "rule"),
    [
        ("7.1", dp_cp_in_experts, "edp is cp times too small", ()),
        ("7.1", dp_no_cp, "dp is cp times too large", ()),
        ("7.1", dp_etp_ignored, "edp is etp times too large", ()),
        ("7.1", dp_dense_only_check, "does not divide", ()),
        ("7.2", loss_min, "optimistic", ("pessimistic", "the larger")),
        ("7.3", adv_in_variance, "inside the square root", ()),
        ("7.3", adv_eps_after_division, "after the division", ()),
    ],
    ids=[
        "7.1 cp in edp", "7.1 cp out of dp", "7.1 etp ignored", "7.1 dense grid only", "7.2 min", "7.3 eps in sqrt",
        "7.3 eps after",
    ],
)  # fmt: skip
def test_first_tries_name_the_slip_not_the_rule(assert_wrong, exercise_id, answer, mentions, rule):
    """Which sizes shard what, and where epsilon goes, is what the exercise asks: a first try shows the slip only."""
    verdict_text = assert_wrong(exercise_id, answer, mentions=mentions)
    said = [r for r in (*RULE_WORDS[exercise_id], *rule) if r in verdict_text]
    assert not said, verdict_text


@pytest.mark.parametrize(
    ("exercise_id", "case"), [pytest.param(i, w, id=f"{i}-{w!r}") for i, ws in WRONG.items() for w in ws]
)
def test_no_wrong_answers_first_try_states_the_rule(exercise_id, case):
    """Every listed wrong answer's first message, the named case's label included, keeps the rule's wording out."""
    verdict_text = verdict_of(exercise_id, *case.answer)
    said = [r for r in RULE_WORDS[exercise_id] if r in verdict_text]
    assert not said, verdict_text


def test_named_cases_are_labelled_by_their_input_not_by_the_rule():
    """The kit appends a failing named case's label to a first try's message: no label may state the rule."""
    from verlstudy.lessons.l07_grpo_recipe import checks

    labels = [c.name for c in (*checks._LAYOUT_CASES, *checks._LOSS_CASES, *checks.ADVANTAGE_CASES)]
    for exercise_id, words in RULE_WORDS.items():
        said = [(label, w) for label in labels for w in words if w in label]
        assert not said, f"{exercise_id}: {said}"


def test_7_3_right_numbers_in_an_unlisted_container_are_not_called_a_formula_slip(assert_wrong):
    """The report's misnamed message: sqrt(var + 1e-6) is within 1e-6 of the right values on an ordinary group."""
    verdict_text = assert_wrong("7.3", adv_zero_d_tensors, mentions="numbers are right")
    assert "epsilon" not in verdict_text and "Tensor" in verdict_text


def test_7_3_wrong_numbers_near_no_slip_get_the_plain_line():
    from verlstudy.lessons.l07_grpo_recipe import checks

    rewards = [1.0, 0.0, 0.0, 1.0]
    want = checks.reference_advantages(rewards)
    assert checks.advantage_mistake((rewards,), [w * 1.001 for w in want], want) is None
    # epsilon inside the square root gives numbers within the checker's tolerance on this group: never named here
    near_sqrt = [(r - 0.5) / math.sqrt(1 / 3 + 1e-6) for r in rewards]
    named = checks.advantage_mistake((rewards,), [torch.tensor(v) for v in near_sqrt], want)
    assert named is not None and "square root" not in named


def test_a_generator_of_right_numbers_is_named_with_the_kind_it_holds(capsys):
    # the generator was used up by the first pass, and the message read "each is  inside a generator"
    def lazy(rewards):
        mean = sum(rewards) / len(rewards)
        std = (sum((r - mean) ** 2 for r in rewards) / (len(rewards) - 1)) ** 0.5
        return ((r - mean) / (std + 1e-6) for r in rewards)

    check_exercise("7.3", lazy)
    assert "each is a float inside a generator" in capsys.readouterr().out
