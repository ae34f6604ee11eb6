# %% [markdown]
# # 07 · A 512-device GRPO recipe read closely: layout and clip-higher
#
# **Upstream:** [verl PR #7788](https://github.com/verl-project/verl/pull/7788) added a
# [GRPO](00_start_here.ipynb#GRPO) recipe for GLM-5.2 on 32 nodes x 16 [NPU](00_start_here.ipynb#NPU)s: a launch
# script whose parallel sizes, pipeline layout, batch sizes and clip ratios must all agree with each other, or
# the job fails (or runs a layout nobody meant).
#
# **You will** derive every size from the few the recipe chooses and see where each of the 512 devices sits;
# make bad combinations fail on a laptop with an error that names them; read verl's own policy loss and walk it
# region by region, with asymmetric clipping ([clip-higher](00_start_here.ipynb#clip-higher), 0.2 / 0.28) and
# dual clip (c = 10); add the recipe's rollout correction and [KL](00_start_here.ipynb#KL) term; see where its
# offload settings put the memory; and watch clip-higher keep a toy GRPO bandit exploring for longer.
#
# **Time:** 50 minutes. **Assumes:** what [DP](00_start_here.ipynb#DP), [TP](00_start_here.ipynb#TP) and
# [PP](00_start_here.ipynb#PP) split; PPO's ratio and clip. Files and commits are listed under "Sources" at the end.
#
# Facts checked against verl 0.9.1.

# %% tags=["parameters"]
device = "auto"  # "auto" | "cpu" | "cuda" | "npu": where the accelerator cell runs the loss
seed = 0
bandit_steps = 40  # GRPO steps of the toy bandit (40..200)
bandit_prompts = 64  # prompts (independent bandits) per step (64..512)
robustness_seeds = 4  # extra seeds the clip-higher result is re-checked on (1..8)

# %%
import importlib.util, subprocess, sys
if "google.colab" in sys.modules and not importlib.util.find_spec("verlstudy"):  # Colab only: this release of the course
    subprocess.run(f"{sys.executable} -m pip install -q --no-deps git+https://github.com/verlstudy/verlstudy@v0.1.0 && {sys.executable} -m verlstudy.kit.colab || echo 'The course did not install: Runtime > Restart session, then run this cell again.'", shell=True)

from verlstudy.kit.claims import claim, claims_table, expect_error
from verlstudy.kit.devices import skip_unless
from verlstudy.kit.exercises import check_exercise, exercise_hint
from verlstudy.kit.show import show_change, show_source, upstream_source
from verlstudy.lessons.l07_grpo_recipe.params import lesson_params

params = lesson_params(device, seed, bandit_steps, bandit_prompts, robustness_seeds)
seed, bandit_steps, bandit_prompts, robustness_seeds = (params.seed, params.bandit_steps, params.bandit_prompts,
                                                        params.robustness_seeds)

# %% [markdown]
# ## 1. Symptom: a wall of numbers
# The recipe's numbers, as `data/recipes/glm52_grpo_7788.yaml` stores them (only the chosen ones; every
# derived size below is computed), transcribed from the PR's launch script
# `examples/ascend_extras/grpo_trainer/run_glm5_2_megatron.sh`. One wrong entry here and the job fails, or
# worse, runs with a layout nobody meant.

# %%
from verlstudy.kit.resources import data_dir
from verlstudy.lessons.l07_grpo_recipe.parallel import load_recipe

recipe = load_recipe(data_dir() / "recipes" / "glm52_grpo_7788.yaml")
print("from", recipe["upstream_file"], "at", recipe["upstream_commit"][:8])
for section in ("cluster", "train", "rollout", "batch", "algorithm", "rollout_correction", "offload"):
    print(f"{section:<9}", ", ".join(f"{k}={v}" for k, v in recipe[section].items()))

# %% [markdown]
# ### Predict first: exercise 7.1
# Before the next sections derive them: the recipe's dense (attention) weights exist in `dp` replicas
# and its [MoE](00_start_here.ipynb#MoE) expert weights in `edp` replicas (expert data parallelism: how many
# copies of each expert shard exist); each is sharded by the parallel sizes that apply to it
# (which of TP, PP, [CP](00_start_here.ipynb#CP), [EP](00_start_here.ipynb#EP) and ETP, expert tensor parallelism,
# apply to which is the question). **7.1** Write
# `my_dp_sizes(world, tp, pp, cp, ep, etp)` returning `(dp, edp)`, or raising `ValueError` when either
# does not come out whole. All six arguments are positive ints; return two ints (a tuple or a list), never
# floats. A wrong try's message names the mistake; the second adds where to look, the third a question, the
# fourth the method. `exercise_hint("7.1")` prints every rung and `show_solution("7.1")` the answer, any time.

# %% tags=["solution", "exercise-7.1"]
def my_dp_sizes(world: int, tp: int, pp: int, cp: int, ep: int, etp: int) -> tuple[int, int]:
    """Return (dp, edp) for a layout, or raise ValueError if world does not divide."""
    if world % (tp * cp * pp) or world % (etp * ep * pp):
        raise ValueError(f"world={world} does not divide by tp*cp*pp or etp*ep*pp")
    return world // (tp * cp * pp), world // (etp * ep * pp)


# %% tags=["checker", "exercise-7.1"]
check_exercise("7.1", my_dp_sizes)

# %% [markdown]
# ## 2. Reproduce: layouts that do not divide
# Dense (attention) weights are split `world = tp * cp * dp * pp`; MoE experts are folded differently,
# `world = etp * ep * edp * pp` (Megatron's expert parallelism). Both must come out whole. An expert product
# too big for the cluster, then two typos of the recipe, caught before any device starts:

# %%
from verlstudy.lessons.l07_grpo_recipe.parallel import ParallelLayout

with expect_error(ValueError, match="not divisible"):
    ParallelLayout(nodes=32, devices_per_node=16, tp=8, pp=8, cp=1, ep=64, etp=2)
cluster, train = recipe["cluster"], recipe["train"]
sizes = {k: train[k] for k in ("tp", "pp", "cp", "ep", "etp")}
with expect_error(ValueError, match="no whole data-parallel size"):
    ParallelLayout(**cluster, **(sizes | {"pp": 6}))
