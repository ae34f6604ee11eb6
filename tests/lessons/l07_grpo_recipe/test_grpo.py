"""grpo: group advantages, verl's clipped policy loss (hand-computed cases), the bandit."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from verlstudy.lessons.l07_grpo_recipe.bandit import (
    bandit_problem,
    max_prob_after_update,
    steps_until_below,
    tabular_policy_gradient,
    train_clip_bandit,
    train_clip_bandits,
)
from verlstudy.lessons.l07_grpo_recipe.grpo import (
    LOG_RATIO_CLAMP,
    clipped_token_loss,
    entropy,
    group_advantages,
    loss_surface,
    policy_loss,
)


def t(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


class TestGroupAdvantages:
    def test_hand_computed_group(self):
        # mean 0.5, unbiased std sqrt(1/3): advantages +-0.5 / (0.57735 + 1e-6)
        adv = group_advantages(t(1, 0, 1, 0).reshape(1, 4))
        expected = 0.5 / (math.sqrt(1 / 3) + 1e-6)
        assert adv[0].tolist() == pytest.approx([expected, -expected, expected, -expected])

    def test_constant_rewards_give_zero_not_nan(self):
        adv = group_advantages(torch.ones(3, 8))
        assert not torch.isnan(adv).any() and torch.count_nonzero(adv) == 0

    def test_a_group_of_one_keeps_its_reward_like_upstream(self):
        adv = group_advantages(t(2.0, -1.0).reshape(2, 1))
        assert adv.flatten().tolist() == pytest.approx([2.0 / (1 + 1e-6), -1.0 / (1 + 1e-6)])

    def test_without_std_scaling_only_the_mean_is_removed(self):
        adv = group_advantages(t(3, 1).reshape(1, 2), scale_by_std=False)
        assert adv.tolist() == [[1.0, -1.0]]

    def test_groups_are_independent(self):
        rewards = torch.tensor([[1.0, 0.0], [5.0, 5.0]])
        adv = group_advantages(rewards)
        assert adv[1].tolist() == [0.0, 0.0] and adv[0, 0] > 0 > adv[0, 1]

    @pytest.mark.parametrize(
        ("rewards", "kwargs", "exc", "words"),
        [
            (torch.ones(4), {}, ValueError, "rewards must be 2-D"),
            (torch.ones(2, 2, dtype=torch.long), {}, TypeError, "floating-point"),
            ([[1.0]], {}, TypeError, "must be a torch.Tensor"),
            (torch.ones(2, 2), {"epsilon": 0}, ValueError, "epsilon must be a positive number"),
            (torch.ones(2, 2), {"scale_by_std": "no"}, TypeError, "scale_by_std must be True"),
        ],
    )
    def test_bad_input(self, rewards, kwargs, exc, words):
        with pytest.raises(exc, match=words):
            group_advantages(rewards, **kwargs)


def _loss(ratio: float, adv: float, low: float = 0.2, high: float = 0.28, c: float = 10.0) -> float:
    return float(clipped_token_loss(t(ratio), t(adv), low, high, c)[0])


class TestClippedTokenLoss:
    @pytest.mark.parametrize(
        ("ratio", "adv", "low", "high", "c", "expected"),
        [
            (1.0, 2.0, 0.2, 0.28, 10.0, -2.0),  # on-policy: -A
            (1.5, 1.0, 0.2, 0.28, 10.0, -1.28),  # A > 0 above 1 + high: flat at -A(1 + high)
            (1.25, 1.0, 0.2, 0.20, 10.0, -1.2),  # symmetric clip already binds at 1.25
            (1.25, 1.0, 0.2, 0.28, 10.0, -1.25),  # clip-higher does not yet
            (0.5, 1.0, 0.2, 0.28, 10.0, -0.5),  # A > 0 below 1 - low: the unclipped term is the max
            (0.5, -1.0, 0.2, 0.28, 10.0, 0.8),  # A < 0 below 1 - low: flat at -A(1 - low)
            (2.0, -1.0, 0.2, 0.28, 10.0, 2.0),  # A < 0 above 1 + high: unclipped, grows with r
            (20.0, -1.0, 0.2, 0.28, 10.0, 10.0),  # dual clip caps at -A*c
            (20.0, -0.5, 0.2, 0.28, 3.0, 1.5),  # verl's default c = 3
            (20.0, 2.0, 0.2, 0.28, 3.0, -2.56),  # A > 0: no dual clip
            (1.1, 0.0, 0.2, 0.28, 3.0, 0.0),  # zero advantage: zero loss
        ],
    )
    def test_hand_computed_cases(self, ratio, adv, low, high, c, expected):
        assert _loss(ratio, adv, low, high, c) == pytest.approx(expected)

    @pytest.mark.parametrize(
        ("kwargs", "exc", "words"),
        [
            ({"clip_low": 1.0}, ValueError, "clip_low must be in"),
            ({"clip_high": -0.1}, ValueError, "clip_high must be >= 0"),
            ({"clip_c": 1.0}, ValueError, "clip_c must be > 1"),
            ({"clip_c": "3"}, TypeError, "clip_c must be a real number"),
            ({"clip_low": float("nan")}, TypeError, "clip_low must be a real number"),
        ],
    )
    def test_bad_clip_values(self, kwargs, exc, words):
        args = {"clip_low": 0.2, "clip_high": 0.28, "clip_c": 10.0} | kwargs
        with pytest.raises(exc, match=words):
            clipped_token_loss(t(1.0), t(1.0), **args)

    def test_shapes_must_match(self):
        with pytest.raises(ValueError, match="ratio has shape"):
            clipped_token_loss(t(1.0, 2.0), t(1.0), 0.2, 0.2, 3.0)


class TestPolicyLoss:
    def test_token_mean_and_metrics_by_hand(self):
        # ratios e^0 = 1, e^0.4 ~ 1.49, e^-0.5 ~ 0.61, e^3 ~ 20.1; last token masked out
        old = t(0.0, 0.0, 0.0, 0.0, 0.0).reshape(1, 5) - 1.0
        logp = old + t(0.0, 0.4, -0.5, 3.0, 9.0).reshape(1, 5)
        adv = t(1.0, 1.0, -1.0, -1.0, 5.0).reshape(1, 5)
        mask = t(1, 1, 1, 1, 0).reshape(1, 5)
        out = policy_loss(logp, old, adv, mask, clip_low=0.2, clip_high=0.28, clip_c=10.0)
        per_token = [-1.0, -1.28, 0.8, 10.0]  # on-policy; clipped high; clipped low; dual clip
        assert float(out.loss) == pytest.approx(sum(per_token) / 4)
        # the clipped term is the larger for tokens 2 and 3; token 4 is unclipped, then dual-clipped
        assert out.pg_clipfrac == pytest.approx(2 / 4)
        assert out.pg_clipfrac_lower == pytest.approx(1 / 4)
        assert out.ppo_kl == pytest.approx(-(0.0 + 0.4 - 0.5 + 3.0) / 4)

    def test_gradient_flows_only_where_the_loss_is_not_clipped(self):
        logp = t(0.0, 0.4, -0.5, 3.0).reshape(1, 4).requires_grad_(True)
        out = policy_loss(logp, torch.zeros(1, 4, dtype=torch.float64), t(1, 1, -1, -1).reshape(1, 4), torch.ones(1, 4))
        out.loss.backward()
        assert logp.grad.tolist()[0] == pytest.approx([-0.25, 0.0, 0.0, 0.0])

    def test_the_log_ratio_is_clamped_at_20(self):
        out = policy_loss(t(100.0).reshape(1, 1), t(0.0).reshape(1, 1), t(1.0).reshape(1, 1), torch.ones(1, 1))
        assert out.ppo_kl == -LOG_RATIO_CLAMP and math.isfinite(float(out.loss))

    def test_bool_mask_is_accepted(self):
        ones = torch.zeros(2, 3)
        out = policy_loss(ones, ones, torch.ones(2, 3), torch.tensor([[True, False, True], [True, True, False]]))
        assert float(out.loss) == pytest.approx(-1.0)

    @pytest.mark.parametrize(
        ("change", "exc", "words"),
        [
            ({"mask": torch.zeros(2, 3)}, ValueError, "mask selects no tokens"),
            ({"mask": torch.full((2, 3), 2.0)}, ValueError, "mask must hold only 0 and 1"),
            ({"mask": [[1, 1, 1]]}, TypeError, "mask must be a torch.Tensor"),
            ({"advantages": torch.ones(3, 2)}, ValueError, "advantages has shape"),
            ({"logp": torch.zeros(2, 3, dtype=torch.long)}, TypeError, "logp must be a floating-point"),
            ({"clip_c": 0.5}, ValueError, "clip_c must be > 1"),
        ],
    )
    def test_bad_input(self, change, exc, words):
        args = {"logp": torch.zeros(2, 3), "old_logp": torch.zeros(2, 3), "advantages": torch.ones(2, 3)}
        args |= {"mask": torch.ones(2, 3)} | change
        with pytest.raises(exc, match=words):
            policy_loss(**args)

    @settings(max_examples=40, deadline=None)
    @given(
        data=st.lists(
            st.tuples(st.floats(-3, 3), st.floats(-3, 3), st.floats(-2, 2), st.booleans()),
            min_size=1,
            max_size=12,
        ),
        high=st.sampled_from([0.2, 0.28]),
        c=st.sampled_from([3.0, 10.0]),
    )
    def test_agrees_with_upstream_vanilla_loss(self, data, high, c):
        _upstream_functions()  # skips without verl
        logp, old, adv, mask = (t(*col).reshape(1, -1) for col in zip(*data, strict=True))
        if mask.sum() == 0:
            mask[0, 0] = 1.0
        from verlstudy.lessons.l07_grpo_recipe.upstream import upstream_policy_loss

        up_loss, up_clipfrac, up_lower, up_kl = upstream_policy_loss(logp, old, adv, mask, 0.2, high, c)
        ours = policy_loss(logp, old, adv, mask, 0.2, high, c)
        assert float(ours.loss) == pytest.approx(up_loss, abs=1e-12)
        assert ours.pg_clipfrac == pytest.approx(up_clipfrac)
        assert ours.pg_clipfrac_lower == pytest.approx(up_lower)
        assert ours.ppo_kl == pytest.approx(up_kl)


def _upstream_functions() -> dict:
    """verl's loss and advantage functions, loaded from source without importing verl (skip if absent)."""
    from verlstudy.kit import upstream
    from verlstudy.lessons.l07_grpo_recipe import upstream as verify

    try:
        upstream.verl_root()
    except upstream.VerlNotInstalled:
        pytest.skip("verl is not installed")
    return verify.core_algos_functions()


