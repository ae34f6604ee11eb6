# %% [markdown]
# # 03 · Router replay made model-scoped and opt-in
#
# **Upstream.** [verl PR #7805](https://github.com/verl-project/verl/pull/7805) redoes
# [#7106](https://github.com/verl-project/verl/pull/7106), which [#7786](https://github.com/verl-project/verl/pull/7786)
# reverted. In a [MoE](00_start_here.ipynb#MoE) model each layer's [router](00_start_here.ipynb#router) sends a token
# to its top-k experts; after one optimizer step it sends some tokens elsewhere. *Routing replay* records the experts
# and forces them later: [R2](00_start_here.ipynb#R2) records in the [old-log-prob](00_start_here.ipynb#old-log-prob)
# forward, [R3](00_start_here.ipynb#R3) at [rollout](00_start_here.ipynb#rollout). #7106 broke ordinary jobs and was
# reverted; #7805 made the replay lifecycle **opt-in** (gated by the mode) and **model-scoped** (routes come from the
# model being forwarded), and its review caught a silent layer-order error and a collective that a stage without MoE
# layers would have skipped (a stage whose routers recorded nothing still strands its peers: section 4).
#
# **You will** count why replay is needed, read verl's change (0.9.0 -> 0.9.1) on screen, make the layer-order
# mismatch and the stranded collective happen on a toy router and on real ranks of gloo (`torch.distributed`'s
# CPU backend), run verl's own functions beside the course's, and read a model attribute from a nested multimodal
# config.
#
# **Time:** 60 minutes. **Assumes:** top-k routing, `torch.distributed` collectives. Sources are listed at the end.
# Facts checked against verl 0.9.1.

# %% tags=["parameters"]
device = "auto"  # "auto" | "cpu" | "cuda" | "npu"
n_tokens = 32  # tokens per micro-batch
hidden = 8  # toy hidden size
num_experts = 4  # experts per MoE layer
topk = 2  # experts per token
lr = 1.0  # step size of the one policy update, >= 1: it must move some routes of this tiny batch
pp_layer_counts = [2, 0, 1]  # MoE layers per pipeline stage (one gloo rank each); include a 0
collective_timeout_s = 0.5  # gloo collective timeout for the stranded-rank demonstration
seed = 0

# %%
import importlib.util, subprocess, sys
if "google.colab" in sys.modules and not importlib.util.find_spec("verlstudy"):  # Colab only: this release of the course
    subprocess.run(f"{sys.executable} -m pip install -q --no-deps git+https://github.com/verlstudy/verlstudy@v0.1.0 && {sys.executable} -m verlstudy.kit.colab || echo 'The course did not install: Runtime > Restart session, then run this cell again.'", shell=True)

from verlstudy.kit.claims import claim, claims_table, expect_error
from verlstudy.kit.devices import pick_device
from verlstudy.kit.lesson_start import start_lesson
from verlstudy.lessons.l03_router_replay.setup import check_parameters

dev = pick_device(device)
p = check_parameters(n_tokens, hidden, num_experts, topk, lr, pp_layer_counts, collective_timeout_s)
n_tokens, hidden, num_experts, topk, lr = p["n_tokens"], p["hidden"], p["num_experts"], p["topk"], p["lr"]
pp_layer_counts, collective_timeout_s = p["pp_layer_counts"], p["collective_timeout_s"]
dev, seed = start_lesson(dev, seed, announce=False)  # the seed last; the line below says the device
sizes = dict(hidden=hidden, num_experts=num_experts, topk=topk)
print(f"running on {dev.type}; {n_tokens} tokens, {num_experts} experts, top-{topk}, 3 MoE layers")

# %% [markdown]
# The lesson's tools: the course's toy MoE and replay controller, verl's own functions loaded beside them
# (`verl_fns`), and the kit's helpers that show code.

# %%
import multiprocessing
import time

import torch

torch.set_num_threads(1)  # toy-sized tensors: a second thread only waits for a free core, milliseconds an op when busy

from verlstudy.common.dist import run_local
from verlstudy.kit.devices import skip_unless
from verlstudy.kit.exercises import check_exercise, exercise_hint
from verlstudy.kit.plots import bar_plot
from verlstudy.kit.show import show_change, show_source, upstream_diff, upstream_source
from verlstudy.kit.upstream import upstream_cell, verl_version
from verlstudy.lessons.l03_router_replay import guards, pipeline
from verlstudy.lessons.l03_router_replay import upstream as verl_fns
from verlstudy.lessons.l03_router_replay.controller import (
    PositionalReplayController, ReplayController, ToyTransformerConfig, recompute_off_record, record_routes,
    replay_off_record,
)
from verlstudy.lessons.l03_router_replay.moe import TinyMoE, sgd_step
from verlstudy.lessons.l03_router_replay.routes import (
    MissingRoutes, local_stage_routes, model_routers, recorded_routes, replay_columns, rerouted_per_layer,
    rerouted_tokens, routers_by_layer, routes_used, set_replay_targets, stack_routes, update_until_rerouted,
)
from verlstudy.lessons.l03_router_replay.text_config import ComposedConfig, ToyConfig, bfs_config_attr, get_text_config_attr

# %% [markdown]
# ## 1. Why replay: one update moves the routing
# `TinyMoE`: embedding -> 3 MoE layers (router: linear -> softmax -> top-k) -> head. Each router carries a
# `RouterReplay`, as verl's patched `TopKRouter` (Megatron-Core's router) does. The R2 controller arms them to RECORD
# in the old-logprob forward and returns int16 routes `(tokens, layers, topk)`, in layer-number order.

# %%
tokens = torch.randint(0, 16, (n_tokens,))
targets = torch.randint(0, 16, (n_tokens,))
model = TinyMoE(**sizes)  # layers 1, 2, 3; routers registered in the process-global registry
r2 = ReplayController("R2")
print("old-logprob forward:", r2.begin(model, forward_only=True))
with torch.no_grad():
    model(tokens)
recorded = r2.end(model)
print(f"recorded routes: shape {tuple(recorded.shape)} (tokens, layers, topk), {recorded.dtype}")

# %% [markdown]
# verl's own RECORD merge, `merge_router_topk_indices(..., model=model)` from verl 0.9.1, on the same toy
# model: one sequence of `n_tokens` tokens, every position valid. It walks the model's routers, stacks
# their int16 routes (in which order is section 3's subject) and packs them back to `(batch, seq, layers, topk)`:

# %%
def upstream_merge_agrees() -> None:
    theirs = verl_fns.upstream_record_map(model, 1, n_tokens, verl_fns.megatron_config(3, topk))
    print(f"verl merge_router_topk_indices: shape {tuple(theirs.shape)}, {theirs.dtype}")
    claim("upstream merge_router_topk_indices gives our recorded routes", torch.equal(theirs[0], recorded),
          upstream=f"verl {verl_version()} {verl_fns.MERGE}")