with expect_error(ValueError, match="no whole expert-data-parallel size"):
    ParallelLayout(**cluster, **(sizes | {"ep": 128}))

# %% [markdown]
# ## 3. Root cause and fix: derive every size
# The course's `ParallelLayout` is the check a launch script lacks: it refuses a layout before anything starts,
# and derives the rest. Both divisions are in its `__post_init__`:

# %%
show_source(ParallelLayout.__post_init__)

# %% [markdown]
# The recipe's own choice divides: TP=8, PP=8, CP=1 give **dp = 512 / 64 = 8** dense replicas; EP=64, ETP=1
# spread a stage's experts over all 64 of its devices, so **edp = 1**: each expert shard exists once.

# %%
layout = ParallelLayout(**cluster, **sizes)
print(layout.summary())
claim("world size (devices)", layout.world_size, 512, upstream="32 nodes x 16 NPUs")
claim("dense data-parallel size dp", layout.dp, 8)
claim("expert data-parallel size edp", layout.edp, 1)
claim("devices per pipeline stage", layout.ranks_per_stage, 64)
claim("TP group fits in one node", layout.tp_within_node)

# %% [markdown]
# ### Where the 512 devices sit
# verl 0.9.1 calls `mpu.initialize_model_parallel` without an `order`, so stock Megatron's `"tp-cp-ep-dp-pp"`
# numbers the ranks, [TP](00_start_here.ipynb#TP) fastest: `rank = tp + 8 * dp + 64 * pp` (dense),
# `rank = ep + 64 * pp` ([EP](00_start_here.ipynb#EP)). Ascend patches not checked; 16 ranks a node assumed
# (Sources). A column is a node:

# %%
from verlstudy.lessons.l07_grpo_recipe.placement import draw_placement, group_nodes, stage_nodes

fig = draw_placement(layout)
claim("each pipeline stage fills 4 whole nodes", all(nodes == tuple(range(4 * s, 4 * s + 4))
                                                   for s, nodes in stage_nodes(layout).items()))
claim("every TP group sits inside one node", all(len(n) == 1 for n in group_nodes(layout, "tp")))
claim("each EP group spans the 4 nodes of its stage", sorted(map(len, group_nodes(layout, "ep"))), [4] * 8)
claim("each dense DP group spans 4 nodes too", set(map(len, group_nodes(layout, "dp"))), {4})

# %% [markdown]
# Read it by traffic. TP's all-reduces, in every layer, stay on one node (two TP groups a node, labelled by
# [DP](00_start_here.ipynb#DP) index). The experts' all-to-all and the dense gradients' reduction (`dp0`..`dp7`
# along a row) cross a stage's 4 nodes; pipeline sends go from one 4-node block to the next.

# %% [markdown]
# [Rollout](00_start_here.ipynb#rollout) (the inference engine generating responses) has its own layout:
# TP=8 x DP=8 = 64 devices a replica, 8 replicas. `RolloutConfig` asserts `ep == tp * dp` for every engine but
# `trtllm`, which checks `moe_tp * ep == tp` instead (`workers/config/rollout.py`); the recipe runs vLLM.

# %%
from verlstudy.lessons.l07_grpo_recipe.parallel import RolloutLayout

rollout = RolloutLayout(world_size=layout.world_size, **recipe["rollout"])
claim("devices per rollout replica", rollout.devices_per_replica, 64)
claim("rollout replicas", rollout.replicas, 8)
with expect_error(ValueError, match="must equal tp*dp"):
    RolloutLayout(world_size=512, tp=8, dp=8, ep=32)

# %% [markdown]
# ### The pipeline layout string
# [Megatron](00_start_here.ipynb#Megatron)'s layout string `Et*10|t*12|...|t*4L`: `|` separates stages, `t*N` is
# N decoder layers, `E` the embedding, `L` the loss head. Stages run 10, 12, 8, 8, 12, 12, 12, 4; the PR says
# not why. **The course's reading:** the loss stage also projects onto the vocabulary, so it gets 4. A pipeline
# runs at its largest stage's pace:

# %%
from verlstudy.kit.plots import bar_plot, line_plot
from verlstudy.lessons.l07_grpo_recipe.parallel import parse_pipeline_layout

pipeline = parse_pipeline_layout(train["pipeline_layout"])
pipeline.check(pp=layout.pp, num_layers=train["num_layers"])
stage_names = {f"stage {i}" + (" +E" if s.embedding else "") + (" +L" if s.loss else ""): s.layers
               for i, s in enumerate(pipeline.stages)}
bar_plot(stage_names, title="Decoder layers per pipeline stage (#7788)", ylabel="layers")
claim("pipeline stages", pipeline.num_stages, 8)
claim("decoder layers placed", pipeline.num_layers, 78)
claim("largest stage / mean stage", pipeline.imbalance, 12 / (78 / 8), rtol=1e-9, digits=3)
with expect_error(ValueError, match="bad token"):
    parse_pipeline_layout("Et*10|t*12|t8|t*8|t*12|t*12|t*12|t*4L")

# %% [markdown]
# ### One GRPO step, cut into pieces
# 64 prompts x `n=8` = 512 sequences a step; `ppo_mini_batch_size=16` prompts (128 sequences) makes 4 optimizer
# steps. Each of 8 DP ranks runs 16 sequences a [mini-batch](00_start_here.ipynb#mini-batch), one per
# [micro-batch](00_start_here.ipynb#micro-batch); [1F1B](00_start_here.ipynb#1F1B) still idles
# (pp - 1) / (m + pp - 1) = 7/23 with m = 16. No VPP (virtual pipeline: interleaved layer chunks; Sources).

# %%
from verlstudy.lessons.l07_grpo_recipe.parallel import BatchPlan, pipeline_bubble_fraction

batch = recipe["batch"]
plan = BatchPlan(train_batch_size=batch["train_batch_size"], n=batch["n"],
                 ppo_mini_batch_size=batch["ppo_mini_batch_size"],
                 micro_batch_size=batch["micro_batch_size_per_device"], dp=layout.dp)