def test_group_advantages_agree_with_upstream_grpo_outcome_advantage():
    upstream = _upstream_functions()
    gen = torch.Generator().manual_seed(0)
    rewards = torch.bernoulli(torch.full((6, 4), 0.5), generator=gen).double()
    rewards[0] = 1.0  # a constant group
    index = np.repeat(np.arange(6), 4)
    token_rewards = torch.zeros(24, 3, dtype=torch.float64)
    token_rewards[:, -1] = rewards.flatten()  # outcome reward on the last token
    up, _ = upstream["compute_grpo_outcome_advantage"](token_rewards, torch.ones(24, 3), index)
    ours = group_advantages(rewards).flatten()
    assert up[:, 0].tolist() == pytest.approx(ours.tolist())


class TestLossSurface:
    def test_gradient_is_zero_exactly_in_the_clip_regions(self):
        ratios = t(0.5, 1.0, 1.1, 1.24, 1.3, 5.0, 12.0)
        _, grad_pos = loss_surface(ratios, 1.0, 0.2, 0.28, 10.0)
        assert grad_pos == pytest.approx([-1, -1, -1, -1, 0, 0, 0])
        losses, grad_neg = loss_surface(ratios, -1.0, 0.2, 0.28, 10.0)
        assert grad_neg == pytest.approx([0, 1, 1, 1, 1, 1, 0])
        assert losses[-1] == pytest.approx(10.0)

    def test_bad_ratios(self):
        with pytest.raises(ValueError, match="positive values"):
            loss_surface(t(0.0, 1.0), 1.0, 0.2, 0.2, 3.0)
        with pytest.raises(TypeError, match="advantage must be a real number"):
            loss_surface(t(1.0), "1", 0.2, 0.2, 3.0)


