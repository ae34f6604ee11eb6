"""Lesson 03 runs upstream verl's own router-replay and config-walk functions beside the course's versions.

`verl/utils/megatron/router_replay_utils.py` and `verl/models/mcore/util.py` import Megatron at the top, so
their functions are loaded from source (`verlstudy.kit.upstream.load_upstream`) into a namespace where this
module's stand-ins answer for Megatron: `FakeParallelState` for `mpu` (one process: TP = CP = 1, a chosen PP
rank), `FakePackedSeqParams`, identity sequence-parallel gather/scatter (TP = 1), an even-split
`get_transformer_layer_offset`, `is_vp_first_stage` and `is_vp_last_stage` answering True, the toy
`TopKRouter` and a `RouterReplay` stand-in holding a registry list. verl's own THD packers
(`preprocess_thd_engine`, `postprocess_thd_engine`) are replaced by stubs that raise (the lesson feeds BSHD
inputs with an attention mask), and `device_name` is `"cpu"`; the packing that runs is upstream's BSHD
`preprocess_packed_seqs` / `postprocess_packed_seqs`. The sorting, that packing, layer indexing and error
checks are upstream's code as released. `megatron_config` builds the TransformerConfig fields they read.
`replay_off_record_090` and `record_090` run verl 0.9.0's replay lifecycle on a registry holding a discarded
decoder's routers (targets through the model's own routers since #7340; RECORD through the registry's
positional slice). `compare_config_attr` and `compare_merge` are the generated-case comparisons of
`verlstudy verify-upstream`.
"""

from __future__ import annotations

import functools
import gc
import inspect
import math
import random
import types
from collections.abc import Callable, Sequence

import torch
from torch import nn

from verlstudy.common.heap import collector_paused
from verlstudy.kit import upstream
from verlstudy.kit.params import check_callable, check_int, positive_int
from verlstudy.kit.upstream import Comparison, report_check
from verlstudy.lessons.l03_router_replay.moe import ReplayAction, RouterReplay, TinyMoE, TopKRouter
from verlstudy.lessons.l03_router_replay.pipeline import toy_global_routes
from verlstudy.lessons.l03_router_replay.routes import local_stage_routes, model_routers, rerouted_tokens, routes_used
from verlstudy.lessons.l03_router_replay.text_config import get_text_config_attr

ROUTER_UTILS = "utils/megatron/router_replay_utils.py"
CONFIG_UTILS = "utils/megatron_utils.py"
MERGE = f"verl/{ROUTER_UTILS}::merge_router_topk_indices"
HF_ATTR = f"verl/{CONFIG_UTILS}::get_hf_config_attr"
ITER = f"verl/{ROUTER_UTILS}::iter_model_routers"
SET_DATA = f"verl/{ROUTER_UTILS}::set_router_replay_data"
ROUTER_LIST = f"verl/{ROUTER_UTILS}::RouterReplayHelper.get_micro_batch_router_list"
_CHILDREN = ("text_config", "language_config", "thinker_config", "model_config", "audio_config", "code2wav_config")


# ---------------------------------------------------------------------------------------------
# Stand-ins for Megatron, and the loaders
# ---------------------------------------------------------------------------------------------


class FakeParallelState:
    """Stands in for `megatron.core.parallel_state` (`mpu`): TP = CP = 1, pipeline rank `pp_rank` of `pp`."""

    def __init__(self, pp: int = 1, pp_rank: int = 0) -> None:
        self.pp = positive_int("pp", pp)
        if isinstance(pp_rank, bool) or not isinstance(pp_rank, int) or not 0 <= pp_rank < self.pp:
            raise ValueError(f"pp_rank must be an int in [0, pp={self.pp}), got {pp_rank!r}")
        self.pp_rank = pp_rank

    def get_pipeline_model_parallel_rank(self) -> int:
        return self.pp_rank

    def get_pipeline_model_parallel_world_size(self) -> int:
        return self.pp

    def get_tensor_model_parallel_world_size(self) -> int:
        return 1

    def get_context_parallel_world_size(self) -> int:
        return 1

    def get_context_parallel_rank(self) -> int:
        return 0

    def get_pipeline_model_parallel_group(self) -> None:
        return None  # the default (world) group: one gloo rank per pipeline stage


