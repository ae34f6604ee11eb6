"""Exercise 7.1: my_dp_sizes(world, tp, pp, cp, ep, etp) -> (dp, edp), or ValueError."""

import math
from fractions import Fraction

import numpy as np

# The text (section 2): dense weights world = tp * cp * dp * pp; experts world = etp * ep * edp * pp; both whole,
# else ValueError; two ints (a tuple or a list).

# --- WRONG -----------------------------------------------------------------------------------------------------------


def w_no_cp(world, tp, pp, cp, ep, etp):
    # forgets CP in the dense grid
    if world % (tp * pp) or world % (etp * ep * pp):
        raise ValueError("does not divide")
    return world // (tp * pp), world // (etp * ep * pp)


def w_no_etp(world, tp, pp, cp, ep, etp):
    # forgets ETP in the expert grid
    if world % (tp * cp * pp) or world % (ep * pp):
        raise ValueError("does not divide")
    return world // (tp * cp * pp), world // (ep * pp)


def w_tp_for_experts(world, tp, pp, cp, ep, etp):
    # shards experts by TP instead of ETP
    if world % (tp * cp * pp) or world % (tp * ep * pp):
        raise ValueError("does not divide")
    return world // (tp * cp * pp), world // (tp * ep * pp)


def w_cp_for_experts(world, tp, pp, cp, ep, etp):
    # folds CP into the expert grid too
    if world % (tp * cp * pp) or world % (etp * ep * cp * pp):
        raise ValueError("does not divide")
    return world // (tp * cp * pp), world // (etp * ep * cp * pp)


def w_true_division(world, tp, pp, cp, ep, etp):
    # true division: floats, not ints
    if world % (tp * cp * pp) or world % (etp * ep * pp):
        raise ValueError("does not divide")
    return world / (tp * cp * pp), world / (etp * ep * pp)


def w_assert(world, tp, pp, cp, ep, etp):
    # assert, not ValueError
    assert world % (tp * cp * pp) == 0 and world % (etp * ep * pp) == 0, "does not divide"
    return world // (tp * cp * pp), world // (etp * ep * pp)


def w_dense_check_only(world, tp, pp, cp, ep, etp):
    # checks only the dense grid: an expert grid that does not divide passes, floored
    if world % (tp * cp * pp):
        raise ValueError("does not divide")
    return world // (tp * cp * pp), world // (etp * ep * pp)


def w_no_check(world, tp, pp, cp, ep, etp):
    # floor division, never raises
    return world // (tp * cp * pp), world // (etp * ep * pp)


def w_arithmetic_error(world, tp, pp, cp, ep, etp):
    # raises ArithmeticError, not ValueError
    if world % (tp * cp * pp) or world % (etp * ep * pp):
        raise ArithmeticError("does not divide")
    return world // (tp * cp * pp), world // (etp * ep * pp)


def w_no_pp(world, tp, pp, cp, ep, etp):
    # forgets the pipeline in both grids
    if world % (tp * cp) or world % (etp * ep):
        raise ValueError("does not divide")
    return world // (tp * cp), world // (etp * ep)


def w_swapped(world, tp, pp, cp, ep, etp):
    # returns (edp, dp)
    if world % (tp * cp * pp) or world % (etp * ep * pp):
        raise ValueError("does not divide")
    return world // (etp * ep * pp), world // (tp * cp * pp)


def w_edp_from_dp(world, tp, pp, cp, ep, etp):
    # edp = dp // ep (experts split over the dense replicas): wrong when etp != tp * cp
    if world % (tp * cp * pp):
        raise ValueError("does not divide")
    dp = world // (tp * cp * pp)
    if dp % ep:
        raise ValueError("does not divide")
    return dp, dp // ep


# --- RIGHT -----------------------------------------------------------------------------------------------------------


def r_divmod(world, tp, pp, cp, ep, etp):
    # divmod on both grids
    dp, rest_dense = divmod(world, math.prod((tp, cp, pp)))
    edp, rest_expert = divmod(world, math.prod((etp, ep, pp)))
    if rest_dense or rest_expert:
        raise ValueError(f"{world} devices do not divide into whole replicas")
    return [dp, edp]


def r_fraction(world, tp, pp, cp, ep, etp):
    # exact fractions, whole when the denominator is 1
    dp = Fraction(world, tp * cp * pp)
    edp = Fraction(world, etp * ep * pp)
    if dp.denominator != 1 or edp.denominator != 1:
        raise ValueError("not whole")
    return int(dp), int(edp)


def r_numpy(world, tp, pp, cp, ep, etp):
    # numpy int64 remainders and quotients
    sizes = np.array([tp * cp * pp, etp * ep * pp], dtype=np.int64)
    rem = np.int64(world) % sizes
    if rem.any():
        raise ValueError("world does not divide by a grid")
    dp, edp = np.int64(world) // sizes
    return dp, edp


WRONG = {
    "no CP": (w_no_cp,),
    "no ETP": (w_no_etp,),
    "TP for experts": (w_tp_for_experts,),
    "CP in the expert grid": (w_cp_for_experts,),
    "floats": (w_true_division,),
    "assert": (w_assert,),
    "dense check only": (w_dense_check_only,),
    "never raises": (w_no_check,),
    "ArithmeticError": (w_arithmetic_error,),
    "no PP": (w_no_pp,),
    "(edp, dp)": (w_swapped,),
    "edp = dp // ep": (w_edp_from_dp,),
}

RIGHT = {
    "divmod, a list": (r_divmod,),
    "fractions": (r_fraction,),
    "numpy int64": (r_numpy,),
}

UNSURE = {}