_ = upstream_cell(upstream_merge_agrees)

# %% [markdown]
# Now a policy update (cross-entropy, one SGD step), then the update forward twice: natively, and replaying the
# record. `rerouted_tokens` counts tokens whose expert *set* left the record in some layer;
# `update_until_rerouted` steps again, the step doubled, at the rare seed where one step moves nothing:

# %%
show_source(update_until_rerouted)

# %%
updates, native_moved = update_until_rerouted(model, tokens, targets, recorded, lr)
native_routes = routes_used(model)
print("update forward:", r2.begin(model, forward_only=False, routes=recorded))
with torch.no_grad():
    model(tokens)
replay_moved = rerouted_tokens(recorded, routes_used(model))
print(f"tokens routed elsewhere than recorded: native {native_moved}/{n_tokens}, replayed {replay_moved}/{n_tokens}")
claim(f"{updates} update(s) move native routing ({native_moved}/{n_tokens} tokens)", native_moved > 0,
      upstream="why R2 exists: the update replays the routes its old-log-prob forward recorded")
claim("tokens off the record under R2 replay", replay_moved, 0, upstream="REPLAY_FORWARD uses target_topk_idx")

# %%
_ = bar_plot(
    {f"layer {n}": moved for n, moved in enumerate(rerouted_per_layer(recorded, native_routes), start=1)},
    title="tokens whose experts changed after one update (native routing)",
    ylabel="tokens",
)

# %% [markdown]
# A **replay mask** replays only where it is set: R3 leaves each sequence's last token native (sampled at rollout
# but never fed back: no routes recorded). Replay the first half: it follows the record; the other half routes as
# the native forward did (tokens do not interact in this toy).

# %%
half = torch.arange(n_tokens) < n_tokens // 2
r2.begin(model, forward_only=False, routes=recorded, mask=half)
with torch.no_grad():
    model(tokens)
masked = routes_used(model)
claim("with a mask, tokens of the masked half off the record", rerouted_tokens(recorded[half], masked[half]), 0,
      upstream="torch.where(replay_mask, replayed, native)")
claim("with a mask, the other half routes natively", torch.equal(masked[~half].sort(-1).values, native_routes[~half].sort(-1).values))

# %% [markdown]
# **REPLAY_BACKWARD is a FIFO.** A router's action is RECORD, REPLAY_FORWARD (route to the targets its `set_target`
# received) or REPLAY_BACKWARD. With activation recompute, a micro-batch's layers rerun in backward, after *later*
# micro-batches' forwards ([1F1B](00_start_here.ipynb#1F1B)). So every `set_target` also queues the routes; after its
# forward a router switches to REPLAY_BACKWARD: each recompute pops its micro-batch's routes. Left in REPLAY_FORWARD,
# micro-batch 0's recompute reads micro-batch 1's targets: same shape, no error, wrong experts.
# `recompute_off_record` re-forwards micro-batch 0 after both update forwards (with and without switching), as
# `torch.utils.checkpoint` would in backward.

# %%
micro_batches = [torch.randint(0, 16, (n_tokens,)) for _ in range(2)]
fifo_moved = recompute_off_record(r2, model, micro_batches, switch_to_backward=True)
stuck_moved = recompute_off_record(r2, model, micro_batches, switch_to_backward=False)
print(f"recompute of micro-batch 0 off its record: FIFO {fifo_moved}, stuck in REPLAY_FORWARD {stuck_moved}")
claim("FIFO recompute: tokens off micro-batch 0's record", fifo_moved, 0, upstream="replay_backward_list.pop(0)")
claim(f"stuck in REPLAY_FORWARD, the recompute silently moves {stuck_moved}/{n_tokens} tokens", stuck_moved > 0,
      upstream="set_model_router_replay_action docstring: stale cross-micro-batch target")

# %% [markdown]
# ## 2. The regression: what is established, and what is not
# **What broke.** #7805's description says the reverted #7106 "queried the process-global router registry even when
# router replay was disabled", so normal Megatron SFT (supervised fine-tuning) and RL jobs failed when the registry
# was empty. **The course cannot reproduce that failure**: no PR description we could read names the exception, and
# #7786's reads, to the course, only "Reverts #7106" (its thread is not in the sources we can search: unverified).
#
# **Why not.** In verl 0.9.0, `RouterReplayHelper.is_*_action` asks the *positional helper*,
# `get_micro_batch_router_list`: it counts the stage's MoE layers from the config (the *layer-info code*, reading
# `moe_layer_freq`, Megatron's setting for which layers are MoE) and slices that many routers off the registry by
# position. #7106 as stored (head `33a1928c1`, 2026-08-13; the merged version is not available to us) asks
# `is_*_action` on every forward whatever the mode, but so did verl 0.9.0 and #7106's merge-base (`535c47799`). A
# dense config with Megatron's default `moe_layer_freq=1` (Megatron-Core's `TransformerConfig`) passes both;
# `moe_layer_freq=None` fails both alike, so it is not the regression.
#
# **What is established** is #7805's remedy, in verl's diff 0.9.0 -> 0.9.1: every hook is gated by the mode, through two
# flags. `forward_step`'s REPLAY hooks check the engine's `self.enable_routing_replay` (set once from
# `router_replay.mode` when the engine is built); the rest check the batch's `enable_routing_replay` flag (set by the
# worker per call, with its mode on: True for the actor's `compute_log_prob` and `update_actor`, False for the
# reference's log-probs; `verl/workers/engine_workers.py`) or `record_r2_routes`, computed from it once per batch. The
# positional helper now returns `[]` on an empty registry before any layer-info code:

# %% tags=["upstream-source", "nbval-ignore-output"]
upstream_diff("workers/engine/megatron/transformer_impl.py", None, contains="enable_routing_replay")
upstream_diff("utils/megatron/router_replay_utils.py", "RouterReplayHelper.get_micro_batch_router_list")

# %% [markdown]
# In the first diff, 0.9.0 asked `is_replay_backward_action` / `is_replay_forward_action` / `is_r2_record_action` on
# every micro-batch; 0.9.1 checks `self.enable_routing_replay` (for RECORD, `record_r2_routes`, decided once) first, so
# with `mode="disabled"` no helper runs. A REPLAY without recorded routes now raises. In the second,
# `if not RouterReplay.router_instances: return []` is the new first line, and a registry matching neither one rank's
# nor the whole model's layout now raises instead of being sliced.

# %% [markdown]
# The course's controllers mirror this. `PositionalReplayController` is verl 0.8.0's lifecycle, before #7340 and
# #7805: it asks the positional helper on every forward whatever the mode (as 0.8.0, 0.9.0 and #7106's branch all do),
# then arms routers taken by position from the registry (as 0.8.0 does). It does not reproduce #7106's failure; it is
# the *before* in this lesson's comparisons.

