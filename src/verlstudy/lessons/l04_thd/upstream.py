"""Lesson 04 runs upstream verl's own padding code: loaders with stand-ins for Megatron, and the comparison.

`verl/models/mcore/util.py` imports Megatron at the top, so its functions are loaded from source
(`verlstudy.kit.upstream.load_upstream`) into a namespace where `FakeParallelState` answers for
`megatron.core.parallel_state` (the TP/CP sizes and the CP rank a cell sets) and `FakePackedSeqParams`
for Megatron's `PackedSeqParams` (it only stores its fields). Also replaced: `is_npu_available` (False: the
GPU/CPU branch, which also makes `preprocess_for_mindspeed` return early), the module logger (quiet), and
`_packed_seq_params_supports` (False: an older Megatron without `cp_partition_mode`);
`_PACKED_SEQ_PARAMS_HAS_CP_PARTITION_MODE` and `ContextParallelLayout` are supplied. The padding, packing and
unpacking bodies are upstream's code as released.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import torch

from verlstudy.kit import upstream
from verlstudy.kit.params import check_callable, check_int, check_items, positive_int
from verlstudy.kit.upstream import Comparison, report_check
from verlstudy.lessons.l04_thd.thd import pad_nested

UTIL = "models/mcore/util.py"
PadFn = Callable[..., tuple[torch.Tensor, torch.Tensor | None]]


class FakeParallelState:
    """Stands in for `megatron.core.parallel_state` (`mpu`): one process that is rank `cp_rank` of `cp`."""

    def __init__(self, tp: int = 1, cp: int = 1, cp_rank: int = 0) -> None:
        self.tp = positive_int("tp", tp)
        self.cp = positive_int("cp", cp)
        if isinstance(cp_rank, bool) or not isinstance(cp_rank, int) or not 0 <= cp_rank < self.cp:
            raise ValueError(f"cp_rank must be an int in [0, cp={self.cp}), got {cp_rank!r}")
        self.cp_rank = cp_rank

    def get_tensor_model_parallel_world_size(self) -> int:
        return self.tp

    def get_context_parallel_world_size(self) -> int:
        return self.cp

    def get_context_parallel_rank(self) -> int:
        return self.cp_rank

    def get_context_parallel_group(self) -> None:
        return None  # only read when cp > 1, where postprocess would all-gather; the lesson runs it at cp == 1


class FakePackedSeqParams:
    """Stands in for Megatron's `PackedSeqParams`: keeps the keyword fields upstream passes (cu_seqlens_q_padded...)."""

    def __init__(self, **fields: object) -> None:
        self.__dict__.update(fields)


class _QuietLogger:
    """upstream's module logger (`logger.warning_once` on short CP sequences): the lesson's output stays quiet."""

    def warning(self, *args: object, **kwargs: object) -> None:
        return None

    warning_once = info = debug = warning


def _collaborators(mpu: FakeParallelState) -> dict[str, object]:
    return {
        "torch": torch,
        "math": math,
        "mpu": mpu,
        "is_npu_available": False,  # the GPU/CPU branch; 0.9.0's THD mask returned no mask on NPU
        "logger": _QuietLogger(),
        "PackedSeqParams": FakePackedSeqParams,
        "_packed_seq_params_supports": lambda field: False,  # an older Megatron: zigzag CP only
        "_PACKED_SEQ_PARAMS_HAS_CP_PARTITION_MODE": False,
        "ContextParallelLayout": str,  # a typing alias, named only in (stripped) annotations
    }


def load_util(names: list[str], tp: int = 1, cp: int = 1, cp_rank: int = 0, release: str | None = None) -> dict:
    """Functions of verl's models/mcore/util.py (0.9.1, or `release`), running as TP=`tp`, CP=`cp` rank `cp_rank`."""
    names = check_items("names", names, str, what="a function name in models/mcore/util.py (a str)")
    return upstream.load_upstream(UTIL, names, _collaborators(FakeParallelState(tp, cp, cp_rank)), release=release)


def vlm_mask_thd(tp: int, cp: int = 1, release: str | None = None) -> PadFn:
    """Upstream's `build_vlm_attn_mask_thd(input_ids, pad_token_id)` as released in verl `release`, at TP/CP sizes."""
    return load_util(["build_vlm_attn_mask_thd"], tp, cp, release=release)["build_vlm_attn_mask_thd"]


def as_pad_fn(release: str | None = None) -> PadFn:
    """Upstream's THD mask builder with the course's pad_fn signature `(ids, pad_id, tp, cp)`, loaded per call."""

    def pad(ids: torch.Tensor, pad_id: int, tp: int, cp: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        return vlm_mask_thd(tp, cp, release)(ids, pad_id)

    pad.__name__ = f"build_vlm_attn_mask_thd_{release or 'installed'}".replace(".", "_")
    return pad


def thd_engine(tp: int, cp: int = 1, cp_rank: int = 0) -> tuple[Callable[..., tuple], Callable[..., torch.Tensor]]:
    """Upstream's (`preprocess_thd_engine`, `postprocess_thd_engine`): pack nested tensors, unpack model outputs."""
    loaded = load_util(["preprocess_thd_engine", "postprocess_thd_engine"], tp, cp, cp_rank)
    return loaded["preprocess_thd_engine"], loaded["postprocess_thd_engine"]


def bshd_engine(tp: int, cp: int = 1) -> tuple[PadFn, Callable[..., tuple]]:
    """Upstream's (`build_vlm_attn_mask_bshd`, `preprocess_bshd_engine`): the BSHD VLM ids and the BSHD labels."""
    loaded = load_util(["build_vlm_attn_mask_bshd", "preprocess_bshd_engine"], tp, cp)
    return loaded["build_vlm_attn_mask_bshd"], loaded["preprocess_bshd_engine"]


def compare_thd_padding(cases: int = 300, seed: int = 0, ours: Callable[..., object] | None = None) -> Comparison:
    cases = positive_int("cases", cases)
    seed = check_int("seed", seed, minimum=0, kind="argument")
    if ours is not None:
        check_callable("ours", ours, what="a function (the code under comparison) or None")
    ours = ours or pad_nested
    name = "verl/models/mcore/util.py::build_vlm_attn_mask_thd"
    mpu = FakeParallelState()  # its sizes are set per case
    theirs = upstream.load_upstream(UTIL, ["build_vlm_attn_mask_thd"], {"torch": torch, "mpu": mpu})[
        "build_vlm_attn_mask_thd"
    ]
    rng = random.Random(seed)
    for i in range(cases):
        tp, cp = rng.choice([1, 2, 4, 8]), rng.choice([1, 1, 2, 4])
        mpu.tp, mpu.cp = tp, cp
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
    cases = positive_int("cases", cases)
    report_check("04", [lambda: compare_thd_padding(cases)])
