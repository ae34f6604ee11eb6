"""Lesson 04's comparison with upstream verl's own function, on generated cases (`verlstudy verify-upstream`)."""

from __future__ import annotations

import random
import types
from collections.abc import Callable

import torch

from verlstudy.kit import upstream
from verlstudy.kit.upstream import Comparison, report_check
from verlstudy.lessons.l04_thd.thd import pad_nested


def compare_thd_padding(cases: int = 300, seed: int = 0, ours: Callable[..., object] | None = None) -> Comparison:
    ours = ours or pad_nested
    name = "verl/models/mcore/util.py::build_vlm_attn_mask_thd"
    sizes = {"tp": 1, "cp": 1}  # what the stand-in for Megatron's parallel state answers, set per case
    mpu = types.SimpleNamespace(
        get_tensor_model_parallel_world_size=lambda: sizes["tp"], get_context_parallel_world_size=lambda: sizes["cp"]
    )
    theirs = upstream.load_upstream("models/mcore/util.py", ["build_vlm_attn_mask_thd"], {"torch": torch, "mpu": mpu})[
        "build_vlm_attn_mask_thd"
    ]
    rng = random.Random(seed)
    for i in range(cases):
        tp, cp = rng.choice([1, 2, 4, 8]), rng.choice([1, 1, 2, 4])
        sizes.update(tp=tp, cp=cp)
        lengths = [rng.randint(1, 40) for _ in range(rng.randint(1, 4))]
        ids = torch.nested.nested_tensor([torch.randint(1, 100, (n,)) for n in lengths], layout=torch.jagged)
        padded_o, mask_o = ours(ids, 0, tp, cp)  # type: ignore[misc]
        padded_t, mask_t = theirs(ids, 0)
        if not (torch.equal(padded_o, padded_t) and torch.equal(mask_o, mask_t)):
            return Comparison(
                "04",
                name,
                upstream.verl_version(),
                i + 1,
                "differ",
                f"case {i}: lengths {lengths}, tp={tp}, cp={cp}: shapes {tuple(padded_o.shape)} vs "
                f"{tuple(padded_t.shape)}",
            )
    return Comparison("04", name, upstream.verl_version(), cases, "agree")


COMPARISONS = (compare_thd_padding,)


def upstream_check(cases: int = 50) -> None:
    """The lesson's upstream cell: one line per comparison, a skip line without verl; raises if upstream differs."""
    report_check("04", [lambda: compare_thd_padding(cases)])