def test_max_prob_after_update():
    assert max_prob_after_update(0.9, 0.2) == 1.0
    assert max_prob_after_update(0.01, 0.28) == pytest.approx(0.0128)
    with pytest.raises(ValueError, match="p_old must be a probability"):
        max_prob_after_update(1.5, 0.2)
    with pytest.raises(ValueError, match="clip_high must be a number >= 0"):
        max_prob_after_update(0.5, -1)


class TestBandit:
    def test_problem_has_the_favourite_among_the_correct_arms(self):
        logits, pass_prob = bandit_problem(prompts=5, arms=8, correct=4, seed=3)
        assert logits.shape == pass_prob.shape == (5, 8)
        assert ((pass_prob > 0).sum(dim=1) == 4).all()
        favourite = logits.argmax(dim=1)
        assert (pass_prob.gather(1, favourite[:, None]) == 0.7).all()

    def test_closed_form_gradient_matches_autograd_through_policy_loss(self):
        gen = torch.Generator().manual_seed(0)
        logits = torch.randn(3, 5, generator=gen, dtype=torch.float64)
        actions = torch.multinomial(torch.softmax(logits, -1), 4, replacement=True, generator=gen)
        old_logp = torch.log_softmax(logits, -1).gather(1, actions).detach()
        moved = logits + torch.randn(3, 5, generator=gen, dtype=torch.float64)  # ratios away from 1: clips bind
        adv = torch.randn(3, 4, generator=gen, dtype=torch.float64)
        grad, frac = tabular_policy_gradient(moved, actions, old_logp, adv, 0.2, 0.28, 1.5)
        leaf = moved.clone().requires_grad_(True)
        out = policy_loss(
            torch.log_softmax(leaf, -1).gather(1, actions), old_logp, adv, torch.ones(3, 4), 0.2, 0.28, 1.5
        )
        out.loss.backward()
        assert torch.allclose(grad, leaf.grad, atol=1e-12)
        assert frac == pytest.approx(out.pg_clipfrac)
        assert 0 < frac < 1

    def test_runs_are_deterministic_and_fast_to_describe(self):
        a = train_clip_bandit(0.2, 0.28, steps=5)
        b = train_clip_bandit(0.2, 0.28, steps=5)
        assert a == b
        assert len(a.entropy) == 6 and len(a.reward) == len(a.clipfrac) == 5
        logits, _ = bandit_problem(64, 8, 4, 0)
        assert a.entropy[0] == pytest.approx(float(entropy(logits).mean()))

    def test_clip_higher_keeps_entropy_higher_at_equal_reward(self):
        for seed in range(3):
            symmetric = train_clip_bandit(0.2, 0.2, seed=seed)
            higher = train_clip_bandit(0.2, 0.28, seed=seed)
            assert higher.entropy[-1] > symmetric.entropy[-1] + 0.03
            assert steps_until_below(higher.entropy, 0.5) > steps_until_below(symmetric.entropy, 0.5)
            assert abs(sum(higher.reward[-10:]) - sum(symmetric.reward[-10:])) / 10 < 0.02

    @staticmethod
    def one_run_alone(clips, seed, prompts, steps, n=8, epochs=4, lr=0.1):
        """The bandit loop run by run, as train_clip_bandit did before runs were stacked: the reference."""
        logits, pass_prob = bandit_problem(prompts, 8, 4, seed)
        gen = torch.Generator().manual_seed(seed + 1)
        ent, rew, clipfrac = [float(entropy(logits).mean())], [], []
        for _ in range(steps):
            actions = torch.multinomial(torch.softmax(logits, dim=-1), n, replacement=True, generator=gen)
            rewards = torch.bernoulli(pass_prob.gather(1, actions), generator=gen)
            adv = group_advantages(rewards)
            old_logp = torch.log_softmax(logits, dim=-1).gather(1, actions)
            frac_sum = 0.0
            for _ in range(epochs):
                grad, frac = tabular_policy_gradient(logits, actions, old_logp, adv, *clips)
                logits -= lr * actions.numel() * grad
                frac_sum += frac / epochs
            ent.append(float(entropy(logits).mean()))
            rew.append(float(rewards.mean()))
            clipfrac.append(frac_sum)
        return tuple(ent), tuple(rew), tuple(clipfrac)

    def test_stacked_runs_are_exactly_the_runs_alone(self):
        clips = [(0.2, 0.2, 10.0), (0.2, 0.28, 10.0), (0.1, 0.5, 1.5)]
        runs = train_clip_bandits(clips, [3, 7], prompts=16, steps=8)
        assert list(runs) == [3, 7] and all(len(r) == 3 for r in runs.values())
        for seed, per_clip in runs.items():
            for setting, run in zip(clips, per_clip, strict=True):
                assert (run.entropy, run.reward, run.clipfrac) == self.one_run_alone(setting, seed, 16, 8)
        assert train_clip_bandit(0.2, 0.28, 10.0, seed=7, prompts=16, steps=8) == runs[7][1]

    @pytest.mark.parametrize(
        ("clips", "seeds", "words"),
        [
            ([], [0], "clips must be a non-empty list"),
            ([(0.2, 0.2, 10.0)], [], "seeds must be a non-empty list of distinct seeds"),
            ([(0.2, 0.2, 10.0)], [1, 1], "seeds must be a non-empty list of distinct seeds"),
            ([(0.2, 0.2, 0.5)], [0], "clip_c must be > 1"),
        ],
    )
    def test_stacked_runs_bad_input(self, clips, seeds, words):
        with pytest.raises(ValueError, match=words):
            train_clip_bandits(clips, seeds, steps=1)

    def test_with_one_update_per_sample_the_clip_never_binds(self):
        run = train_clip_bandit(0.2, 0.2, epochs=1, steps=5)
        assert run.clipfrac == (0.0,) * 5

    @pytest.mark.parametrize(
        ("kwargs", "words"),
        [
            ({"n": 1}, "n must be >= 2"),
            ({"steps": 0}, "steps must be a positive integer"),
            ({"lr": -1.0}, "lr must be a positive number"),
            ({"correct": 8}, r"correct must be in \[2, arms\)"),
        ],
    )
    def test_bad_input(self, kwargs, words):
        with pytest.raises(ValueError, match=words):
            train_clip_bandit(0.2, 0.2, **kwargs)

    def test_steps_until_below(self):
        assert steps_until_below([1.0, 0.6, 0.4], 0.5) == 2
        assert steps_until_below([1.0, 0.9], 0.5) == 2
        with pytest.raises(TypeError, match="curve must be a list or tuple of numbers"):
            steps_until_below("abc", 0.5)
        with pytest.raises(TypeError, match="threshold must be a number"):
            steps_until_below([1.0], None)

    def test_bad_seed_and_bad_shapes(self):
        with pytest.raises(ValueError, match="seed must be a non-negative integer"):
            bandit_problem(4, 8, 4, seed=-1)
        with pytest.raises(TypeError, match="favourite_logit must be a real number"):
            bandit_problem(4, 8, 4, seed=0, favourite_logit="3")
        with pytest.raises(ValueError, match="logits must be"):
            tabular_policy_gradient(
                torch.zeros(2, 3),
                torch.zeros(2, 4, dtype=torch.long),
                torch.zeros(2, 4),
                torch.zeros(2, 3),
                0.2,
                0.2,
                3.0,
            )
        with pytest.raises(ValueError, match="actions has 3 rows but logits has 2 prompts"):
            tabular_policy_gradient(
                torch.zeros(2, 3),
                torch.zeros(3, 4, dtype=torch.long),
                torch.zeros(3, 4),
                torch.zeros(3, 4),
                0.2,
                0.2,
                3.0,
            )
        with pytest.raises(TypeError, match=r"logits must be a torch\.Tensor"):
            entropy([0.0, 1.0])


@pytest.mark.parametrize(
    ("clips", "seeds", "named"),
    [
        (["abc"], [0], r"argument clips\[0\] must be a \(clip_low, clip_high, clip_c\) triple, got str 'abc'"),
        ([[0.2, 0.28]], [0], r"argument clips\[0\] must be a \(clip_low, clip_high, clip_c\) triple, got list"),
        ([(0.2, 0.28, 3.0)], None, r"argument seeds must be a list of distinct int seeds, got NoneType None"),
        ([(0.2, 0.28, 3.0)], 7, r"argument seeds must be a list of distinct int seeds, got int 7"),
        ([(0.2, 0.28, 3.0)], [[0]], r"argument seeds\[0\] must be an integer, got list \[0\]"),
    ],
)
def test_train_clip_bandits_names_an_argument_of_the_wrong_type(clips, seeds, named):
    # issue 43 item 8: clips=["abc"] ended in "_check_clips() missing 2 required positional arguments"
    from verlstudy.lessons.l07_grpo_recipe.bandit import train_clip_bandits

    with pytest.raises(TypeError, match=named):
        train_clip_bandits(clips, seeds)