# %% [markdown]
# `ReplayController.begin` is the fix: the opt-in gate first (mode off: it touches nothing), then the targets to the
# forwarded model's own routers:

# %%
show_change(PositionalReplayController.begin, ReplayController.begin)

# %%
fresh_registry: list = []  # what a fresh process's RouterReplay.router_instances holds: nothing
ordinary = TinyMoE(**sizes, enable_replay=False, registry=fresh_registry)
fixed = ReplayController("disabled")
print("opt-in gate, mode disabled:", fixed.begin(ordinary, forward_only=True), "/", fixed.end(ordinary))
claim("disabled + empty registry: the opt-in controller is a no-op", fixed.begin(ordinary, forward_only=True) == "none",
      upstream="#7805: the replay lifecycle is gated by router_replay.mode")

# %% [markdown]
# verl 0.9.1's own helper on an empty registry, and on a config without a MoE layer pattern
# (`moe_layer_freq=None`, which its `is_moe_layer` rejects, in 0.9.0 as in 0.9.1): the empty registry
# returns `[]` before any layer info is computed.

# %%
def upstream_empty_registry() -> None:
    verl = verl_fns.load_router_utils(registry=fresh_registry)
    dense_config = verl_fns.megatron_config(3, topk, moe_layer_freq=None)
    with expect_error(ValueError, match="Unsupported moe_layer_freq"):
        verl["is_moe_layer"](dense_config, 0)
    routers = verl["RouterReplayHelper"].get_micro_batch_router_list(dense_config)
    claim("upstream get_micro_batch_router_list on an empty registry returns [] before the layer-info code",
          routers == [], upstream=f"verl {verl_version()} {verl_fns.ROUTER_LIST}")


_ = upstream_cell(upstream_empty_registry)

# %% [markdown]
# **A stale router leaks in.** The registry is cleared only when the replay patch is applied
# (`apply_router_replay_patch`, `verl/utils/megatron/router_replay_patch.py`), so a decoder built and discarded within
# one model build stays in it, in front. #7340 reports this for Megatron-Bridge's (NVIDIA's library that builds
# Megatron-Core models from Hugging Face ones) Qwen3-VL model, which builds its decoder twice: 2N routers for N layers,
# orphans first (verl 0.9.1's `iter_model_routers` docstring names the case). A positional slice of that registry
# holds the orphans.
#
# Before #7340 (commit `c3747cbd7`, first released in verl 0.9.0; 0.8.0 is the last release without it), the engine
# gave the replay targets and the action switches to such a slice: the *stale* routers received them and the live
# model routed natively, "no error, no warning" (#7340's description). `PositionalReplayController` does the same.
# Below, both controllers replay section 1's record on a model with section 1's updated weights, so a miss is
# exactly native routing; `replay_off_record` counts the tokens off the record.

# %%
show_source(replay_off_record)

# %%
shared_registry: list = []
discarded = TinyMoE(**sizes, registry=shared_registry)  # registered first, then thrown away
live = TinyMoE(**sizes, registry=shared_registry)
live.load_state_dict(model.state_dict())  # section 1's model after its update: its record is `recorded`
live_routes = recorded
stale_config = ToyTransformerConfig(num_layers=3)
positional = PositionalReplayController("R3", tf_config=stale_config, registry=shared_registry)
moved = {name: replay_off_record(controller, live, tokens, live_routes)
         for name, controller in (("pre-#7340", positional), ("model-scoped", ReplayController("R3")))}
print(f"registry holds {len(shared_registry)} routers for a 3-layer model; tokens off the record: {moved}")
claim(f"pre-#7340 positional replay silently misses the live routers ({moved['pre-#7340']}/{n_tokens} tokens off)",
      moved["pre-#7340"] == native_moved > 0,
      upstream="#7340: targets go to a decoder that no longer forwards, no error, no warning")
claim("model-scoped replay: tokens off the record", moved["model-scoped"], 0)

# %% [markdown]
# **What verl 0.9.0 does with this registry.** 0.9.0 already holds #7340: its `forward_step` passes
# `model=unwrapped_model` to `set_router_replay_data` and switches actions with
# `set_model_router_replay_action(unwrapped_model, ...)` as well as on the registry's positional slice
# (`verl/workers/engine/megatron/transformer_impl.py`), so the targets reach the live routers.
#
# Its action queries and its R2 RECORD merge still take the registry's positional slice, here the orphans: their
# `recorded_topk_idx` is `None`, and the merge's `.to(torch.uint8)` fails, loudly. 0.9.0's own functions on the same registry, then 0.9.1's positional helper,
# which refuses a registry of neither layout (0.9.1's engine passes the model to RECORD and the queries too):

# %%
def upstream_stale_registry() -> None:
    off = verl_fns.replay_off_record_090(live, tokens, live_routes, shared_registry, verl_fns.megatron_config(3, topk))
    claim("verl 0.9.0 replays through the model's own routers: tokens off the record", off, 0,
          upstream="verl 0.9.0 set_router_replay_data(..., model=unwrapped_model) (#7340)")
    with expect_error(AttributeError, match="NoneType"):
        verl_fns.record_090(live, tokens, shared_registry, verl_fns.megatron_config(3, topk))
    helper = verl_fns.load_router_utils(registry=shared_registry)["RouterReplayHelper"]
    with expect_error(RuntimeError, match="does not cover a complete"):
        helper.get_micro_batch_router_list(verl_fns.megatron_config(3, topk))


_ = upstream_cell(upstream_stale_registry, releases=["0.9.0"])

# %% [markdown]
# The opt-in guard keeps the *hard* failures where replay is on: R2 without recorded routes for the update,
# and R2 combined with `rollout_correction.bypass_mode=True`, which skips the forward R2 records in.

# %%
with expect_error(RuntimeError, match="old-logprob forward must record"):
    ReplayController("R2").begin(live, forward_only=False)
with expect_error(ValueError, match="bypass_mode=False"):
    ReplayController("R2", bypass_mode=True)
with expect_error(ValueError, match="'disabled', 'R2', 'R3'"):
    ReplayController("r2")

# %% [markdown]
# ## 3. The silent mismatch: routers met out of layer order
# A module walk meets routers in *registration* order, which need not be layer order. RECORD stacks the
# routes in some order; REPLAY gives layer `n` the column `n - 1`. If RECORD stacked in walk order, every
# column lands on another layer: same shape, no error.

# %% [markdown]
# ### Predict first: exercise 3.1
# **3.1** Stack per-layer routes met in walk order into one `(tokens, layers, topk)` int16 map whose columns follow
# layer numbers; two routers claiming the same layer must raise `ValueError`.
#
# **Receives** a list of `(layer_number, routes)` pairs, `routes` an integer tensor `(tokens, topk)`, in walk order
# (layer numbers may have gaps and go past 9; models have up to 61 MoE layers and up to 512 experts, so expert ids go
# above 255); **returns** one `torch.int16` tensor `(tokens, layers, topk)`. Leave the list you are given as it was.
# Hints: `exercise_hint("3.1")`; `show_solution("3.1")` prints the solution.