tokens_per_sequence = batch["max_prompt_length"] + batch["max_response_length"]
claim("sequences per step", plan.sequences_per_step, 512)
claim("sequences per mini-batch", plan.sequences_per_mini_batch, 128)
claim("optimizer steps per training step", plan.mini_batches_per_step, 4)
claim("sequences per dp rank per mini-batch", plan.sequences_per_rank, 16)
claim("micro-batches per rank per mini-batch", plan.micro_batches_per_mini_batch, 16)
claim("layer chunks per device (layout stages / pp): no VPP", pipeline.num_stages // layout.pp, 1,
      upstream="Megatron core_v0.18.0 pipeline_parallel_layer_layout.py: vpp size = layout stages // pp")
claim("pipeline bubble fraction (1F1B, no VPP)", pipeline_bubble_fraction(layout.pp, plan.micro_batches_per_mini_batch), 7 / 23, rtol=1e-9, digits=3)
claim("max tokens per step", plan.sequences_per_step * tokens_per_sequence, 512 * 8192)
with expect_error(ValueError, match="does not split over dp=3"):
    BatchPlan(train_batch_size=64, n=8, ppo_mini_batch_size=16, micro_batch_size=1, dp=3)

# %% [markdown]
# ### What edp = 1 costs in memory (an estimate)
# Per 1e9 parameters: bf16 weights 2 B, fp32 grads 4 B, Adam state 12 B, the state sharded over dp x cp (dense,
# Megatron's [distributed optimizer](00_start_here.ipynb#distributed-optimizer)) or edp (experts). With edp = 1
# the expert state is not sharded at all: twice their weights and grads.

# %%
from verlstudy.lessons.l07_grpo_recipe.parallel import estimate_train_memory_per_device

per_billion = {kind: estimate_train_memory_per_device(layout, **{f"{kind}_params": 1e9, f"{other}_params": 0})
               for kind, other in (("dense", "expert"), ("expert", "dense"))}
for kind, est in per_billion.items():
    print(f"{kind:<6} per 1e9 params: {est['total_bytes'] / 2**20:.1f} MiB/device "
          f"(optimizer {est['optimizer_bytes'] / 2**20:.1f} MiB)")
claim("ways the dense weights are split", 1e9 / per_billion["dense"]["dense_params_per_device"], 64, rtol=1e-9)
claim("ways the expert weights are split", 1e9 / per_billion["expert"]["expert_params_per_device"], 512, rtol=1e-9)
claim("dense optimizer / weights+grads", per_billion["dense"]["optimizer_bytes"]
      / per_billion["dense"]["weights_and_grads_bytes"], 12 / 8 / 6, rtol=1e-9)
claim("expert optimizer / weights+grads (edp=1)", per_billion["expert"]["optimizer_bytes"]
      / per_billion["expert"]["weights_and_grads_bytes"], 12 / 6, rtol=1e-9)

# %% [markdown]
# ### Where that state lives: the recipe's offload settings
# Five of the recipe's `offload` settings (from the script) move most of it to host memory:
# - `param_offload` (verl, `megatron_utils.py::offload_megatron_model_to_cpu`): while the [actor](00_start_here.ipynb#actor) is idle
#   (during rollout) its bf16 weights are copied to [pinned](00_start_here.ipynb#pinned-memory) host memory and
#   its grad buffer is freed.
# - `optimizer_offload` (verl, `offload_megatron_optimizer`): the optimizer state goes to the host while idle.
# - `optimizer_cpu_offload` with `optimizer_offload_fraction=1` (Megatron-core `OptimizerConfig`:
#   "offload optimizer states tensor and compute to CPU"): all of the optimizer state stays on the host
#   even while training, and the Adam step runs on the CPU, which keeps a pinned fp32 copy of the gradients.
# - `use_precision_aware_optimizer`: Megatron's `cpu_offloading/README.md` lists it with the two above
#   as what enables CPU offload. It would allow bf16 grads and moments, but the recipe leaves their
#   dtypes at Megatron's fp32 defaults, so it changes no byte count here.

# %%
from verlstudy.lessons.l07_grpo_recipe.memory import NO_OFFLOAD, OffloadSettings, memory_by_phase, totals

show_source(memory_by_phase)

# %% [markdown]
# A first version of this estimate missed one line. Megatron's CPU optimizer (`HybridDeviceOptimizer`,
# `hybrid_optimizer.py`) gives each parameter it steps a pinned host copy of its fp32 gradient, allocated once and
# kept between steps: 4 B a parameter. The fix, as a change:

# %%
from verlstudy.lessons.l07_grpo_recipe.memory import memory_by_phase_without_grad_copy

show_change(memory_by_phase_without_grad_copy, memory_by_phase)

# %% [markdown]
# Per rank, per 1e9 expert parameters (the edp = 1 case), in both phases of a step; the reference model is
# offloaded likewise and not plotted:

# %%

offload = OffloadSettings.from_recipe(recipe["offload"])
mib = {name: {k: v / 2**20 for k, v in totals(memory_by_phase(layout, 0, 1e9, s)).items()}
       for name, s in (("no offload", NO_OFFLOAD), ("#7788", offload))}
fig = bar_plot({f"{name}: {k}": v for name, t in mib.items() for k, v in t.items()},  # eight long labels: slanted
               title="Actor memory per rank, per 1e9 expert params", ylabel="MiB", digits=4, labelrotation=35,
               labelalign="right")
per_rank = 1e9 / 512 / 2**20  # MiB per byte-per-parameter on one rank
claim("no offload: device holds 18 B/param in both phases", mib["no offload"]["rollout device"], 18 * per_rank, rtol=1e-9)
claim("#7788 training: device 6 B/param (weights + grads)", mib["#7788"]["train device"], 6 * per_rank, rtol=1e-9)
claim("#7788 training: host 16 B/param (optimizer state + pinned grad copy)", mib["#7788"]["train host"],
      16 * per_rank, rtol=1e-9, upstream="Megatron-core hybrid_optimizer.py: pinned CPU grad copy, kept between steps")
claim("#7788 rollout: the actor holds no device memory", mib["#7788"]["rollout device"] == 0.0)
claim("#7788 rollout: host 18 B/param (device grads freed)", mib["#7788"]["rollout host"], 18 * per_rank, rtol=1e-9)

