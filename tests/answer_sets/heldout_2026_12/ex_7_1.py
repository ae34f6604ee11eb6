"""7.1 my_dp_sizes(world, tp, pp, cp, ep, etp) -> (dp, edp), ValueError when not whole."""


def _check(world, dense, expert):
    if world % dense or world % expert:
        raise ValueError("does not divide")
    return world // dense, world // expert


WRONG = {
    "dp ignores cp": (lambda w, tp, pp, cp, ep, etp: _check(w, tp * pp, etp * ep * pp),),
    "edp also divided by cp": (lambda w, tp, pp, cp, ep, etp: _check(w, tp * cp * pp, etp * ep * cp * pp),),
    "edp ignores etp": (lambda w, tp, pp, cp, ep, etp: _check(w, tp * cp * pp, ep * pp),),
    "edp uses tp instead of etp": (lambda w, tp, pp, cp, ep, etp: _check(w, tp * cp * pp, tp * ep * pp),),
    "edp ignores pp": (lambda w, tp, pp, cp, ep, etp: _check(w, tp * cp * pp, etp * ep),),
    "floors, never raises": (lambda w, tp, pp, cp, ep, etp: (w // (tp * cp * pp), w // (etp * ep * pp)),),
    "true division (floats)": (lambda w, tp, pp, cp, ep, etp: (w / (tp * cp * pp), w / (etp * ep * pp)),),
}


def w_assert(world, tp, pp, cp, ep, etp):
    assert world % (tp * cp * pp) == 0 and world % (etp * ep * pp) == 0, "not divisible"
    return world // (tp * cp * pp), world // (etp * ep * pp)


def w_dense_check_only(world, tp, pp, cp, ep, etp):
    if world % (tp * cp * pp):
        raise ValueError("dense grid does not divide")
    return world // (tp * cp * pp), world // (etp * ep * pp)


def w_edp_from_dp(world, tp, pp, cp, ep, etp):
    # experts: the dense replicas regrouped, dp * tp * cp / (ep * etp)
    dense = tp * cp * pp
    if world % dense:
        raise ValueError("no whole dp")
    dp = world // dense
    num = dp * tp * cp
    if num % (ep * etp):
        raise ValueError("no whole edp")
    return dp, num // (ep * etp)


def w_both_fail(world, tp, pp, cp, ep, etp):
    dense, expert = tp * cp * pp, etp * ep * pp
    if world % dense and world % expert:
        raise ValueError("neither grid divides")
    return world // dense, world // expert


WRONG.update({
    "AssertionError instead of ValueError": (w_assert,),
    "checks only the dense grid": (w_dense_check_only,),
    "raises only when both grids fail (and, not or)": (w_both_fail,),
})


def r_divmod(world, tp, pp, cp, ep, etp):
    dp, rest = divmod(world, tp * pp * cp)
    edp, rest2 = divmod(world, ep * etp * pp)
    if rest or rest2:
        raise ValueError(f"{world} devices do not split into whole replicas")
    return dp, edp


def r_list(world, tp, pp, cp, ep, etp):
    dense, expert = tp * cp * pp, etp * ep * pp
    for size, what in ((dense, "dense"), (expert, "expert")):
        if world % size != 0:
            raise ValueError(f"world {world} not divisible by the {what} grid {size}")
    return [world // dense, world // expert]


def r_float_check(world, tp, pp, cp, ep, etp):
    dp = world / (tp * cp * pp)
    edp = world / (etp * ep * pp)
    if not (dp.is_integer() and edp.is_integer()):
        raise ValueError("not whole")
    return int(dp), int(edp)


# first filed as wrong; it is right: dp*tp*cp = world/pp, so edp = world/(pp*ep*etp) and it raises exactly when
# the reference does (moved here after the first run)
RIGHT = {"edp derived from dp (regrouping)": (w_edp_from_dp,), "divmod": (r_divmod,), "list, loop over grids": (r_list,), "float is_integer then int": (r_float_check,)}