# %% tags=["solution", "exercise-3.1"]
def stack_by_layer(pairs: list[tuple[int, torch.Tensor]]) -> torch.Tensor:
    """Return routes (tokens, layers, topk) int16 with columns sorted by layer number; ValueError on duplicates."""
    layer_numbers = [n for n, _ in pairs]
    if len(set(layer_numbers)) != len(layer_numbers):
        raise ValueError(f"duplicate layer numbers: {layer_numbers}")
    return torch.stack([routes.to(torch.int16) for _, routes in sorted(pairs, key=lambda p: p[0])], dim=1)


# %% tags=["checker", "exercise-3.1"]
check_exercise("3.1", stack_by_layer)

# %% [markdown]
# Now the bug and the fix, on a model whose layers are registered as 2, 3, 1:

# %%
shuffled = TinyMoE(**sizes, layer_numbers=(2, 3, 1), registry=[])
print("walk order of the routers:", [n for n, _ in model_routers(shuffled)])
by_layer = record_routes(r2, shuffled, tokens)  # the fix: stacked by layer number
by_walk = recorded_routes(shuffled, order="walk")  # the bug: stacked in walk order
mismatch = {name: replay_off_record(r2, shuffled, tokens, routes, reference=by_layer)  # no error either way
            for name, routes in (("walk order", by_walk), ("layer order", by_layer))}
print(f"tokens replayed onto different experts than recorded (weights unchanged): {mismatch}")
claim(f"walk-ordered stacking silently replays wrong experts ({mismatch['walk order']}/{n_tokens} tokens)",
      mismatch["walk order"] > 0, upstream="review catch: sort routers by layer_number before stacking")
claim("layer-ordered stacking: tokens off the record", mismatch["layer order"], 0)

# %% [markdown]
# This is what #7805 changed in verl's RECORD merge (0.9.0 -> 0.9.1): with `model=` given, the routers come from
# `iter_model_routers(model)`, **sorted by layer number**, duplicates rejected; a stage without routers that
# expects none appends a 0-layer map; one whose routers captured nothing raises.

# %% tags=["upstream-source", "nbval-ignore-output"]
upstream_diff("utils/megatron/router_replay_utils.py", "merge_router_topk_indices", contains="layer_number", context=0)

# %% [markdown]
# In the new lines, `sorted(iter_model_routers(model), key=lambda item: item[0])` is the fix of this section: the
# key is the layer number alone. The old line asked the positional registry slice instead. verl 0.9.1's
# `merge_router_topk_indices` on the same shuffled model:

# %%
def upstream_sorts() -> None:
    theirs = verl_fns.upstream_record_map(shuffled, 1, n_tokens, verl_fns.megatron_config(3, topk))[0]
    claim("upstream merge_router_topk_indices stacks the shuffled model by layer number",
          torch.equal(theirs, by_layer) and not torch.equal(theirs, by_walk), upstream=verl_fns.MERGE)


_ = upstream_cell(upstream_sorts)

# %% [markdown]
# **Walk the decoder only.** Sorting needs unique layer numbers (upstream raises otherwise), but an
# [MTP](00_start_here.ipynb#MTP) block (`mtp` beside `decoder` on [Megatron](00_start_here.ipynb#Megatron)'s GPTModel)
# restarts layer numbering at 1. verl 0.9.1's `iter_model_routers` walks `getattr(chunk, "decoder", chunk)` only;
# its comment says why (MTP layers alias decoder layers; the replay tensor has no MTP rows). `model_routers` also
# walks the decoder only by default: MTP routers stay unarmed, routing natively.

# %%
with_mtp = TinyMoE(**sizes, mtp_layers=1, registry=[])
print("every module:", [n for n, _ in model_routers(with_mtp, scope="model")],
      "| decoder only:", [n for n, _ in model_routers(with_mtp)])
with expect_error(ValueError, match="duplicate layer numbers"):
    routers_by_layer(with_mtp, scope="model")
from verlstudy.lessons.l03_router_replay.walk_pictures import draw_router_walks, router_table

_ = draw_router_walks(with_mtp)  # the same two walks, drawn over the model's modules
mtp_routes = record_routes(r2, with_mtp, tokens)
claim("with an MTP sibling, R2 records the decoder's 3 layers", tuple(mtp_routes.shape), (n_tokens, 3, topk))
_ = upstream_cell(lambda: claim("upstream iter_model_routers walks the same decoder layers",
                                verl_fns.upstream_decoder_layers(with_mtp), [1, 2, 3], upstream=verl_fns.ITER))

# %% [markdown]
# **Mixed dense/MoE decoders replay by absolute layer.** With `moe_layer_freq`, some decoder layers are dense, without
# a router. R3's routes come from the inference engine for every decoder layer, dense ones included (#5037's
# description). verl's `set_router_replay_data` reads column `layer_number - 1` when the routes cover
# `tf_config.num_layers` layers, else the MoE-layer ordinal. Column *i* to the *i*-th router, the bug #5037 fixed,
# silently shifts every MoE layer after a dense one. Here layer 2 is dense:

# %%
mixed = TinyMoE(**sizes, dense_layers=(2,), registry=[])
mixed_record = record_routes(r2, mixed, tokens)  # (tokens, 2 MoE layers, topk)
every_layer = torch.zeros(n_tokens, 3, topk, dtype=torch.int16)
every_layer[:, [0, 2]] = mixed_record  # one column per decoder layer; the dense layer's carries nothing
print("columns read by layers 1 and 3:", replay_columns(mixed, 3), "| positional:", replay_columns(mixed, 3, index="position"))
absolute_off = replay_off_record(ReplayController("R3"), mixed, tokens, every_layer, reference=mixed_record)
set_replay_targets(mixed, every_layer, index="position")  # the routers are still armed REPLAY_FORWARD
with torch.no_grad():
    mixed(tokens)
shifted_off = rerouted_tokens(mixed_record, routes_used(mixed))
claim("R3 routes over every layer, by absolute layer: tokens off the record", absolute_off, 0)
claim(f"positional columns silently shift layer 3 ({shifted_off}/{n_tokens} tokens off)", shifted_off > 0,
      upstream="#5037: mapping with i + offset silently shifts every MoE layer after a dense layer")

# %%
def upstream_absolute_replay() -> None:
    config = verl_fns.megatron_config(3, topk, moe_layer_freq=[1, 0, 1])
    verl_fns.upstream_replay_targets(mixed, every_layer, config)
    with torch.no_grad():
        mixed(tokens)
    claim("upstream set_router_replay_data on the mixed decoder: tokens off the record",
          rerouted_tokens(mixed_record, routes_used(mixed)), 0, upstream=verl_fns.SET_DATA)