# %% [markdown]
# ### Predict first: exercises 7.2 and 7.3
# The algorithm next: the loss and the advantages. Write both before sections 4 and 5 show them.
#
# **7.2** Write `my_token_loss(ratio, advantage, clip_low, clip_high, clip_c)`: verl's per-token loss as
# plain Python floats: PPO's pessimistic clipped loss, the ratio clipped to `[1 - clip_low, 1 + clip_high]`,
# and verl's dual clip, which caps the loss of a negative-advantage token at `clip_c` times its negated advantage
# (the unclipped loss it would have at ratio `clip_c`). It receives five
# Python floats (`clip_c` > 1) and returns one number (a float; a one-element tensor passes too).

# %% tags=["solution", "exercise-7.2"]
def my_token_loss(ratio: float, advantage: float, clip_low: float, clip_high: float, clip_c: float) -> float:
    """Return the per-token clipped policy loss of verl's compute_policy_loss_vanilla."""
    clipped_ratio = min(max(ratio, 1 - clip_low), 1 + clip_high)
    loss = max(-advantage * ratio, -advantage * clipped_ratio)
    if advantage < 0:
        loss = min(loss, -advantage * clip_c)
    return loss


# %% tags=["checker", "exercise-7.2"]
check_exercise("7.2", my_token_loss)

# %% [markdown]
# **7.3** Write `my_advantages(rewards)` for one group (a list of floats): GRPO's normalised
# advantages, with the unbiased std and epsilon 1e-6, and no NaN when every reward is the same. It receives a
# list of at least two floats, which it must not change, and returns one float per reward, in order (a list, a
# tuple, a numpy array or a tensor of them).

# %% tags=["solution", "exercise-7.3"]
def my_advantages(rewards: list[float]) -> list[float]:
    """Return GRPO's normalised advantage of each reward, in order, as a list of floats.

    `rewards` holds the rewards of one prompt's group of responses (at least two of them).
    """
    n = len(rewards)
    mean = sum(rewards) / n
    std = (sum((r - mean) ** 2 for r in rewards) / (n - 1)) ** 0.5
    return [(r - mean) / (std + 1e-6) for r in rewards]


# %% tags=["checker", "exercise-7.3"]
check_exercise("7.3", my_advantages)

# %% [markdown]
# ## 4. The algorithm: GRPO advantages
# GRPO needs no critic: each prompt's n responses are scored, and a response's advantage is its reward
# minus its group's mean, over the group's (unbiased) std + 1e-6. A group whose responses all score the
# same teaches nothing (advantage 0), and must not produce NaN.

# %%
import torch

from verlstudy.lessons.l07_grpo_recipe.grpo import group_advantages

rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0], [1.0] * 8])
adv = group_advantages(rewards)
print("advantages:", [[round(a, 3) for a in row] for row in adv.tolist()])
# by hand: mean 0.25, unbiased variance (2 * 0.75**2 + 6 * 0.25**2) / 7 = 1.5 / 7
claim("advantage of a correct response in a 2/8 group", adv[0, 0].item(), 0.75 / (1.5 / 7) ** 0.5, rtol=1e-5)
claim("constant group gives zero advantage, no NaN", bool((adv[1] == 0).all() and not adv.isnan().any()))

# %% [markdown]
# ## 5. verl's policy loss, region by region
# verl's own lines first, read from the installed 0.9.1: the clip settings and the loss of
# `verl/trainer/ppo/core_algos.py::compute_policy_loss_vanilla`. #7788 adds only a script and changes none of
# these lines (the function is the same in 0.9.0); it sets the three numbers they read.

# %% tags=["upstream-source", "nbval-ignore-output"]
_ = upstream_source("trainer/ppo/core_algos.py", "compute_policy_loss_vanilla", contains="clip_ratio_high = config",
                    context=4)
_ = upstream_source("trainer/ppo/core_algos.py", "compute_policy_loss_vanilla", contains="pg_losses2 = -advantages",
                    context=18)

# %% [markdown]
# Walk through it. The recipe's 0.2 and 0.28 clip the ratio to [0.8, 1.28]: clip-higher. `clip_ratio_c`
# (default 3, must exceed 1) is 10. `pg_losses1` is unclipped, `pg_losses2` clipped, `torch.maximum` keeps the
# larger (pessimistic) loss; `pg_losses3`, the dual clip, caps it where the advantage is negative. The course's
# copy, on plain tensors:

# %%
from verlstudy.lessons.l07_grpo_recipe.grpo import _clipped_terms

_ = show_source(_clipped_terms)

# %% [markdown]
# Line for line: `unclipped`, `clipped`, `pessimistic` and `dual_cap` are verl's `pg_losses1`, `pg_losses2`,
# `clip_pg_losses1` and `pg_losses3`. Per token, with r = p_new / p_old: `max(-A r, -A clip(r, 1 - 0.2, 1 + high))`,
# for A < 0 capped at `-A c`. Where a clip holds the loss flat its gradient is zero: for A > 0, above `1 + high`.

# %%
from verlstudy.lessons.l07_grpo_recipe.grpo import loss_surface, policy_loss

grid = torch.arange(0.505, 2.0, 0.01, dtype=torch.float64)  # offset by 0.005: no point sits on an edge
for high in (0.2, 0.28):
    _, grads = loss_surface(grid, 1.0, 0.2, high, 10.0)
    flat = [g == 0 for g in grads]
    claim(f"A>0, clip_high={high}: zero gradient exactly where ratio > {1 + high:g}",
          flat == [r > 1 + high for r in grid.tolist()])
ratios = [0.6, 0.8, 1.0, 1.1, 1.2, 1.28, 1.4, 1.6]
fig = line_plot({f"(0.2, {h})": (ratios, loss_surface(torch.tensor(ratios), 1.0, 0.2, h, 10.0)[0]) for h in (0.2, 0.28)},
          title="Per-token loss for A = +1", xlabel="ratio", ylabel="loss", digits=3)

# %% [markdown]
# For A < 0 the pessimistic max lets the loss grow with the ratio without bound (a bad token the policy now
# likes far more). Dual clip caps it at `-A c`: verl's default c = 3, the recipe's 10. Below `1 - 0.2` it is
# flat too.