class FakePackedSeqParams:
    """Stands in for Megatron's `PackedSeqParams`: keeps the keyword fields upstream passes."""

    def __init__(self, **fields: object) -> None:
        self.__dict__.update(fields)


def megatron_config(
    num_layers: int, topk: int, moe_layer_freq: int | Sequence[int] | None = 1, pp: int = 1
) -> types.SimpleNamespace:
    """The TransformerConfig fields upstream's router-replay code reads, for an even pipeline split.

    `moe_layer_freq=None` is a config `is_moe_layer` rejects (in 0.9.0 as in 0.9.1); Megatron's default is 1.
    """
    freq = moe_layer_freq if moe_layer_freq is None or isinstance(moe_layer_freq, int) else list(moe_layer_freq)
    return types.SimpleNamespace(
        num_layers=positive_int("num_layers", num_layers),
        moe_router_topk=positive_int("topk", topk),
        moe_layer_freq=freq,
        fp8=None,
        pipeline_model_parallel_size=positive_int("pp", pp),
        virtual_pipeline_model_parallel_size=None,
        num_layers_in_first_pipeline_stage=None,
        num_layers_in_last_pipeline_stage=None,
        account_for_embedding_in_pipeline_split=False,
        account_for_loss_in_pipeline_split=False,
        pipeline_model_parallel_layout=None,
    )