_ = upstream_cell(upstream_absolute_replay)

# %% [markdown]
# ## 4. The collective: `pp_gather` over pipeline ranks
# With [PP](00_start_here.ipynb#PP) each pipeline stage records routes for its own layers only; after the
# [1F1B](00_start_here.ipynb#1F1B) schedule, `pp_gather` (verl/utils/megatron/router_replay_utils.py) assembles the
# whole map. It is a **collective**: every rank must call it. It has two branches:
#
# - **The default path, without VPP** (virtual pipeline parallelism: each rank holds several non-adjacent chunks of
#   layers, and the schedule interleaves them). The engine merges each micro-batch's routes with
#   `merge_nested_router_maps` (`transformer_impl.py`) into one *nested* ([jagged](00_start_here.ipynb#jagged): rows of
#   different lengths in one tensor) int16 map, one `(tokens, local layers, topk)` tensor per sequence; `pp_gather`
#   sends it with `torch.distributed.all_gather_object` on CPU (pickled): no layer count to exchange, no padding.
# - **A dense map**, which only the VPP path builds, and only from [BSHD](00_start_here.ipynb#BSHD) inputs
#   (`reorder_and_merge_vpp_layers` concatenates non-nested maps; nested ones stay nested): the ranks first exchange
#   their layer counts, pad only the layer dim to the largest stage, send the int16 routes as raw bytes (NCCL,
#   `torch.distributed`'s GPU backend, has no int16) and strip the padding.
#
# verl's `pp_gather` is shown after exercise 3.2 (it holds the answer) and runs on real gloo ranks at the section's
# end, once per branch. Exercise 3.2 and the course's `pipeline.pp_gather` use the **dense** branch, where a
# wire-format mistake is easy to make and hard to see.

# %% [markdown]
# ### Predict first: exercise 3.2
# **3.2** Write the wire format of `pp_gather`'s dense branch: `to_wire(routes, max_layers)` turns int16 routes
# `(B, S, L, k)` into a uint8 payload `(B, S, max_layers, 2k)` zero-padded on the layer dim only, and
# `from_wire(payload, layer_count)` gives back the exact int16 routes. Expert ids go above 255 (384
# experts, as Kimi-K2 has).
#
# **Receives** a `torch.int16` tensor and an int (`to_wire`), a `torch.uint8` tensor and an int (`from_wire`);
# **returns** a `torch.uint8` tensor and a `torch.int16` tensor of exactly those shapes. The checker tries
# stages of real models cut over 1 to 16 pipeline stages (`L = 0`, a stage without MoE layers, included), all-zero
# layers, and maps that are views (a slice, a transposed copy).

# %% tags=["solution", "exercise-3.2"]
def to_wire(routes: torch.Tensor, max_layers: int) -> torch.Tensor:
    """Return the uint8 payload (B, S, max_layers, 2k) of int16 `routes`, zero-padded on dim 2."""
    payload = routes.contiguous().view(torch.uint8)
    padded = payload.new_zeros(payload.shape[0], payload.shape[1], max_layers, payload.shape[3])
    padded.narrow(2, 0, payload.shape[2]).copy_(payload)
    return padded


def from_wire(payload: torch.Tensor, layer_count: int) -> torch.Tensor:
    """Return the int16 routes of the first `layer_count` layers of a uint8 payload."""
    return payload.narrow(2, 0, layer_count).contiguous().view(torch.int16)


# %% tags=["checker", "exercise-3.2"]
check_exercise("3.2", to_wire, from_wire)

# %% [markdown]
# Now verl's own `pp_gather`, the whole function as released: both branches, the dense one's byte view and padding.

# %% tags=["upstream-source", "nbval-ignore-output"]
upstream_source("utils/megatron/router_replay_utils.py", "pp_gather")

# %% [markdown]
# The course's `pipeline.to_wire` sends the int16 routes as a **uint8 view**. Expert ids above 255 show why
# it must be a bit view and not a value cast (verl 0.9.0's `merge_router_topk_indices` and
# `merge_nested_router_maps` stored routes with the value cast `.to(torch.uint8)`; 0.9.1 keeps them int16 and,
# where bytes must travel, reinterprets them with `.view(torch.uint8)`):

# %%
expert_ids = torch.tensor([3, 255, 300, 383], dtype=torch.int16).reshape(1, 1, 1, 4)
print("value cast .to(uint8):", expert_ids.to(torch.uint8).flatten().tolist())
print("bit view round trip:  ", pipeline.from_wire(pipeline.to_wire(expert_ids, 2), 1).flatten().tolist())
claim("the uint8 view round trip is bit-exact", torch.equal(pipeline.from_wire(pipeline.to_wire(expert_ids, 2), 1), expert_ids),
      upstream="pp_gather's dense branch: NCCL has no int16, payloads travel as uint8 views")

# %% [markdown]
# Now on real gloo ranks on this machine (`verlstudy.common.dist.run_local`), one rank per stage. Each stage
# passes its slice of a seeded route map; the stage with 0 MoE layers passes a `(B, S, 0, topk)` map.

# %%
gather_shape = (2, 3, topk, 384)  # batch, seq, topk, num_experts
gathered = run_local(pipeline.pp_gather_worker, len(pp_layer_counts), pp_layer_counts, gather_shape, seed, timeout_s=60)
full = pipeline.toy_global_routes(2, 3, sum(pp_layer_counts), topk, 384, seed)
for stage, routes in enumerate(gathered):
    print(f"stage {stage} owns layers {pipeline.stage_layer_numbers(pp_layer_counts, stage)}, gathered {tuple(routes.shape)}")
claim("every rank gets the full map, bit-exact, with a 0-layer stage joining",
      all(torch.equal(g, full) for g in gathered), upstream="review catch: a 0-layer stage joins with (B, S, 0, topk)")

# %% [markdown]
# **One rank raises instead of joining.** #7805's review made a stage *without* MoE layers join; a stage whose
# routers captured nothing still raises alone, so in verl 0.9.1 its peers are still stranded: RECORD
# (`merge_router_topk_indices`) raises inside `forward_step`, during the 1F1B schedule, so the other ranks wait in the
# schedule's point-to-point send/recv for a missing partner, until the process-group timeout (verl 0.9.1's
# `nccl_timeout: 600` seconds, in `_generated_ppo_megatron_trainer.yaml`). Below, the same failure mode on this
# section's collective: one rank raises instead of joining `pp_gather`, and the others wait `collective_timeout_s`
# (meanwhile this process does the imports the section's last cell needs: `while_waiting`). The failing rank stays
# alive (verl runs each rank as a worker process of the Ray framework; on the course's reading, such a process
# outlives its task's exception):