# %%
ratios = [0.5, 0.8, 1.0, 2.0, 3.0, 5.0, 10.0, 12.0]
surfaces = {f"c={c:g}": loss_surface(torch.tensor(ratios, dtype=torch.float64), -1.0, 0.2, 0.28, c) for c in (3.0, 10.0)}
fig = line_plot({k: (ratios, v[0]) for k, v in surfaces.items()},
          title="Per-token loss for A = -1", xlabel="ratio", ylabel="loss", digits=3)
for c in (3.0, 10.0):
    losses, grads = surfaces[f"c={c:g}"]
    claim(f"A<0, c={c:g}: loss capped at", max(losses), c)
claim("A<0: no gradient below 1 - clip_low or above c", surfaces["c=3"][1][0] == 0 and surfaces["c=3"][1][-1] == 0)

# %% [markdown]
# On a batch, verl reports how often the clips bind: `pg_clipfrac` (the clipped term is the larger)
# and `pg_clipfrac_lower` (the dual clip binds, A < 0), plus `ppo_kl`, the simple estimate
# mean(old_logp - logp), which can come out negative on one batch. Same tokens, two settings:

# %%
gen = torch.Generator().manual_seed(seed)
old_logp = -torch.rand(4, 64, generator=gen) * 3
logp = old_logp + torch.randn(4, 64, generator=gen) * 0.8  # an update that moved the policy a lot
advantages, mask = torch.randn(4, 64, generator=gen), torch.ones(4, 64)
default = policy_loss(logp, old_logp, advantages, mask, 0.2, 0.2, 3.0)
recipe_loss = policy_loss(logp, old_logp, advantages, mask, 0.2, 0.28, 10.0)
for name, out in (("verl default (0.2, 0.2, c=3)", default), ("#7788 (0.2, 0.28, c=10)", recipe_loss)):
    print(f"{name:<29} pg_clipfrac={out.pg_clipfrac:.3f} pg_clipfrac_lower={out.pg_clipfrac_lower:.3f} "
          f"ppo_kl={out.ppo_kl:.3f}")
claim("clip-higher clips fewer tokens", recipe_loss.pg_clipfrac < default.pg_clipfrac)
claim("c=10 dual-clips fewer tokens than c=3", recipe_loss.pg_clipfrac_lower < default.pg_clipfrac_lower)

# %% [markdown]
# ### The rest of the recipe's loss: rollout correction and the KL term
# The recipe optimises more than the clipped loss. From its `rollout_correction` and `algorithm` sections:
# - `rollout_rs=token_k1`, threshold `0.6_1.6`: verl (`compute_rollout_rejection_mask`) drops a token from
#   the response mask when pi_rollout / pi_train leaves [0.6, 1.6], i.e. when the inference engine and
#   the trainer disagree too much about it.
# - `rollout_is=token`, threshold 2.0, `rollout_is_batch_normalize=true`: truncated importance sampling (IS:
#   samples drawn from one distribution are weighted by a ratio of probabilities so that their average estimates
#   an average under another; truncated: the weight is capped). Each token's loss is weighted by
#   min(pi_old / pi_rollout, 2) (pi_old: the trainer's [old-log-prob](00_start_here.ipynb#old-log-prob) before the
#   update, pi_rollout: the engine's), and every weight is divided by the mean of those weights over *all response
#   tokens of the batch the function is given* (`compute_rollout_correction_weights`: `masked_mean`, or
#   `distributed_masked_mean` across ranks where `torch.distributed` is initialised; the mean is taken before
#   rejection). With the recipe's settings (not bypass mode, which would reuse the rollout's log-probs as the old
#   ones: `rollout_correction.bypass_mode`, default False, `trainer/config/algorithm.py:127-131,184`) verl computes
#   it once per step on the driver, over
#   the whole step's batch (64 prompts x 8), before the mini-batch split (verl 0.9.1 runs the V1 trainer by
#   default, `trainer.use_v1: true`: `trainer/ppo/v1/trainer_base.py::_compute_advantage` calls
#   `compute_rollout_correction_and_add_to_batch`; the legacy `ray_trainer.py` does the same). Our toy batch plays
#   that batch: one batch mean, the single-rank case.
# - `use_kl_loss`, `kl_loss_coef=0.002`, `kl_loss_type` left at verl's default `low_var_kl`: plus
#   0.002 x the token-mean k3 estimate of KL to the reference model (added as `losses.py::ppo_loss` adds the
#   terms; the comparison below runs `compute_policy_loss_vanilla`, `kl_penalty` and `agg_loss`, not `ppo_loss`).
#   k3 is Schulman's low-variance estimator (cited in `core_algos.py::kl_penalty_forward`): per token
#   `r - log r - 1` with `log r = ref_logp - logp`, never negative and, averaged over tokens the policy sampled,
#   an unbiased estimate of KL(policy || reference); verl clamps `log r` to ±20 and the result to ±10.
#
# verl's own lines for the batch normalisation, from the installed 0.9.1 (`rollout_corr_helper.py`):

# %% tags=["upstream-source", "nbval-ignore-output"]
_ = upstream_source("trainer/ppo/rollout_corr_helper.py", "compute_rollout_correction_weights",
                    contains="if rollout_is_batch_normalize:", context=28)

# %% [markdown]
# The weights are detached: they rescale each token's loss, carrying no gradient. One mean over every response
# token of the batch (`distributed_masked_mean` across ranks, else `masked_mean`) divides them all, so they average
# 1 over the batch, not per sequence. On the toy batch, with engine log-probs drifting (std 0.3) and a reference
# policy (std 0.2):

# %%
from verlstudy.lessons.l07_grpo_recipe.correction import parse_k1_bounds
from verlstudy.lessons.l07_grpo_recipe.correction import recipe_loss as full_recipe_loss

rollout_logp = old_logp + torch.randn(4, 64, generator=gen) * 0.3  # what the inference engine reported
ref_logp = old_logp + torch.randn(4, 64, generator=gen) * 0.2  # the frozen reference policy
rc, alg = recipe["rollout_correction"], recipe["algorithm"]
full = full_recipe_loss(logp, old_logp, rollout_logp, ref_logp, advantages, mask, clips=(0.2, 0.28, 10.0),
                        is_threshold=rc["rollout_is_threshold"], is_batch_normalize=rc["rollout_is_batch_normalize"],
                        rs_bounds=parse_k1_bounds(rc["rollout_rs_threshold"]), kl_loss_coef=alg["kl_loss_coef"])
