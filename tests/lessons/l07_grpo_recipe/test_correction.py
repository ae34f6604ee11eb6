"""correction: rollout IS weights, token_k1 rejection, low_var_kl and the recipe's full loss."""

import math

import pytest
import torch

from verlstudy.lessons.l07_grpo_recipe import upstream as up
from verlstudy.lessons.l07_grpo_recipe.correction import (
    low_var_kl,
    parse_k1_bounds,
    recipe_loss,
    token_is_weights,
    token_k1_keep,
)
from verlstudy.lessons.l07_grpo_recipe.grpo import policy_loss

try:
    up.recipe_loss_functions()
    HAVE_VERL = True
except ImportError:  # pragma: no cover - make setup installs verl
    HAVE_VERL = False
needs_verl = pytest.mark.skipif(not HAVE_VERL, reason="verl is not installed")


def test_is_weights_are_truncated_at_the_threshold_then_normalised():
    log_ratio = torch.tensor([[math.log(4.0), 0.0, math.log(0.5)]], dtype=torch.float64)
    mask = torch.ones(1, 3, dtype=torch.float64)
    raw = token_is_weights(log_ratio, mask, 2.0, batch_normalize=False)
    assert raw.tolist() == [[2.0, 1.0, 0.5]]
    normed = token_is_weights(log_ratio, mask, 2.0, batch_normalize=True)
    assert normed[0].tolist() == pytest.approx([2 / (3.5 / 3), 1 / (3.5 / 3), 0.5 / (3.5 / 3)])


def test_token_k1_keeps_a_rollout_over_train_ratio_inside_the_bounds():
    ratios = torch.tensor([[0.5, 0.7, 1.0, 1.5, 1.7]], dtype=torch.float64)  # pi_rollout / pi_train
    log_ratio = -torch.log(ratios)
    kept = token_k1_keep(log_ratio, torch.ones_like(ratios), 0.6, 1.6)
    assert kept.tolist() == [[0.0, 1.0, 1.0, 1.0, 0.0]]
    assert parse_k1_bounds("0.6_1.6") == (0.6, 1.6) and parse_k1_bounds(2.0) == (0.5, 2.0)


def test_low_var_kl_is_k3_and_zero_at_the_reference():
    logp = torch.tensor([-1.0, -2.0], dtype=torch.float64)
    assert low_var_kl(logp, logp).tolist() == [0.0, 0.0]
    d = 0.3
    assert float(low_var_kl(logp[:1], logp[:1] + d)) == pytest.approx(math.exp(d) - d - 1)


def test_without_drift_or_kl_the_recipe_loss_is_the_clipped_loss():
    logp, old, _, _, adv, mask = up.toy_recipe_batch((3, 8), seed=1)
    out = recipe_loss(logp, old, old.clone(), logp.clone(), adv, mask)
    clipped = policy_loss(logp, old, adv, mask, 0.2, 0.28, 10.0).loss.item()
    assert out.rejected_fraction == 0.0 and out.kl == 0.0
    assert out.clip_only == pytest.approx(clipped) and out.total == pytest.approx(clipped)


def test_bad_inputs_are_refused_with_the_argument_named():
    x = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="threshold must be a positive number"):
        token_is_weights(x, torch.ones(2, 3), 0.0)
    with pytest.raises(ValueError, match="mask selects no tokens"):
        token_is_weights(x, torch.zeros(2, 3))
    with pytest.raises(ValueError, match="lower must be <= upper"):
        token_k1_keep(x, torch.ones(2, 3), 2.0, 1.0)
    with pytest.raises(ValueError, match="spec must look like"):
        parse_k1_bounds("a_b")
    with pytest.raises(ValueError, match="log_ratio has shape"):
        token_k1_keep(x, torch.ones(3, 2))
    with pytest.raises(ValueError, match="kl_loss_coef"):
        recipe_loss(x, x, x, x, x, torch.ones(2, 3), kl_loss_coef=-1)
    with pytest.raises(ValueError, match="rejected every token"):
        recipe_loss(x, x, x + 5, x, x, torch.ones(2, 3))


@needs_verl
def test_upstream_agrees_on_300_generated_cases():
    assert up.compare_recipe_loss(cases=300).status == "agree"


@needs_verl
def test_normalising_over_the_kept_tokens_instead_is_caught():
    def normalise_after_rejection(logp, old, rollout, ref, adv, mask, **kw):
        out = recipe_loss(logp, old, rollout, ref, adv, mask, **kw)
        kept = out.kept_mask
        raw = token_is_weights(old - rollout, mask, 2.0, batch_normalize=False)
        weights = raw / ((raw * kept).sum() / kept.sum())
        return type(out)(**{**out.__dict__, "weights": weights})

    assert up.compare_recipe_loss(cases=300, ours=normalise_after_rejection).status == "differ"


@needs_verl
def test_a_loss_fed_the_reference_for_the_policy_is_caught():
    def k3_reversed(logp, old, rollout, ref, adv, mask, **kw):
        return recipe_loss(ref, old, rollout, logp, adv, mask, **kw)  # swaps policy and reference in the KL too

    assert up.compare_recipe_loss(cases=300, ours=k3_reversed).status == "differ"


def test_an_infinite_bound_is_refused_by_name():
    # tester case LH39: '1e999' reads as inf, which the old message's rule did not exclude
    with pytest.raises(ValueError, match="both finite"):
        parse_k1_bounds("1e999")