# %%
fork_context = multiprocessing.get_context("fork")
peers_gave_up = fork_context.Event()
joined_for = fork_context.Value("d", 0.0)  # seconds the joining rank spent in pp_gather, clocked by that rank
stranded = pipeline.failed_outcomes(pipeline.raise_instead_of_joining, 2, [1, 1], gather_shape, seed, 1, peers_gave_up,
                                    joined_for, timeout_s=30, collective_timeout_s=collective_timeout_s,
                                    while_waiting=verl_fns.warm_jagged)  # the wait idles this process: see the section's last cell
print("\n".join(pipeline.outcome_lines(stranded)))
claim("the joining rank waited out the whole collective timeout", joined_for.value >= collective_timeout_s,
      upstream="review catch: a rank that raises instead of joining hangs the others")
claim("the joining rank failed with a timeout, not with the real cause", "Timed out" in stranded[0].error_message)

# %% [markdown]
# **The course's design: fail loudly only after nobody can be stranded.** Our `pp_gather` takes a `MissingRoutes`
# marker from a stage that has routers but captured nothing, and that stage *still joins* the header exchange, the
# first collective, with a "missing" flag. After it every rank knows: all raise the same error naming the stage, and
# none reaches the payload gather. Upstream did otherwise. #7805's reviewer asked that a stage with no MoE routers join
# with a 0-layer map instead of raising, and that the hard failure stay only for a stage that *has* routers but
# captured nothing. verl 0.9.1 does exactly that, and raises in `merge_router_topk_indices`, per micro-batch, before
# `pp_gather` runs (the next cells run it).

# %% [markdown]
# `local_stage_routes` is where a stage makes that decision after RECORD, for the three kinds of stage:

# %%
stages = {
    "no MoE layer": TinyMoE(**sizes, enable_replay=False, registry=[]),
    "routers, nothing recorded": TinyMoE(**sizes, registry=[]),
    "routers, all recorded": shuffled,
}
for kind, stage_model in stages.items():
    local = local_stage_routes(stage_model, 1, n_tokens, topk)
    print(f"{kind:<26} -> {tuple(local.shape) if isinstance(local, torch.Tensor) else local}")

# %% [markdown]
# verl 0.9.1's `merge_router_topk_indices` on the same three stages: the same maps, and the hard failure
# where ours hands `MissingRoutes` on to the collective:

# %%
def upstream_stages() -> None:
    for kind, stage_model in stages.items():
        outcome, value = verl_fns.upstream_stage_outcome(stage_model, 1, n_tokens, topk)
        print(f"{kind:<26} -> verl: {tuple(value.shape) if outcome == 'map' else value}")
        ours = local_stage_routes(stage_model, 1, n_tokens, topk)
        agrees = torch.equal(value, ours) if outcome == "map" else isinstance(ours, MissingRoutes)
        claim(f"{kind}: upstream {'gives our map' if outcome == 'map' else 'raises before pp_gather'}", agrees,
              upstream=verl_fns.MERGE)


_ = upstream_cell(upstream_stages)

# %%
missing_stage = next(s for s, c in enumerate(pp_layer_counts) if c > 0)
start = time.monotonic()
together = pipeline.failed_outcomes(pipeline.pp_gather_worker, len(pp_layer_counts), pp_layer_counts, gather_shape, seed,
                                    missing_stage, timeout_s=30, collective_timeout_s=20.0)
print("\n".join(pipeline.outcome_lines(together)))
claim(f"every rank raises the same error naming stage {missing_stage}",
      len({(o.error_type, o.error_message) for o in together}) == 1
      and all(f"stage(s) [{missing_stage}]" in o.error_message for o in together))
claim("every rank raised long before the collective timeout", time.monotonic() - start < 10.0)

# %% [markdown]
# Last, verl's own `pp_gather` on gloo ranks, one per stage of `pp_layer_counts` (a 0-layer stage included), once per
# branch. Its nested maps are jagged tensors, whose first use in a process imports torch's distributed-tensor and
# compiler modules; this process did that during the stranded rank's wait above, so the ranks forked here inherit it.

# %%
def upstream_pp_gather() -> None:
    lengths = [3, 2]  # two sequences of different lengths: the nested map is jagged
    full = pipeline.toy_global_routes(len(lengths), max(lengths), sum(pp_layer_counts), topk, 384, seed)
    verl_fns.warm_jagged()  # done during the stranded-rank wait above; here in case that cell was skipped
    out = run_local(verl_fns.upstream_pp_gather_worker, len(pp_layer_counts), pp_layer_counts, lengths, topk, seed,
                    timeout_s=60)  # each rank returns (its nested map, its dense map) after both gathers
    for nested in (True, False):
        if nested:
            maps = [o[0] for o in out]
            exact = all(torch.equal(t, full[b, :n]) for o in maps for b, (t, n) in enumerate(zip(o.unbind(), lengths)))
            shapes = [tuple(t.shape) for t in maps[0].unbind()]
        else:
            exact, shapes = all(torch.equal(o[1], full) for o in out), tuple(out[0][1].shape)
        branch = "nested, all_gather_object" if nested else "dense, uint8 all_gather"
        print(f"verl pp_gather ({branch}): every rank holds {shapes}")
        claim(f"verl's own pp_gather ({branch}) gives every rank the full map, a 0-layer stage joining", exact,
              upstream=f"verl {verl_version()} verl/utils/megatron/router_replay_utils.py::pp_gather")


_ = upstream_cell(upstream_pp_gather)

# %% [markdown]
# ## 5. The config walk: read the text branch, never a sibling
# Model attributes (`hidden_size`, `num_hidden_layers`, ...) of a multimodal model live on its text
# branch. Omni-style configs also carry audio and code2wav sub-configs with attributes of the same name.
# A naive breadth-first walk from the root answers with whatever it meets first: the root's own 1024, or
# an audio sibling's value.

# %% [markdown]
# ### Predict first: exercise 3.3
# **3.3** Write `find_text_attr(config, name)`, the lookup of verl's `get_hf_config_attr`: `name` read from
# the config's *text branch*. The text config is what `config.get_text_config()` returns if the config has
# that method, else its `text_config`. First, if the text config's own value is not `None`, that is the
# answer. Otherwise walk the branch: from a node, its text config, the sub-configs `text_config`,
# `language_config`, `thinker_config` and `model_config` (each walked the same way, before its parent), and the
# node itself after its branches; the first value that is not `None` wins. `None` means absent, while `0`
# and `False` are values; never read other sub-configs (audio, vision, decoder); survive a config that
# contains itself; raise `AttributeError` when nothing on the branch has the attribute.
#
# **Receives** a config object (attributes, nested configs) and an attribute name; **returns** the value as
# stored (any type). The checker tries the lesson's configs, generated config trees up to 3 levels deep, and
# configs shaped like Hugging Face's (a plain LM, VL and Omni models, a composite with `get_text_config()`).