fig = bar_plot({"clip only": full.clip_only, "+ token_k1 rejection": full.with_rejection,
                "+ token IS weights": full.with_is, "+ 0.002 x KL": full.total},
               title="The #7788 loss on the toy batch, term by term", ylabel="loss", digits=4)
print(f"tokens rejected {full.rejected_fraction:.4f}, IS weights truncated at 2 {full.truncated_fraction:.4f}, "
      f"low_var_kl {full.kl:.4f}")
claim("clip-only term is section 5's recipe loss", full.clip_only, recipe_loss.loss.item(), rtol=1e-5)
claim("token_k1 rejects some tokens, not most", 0 < full.rejected_fraction < 0.5)
claim("normalised IS weights average 1 over the response", (full.weights * mask).sum().item() / mask.sum().item(), 1.0, rtol=1e-5)
claim("the KL term adds 0.002 x KL", full.total - full.with_is, alg["kl_loss_coef"] * full.kl, rtol=1e-3)

# %% [markdown]
# The same batch through upstream's own functions (loaded from verl's source): the rejection mask, the
# weights and each term must match ours.

# %%
from verlstudy.kit.upstream import upstream_cell
from verlstudy.lessons.l07_grpo_recipe.upstream import check_recipe_loss_cell

upstream_cell(lambda: check_recipe_loss_cell((logp, old_logp, rollout_logp, ref_logp, advantages, mask), full))

# %% [markdown]
# ## 6. Why clip-higher: a toy GRPO bandit
# [DAPO](https://arxiv.org/abs/2503.14476)'s argument (Yu et al., 2025, the RL recipe that named clip-higher) in
# one line: a positive-advantage token can reach at most `p (1 + high)` in one update.
# A likely token (p = 0.9) is not held back at all; a rare one (p = 0.01) can only gain `0.01 * high`.
# The upper clip therefore brakes exactly the tokens that keep a policy exploring.

# %%
from verlstudy.lessons.l07_grpo_recipe.bandit import max_prob_after_update

for p in (0.9, 0.5, 0.05, 0.01):
    print(f"p_old={p:<5} max p_new: high=0.2 -> {max_prob_after_update(p, 0.2):.4f}, "
          f"high=0.28 -> {max_prob_after_update(p, 0.28):.4f}")
claim("a p=0.9 token is not limited by the upper clip", max_prob_after_update(0.9, 0.2) == 1.0)

# %% [markdown]
# The bandit: each prompt has 8 answers; 4 pass a noisy verifier 70% of the time, 4 never. The policy starts
# favouring one good answer. Each step samples 8 answers a prompt and takes 4 SGD epochs of verl's loss (so the
# ratio leaves 1 and the clip binds). Same seed: only `clip_ratio_high` differs.

# %%
from verlstudy.lessons.l07_grpo_recipe.grpo import entropy
from verlstudy.lessons.l07_grpo_recipe.bandit import bandit_problem, train_clip_bandits

bandit = dict(prompts=bandit_prompts, arms=8, correct=4, success=0.7, n=8, epochs=4, steps=bandit_steps)
start_logits, _ = bandit_problem(bandit_prompts, 8, 4, seed, success=0.7)
favourite_p = torch.softmax(start_logits, dim=-1).max(dim=-1).values.mean().item()
print(f"start: favourite answer p = {favourite_p:.2f}, entropy {entropy(start_logits).mean().item():.2f} nats")
settings = [(0.2, 0.2, 10.0), (0.2, 0.28, 10.0)]  # (clip_low, clip_high, clip_c): symmetric, then clip-higher
symmetric, higher = train_clip_bandits(settings, [seed], **bandit)[seed]  # two independent runs, stepped together
shown = list(range(0, bandit_steps + 1, 5))
line_plot({"symmetric (0.2, 0.2)": (shown, [symmetric.entropy[i] for i in shown]),
           "clip-higher (0.2, 0.28)": (shown, [higher.entropy[i] for i in shown])},
          title="Mean policy entropy", xlabel="step", ylabel="nats", digits=3)
fig = line_plot({"symmetric (0.2, 0.2)": (shown[1:], [sum(symmetric.reward[i - 5:i]) / 5 for i in shown[1:]]),
           "clip-higher (0.2, 0.28)": (shown[1:], [sum(higher.reward[i - 5:i]) / 5 for i in shown[1:]])},
          title="Mean reward (5-step windows)", xlabel="step", ylabel="reward", digits=3)

# %%
from verlstudy.lessons.l07_grpo_recipe.bandit import steps_until_below

threshold, window = 0.5, 10  # nats (about half the start); steps averaged for the final reward
ends = symmetric.entropy[-1], higher.entropy[-1]
claim(f"final entropy: clip-higher {ends[1]:.3f} > symmetric {ends[0]:.3f} + 0.03 nats", ends[1] > ends[0] + 0.03)
lasts = steps_until_below(symmetric.entropy, threshold), steps_until_below(higher.entropy, threshold)
claim(f"steps until entropy < {threshold}: clip-higher {lasts[1]} > symmetric {lasts[0]}", lasts[1] > lasts[0])
rewards_end = [sum(run.reward[-window:]) / window for run in (symmetric, higher)]
claim(f"reward over the last {window} steps: symmetric {rewards_end[0]:.3f}, clip-higher {rewards_end[1]:.3f} (gap < 0.02)",
      abs(rewards_end[1] - rewards_end[0]) < 0.02)

# %% [markdown]
# One seed could be luck. The same comparison on further seeds:

# %%
finals = {}
for s, runs in train_clip_bandits(settings, range(seed + 1, seed + 1 + robustness_seeds), **bandit).items():
    pair = [run.entropy[-1] for run in runs]
    finals[s] = pair
    print(f"seed {s}: final entropy symmetric {pair[0]:.3f}, clip-higher {pair[1]:.3f}")
