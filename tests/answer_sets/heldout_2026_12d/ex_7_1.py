"""Exercise 7.1: my_dp_sizes(world, tp, pp, cp, ep, etp) -> (dp, edp) or ValueError, held-out answers.

Megatron: world = tp * cp * dp * pp for dense weights; world = etp * ep * edp * pp for experts.
"""

import numpy as np


# WRONG ---------------------------------------------------------------
def w_no_cp(world, tp, pp, cp, ep, etp):
    # forgets cp in the dense grid
    if world % (tp * pp) or world % (etp * ep * pp):
        raise ValueError("does not divide")
    return world // (tp * pp), world // (etp * ep * pp)


def w_expert_uses_tp(world, tp, pp, cp, ep, etp):
    # folds experts with tp instead of etp
    if world % (tp * cp * pp) or world % (tp * ep * pp):
        raise ValueError("does not divide")
    return world // (tp * cp * pp), world // (tp * ep * pp)


def w_expert_with_cp(world, tp, pp, cp, ep, etp):
    # puts cp in the expert grid too
    if world % (tp * cp * pp) or world % (etp * ep * cp * pp):
        raise ValueError("does not divide")
    return world // (tp * cp * pp), world // (etp * ep * cp * pp)


def w_floor_no_error(world, tp, pp, cp, ep, etp):
    # floors silently where the world does not divide
    return world // (tp * cp * pp), world // (etp * ep * pp)


def w_true_division(world, tp, pp, cp, ep, etp):
    # true division: floats, the exercise asks for ints
    if world % (tp * cp * pp) or world % (etp * ep * pp):
        raise ValueError("does not divide")
    return world / (tp * cp * pp), world / (etp * ep * pp)


def w_assert(world, tp, pp, cp, ep, etp):
    # assert instead of ValueError
    assert world % (tp * cp * pp) == 0 and world % (etp * ep * pp) == 0, "does not divide"
    return world // (tp * cp * pp), world // (etp * ep * pp)


def w_dense_check_only(world, tp, pp, cp, ep, etp):
    # checks only the dense grid: an expert grid that does not divide passes, floored
    if world % (tp * cp * pp):
        raise ValueError("dense grid does not divide")
    return world // (tp * cp * pp), world // (etp * ep * pp)


def w_swapped(world, tp, pp, cp, ep, etp):
    # returns (edp, dp)
    if world % (tp * cp * pp) or world % (etp * ep * pp):
        raise ValueError("does not divide")
    return world // (etp * ep * pp), world // (tp * cp * pp)


def w_edp_from_dp(world, tp, pp, cp, ep, etp):
    # derives edp from dp (dp // ep): wrong whenever tp*cp != etp
    if world % (tp * cp * pp) or (world // (tp * cp * pp)) % ep:
        raise ValueError("does not divide")
    dp = world // (tp * cp * pp)
    return dp, dp // ep


def w_no_pp_expert(world, tp, pp, cp, ep, etp):
    # forgets pp in the expert grid
    if world % (tp * cp * pp) or world % (etp * ep):
        raise ValueError("does not divide")
    return world // (tp * cp * pp), world // (etp * ep)


# RIGHT ---------------------------------------------------------------
def r_divmod(world, tp, pp, cp, ep, etp):
    dp, rest = divmod(world, tp * pp * cp)
    edp, rest2 = divmod(world, ep * etp * pp)
    if rest or rest2:
        raise ValueError(
            f"{world} devices do not split into whole replicas (tp={tp} pp={pp} cp={cp} ep={ep} etp={etp})"
        )
    return [dp, edp]


def r_stepwise(world, tp, pp, cp, ep, etp):
    def whole(n, *sizes):
        for s in sizes:
            if n % s:
                raise ValueError(f"{n} not divisible by {s}")
            n //= s
        return n

    return whole(world, pp, tp, cp), whole(world, pp, ep, etp)


def r_numpy(world, tp, pp, cp, ep, etp):
    grids = np.array([tp * cp * pp, etp * ep * pp], dtype=np.int64)
    if np.any(world % grids):
        raise ValueError("world size does not divide")
    dp, edp = world // grids
    return dp, edp


WRONG = {
    "no cp": (w_no_cp,),
    "experts use tp": (w_expert_uses_tp,),
    "cp in the expert grid": (w_expert_with_cp,),
    "floors without an error": (w_floor_no_error,),
    "floats": (w_true_division,),
    "assert": (w_assert,),
    "dense grid checked only": (w_dense_check_only,),
    "swapped": (w_swapped,),
    "edp = dp // ep": (w_edp_from_dp,),
    "no pp in the expert grid": (w_no_pp_expert,),
}
RIGHT = {
    "divmod, list": (r_divmod,),
    "divide step by step": (r_stepwise,),
    "numpy grid array": (r_numpy,),
}
UNSURE = {}