# %% tags=["solution", "exercise-3.3"]
def find_text_attr(config: object, name: str) -> object:
    """Return `name` from the text branch of `config`, or raise AttributeError."""

    def text_of(node: object) -> object:
        getter = getattr(node, "get_text_config", None)
        text = getter() if callable(getter) else None
        return getattr(node, "text_config", None) if text is None else text

    first = text_of(config)
    if first is not None and getattr(first, name, None) is not None:
        return getattr(first, name)
    seen: set[int] = set()

    def walk(node: object):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        text = text_of(node)
        if text is not node:
            yield from walk(text)
        for branch in ("text_config", "language_config", "thinker_config", "model_config"):
            yield from walk(getattr(node, branch, None))
        yield node

    for node in walk(config):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise AttributeError(f"{type(config).__name__} has no nested {name}")


# %% tags=["checker", "exercise-3.3"]
check_exercise("3.3", find_text_attr)

# %% [markdown]
# `get_text_config_attr` follows verl 0.9.1's `verl/utils/megatron_utils.py::get_hf_config_attr`: the text
# config (`get_text_config()`, else `text_config`), then `text_config`, `language_config`,
# `thinker_config`, `model_config` deepest first, each node after its branches, never other siblings;
# `None` counts as absent, `0`/`False` are values. (#7106's first version of it was a queue over those
# four names that read the root first.)

# %%
text = ToyConfig("Text", hidden_size=4096, tie_word_embeddings=False, first_k_dense_replace=0)
audio = ToyConfig("Audio", hidden_size=1280, num_mel_bins=128)
omni = ToyConfig("Omni", hidden_size=1024, text_config=text, audio_config=audio,
                 code2wav_config=ToyConfig("Code2Wav", num_mel_bins=80))
print("naive BFS hidden_size:", bfs_config_attr(omni, "hidden_size"), "| text walk:", get_text_config_attr(omni, "hidden_size"))
print("naive BFS num_mel_bins:", bfs_config_attr(omni, "num_mel_bins"), "(from the audio sibling)")
with expect_error(AttributeError, match="num_mel_bins"):
    get_text_config_attr(omni, "num_mel_bins")
claim("the text walk returns the language model's hidden_size", get_text_config_attr(omni, "hidden_size") == text.hidden_size,
      upstream="get_hf_config_attr: root 1024, text_config 4096 -> 4096")
claim("the naive BFS silently returns the root's", bfs_config_attr(omni, "hidden_size") == omni.hidden_size)

# %% [markdown]
# The same config as a tree: each box is a sub-config with its `hidden_size`, under it the step at which each walk
# reads it. The naive walk stops at the root; the text walk reads the text config first and never opens the audio or
# code2wav siblings (grey), whatever they hold.

# %%
from verlstudy.lessons.l03_router_replay.walk_pictures import draw_walks, walk_table

_ = draw_walks(omni, "hidden_size")
_, naive_from, text_from = walk_table(omni, "hidden_size")
claim("in the tree, the naive walk answers from the root and the text walk from text_config",
      (naive_from, text_from) == ("<root>", "text_config"))
claim("falsy values are kept", (get_text_config_attr(omni, "tie_word_embeddings"), get_text_config_attr(omni, "first_k_dense_replace")) == (False, 0))

# %% [markdown]
# A composite config whose `get_text_config()` returns a text config it does not store as `text_config`
# (root 1024, a `decoder_config` sibling 2048, the text config 8192), and verl 0.9.1's own
# `get_hf_config_attr` on both configs:

# %%
composite = ComposedConfig("Composite", ToyConfig("Decoder", hidden_size=8192), hidden_size=1024,
                           decoder_config=ToyConfig("Dec", hidden_size=2048))
print("text walk:", get_text_config_attr(composite, "hidden_size"), "| naive BFS:", bfs_config_attr(composite, "hidden_size"))


def upstream_config_walk() -> None:
    get_hf_config_attr = verl_fns.load_hf_config_attr()
    for name, config in (("omni", omni), ("composite", composite)):
        theirs = get_hf_config_attr(config, "hidden_size")
        claim(f"upstream get_hf_config_attr on the {name} config gives ours ({theirs})",
              theirs == get_text_config_attr(config, "hidden_size"), upstream=verl_fns.HF_ATTR)
    with expect_error(AttributeError, match="num_mel_bins"):
        get_hf_config_attr(omni, "num_mel_bins")


_ = upstream_cell(upstream_config_walk)

# %%
text.model_config = omni  # a cycle: the text config points back at the root
with expect_error(AttributeError, match="no nested 'intermediate_size'"):
    get_text_config_attr(omni, "intermediate_size")
claim("a cyclic config is walked safely", get_text_config_attr(omni, "hidden_size") == 4096)

# %% [markdown]
# ## Guard: the tests that would have caught them
# The course's repository tests each failure mode (`tests/lessons/l03_router_replay/`). Each guard (a predicate in
# `guards`) runs on bug and fix; passing both catches nothing. The last "fix" is the course's header flag, not
# verl's: verl 0.9.1 raises before `pp_gather` (section 4), failing that guard like the bug.

# %%
dense_job = ToyTransformerConfig(num_layers=3, moe_layer_freq=None)  # a config the layer-info code rejects:
# the ungated positional lifecycle reaches that code with replay off, the gated one never does
guard_runs = {
    "disabled + empty registry is a no-op": (lambda make: guards.guard_disabled_is_noop(make, sizes),
        lambda reg: PositionalReplayController("disabled", tf_config=dense_job, registry=reg),
        lambda reg: ReplayController("disabled")),
    "the walk meets each decoder layer once": (lambda walk: guards.guard_decoder_scope(walk, sizes),
        lambda m: model_routers(m, scope="model"), model_routers),
    "stacking follows layer numbers": (lambda stack: guards.guard_layer_order(stack, by_layer),
        lambda pairs: stack_routes(pairs, order="walk"), stack_routes),
    "routes over every layer replay by layer": (lambda arm: guards.guard_absolute_replay(arm, sizes, tokens),
        lambda m, r: set_replay_targets(m, r, index="position"), set_replay_targets),
    "no rank is stranded in pp_gather": (guards.guard_no_rank_stranded, stranded, together),
}
COURSE_DESIGN = {"no rank is stranded in pp_gather"}  # fixed by the course's header flag; verl 0.9.1 has no such fix
for name, (guard, bug, fix) in guard_runs.items():
    on_bug, on_fix = guard(bug), guard(fix)
    fixed_by = "the course's design" if name in COURSE_DESIGN else "the fix"
    print(f"{name:<42} bug: {'passes' if on_bug else 'fails'}, {fixed_by}: {'passes' if on_fix else 'fails'}")
    claim(f"guard '{name}' fails on the bug and passes on {fixed_by}", (on_bug, on_fix) == (False, True))