claim(f"clip-higher ends with more entropy on all {robustness_seeds} further seeds",
      all(h > s for s, h in finals.values()))

# %% [markdown]
# What this toy shows: a modest effect, sized by the step size and the epochs per sample; under 64 prompts
# seed noise can hide it (hence the ranges). With one SGD step per sample no clip ever binds (`test_grpo.py`).
# DAPO (Yu et al., 2025) reports the effect on real LLM training; the bandit shows the mechanism, not its size.

# %% [markdown]
# ### What else the recipe sets, briefly
# The script (yellowbee686/verl@89dad2d7) sets more than this lesson computes. In one line each, what and why:
# - **DSA attention**: `experimental_attention_variant="dsa"` with `use_dsa_absorb`, `dsa_indexer_use_sparse_loss`,
#   `dsa_indexer_loss_coeff=0`, the fused lightning-indexer and sparse-flash-attention kernels and
#   `dsa_grouped_recompute`. GLM-5 uses DeepSeek Sparse Attention (DSA, DeepSeek-V3.2, arXiv:2512.02556): a small
#   "lightning indexer" scores earlier tokens and each token attends only to its top-k; Megatron-core's
#   `transformer/experimental_attention_variant/dsa.py` implements it with an indexer loss that
#   `dsa_indexer_loss_coeff` scales, so 0 gives the indexer no loss of its own during RL.
# - **Fused kernels** (MindSpeed flags): `use_fused_rmsnorm=True` and `use_fused_swiglu` run RMSNorm and the SwiGLU
#   activation each as one NPU kernel instead of several small ops (MindSpeed's `core/fusions/fused_rms_norm.py`
#   calls `torch_npu.npu_rms_norm`, `fused_bias_swiglu.py` calls `torch_npu.npu_swiglu`): less memory traffic,
#   the same function up to rounding.
# - **Recompute**: `recompute_granularity=full`, `recompute_method=uniform`, `recompute_num_layers=1`: activations
#   are not kept for backward but recomputed layer by layer, trading compute for memory at 8k-token sequences.
# - **R3 router replay**: `router_replay.mode=R3` with `rollout.enable_rollout_routing_replay=True`: the trainer
#   replays the experts the inference engine's [router](00_start_here.ipynb#router) chose, so both compute the
#   same [MoE](00_start_here.ipynb#MoE) path for a token ([R3](00_start_here.ipynb#R3); lesson 03 builds it).
# - **Dummy rollout weights**: `rollout.load_format='dummy'`: the inference engine starts with random weights and
#   receives the actor's by weight sync before the first rollout (the default `trainer.v1.trainer_mode: sync`,
#   `trainer/config/ppo_trainer.yaml:238`: `trainer/ppo/v1/trainer_sync.py:31-33`, `on_init_end` calls
#   `checkpoint_manager.update_weights`), so only the training side (actor and reference model) reads the
#   checkpoint, never the inference engine; `rollout.calculate_log_probs=True` makes the engine return the
#   log-probs the rollout correction above needs (`trainer/config/rollout/rollout.yaml:235-237`, True by default).

# %%
claim("the fixture stores the recipe's router replay mode", recipe["algorithm"]["router_replay"], expected="R3",
      upstream="yellowbee686/verl@89dad2d7 run_glm5_2_megatron.sh: router_replay.mode=R3")

# %% [markdown]
# ## 7. Guard
# The guards are the validations above (a layout, rollout, layout string or batch that does not divide is a
# `ValueError` naming the numbers) and `tests/lessons/l07_grpo_recipe/`, which pins the derived sizes, the rank
# placement, each clip region, the offload estimate, and our loss against verl's own.
#
# ## 8. Exercises
# The three exercises came before the sections that answer them: **7.1** before section 2, **7.2** and
# **7.3** before section 4. Any still "not yet right"? Go back to it now; `exercise_hint("7.N")` prints every
# hint (the method last), `show_solution("7.N")` the answer, and the sections since then show the reasoning.

# %% [markdown]
# ## On an accelerator
# The loss is elementwise work plus two reductions; on a GPU it must give the CPU's numbers.

# %% tags=["gpu"]
if skip_unless("cuda"):
    on_gpu = policy_loss(*(x.to("cuda") for x in (logp, old_logp, advantages, mask)), 0.2, 0.28, 10.0)
    claim("GPU loss matches the CPU within 1e-5", abs(on_gpu.loss.item() - recipe_loss.loss.item()) < 1e-5)
    claim("GPU clip fractions match the CPU", (on_gpu.pg_clipfrac, on_gpu.pg_clipfrac_lower)
          == (recipe_loss.pg_clipfrac, recipe_loss.pg_clipfrac_lower))

# %% [markdown]
# ## Checked against upstream verl
# With verl installed, the next cell runs verl's own policy loss, advantages and rollout correction beside ours
# on generated inputs; a disagreement stops the notebook, and without verl it prints one skip line.

# %% tags=["nbval-ignore-output"]
from verlstudy.lessons.l07_grpo_recipe.upstream import upstream_check

upstream_check()

# %% [markdown]
# ## Takeaways
# - Dense and expert weights divide the same devices differently: `dp = world / (tp*cp*pp)` = 8 and
#   `edp = world / (etp*ep*pp)` = 1 for #7788; check both before launching, and remember that edp = 1
#   leaves the expert optimizer state unsharded; the recipe keeps all optimizer state on the host
#   (`optimizer_cpu_offload`, fraction 1) and offloads the weights during rollout (the PR gives no reason;
#   that the unsharded expert state drives it is the course's reading).
# - Rollout has its own layout (8 replicas of TP8 x DP8, EP = 64 = tp*dp).
# - The layout string must place exactly `num_layers` on exactly `pp` stages; #7788's stages are uneven
#   (4 layers on the loss stage) for reasons the PR does not state.
# - `ppo_mini_batch_size` counts prompts; with n = 8 and dp = 8 each rank runs 16 micro-batches per
#   mini-batch, enough to fill an 8-stage pipeline, which still idles 7/23 of the time.
# - verl's loss: clipped where the ratio leaves `[1 - low, 1 + high]` on the side the advantage pushes,
#   dual-clipped at `-A c` for A < 0. Clip-higher frees rare positive tokens and keeps entropy up for
#   longer at the same reward. The recipe then drops tokens the engine and trainer disagree on
#   (token_k1), reweights the rest by truncated importance sampling (IS, weight min(pi_old / pi_rollout, 2)) and
#   adds 0.002 x KL to the reference.
# - Offloading the optimizer to the CPU is not free on the host: besides the state (12 B/param) Megatron's CPU
#   optimizer keeps a pinned fp32 gradient copy (4 B/param) between steps.
#
# ## Open questions
# - With edp = 1 every expert shard exists once. What would edp = 2 (EP=32) cost in all-to-all traffic, and what
#   would it save in host memory?
# - The stages hold 10, 12, 8, 8, 12, 12, 12, 4 layers. What measurement would tell whether that balance is right?
# - The bandit shows clip-higher keeping entropy; what would you log in a real run to see the same, and when would
#   more entropy stop being worth it?

