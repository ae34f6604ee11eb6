"""Exercise 7.2 answers: my_token_loss(ratio, advantage, clip_low, clip_high, clip_c) as verl's vanilla PPO loss."""

import numpy as np
import torch


# --- wrong ---
def w_no_dual_clip(ratio, advantage, clip_low, clip_high, clip_c):
    # forgets the dual-clip ceiling for negative advantages
    clipped = min(max(ratio, 1 - clip_low), 1 + clip_high)
    return max(-advantage * ratio, -advantage * clipped)


def w_optimistic(ratio, advantage, clip_low, clip_high, clip_c):
    # min instead of max: the optimistic, not the pessimistic, loss
    clipped = min(max(ratio, 1 - clip_low), 1 + clip_high)
    loss = min(-advantage * ratio, -advantage * clipped)
    return min(loss, -advantage * clip_c) if advantage < 0 else loss


def w_symmetric_band(ratio, advantage, clip_low, clip_high, clip_c):
    # one band [1 - clip_low, 1 + clip_low]: clip-higher ignored
    clipped = min(max(ratio, 1 - clip_low), 1 + clip_low)
    loss = max(-advantage * ratio, -advantage * clipped)
    return min(loss, -advantage * clip_c) if advantage < 0 else loss


def w_dual_clip_all_advantages(ratio, advantage, clip_low, clip_high, clip_c):
    # applies the ceiling to every advantage: a positive advantage has no ceiling
    clipped = min(max(ratio, 1 - clip_low), 1 + clip_high)
    loss = max(-advantage * ratio, -advantage * clipped)
    return min(loss, -advantage * clip_c) if advantage != 0 else loss


def w_ceiling_clip_c_only(ratio, advantage, clip_low, clip_high, clip_c):
    # caps at clip_c itself, not clip_c times the negated advantage
    clipped = min(max(ratio, 1 - clip_low), 1 + clip_high)
    loss = max(-advantage * ratio, -advantage * clipped)
    return min(loss, clip_c) if advantage < 0 else loss


def w_clip_loss_only(ratio, advantage, clip_low, clip_high, clip_c):
    # only the clipped term: not the pessimistic max of both
    clipped = min(max(ratio, 1 - clip_low), 1 + clip_high)
    loss = -advantage * clipped
    return min(loss, -advantage * clip_c) if advantage < 0 else loss


def w_sign(ratio, advantage, clip_low, clip_high, clip_c):
    # returns the objective (+A * r), not the loss (-A * r)
    clipped = min(max(ratio, 1 - clip_low), 1 + clip_high)
    obj = min(advantage * ratio, advantage * clipped)
    return max(obj, advantage * clip_c) if advantage < 0 else obj


def w_log_ratio(ratio, advantage, clip_low, clip_high, clip_c):
    # treats `ratio` as a log-ratio and exponentiates it
    r = float(np.exp(ratio))
    clipped = min(max(r, 1 - clip_low), 1 + clip_high)
    loss = max(-advantage * r, -advantage * clipped)
    return min(loss, -advantage * clip_c) if advantage < 0 else loss


def w_float16(ratio, advantage, clip_low, clip_high, clip_c):
    # computes in float16: far from 1e-6 relative
    t = torch.tensor(ratio, dtype=torch.float16)
    a = torch.tensor(advantage, dtype=torch.float16)
    clipped = t.clamp(1 - clip_low, 1 + clip_high)
    loss = torch.maximum(-a * t, -a * clipped)
    if advantage < 0:
        loss = torch.minimum(loss, -a * clip_c)
    return loss


def w_ceiling_le_zero(ratio, advantage, clip_low, clip_high, clip_c):
    # caps at the band edge -A * (1 - clip_low) instead of at ratio clip_c
    clipped = min(max(ratio, 1 - clip_low), 1 + clip_high)
    loss = max(-advantage * ratio, -advantage * clipped)
    return min(loss, -advantage * (1 - clip_low)) if advantage < 0 else loss


# --- right ---
def r_ratio_capped_first(ratio, advantage, clip_low, clip_high, clip_c):
    # caps the ratio at clip_c for a negative advantage first: the same loss, since clip_c > 1 > 1 - clip_low
    r = min(ratio, clip_c) if advantage < 0 else ratio
    clipped = min(max(r, 1 - clip_low), 1 + clip_high)
    return max(-advantage * r, -advantage * clipped)


def r_torch_like_verl(ratio, advantage, clip_low, clip_high, clip_c):
    r = torch.tensor([ratio], dtype=torch.float64)
    a = torch.tensor([advantage], dtype=torch.float64)
    pg1 = -a * r
    pg2 = -a * torch.clamp(r, 1 - clip_low, 1 + clip_high)
    clip1 = torch.maximum(pg1, pg2)
    pg3 = -a * clip_c
    clip2 = torch.min(pg3, clip1)
    return torch.where(a < 0, clip2, clip1)


def r_numpy(ratio, advantage, clip_low, clip_high, clip_c):
    clipped = np.clip(ratio, 1.0 - clip_low, 1.0 + clip_high)
    loss = np.maximum(-advantage * ratio, -advantage * clipped)
    return np.where(advantage < 0, np.minimum(loss, -advantage * clip_c), loss).item()


def r_case_analysis(ratio, advantage, clip_low, clip_high, clip_c):
    if advantage >= 0:
        # a positive advantage is clipped above only
        return -advantage * min(ratio, 1 + clip_high)
    # a negative advantage is clipped below, then capped at ratio clip_c
    return -advantage * min(max(ratio, 1 - clip_low), clip_c)


def r_python_early_return(ratio, advantage, clip_low, clip_high, clip_c):
    lower, upper = 1.0 - clip_low, 1.0 + clip_high
    unclipped = -advantage * ratio
    clipped = -advantage * (lower if ratio < lower else upper if ratio > upper else ratio)
    loss = unclipped if unclipped > clipped else clipped
    if advantage >= 0:
        return float(loss)
    ceiling = -advantage * clip_c
    return float(ceiling if ceiling < loss else loss)


WRONG = {
    "no dual clip": (w_no_dual_clip,),
    "optimistic min": (w_optimistic,),
    "symmetric band": (w_symmetric_band,),
    "ceiling for positive advantages": (w_dual_clip_all_advantages,),
    "ceiling at clip_c": (w_ceiling_clip_c_only,),
    "clipped term only": (w_clip_loss_only,),
    "objective sign": (w_sign,),
    "ratio as log-ratio": (w_log_ratio,),
    "float16": (w_float16,),
    "ceiling at 1 - clip_low": (w_ceiling_le_zero,),
}
RIGHT = {
    "torch like verl": (r_torch_like_verl,),
    "numpy where": (r_numpy,),
    "case analysis": (r_case_analysis,),
    "python early return": (r_python_early_return,),
    "ratio capped at clip_c first": (r_ratio_capped_first,),
}
UNSURE = {}