# %% [markdown]
# ## Exercises
# **3.1**, **3.2** and **3.3** came before the cells that answer them. Any still "not yet right"?
# `exercise_hint("3.N")` prints the method.

# %% [markdown]
# ## On an accelerator
# With a GPU, record/update/replay and the uint8 view round trip run on CUDA (a multi-GPU `pp_gather` is not run here).

# %% tags=["gpu"]
if skip_unless("cuda"):
    gpu_model = TinyMoE(**sizes, registry=[]).to("cuda")
    gpu_tokens = tokens.to("cuda")
    r2.begin(gpu_model, forward_only=True)
    with torch.no_grad():
        gpu_model(gpu_tokens)
    gpu_routes = r2.end(gpu_model)
    torch.nn.functional.cross_entropy(gpu_model(gpu_tokens), targets.to("cuda")).backward()
    sgd_step(gpu_model, lr)
    r2.begin(gpu_model, forward_only=False, routes=gpu_routes)
    with torch.no_grad():
        gpu_model(gpu_tokens)
    print("cuda: tokens off the record under replay:", rerouted_tokens(gpu_routes, routes_used(gpu_model)))
    cuda_ids = expert_ids.to("cuda")
    print("cuda: uint8 view round trip exact:", torch.equal(pipeline.from_wire(pipeline.to_wire(cuda_ids, 2), 1), cuda_ids))

# %% [markdown]
# ## Checked against upstream verl
# With verl installed, the next cell runs verl's own functions beside the course's on generated inputs; a disagreement
# stops the notebook, and without verl it prints one skip line.

# %% tags=["nbval-ignore-output"]
from verlstudy.lessons.l03_router_replay.upstream import upstream_check

upstream_check()

# %% [markdown]
# ## Takeaways
# - Replay exists because one update moves the routing; replay pins the experts recorded earlier: in the
#   old-log-prob forward (R2) or at rollout, where the samples were drawn (R3).
# - A feature's hooks must be **opt-in**: with the mode off, touch nothing. verl 0.9.0 and #7106's branch asked
#   the positional helper on every forward; #7805 gates the whole lifecycle by the mode, and verl 0.9.1's helper
#   returns `[]` on an empty registry first. What exactly broke ordinary jobs on the merged #7106 is not
#   established here.
# - Collect from **the model being forwarded**, and from its decoder only: globals accumulate stale
#   routers, and an MTP sibling restarts layer numbering at 1. #7340 (in 0.9.0) moved replay targets there,
#   which had silently missed the live routers before; 0.9.0's RECORD still read the registry and failed loudly
#   on a stale one; 0.9.1 walks the model for RECORD and the action queries too.
# - When two sides must agree on an order (RECORD and REPLAY), make it explicit: sort by layer number,
#   reject duplicates, and replay by absolute layer when the routes cover every layer, dense ones included.
#   Shape checks cannot catch a permutation.
# - `pp_gather` moves the default nested map with `all_gather_object`; the dense branch (VPP with BSHD
#   inputs) exchanges layer counts, pads the layer dim and sends uint8 views. Either way it is a collective, and a rank that raises
#   instead of joining strands the others until the timeout. Upstream (#7805's review, verl 0.9.1) lets a stage
#   without MoE layers join with a 0-layer map and keeps the hard failure for a stage that has routers but
#   captured nothing, raised in `forward_step` during 1F1B (the peers wait in point-to-point transfers). Carrying that
#   failure through the first exchange so every rank raises together is this course's design, not
#   upstream's.
# - Read nested configs along the branch you mean; a "search everything" walk answers wrongly and silently.
#
# ## Open questions
# - Should a stage that has routers but recorded nothing fail in RECORD (verl 0.9.1) or in the first collective
#   (this course's design)? What does each cost a job that runs for days?
# - R3 replays rollout's routes into training. Which tokens can a rollout engine route differently from the
#   trainer even with identical weights, and should replay cover them?
# - The toy needed a second, larger step at a rare seed before any route moved. What does that say about how
#   stable routing is in a real model after one small step?

# %% [markdown]
# ## Sources
# Facts checked against verl 0.9.1 (installed) and 0.9.0 (`.venv/verl-releases/0.9.0`); #7106's branch as stored
# (head `33a1928c1`, 2026-08-13) and its merge-base `535c47799`; in verl's git history, #7340's commit `c3747cbd7`
# is in tag `v0.9.0` and not in `v0.8.0`. Paths inside verl:
# - `verl/utils/megatron/router_replay_patch.py`: `RouterReplayAction` (RECORD, REPLAY_FORWARD, REPLAY_BACKWARD),
#   `RouterReplay` (the process-global `router_instances` registry; `get_replay_topk` pops the backward list FIFO
#   and applies a replay mask with `torch.where`), `apply_router_replay_patch` (clears the registry).
# - `verl/utils/megatron/router_replay_utils.py`: `iter_model_routers` (the decoder only: MTP layers restart
#   their numbering at 1), `merge_router_topk_indices` (sorted by layer number, int16; a 0-layer map for a stage
#   without MoE layers; raises for routers that captured nothing), `merge_nested_router_maps`,
#   `set_router_replay_data` (absolute `layer_number - 1` when the routes cover every decoder layer, else the MoE
#   ordinal), `pp_gather` (nested: `all_gather_object`; dense: counts, layer padding, uint8 view), `is_moe_layer`,
#   `RouterReplayHelper.get_micro_batch_router_list` (returns `[]` on an empty registry in 0.9.1).
# - `verl/workers/engine/megatron/transformer_impl.py`: the engine's `enable_routing_replay` gates `forward_step`'s
#   REPLAY hooks, the batch's `enable_routing_replay` flag (`verl/workers/engine_workers.py`) and
#   `record_r2_routes` gate the rest; `forward_step` calls the RECORD merge during the schedule; `pp_gather` runs
#   after it. In 0.9.0, `forward_step` already passes `model=unwrapped_model` to `set_router_replay_data`.
# - `verl/workers/config/engine.py::EngineRouterReplayConfig`: the three modes, validated in `__post_init__`
#   (`actor.py::RouterReplayConfig` is a legacy class nothing reads); `verl/utils/config.py::
#   _validate_router_replay_config` rejects R2 with `rollout_correction.bypass_mode=True`.
# - `verl/utils/megatron_utils.py::get_hf_config_attr`: the text-branch config walk.
# - PRs: #7805, #7106, #7786, #7340 (the decoder built twice; replay targets and action switches through the
#   model's own routers, first released in 0.9.0), #5037 (replay by absolute layer), #4101.
#
# The toy router, controller and pipeline are the course's own (`verlstudy.lessons.l03_router_replay`); verl's
# functions run beside them with stand-ins for Megatron (`upstream.py`: TP = CP = 1).

# %%
claims_table()
