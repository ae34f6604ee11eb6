"""Exercise 7.2: my_token_loss(ratio, advantage, clip_low, clip_high, clip_c), held-out answers.

verl 0.9.1 compute_policy_loss_vanilla: l1 = -A r; l2 = -A clamp(r, 1 - lo, 1 + hi); c1 = max(l1, l2);
for A < 0: min(-A * clip_c, c1).
"""

import numpy as np
import torch


def _clip(x, lo, hi):
    return min(max(x, lo), hi)


# WRONG ---------------------------------------------------------------
def w_no_dual_clip(r, a, lo, hi, c):
    # forgets the dual clip for negative advantages
    return max(-a * r, -a * _clip(r, 1 - lo, 1 + hi))


def w_dual_for_all(r, a, lo, hi, c):
    # applies the ceiling to positive advantages too
    return min(max(-a * r, -a * _clip(r, 1 - lo, 1 + hi)), -a * c)


def w_optimistic(r, a, lo, hi, c):
    # min instead of max: the optimistic, not the pessimistic, loss
    loss = min(-a * r, -a * _clip(r, 1 - lo, 1 + hi))
    return min(loss, -a * c) if a < 0 else loss


def w_symmetric_low(r, a, lo, hi, c):
    # clips with clip_low on both sides
    loss = max(-a * r, -a * _clip(r, 1 - lo, 1 + lo))
    return min(loss, -a * c) if a < 0 else loss


def w_swapped_band(r, a, lo, hi, c):
    # swaps the band's edges: [1 - clip_high, 1 + clip_low]
    loss = max(-a * r, -a * _clip(r, 1 - hi, 1 + lo))
    return min(loss, -a * c) if a < 0 else loss


def w_sign(r, a, lo, hi, c):
    # the objective, not the loss: signs flipped
    loss = min(a * r, a * _clip(r, 1 - lo, 1 + hi))
    return max(loss, a * c) if a < 0 else loss


def w_clipped_only(r, a, lo, hi, c):
    # only the clipped term: the pessimistic max is lost
    loss = -a * _clip(r, 1 - lo, 1 + hi)
    return min(loss, -a * c) if a < 0 else loss


def w_ceiling_max(r, a, lo, hi, c):
    # the dual clip as a floor (max) rather than a ceiling (min)
    loss = max(-a * r, -a * _clip(r, 1 - lo, 1 + hi))
    return max(loss, -a * c) if a < 0 else loss


def w_absolute_band(r, a, lo, hi, c):
    # reads clip_low/clip_high as the band's edges themselves
    loss = max(-a * r, -a * _clip(r, lo, hi))
    return min(loss, -a * c) if a < 0 else loss


def w_float16(r, a, lo, hi, c):
    # computes in float16: far off 1e-6 relative
    t = torch.tensor([r, a, lo, hi, c], dtype=torch.float16)
    r, a, lo, hi, c = t
    loss = torch.maximum(-a * r, -a * torch.clamp(r, 1 - lo, 1 + hi))
    return float(torch.minimum(loss, -a * c) if a < 0 else loss)


# RIGHT ---------------------------------------------------------------
def r_torch_where(ratio, advantage, clip_low, clip_high, clip_c):
    r = torch.tensor([ratio], dtype=torch.float64)
    a = torch.tensor([advantage], dtype=torch.float64)
    l1 = -a * r
    l2 = -a * torch.clamp(r, 1 - clip_low, 1 + clip_high)
    c1 = torch.maximum(l1, l2)
    return torch.where(a < 0, torch.minimum(-a * clip_c, c1), c1)


def r_numpy(ratio, advantage, clip_low, clip_high, clip_c):
    clipped = np.clip(ratio, 1.0 - clip_low, 1.0 + clip_high)
    loss = np.maximum(-advantage * ratio, -advantage * clipped)
    if advantage < 0:
        loss = np.minimum(loss, -advantage * clip_c)
    return np.float64(loss)


def r_ratio_form(ratio, advantage, clip_low, clip_high, clip_c):
    # for A >= 0 the loss is -A * min(r, clip(r)); for A < 0 it is -A * min(max(r, clip(r)), c)
    clipped = _clip(ratio, 1 - clip_low, 1 + clip_high)
    if advantage >= 0:
        return -advantage * min(ratio, clipped)
    return -advantage * min(max(ratio, clipped), clip_c)


WRONG = {
    "no dual clip": (w_no_dual_clip,),
    "dual clip for every advantage": (w_dual_for_all,),
    "optimistic min": (w_optimistic,),
    "clip_low both sides": (w_symmetric_low,),
    "band edges swapped": (w_swapped_band,),
    "objective, not loss": (w_sign,),
    "clipped term only": (w_clipped_only,),
    "ceiling as a floor": (w_ceiling_max,),
    "clip values as absolute edges": (w_absolute_band,),
    "float16": (w_float16,),
}
RIGHT = {
    "torch where, float64": (r_torch_where,),
    "numpy clip": (r_numpy,),
    "factored ratio form": (r_ratio_form,),
}
UNSURE = {}