# %% [markdown]
# ## Sources
# Paths inside verl unless named otherwise.
# - `verl/trainer/ppo/core_algos.py::compute_policy_loss_vanilla`: ratio = exp(clamp(logp - old_logp, -20, 20));
#   the clipped loss with separate lower and upper bounds and, for A < 0, the dual clip; metrics `pg_clipfrac`,
#   `pg_clipfrac_lower`, `ppo_kl`. Its inputs come from an `ActorConfig` (`clip_ratio_low/high` fall back to
#   `clip_ratio` when None, `clip_ratio_c` via `config.get(..., 3.0)`, aggregation via `config.global_batch_info`);
#   ours takes plain arguments and aggregates on one rank.
# - `verl/trainer/ppo/core_algos.py::compute_grpo_outcome_advantage`: the group-normalised advantages of
#   section 4; a group of one gets mean 0 and std 1.
# - `verl/trainer/ppo/v1/trainer_base.py` (the V1 trainer `main_ppo.py` runs by default, `trainer.use_v1: true` in
#   0.9.0 and 0.9.1): `_update_actor` multiplies `ppo_mini_batch_size` (prompts) by `rollout.n`;
#   `_compute_advantage` runs `compute_rollout_correction_and_add_to_batch` on the driver outside bypass mode. The
#   legacy `ray_trainer.py` (`main_ppo_v0.py`) does both the same way.
# - `verl/workers/config/rollout.py::RolloutConfig.__post_init__`: `ep == tp * dp` unless `name == "trtllm"`, whose
#   check is `moe_tensor_parallel_size * expert_parallel_size == tensor_model_parallel_size`.
# - Megatron-LM `megatron/core/transformer/pipeline_parallel_layer_layout.py` at `core_v0.18.0`: virtual pipeline
#   size = layout stages // `pipeline_model_parallel_size`; verl's `trainer/config/engine/megatron.yaml`:
#   `virtual_pipeline_model_parallel_size: null`.
# - `verl/trainer/ppo/rollout_corr_helper.py::compute_rollout_correction_weights` (the batch normalisation,
#   `masked_mean` or `verl/utils/torch_functional.py::distributed_masked_mean`) and
#   `compute_rollout_rejection_mask`; `verl/trainer/ppo/core_algos.py::kl_penalty`; `verl/workers/utils/losses.py::ppo_loss`
#   adds the terms (the lesson runs the pieces, not `ppo_loss`).
# - `verl/workers/engine/megatron/transformer_impl.py`: `mpu.initialize_model_parallel` called without `order`, so
#   stock Megatron-core's default `"tp-cp-ep-dp-pp"` (`megatron/core/parallel_state.py` at `core_v0.18.0`) numbers
#   the ranks (not checked against the Ascend patches).
# - `verl/utils/megatron_utils.py::offload_megatron_model_to_cpu` (what `param_offload` moves), and Megatron-core's
#   `megatron/core/optimizer/optimizer_config.py` and `cpu_offloading/README.md` (what `optimizer_cpu_offload`,
#   `optimizer_offload_fraction`, `use_precision_aware_optimizer` do); `megatron/core/optimizer/cpu_offloading/
#   hybrid_optimizer.py::HybridDeviceOptimizer._set_sub_optimizer_grads` (the pinned CPU gradient copy,
#   `pin_cpu_grads=True`, kept in `cpu_copy_map_grad`), read at Megatron-LM main (0d41ecd8), not at `core_v0.18.0`.
# - Rank order: stock Megatron-LM's default at `core_v0.18.0`; whether MindSpeed and MegatronAdaptor change it is not
#   checked, and 16 consecutive ranks per node is the course's assumption. VPP: Megatron takes chunks per device as
#   layout stages // `pp`, and verl's `virtual_pipeline_model_parallel_size` defaults to none; the recipe sets none.
# - DSA: DeepSeek-V3.2 (arXiv:2512.02556, the lightning indexer and top-k selection); Megatron-LM
#   `megatron/core/transformer/experimental_attention_variant/dsa.py` (read at main 00bebb45). Fused kernels:
#   Ascend/MindSpeed `mindspeed/core/fusions/fused_rms_norm.py` and `fused_bias_swiglu.py`.
# - The recipe itself: `examples/ascend_extras/grpo_trainer/run_glm5_2_megatron.sh`, a bash script outside the
#   wheel, read from the fork yellowbee686/verl at commit `89dad2d7` (a fork's copy of the file #7788 added; no copy
#   on verl-project/verl is stored; later fork copies, e.g. zhtmike/verl@946020df, add #7836's
#   `checkpoint.strict=False` and change two header rows, Megatron-LM's ref and commit (`core_r0.18.0` dc0ee41 to
#   `core_v0.18.0` ba7b5eb) and MegatronAdaptor's commit (746fe27 to eb0e504), but set the same numbers);
#   `data/recipes/glm52_grpo_7788.yaml` is the course's transcription of its numbers.
# - DAPO (Yu et al., 2025) named clip-higher.
#
# All code run here is the course's own (`verlstudy.lessons.l07_grpo_recipe`); the tests in
# `tests/lessons/l07_grpo_recipe/` compare our loss, advantages and rollout correction with upstream's functions
# when verl is installed.

# %%
claims_table()
