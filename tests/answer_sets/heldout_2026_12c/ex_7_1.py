"""Exercise 7.1 answers: my_dp_sizes(world, tp, pp, cp, ep, etp) -> (dp, edp) or ValueError.

Megatron: dense grid tp * cp * pp * dp; expert grid etp * ep * pp * edp.
"""

import math

import numpy as np


# --- wrong ---
def w_cp_in_expert_grid(world, tp, pp, cp, ep, etp):
    # divides the expert grid by cp too: experts are not split by context parallelism
    d, e = tp * cp * pp, etp * ep * pp * cp
    if world % d or world % e:
        raise ValueError("does not divide")
    return world // d, world // e


def w_tp_for_experts(world, tp, pp, cp, ep, etp):
    # uses tp for the expert grid instead of etp
    d, e = tp * cp * pp, tp * ep * pp
    if world % d or world % e:
        raise ValueError("does not divide")
    return world // d, world // e


def w_forgets_cp(world, tp, pp, cp, ep, etp):
    # the dense grid without cp
    d, e = tp * pp, etp * ep * pp
    if world % d or world % e:
        raise ValueError("does not divide")
    return world // d, world // e


def w_no_check(world, tp, pp, cp, ep, etp):
    # floor division, never raises: a world that does not divide gets truncated sizes
    return world // (tp * cp * pp), world // (etp * ep * pp)


def w_assert(world, tp, pp, cp, ep, etp):
    # an assert, not the ValueError asked for
    assert world % (tp * cp * pp) == 0 and world % (etp * ep * pp) == 0, "does not divide"
    return world // (tp * cp * pp), world // (etp * ep * pp)


def w_floats(world, tp, pp, cp, ep, etp):
    # true division: floats, never whole-number ints
    if world % (tp * cp * pp) or world % (etp * ep * pp):
        raise ValueError("does not divide")
    return world / (tp * cp * pp), world / (etp * ep * pp)


def w_edp_from_dp(world, tp, pp, cp, ep, etp):
    # derives edp as dp // ep: wrong whenever etp * ep != tp * cp
    d = tp * cp * pp
    if world % d or (world // d) % ep:
        raise ValueError("does not divide")
    return world // d, world // d // ep


def w_dense_check_only(world, tp, pp, cp, ep, etp):
    # checks only the dense grid: an expert grid that does not divide passes, truncated
    if world % (tp * cp * pp):
        raise ValueError("does not divide")
    return world // (tp * cp * pp), world // (etp * ep * pp)


def w_ep_in_dense(world, tp, pp, cp, ep, etp):
    # divides the dense grid by ep too
    d, e = tp * cp * pp * ep, etp * ep * pp
    if world % d or world % e:
        raise ValueError("does not divide")
    return world // d, world // e


def w_no_pp_for_experts(world, tp, pp, cp, ep, etp):
    # forgets that pipeline stages split the experts too
    d, e = tp * cp * pp, etp * ep
    if world % d or world % e:
        raise ValueError("does not divide")
    return world // d, world // e


def w_swapped(world, tp, pp, cp, ep, etp):
    # returns (edp, dp)
    d, e = tp * cp * pp, etp * ep * pp
    if world % d or world % e:
        raise ValueError("does not divide")
    return world // e, world // d


def w_zero_division_error(world, tp, pp, cp, ep, etp):
    # raises ArithmeticError, not the ValueError asked for
    d, e = tp * cp * pp, etp * ep * pp
    if world % d or world % e:
        raise ArithmeticError("does not divide")
    return world // d, world // e


# --- right ---
def r_divmod(world, tp, pp, cp, ep, etp):
    dp, rest = divmod(world, tp * pp * cp)
    edp, rest_e = divmod(world, ep * etp * pp)
    if rest or rest_e:
        raise ValueError(f"{world} devices do not make whole replicas (remainders {rest}, {rest_e})")
    return [dp, edp]


def r_numpy(world, tp, pp, cp, ep, etp):
    sizes = np.array([tp * cp * pp, etp * ep * pp], dtype=np.int64)
    q, r = np.divmod(np.int64(world), sizes)
    if np.any(r):
        raise ValueError("layout does not divide the world")
    return q[0], q[1]


def r_helper(world, tp, pp, cp, ep, etp):
    def replicas(shard):
        if world % shard != 0:
            raise ValueError(f"world {world} is not a multiple of {shard}")
        return world // shard

    return replicas(math.prod((tp, cp, pp))), replicas(math.prod((ep, etp, pp)))


WRONG = {
    "cp in the expert grid": (w_cp_in_expert_grid,),
    "tp for experts": (w_tp_for_experts,),
    "cp forgotten": (w_forgets_cp,),
    "no divisibility check": (w_no_check,),
    "assert": (w_assert,),
    "floats": (w_floats,),
    "edp = dp // ep": (w_edp_from_dp,),
    "dense check only": (w_dense_check_only,),
    "ep in the dense grid": (w_ep_in_dense,),
    "no pp for experts": (w_no_pp_for_experts,),
    "swapped": (w_swapped,),
    "ArithmeticError": (w_zero_division_error,),
}
RIGHT = {
    "divmod, list": (r_divmod,),
    "numpy divmod": (r_numpy,),
    "helper raising": (r_helper,),
}
UNSURE = {}
