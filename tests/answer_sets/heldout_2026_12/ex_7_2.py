"""7.2 my_token_loss(ratio, advantage, clip_low, clip_high, clip_c): verl's per-token vanilla PPO loss."""
import numpy as np
import torch


def _clip(r, lo, hi):
    return min(max(r, lo), hi)


def w_min_of_losses(r, a, cl, ch, c):
    loss = min(-a * r, -a * _clip(r, 1 - cl, 1 + ch))
    return min(loss, -a * c) if a < 0 else loss


def w_band_swapped(r, a, cl, ch, c):
    loss = max(-a * r, -a * _clip(r, 1 - ch, 1 + cl))
    return min(loss, -a * c) if a < 0 else loss


def w_dual_clip_always(r, a, cl, ch, c):
    return min(max(-a * r, -a * _clip(r, 1 - cl, 1 + ch)), -a * c)


def w_dual_clip_sign(r, a, cl, ch, c):
    loss = max(-a * r, -a * _clip(r, 1 - cl, 1 + ch))
    return min(loss, a * c) if a < 0 else loss


def w_dual_clip_max(r, a, cl, ch, c):
    loss = max(-a * r, -a * _clip(r, 1 - cl, 1 + ch))
    return max(loss, -a * c) if a < 0 else loss


def w_no_dual_clip(r, a, cl, ch, c):
    return max(-a * r, -a * _clip(r, 1 - cl, 1 + ch))


def w_symmetric_band(r, a, cl, ch, c):
    loss = max(-a * r, -a * _clip(r, 1 - cl, 1 + cl))
    return min(loss, -a * c) if a < 0 else loss


def w_clipped_only(r, a, cl, ch, c):
    loss = -a * _clip(r, 1 - cl, 1 + ch)
    return min(loss, -a * c) if a < 0 else loss


def w_ratio_capped_at_c(r, a, cl, ch, c):
    r = min(r, c)  # dual clip as a cap on the ratio, for every token
    return max(-a * r, -a * _clip(r, 1 - cl, 1 + ch))


def w_positive_advantage_dual(r, a, cl, ch, c):
    loss = max(-a * r, -a * _clip(r, 1 - cl, 1 + ch))
    return min(loss, a * c) if a > 0 else loss


WRONG = {
    "min of the two losses (optimistic)": (w_min_of_losses,),
    "band [1-clip_high, 1+clip_low]": (w_band_swapped,),
    "dual clip for every advantage": (w_dual_clip_always,),
    "dual-clip ceiling with the wrong sign": (w_dual_clip_sign,),
    "dual clip with max": (w_dual_clip_max,),
    "no dual clip": (w_no_dual_clip,),
    "clip_low used on both sides": (w_symmetric_band,),
    "clipped term only (no pessimistic max)": (w_clipped_only,),
    "ratio capped at clip_c for all tokens": (w_ratio_capped_at_c,),
    "dual clip on positive advantages": (w_positive_advantage_dual,),
}


def r_torch(ratio, advantage, clip_low, clip_high, clip_c):
    r = torch.tensor(ratio, dtype=torch.float64)
    a = torch.tensor(advantage, dtype=torch.float64)
    pg1 = -a * r
    pg2 = -a * torch.clamp(r, 1 - clip_low, 1 + clip_high)
    clip1 = torch.maximum(pg1, pg2)
    clip2 = torch.minimum(-a * clip_c, clip1)
    return float(torch.where(a < 0, clip2, clip1))


def r_piecewise(ratio, advantage, clip_low, clip_high, clip_c):
    if advantage > 0:
        return -advantage * min(ratio, 1 + clip_high)
    if advantage < 0:
        return -advantage * min(max(ratio, 1 - clip_low), clip_c)
    return 0.0


def r_numpy(ratio, advantage, clip_low, clip_high, clip_c):
    clipped = np.clip(ratio, 1 - clip_low, 1 + clip_high)
    loss = np.maximum(-advantage * ratio, -advantage * clipped)
    if advantage < 0:
        loss = np.minimum(loss, -advantage * clip_c)
    return float(loss)


RIGHT = {"torch, verl's shape": (r_torch,), "piecewise by advantage sign": (r_piecewise,), "numpy clip": (r_numpy,)}