def _layer_offset_for(mpu: FakeParallelState) -> Callable[..., int]:
    def get_transformer_layer_offset(config: object, vp_stage: int | None = None, pp_rank: int | None = None) -> int:
        rank = mpu.pp_rank if pp_rank is None else pp_rank  # Megatron's, for an even split without VPP
        return rank * (config.num_layers // config.pipeline_model_parallel_size)  # type: ignore[attr-defined]

    return get_transformer_layer_offset


def _thd_not_used(*args: object, **kwargs: object) -> None:
    raise NotImplementedError("the lesson feeds BSHD inputs with an attention mask; the THD path is not run")


# What the lesson runs of each release: verl 0.9.1's functions, and 0.9.0's lifecycle on a stale registry.
_NAMES = {
    None: (
        "merge_router_topk_indices",
        "set_router_replay_data",
        "iter_model_routers",
        "is_moe_layer",
        "pp_gather",
        "merge_nested_router_maps",
        "RouterReplayHelper",
    ),
    "0.9.0": ("merge_router_topk_indices", "set_router_replay_data", "RouterReplayHelper"),
}


@functools.cache
def _router_utils(release: str | None = None) -> tuple[dict, types.SimpleNamespace, FakeParallelState]:
    # Loaded once per process and release (forked gloo ranks inherit it); the pipeline layout is set per call
    # on `mpu`. The BSHD packers are 0.9.1's for both releases: 0.9.0's are the same lines (a test checks).
    if release not in _NAMES:
        raise ValueError(f"release must be one of {sorted(_NAMES, key=str)}, got {release!r}")
    mpu = FakeParallelState()
    packing = upstream.load_upstream(
        "models/mcore/util.py",
        ["preprocess_packed_seqs", "postprocess_packed_seqs"],
        {"torch": torch, "math": math, "mpu": mpu, "PackedSeqParams": FakePackedSeqParams},
    )
    replay_class = types.SimpleNamespace(router_instances=[])
    provided = {
        "torch": torch,
        "inspect": inspect,
        "mpu": mpu,
        "TopKRouter": TopKRouter,
        "RouterReplay": replay_class,
        "RouterReplayAction": ReplayAction,
        "get_transformer_layer_offset": _layer_offset_for(mpu),
        "gather_from_sequence_parallel_region": lambda t, tensor_parallel_output_grad=True: t,  # TP = 1
        "scatter_to_sequence_parallel_region": lambda t: t,
        "device_name": "cpu",
        "preprocess_thd_engine": _thd_not_used,
        "postprocess_thd_engine": _thd_not_used,
        "is_vp_first_stage": lambda vp_stage, vp_size: True,
        "is_vp_last_stage": lambda vp_stage, vp_size: True,
        **packing,
    }
    return upstream.load_upstream(ROUTER_UTILS, _NAMES[release], provided, release=release), replay_class, mpu


def load_router_utils(
    registry: list[RouterReplay] | None = None, pp: int = 1, pp_rank: int = 0, release: str | None = None
) -> dict:
    """verl's own router-replay functions, running on the toy model (`registry` is `RouterReplay.router_instances`).

    Loaded from source once per process (`release=None`: the installed 0.9.1; `"0.9.0"`: the functions of
    0.9.0's replay lifecycle); each call sets the pipeline layout upstream's `mpu` answers with (`pp`
    stages, this process is stage `pp_rank`) and points `RouterReplay.router_instances` at `registry`, for
    the functions of every call of that release alike.
    """
    layout = FakeParallelState(pp, pp_rank)  # validates both before anything changes
    if registry is not None and not isinstance(registry, list):
        raise TypeError(f"registry must be a list of RouterReplay, got {type(registry).__name__}")
    functions, replay_class, mpu = _router_utils(release)
    mpu.pp, mpu.pp_rank = layout.pp, layout.pp_rank
    replay_class.router_instances = [] if registry is None else registry
    return functions


def load_hf_config_attr() -> Callable[[object, str], object]:
    """verl's own `get_hf_config_attr` (it reads plain attributes: no stand-ins needed)."""
    return upstream.load_upstream(CONFIG_UTILS, ["get_hf_config_attr"])["get_hf_config_attr"]


def stage_route_map(
    rank: int, layer_counts: Sequence[int], lengths: Sequence[int], topk: int, seed: int, nested: bool
) -> torch.Tensor:
    """Stage `rank`'s slice of a seeded route map: dense (B, S, L_stage, k), or nested (one (len, L_stage, k) per
    sequence) as verl 0.9.1's default path builds it with `merge_nested_router_maps`."""
    full = toy_global_routes(len(lengths), max(lengths), sum(layer_counts), topk, 384, seed)
    start = sum(layer_counts[:rank])
    local = full[:, :, start : start + layer_counts[rank]]
    if not nested:
        return local
    return torch.nested.as_nested_tensor([local[b, :n] for b, n in enumerate(lengths)], layout=torch.jagged)


def upstream_pp_gather_worker(
    rank: int, world_size: int, layer_counts: Sequence[int], lengths: Sequence[int], topk: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """A run_local worker: verl 0.9.1's own `pp_gather` on a gloo rank that is pipeline stage `rank`, on both
    branches in one process group: (the nested map, the dense map) this rank holds afterwards."""
    gather = load_router_utils(pp=world_size, pp_rank=rank)["pp_gather"]
    config = megatron_config(max(sum(layer_counts), 1), topk, pp=world_size)
    nested, dense = (stage_route_map(rank, layer_counts, lengths, topk, seed, n) for n in (True, False))
    return gather(nested, config), gather(dense, config)


def warm_jagged() -> None:
    """Build one jagged tensor: its first use in a process imports torch's DTensor and compiler modules, which
    forked ranks then inherit instead of each paying it again.

    The garbage collector is paused while they load (they build a large heap that no collection frees, and
    collections would walk it again and again) and that heap is frozen after, so later collections skip it.
    """
    with collector_paused():
        torch.nested.as_nested_tensor([torch.zeros(1), torch.zeros(2)], layout=torch.jagged)
        gc.freeze()  # before the collector is back: its first collection would walk every new object


# ---------------------------------------------------------------------------------------------
# Upstream's functions on the toy model
# ---------------------------------------------------------------------------------------------


def upstream_record_map(
    model: nn.Module, batch: int, seq: int, tf_config: types.SimpleNamespace, registry: list | None = None
) -> torch.Tensor:
    """verl's `merge_router_topk_indices(model=model)` on a model that recorded `batch * seq` tokens.

    A full attention mask (every position valid) packs the tokens in row order, as the toy forwarded
    them. Returns upstream's (batch, seq, layers, topk) int16 map; upstream's own errors propagate.
    """
    merge = load_router_utils(registry)["merge_router_topk_indices"]
    input_ids = torch.zeros(positive_int("batch", batch), positive_int("seq", seq), dtype=torch.long)
    collected: list[torch.Tensor] = []
    merge(torch.ones_like(input_ids, dtype=torch.bool), input_ids, collected, tf_config, model=model)
    return collected[0]


def upstream_replay_targets(model: nn.Module, routes: torch.Tensor, tf_config: types.SimpleNamespace) -> None:
    """verl's `set_router_replay_data(model=model)`: give the model's routers routes (tokens, layers, topk)."""
    if not isinstance(routes, torch.Tensor) or routes.dim() != 3:
        raise TypeError("routes must be a tensor (tokens, layers, topk)")
    set_data = load_router_utils()["set_router_replay_data"]
    bshd = routes.unsqueeze(0)  # one sequence holding every token
    set_data(bshd, torch.ones(bshd.shape[:2], dtype=torch.bool), tf_config, model=model)


def upstream_stage_outcome(model: nn.Module, batch: int, seq: int, topk: int) -> tuple[str, object]:
    """What verl's RECORD merge does on one pipeline stage: ("map", routes) or ("raises", the message's head).

    The stage's config says MoE layers exactly when the model has replay-enabled routers, as a real
    stage's would; a stage whose routers captured nothing makes upstream raise here, per micro-batch,
    before `pp_gather` is ever called.
    """
    n_layers = max(len(model_routers(model)), 1)
    config = megatron_config(n_layers, topk, moe_layer_freq=1 if model_routers(model) else [0] * n_layers)
    try:
        return "map", upstream_record_map(model, batch, seq, config)
    except RuntimeError as e:
        return "raises", f"RuntimeError: {str(e).split(':')[0]}"


def _one_sequence(tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 1:
        raise TypeError("tokens must be a 1-D tensor of token ids")
    input_ids = tokens.unsqueeze(0)  # one sequence holding every token, every position valid
    return input_ids, torch.ones_like(input_ids, dtype=torch.bool)


def replay_off_record_090(
    model: nn.Module, tokens: torch.Tensor, routes: torch.Tensor, registry: list, tf_config: types.SimpleNamespace
) -> int:
    """verl 0.9.0's REPLAY of one micro-batch with `RouterReplay.router_instances = registry`, on `model`.

    As 0.9.0's engine: every registered router is cleared and set to REPLAY_FORWARD (`clear_global_indices`,
    `set_global_router_replay_action`); `forward_step` asks `is_replay_forward_action` (positional) and calls
    `set_router_replay_data(..., model=model)` (#7340); one forward without grad. Returns the tokens whose
    experts left `routes` (tokens, layers, topk), by `rerouted_tokens`.
    """
    fns = load_router_utils(registry, release="0.9.0")
    for router in registry:
        router.clear()
        router.set_action(ReplayAction.REPLAY_FORWARD)
    _, mask = _one_sequence(tokens)
    if fns["RouterReplayHelper"].is_replay_forward_action(tf_config):
        fns["set_router_replay_data"](routes.unsqueeze(0), mask, tf_config, model=model)
    with torch.no_grad():
        model(tokens)
    return rerouted_tokens(routes, routes_used(model))


def record_090(model: nn.Module, tokens: torch.Tensor, registry: list, tf_config: types.SimpleNamespace) -> list:
    """verl 0.9.0's R2 RECORD with `RouterReplay.router_instances = registry`: what its merge makes of it.

    As 0.9.0's engine: every registered router is cleared and set to RECORD (`clear_global_indices`,
    `set_global_router_replay_action`), `model` runs one forward, and `forward_step` asks
    `is_r2_record_action` and calls `merge_router_topk_indices`, both through the positional slice.
    A full mask stands in for 0.9.0's THD inputs (the routers are read before any packing). Returns the
    merged maps; upstream's own errors propagate.
    """
    fns = load_router_utils(registry, release="0.9.0")
    for router in registry:
        router.clear()
        router.set_action(ReplayAction.RECORD)
    with torch.no_grad():
        model(tokens)
    input_ids, mask = _one_sequence(tokens)
    merged: list = []
    if fns["RouterReplayHelper"].is_r2_record_action(tf_config):
        fns["merge_router_topk_indices"](mask, input_ids, merged, tf_config)
    return merged


def upstream_decoder_layers(model: nn.Module) -> list[int]:
    """Layer numbers verl's `iter_model_routers` yields for `model`, in walk order."""
    return [n for n, _ in load_router_utils()["iter_model_routers"](model)]


# ---------------------------------------------------------------------------------------------
# The generated-case comparisons (`verlstudy verify-upstream` and the lesson's last cell)
# ---------------------------------------------------------------------------------------------


class _Config(types.SimpleNamespace):
    pass


class _ConfigWithText(types.SimpleNamespace):
    def get_text_config(self):  # like transformers' PretrainedConfig.get_text_config
        return getattr(self, "text_config", None)


def _random_config(rng: random.Random, depth: int, nodes: list) -> object:
    cls = _ConfigWithText if rng.random() < 0.4 else _Config
    config = cls()
    nodes.append(config)
    if rng.random() < 0.6:
        config.hidden_size = rng.choice([None, 0, False, 1024, 4096, 7])
    if depth > 0:
        for child in rng.sample(_CHILDREN, rng.randint(0, 3)):
            setattr(config, child, _random_config(rng, depth - 1, nodes))
    return config


def _outcome(fn: Callable[[object, str], object], config: object) -> tuple[str, object]:
    try:
        return "value", fn(config, "hidden_size")
    except AttributeError:
        return "raises", AttributeError


def compare_config_attr(cases: int = 300, seed: int = 0, ours: Callable[[object, str], object] | None = None):
    cases = positive_int("cases", cases)
    seed = check_int("seed", seed, minimum=0, kind="argument")
    if ours is not None:
        check_callable("ours", ours, what="a function (the code under comparison) or None")
    ours = ours or get_text_config_attr
    theirs = load_hf_config_attr()
    rng = random.Random(seed)
    for i in range(cases):
        nodes: list = []
        config = _random_config(rng, depth=2, nodes=nodes)
        if rng.random() < 0.2:  # a cycle: a child pointing back at the root
            rng.choice(nodes).model_config = config
        a, b = _outcome(ours, config), _outcome(theirs, config)
        if a != b or type(a[1]) is not type(b[1]):
            detail = f"case {i}: ours {a[0]} {a[1]!r}, upstream {b[0]} {b[1]!r}"
            return Comparison("03", HF_ATTR, upstream.verl_version(), i + 1, "differ", detail)
    return Comparison("03", HF_ATTR, upstream.verl_version(), cases, "agree")


def compare_merge(cases: int = 20, seed: int = 0):
    """Our `local_stage_routes` against verl's `merge_router_topk_indices` on shuffled toy decoders."""
    cases = positive_int("cases", cases)
    seed = check_int("seed", seed, minimum=0, kind="argument")
    rng = random.Random(seed)
    for i in range(cases):
        n_layers, topk, batch, seq = rng.randint(1, 4), rng.randint(1, 2), rng.randint(1, 2), rng.randint(1, 4)
        torch.manual_seed(seed * 1000 + i)
        model = TinyMoE(topk=topk, layer_numbers=rng.sample(range(1, n_layers + 1), n_layers), registry=[])
        for _, router in model_routers(model):
            router.set_action(ReplayAction.RECORD)
        with torch.no_grad():
            model(torch.randint(0, 16, (batch * seq,)))
        ours = local_stage_routes(model, batch, seq, topk)
        theirs = upstream_record_map(model, batch, seq, megatron_config(n_layers, topk))
        if not (isinstance(ours, torch.Tensor) and ours.dtype == theirs.dtype and torch.equal(ours, theirs)):
            detail = f"case {i}: layers {[n for n, _ in model_routers(model)]}, ours {ours!r:.60}"
            return Comparison("03", MERGE, upstream.verl_version(), i + 1, "differ", detail)
    return Comparison("03", MERGE, upstream.verl_version(), cases, "agree")


COMPARISONS = (compare_config_attr, compare_merge)


def upstream_check(cases: int = 50) -> None:
    """The lesson's upstream cell: one line per comparison, a skip line without verl; raises if upstream differs."""
    cases = positive_int("cases", cases)
    report_check("03", [lambda: compare_config_attr(cases), lambda: compare_merge(max(cases // 5, 1))])
