"""Lesson 03's parameters, validated in one place (the notebook's set-up cell calls `check_parameters`)."""

from __future__ import annotations

from typing import Any

from verlstudy.kit.params import check_float, check_int


def check_parameters(
    n_tokens: object,
    hidden: object,
    num_experts: object,
    topk: object,
    lr: object,
    pp_layer_counts: object,
    collective_timeout_s: object,
) -> dict[str, Any]:
    """The lesson's parameters, checked; a bad value raises ValueError/TypeError naming it and what is allowed.

    The device and the seed are not among them: the set-up cell picks the device before this and passes the seed
    to `kit.lesson_start.start_lesson` after it, as every lesson does.
    """
    experts = check_int("num_experts", num_experts, minimum=2, maximum=64)
    if not isinstance(pp_layer_counts, list) or not 2 <= len(pp_layer_counts) <= 4:
        raise ValueError(f"parameter pp_layer_counts={pp_layer_counts!r} must be a list of 2 to 4 stage layer counts")
    counts = [check_int("pp_layer_counts[i]", c, minimum=0, maximum=8) for c in pp_layer_counts]
    if not any(counts):
        raise ValueError(f"parameter pp_layer_counts={counts} needs at least one stage with MoE layers")
    return {
        # dependent bounds, where every claim was seen to hold: 8 tokens over 2 experts can leave a routing bug
        # invisible (the shifted column matches by chance), and with over 32 experts one update of top-1 routing
        # can move no token at all
        "n_tokens": check_int("n_tokens", n_tokens, minimum=max(8, 32 // experts), maximum=1024),
        "hidden": check_int("hidden", hidden, minimum=2, maximum=256),
        "num_experts": experts,
        "topk": check_int("topk", topk, minimum=1 if experts <= 32 else 2, maximum=experts - 1),
        "lr": check_float("lr", lr, minimum=1.0, maximum=10.0),
        "pp_layer_counts": counts,
        "collective_timeout_s": check_float("collective_timeout_s", collective_timeout_s, minimum=0.5, maximum=5.0),
    }
