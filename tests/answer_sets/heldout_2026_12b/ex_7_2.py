"""Exercise 7.2: my_token_loss(ratio, advantage, clip_low, clip_high, clip_c), verl's per-token loss."""

import numpy as np
import torch

# verl 0.9.1 trainer/ppo/core_algos.py::compute_policy_loss_vanilla: l1 = -A*r, l2 = -A*clamp(r, 1-low, 1+high),
# c1 = max(l1, l2); l3 = -A*clip_c, c2 = min(l3, c1); loss = c2 where A < 0 else c1.


def _clip(r, lo, hi):
    return min(max(r, lo), hi)


# --- WRONG -----------------------------------------------------------------------------------------------------------


def w_min(ratio, advantage, clip_low, clip_high, clip_c):
    # min of the two losses: optimistic, not pessimistic
    c = _clip(ratio, 1 - clip_low, 1 + clip_high)
    loss = min(-advantage * ratio, -advantage * c)
    return min(loss, -advantage * clip_c) if advantage < 0 else loss


def w_no_dual(ratio, advantage, clip_low, clip_high, clip_c):
    # forgets the dual clip
    c = _clip(ratio, 1 - clip_low, 1 + clip_high)
    return max(-advantage * ratio, -advantage * c)


def w_dual_always(ratio, advantage, clip_low, clip_high, clip_c):
    # caps every token, positive advantages too
    c = _clip(ratio, 1 - clip_low, 1 + clip_high)
    return min(max(-advantage * ratio, -advantage * c), -advantage * clip_c)


def w_symmetric(ratio, advantage, clip_low, clip_high, clip_c):
    # one epsilon: clip_low on both sides
    c = _clip(ratio, 1 - clip_low, 1 + clip_low)
    loss = max(-advantage * ratio, -advantage * c)
    return min(loss, -advantage * clip_c) if advantage < 0 else loss


def w_cap_sign(ratio, advantage, clip_low, clip_high, clip_c):
    # cap at clip_c * advantage (negative), not clip_c * -advantage
    c = _clip(ratio, 1 - clip_low, 1 + clip_high)
    loss = max(-advantage * ratio, -advantage * c)
    return min(loss, advantage * clip_c) if advantage < 0 else loss


def w_objective(ratio, advantage, clip_low, clip_high, clip_c):
    # the objective to maximise, not the loss: sign flipped
    c = _clip(ratio, 1 - clip_low, 1 + clip_high)
    loss = max(-advantage * ratio, -advantage * c)
    return -(min(loss, -advantage * clip_c) if advantage < 0 else loss)


def w_cap_clipped_term_only(ratio, advantage, clip_low, clip_high, clip_c):
    # caps only the clipped term at clip_c, then takes the max: a large ratio's unclipped loss is never capped
    c = (
        min(_clip(ratio, 1 - clip_low, 1 + clip_high), clip_c)
        if advantage < 0
        else _clip(ratio, 1 - clip_low, 1 + clip_high)
    )
    return max(-advantage * ratio, -advantage * c)


def w_band_swapped(ratio, advantage, clip_low, clip_high, clip_c):
    # band [1 - clip_high, 1 + clip_low]
    c = _clip(ratio, 1 - clip_high, 1 + clip_low)
    loss = max(-advantage * ratio, -advantage * c)
    return min(loss, -advantage * clip_c) if advantage < 0 else loss


def w_floor(ratio, advantage, clip_low, clip_high, clip_c):
    # dual clip as a floor (max), not a ceiling
    c = _clip(ratio, 1 - clip_low, 1 + clip_high)
    loss = max(-advantage * ratio, -advantage * c)
    return max(loss, -advantage * clip_c) if advantage < 0 else loss


def w_upper_only(ratio, advantage, clip_low, clip_high, clip_c):
    # clips the ratio from above only
    c = min(ratio, 1 + clip_high)
    loss = max(-advantage * ratio, -advantage * c)
    return min(loss, -advantage * clip_c) if advantage < 0 else loss


def w_clipped_only(ratio, advantage, clip_low, clip_high, clip_c):
    # only the clipped term, no max with the unclipped one
    loss = -advantage * _clip(ratio, 1 - clip_low, 1 + clip_high)
    return min(loss, -advantage * clip_c) if advantage < 0 else loss


# --- RIGHT -----------------------------------------------------------------------------------------------------------


def r_torch(ratio, advantage, clip_low, clip_high, clip_c):
    # verl's tensor ops on float64 one-element tensors
    r = torch.tensor([ratio], dtype=torch.float64)
    a = torch.tensor([advantage], dtype=torch.float64)
    l1 = -a * r
    l2 = -a * torch.clamp(r, 1 - clip_low, 1 + clip_high)
    c1 = torch.maximum(l1, l2)
    c2 = torch.minimum(-a * clip_c, c1)
    return torch.where(a < 0, c2, c1)


def r_numpy(ratio, advantage, clip_low, clip_high, clip_c):
    # numpy clip and where
    a = np.float64(advantage)
    clipped = np.clip(ratio, 1.0 - clip_low, 1.0 + clip_high)
    base = np.maximum(-a * ratio, -a * clipped)
    return float(np.where(a < 0, np.minimum(base, -a * clip_c), base))


def r_by_sign(ratio, advantage, clip_low, clip_high, clip_c):
    # by the advantage's sign: -A > 0 scales the largest effective ratio, A > 0 the smallest
    if advantage == 0:
        return 0.0
    lo, hi = 1.0 - clip_low, 1.0 + clip_high
    if advantage > 0:
        return -advantage * min(ratio, max(ratio, lo) if ratio < lo else min(ratio, hi))
    effective = max(ratio, min(max(ratio, lo), hi))
    return -advantage * min(effective, clip_c)


WRONG = {
    "min (optimistic)": (w_min,),
    "no dual clip": (w_no_dual,),
    "dual clip on every sign": (w_dual_always,),
    "symmetric band": (w_symmetric,),
    "cap sign flipped": (w_cap_sign,),
    "objective, not loss": (w_objective,),
    "cap on the clipped term only": (w_cap_clipped_term_only,),
    "band swapped": (w_band_swapped,),
    "dual clip as a floor": (w_floor,),
    "upper clip only": (w_upper_only,),
    "clipped term only": (w_clipped_only,),
}

RIGHT = {
    "torch, verl's ops": (r_torch,),
    "numpy": (r_numpy,),
    "by sign": (r_by_sign,),
}

UNSURE = {}
