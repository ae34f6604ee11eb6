# %% [markdown]
# # 00 · Start here: how this course runs, how it checks itself, and verl in brief
#
# **verlstudy** takes merged pull requests of [verl](https://github.com/verl-project/verl), the LLM
# reinforcement-learning trainer, and makes each one's lesson *happen* on a laptop CPU: a memory leak grows and
# then stops, a gradient silently turns to zero and an assertion catches it, a sequence-parallel scatter crashes
# and padding fixes it.
#
# **You will learn** the vocabulary the lessons assume (a short primer, "verl in brief", with one picture of the
# RL step and a glossary the other lessons link to), how a lesson is laid out and run, how claims and nbval keep
# the stored outputs honest, and how exercises, hints and the solutions work.
#
# **Time:** 15 minutes. **Assumes:** Python and a first look at PyTorch. No upstream PR: this lesson is about
# the course and verl's vocabulary. Facts checked against verl 0.9.1 (the glossary cites the files).

# %% tags=["parameters"]
device = "auto"  # "auto" | "cpu" | "cuda" | "npu"
seed = 0
n_draws = 4

# %%
import importlib.util, subprocess, sys
if "google.colab" in sys.modules and not importlib.util.find_spec("verlstudy"):  # Colab only: this release of the course
    subprocess.run(f"{sys.executable} -m pip install -q --no-deps git+https://github.com/verlstudy/verlstudy@v0.1.0 && {sys.executable} -m verlstudy.kit.colab || echo 'The course did not install: Runtime > Restart session, then run this cell again.'", shell=True)

from verlstudy.kit.exercises import check_exercise, exercise_hint
from verlstudy.kit.claims import claim, claims_table, expect_error
from verlstudy.kit.devices import pick_device, skip_unless
from verlstudy.kit.hygiene import sanitize, unstable_fragments
from verlstudy.kit.lesson_start import start_lesson
from verlstudy.kit.params import check_int
from verlstudy.kit.plots import bar_plot
from verlstudy.kit.seeding import seed_everything

dev = pick_device(device)
n_draws = check_int("n_draws", n_draws, minimum=1, maximum=1000)
dev, seed = start_lesson(dev, seed)  # the seed last: a bad n_draws is named before anything is reset or seeded

# %% [markdown]
# ## The course map
# The registry in `verlstudy.course.registry` is the one list of lessons: `python -m verlstudy list` prints it in a
# terminal. A lesson never imports the course machinery (a tested import rule), so this cell reads the same facts
# from the notebooks' title cells.

# %%
from verlstudy.kit.resources import notebooks_dir
from verlstudy.lessons.l00_start_here.arc import lesson_minutes

minutes = lesson_minutes(notebooks_dir())
claim("lessons in the course", len(minutes), expected=10)
bar_plot(minutes, title="Minutes per lesson", ylabel="minutes")
claim("minutes in the whole course", sum(minutes.values()), expected=400)

# %% [markdown]
# ## verl in brief
# verl trains a language model with reinforcement learning. One **training step** runs these phases on one batch of
# prompts (verl 0.9.1's default trainer, `trainer.use_v1: true`: `_step_once` in `verl/trainer/ppo/v1/trainer_base.py`;
# the deprecated legacy trainer, `RayPPOTrainer.fit` in `verl/trainer/ppo/ray_trainer.py`, runs them in the same order):
# 1. [rollout](#rollout): an inference engine (vLLM, SGLang or TensorRT-LLM: `rollout.name`) samples `rollout.n`
#    responses per prompt (the default trainer's step takes them from a [replay buffer](#replay-buffer) the rollout
#    fills);
# 2. reward: each response gets a score;
# 3. [old log-prob](#old-log-prob): the [actor](#actor) (the policy being trained) recomputes the log-probability
#    of every response token, forward only;
# 4. reference log-prob: the **ref**, a frozen copy of the starting policy, does the same, for the [KL](#KL) term;
# 5. values: a **critic** predicts each token's value ([PPO](#PPO); [GRPO](#GRPO) has no critic);
# 6. advantages: GRPO compares the responses to one prompt with each other;
# 7. update: the actor (and critic) take optimizer steps, one per [mini-batch](#mini-batch), each mini-batch cut
#    into [micro-batches](#micro-batch) that run forward and backward one after another, their gradients summed.

# %% [markdown]
# Only the update builds an [autograd graph](#autograd-graph). The actor and critic run on a training **engine**
# that splits the model and the batch over devices ([DP](#DP), [TP](#TP), [PP](#PP), [CP](#CP), [SP](#SP),
# [EP](#EP)) on GPUs or [Ascend](#Ascend) [NPUs](#NPU). verl 0.9.1 ships six (`verl/workers/engine/`): [FSDP](#FSDP),
# [Megatron](#Megatron), MindSpeed (Megatron on Ascend), TorchTitan, VeOmni and Automodel; the lessons meet mostly
# the first two. The picture draws one step (64 prompts x 8 responses, mini-batches of 16 prompts, 8 DP ranks,
# micro-batches of 4):

# %%
from verlstudy.lessons.l00_start_here.primer import batch_split, draw_rl_step

split = batch_split(prompts=64, n=8, mini_batch_prompts=16, micro_batch=4, dp=8)
draw_rl_step(split)
claim("optimizer steps per RL step (mini-batches)", split.mini_batches, expected=4)
claim("micro-batches per mini-batch on each rank", split.micro_per_mini, expected=4)

# %% [markdown]
# ## Glossary
# The other lessons link here at a word's first use. Each entry says what verl 0.9.1 does, with the file that
# shows it; what only the course says is marked as the course's.

# %% [markdown]
# #### rollout
# Sampling responses from the current policy with an inference engine, `rollout.n` per prompt: vLLM, SGLang or
# TensorRT-LLM, chosen by `rollout.name` (`verl/trainer/config/rollout/rollout.yaml`; the engines registered in
# `verl/workers/rollout/replica.py`); in the default `trainer_mode: sync` its weights are synced from the actor
# before each step (`verl/trainer/config/ppo_trainer.yaml`).

# %% [markdown]
# #### old-log-prob
# The log-probability of each response token under the weights that sampled it, recomputed by the actor's
# training engine before the update (`_compute_old_log_prob` in `verl/trainer/ppo/v1/trainer_base.py`); the PPO ratio
# divides the new probability by it. The rollout engine's own numbers for the same tokens (`rollout_log_probs`)
# can differ, and `algorithm.rollout_correction.bypass_mode` uses those instead of recomputing.

# %% [markdown]
# #### actor
# The policy being trained; it also computes the old log-probs. Beside it run the **ref** (a frozen copy, for the
# KL term) and, for PPO, the **critic** (`verl/trainer/config/actor/`, `ref/`, `critic/`).

# %% [markdown]
# #### mini-batch
# The slice of a step's batch that makes one optimizer step: `actor.ppo_mini_batch_size` prompts, multiplied by
# `rollout.n` responses (`_update_actor` in `verl/trainer/ppo/v1/trainer_base.py`;
# `verl/trainer/config/actor/actor.yaml`).

# %% [markdown]
# #### micro-batch
# The slice of a mini-batch that one forward and backward pass handles on one rank
# (`actor.ppo_micro_batch_size_per_gpu`); gradients of a mini-batch's micro-batches add up before the optimizer step.

# %% [markdown]
# #### autograd-graph
# The record PyTorch keeps of a forward pass (each result's `grad_fn` and the tensors it saved) so that
# `backward()` can run; it stays alive, with its memory, as long as any tensor still points into it.

# %% [markdown]
# #### DP
# Data parallelism: every rank holds the whole model (or, under FSDP, a shard of it) and works on its own part
# of the batch; gradients are averaged across ranks.

# %% [markdown]
# #### TP
# Tensor parallelism: each weight matrix is split across ranks, which exchange partial results inside every
# layer (`tensor_model_parallel_size`, `verl/trainer/config/engine/megatron.yaml`).

# %% [markdown]
# #### PP
# Pipeline parallelism: consecutive layers live on different ranks (stages), and micro-batches flow through the
# stages (`pipeline_model_parallel_size`, same file).

# %% [markdown]
# #### 1F1B
# Megatron's pipeline schedule "one forward, one backward": after a warm-up, each stage alternates a forward of
# a new micro-batch with a backward of an old one, so at most about as many micro-batches as stages are in flight
# (`megatron/core/pipeline_parallel/schedules.py`; verl calls it from `verl/workers/engine/megatron/`).

# %% [markdown]
# #### P2P
# Point-to-point communication: one rank sends a tensor to one other rank (`send`/`recv`), where a collective
# (all-reduce, all-gather) involves a whole group. Under [PP](#PP) neighbouring stages pass activations forward and
# their gradients back this way; Megatron's receives allocate their buffers in
# `megatron/core/pipeline_parallel/p2p_communication.py` (lesson 01 follows one of them).

# %% [markdown]
# #### CP
# Context parallelism: one long sequence is split along its tokens across ranks, and attention exchanges keys and
# values between them (`context_parallel_size`, `verl/trainer/config/engine/megatron.yaml`).

# %% [markdown]
# #### zigzag
# The CP split verl's Megatron engine uses by default: the sequence is cut into 2 x CP chunks and rank r takes
# chunk r and chunk 2 x CP - 1 - r, which balances causal attention's work
# (`_get_context_parallel_layout` in `verl/workers/engine/megatron/transformer_impl.py`).

# %% [markdown]
# #### SP
# Sequence parallelism. In verl's FSDP engine it means Ulysses (`ulysses_sequence_parallel_size`): the sequence is
# split across ranks and an all-to-all swaps it for a split of attention heads; in Megatron, SP splits the
# activations between TP ranks outside the TP regions.

# %% [markdown]
# #### EP
# Expert parallelism: the experts of a MoE layer are spread across ranks, and tokens travel to their experts'
# ranks and back (`expert_model_parallel_size`, `verl/trainer/config/engine/megatron.yaml`).

# %% [markdown]
# #### MoE
# Mixture of experts: a layer with many feed-forward "experts", of which a [router](#router) picks a few for each token.

# %% [markdown]
# #### router
# The small layer of a MoE block that scores the experts for each token and picks the top k; a small change in
# its input can change the pick.

# %% [markdown]
# #### R2
# Router replay mode `R2` (`verl/workers/config/engine.py::EngineRouterReplayConfig`, "Router Replay"): the
# actor's old-log-prob forward records the experts it picked and the update replays them, so both route alike
# (`verl/utils/config.py`: "R2 records routes while recomputing actor old_log_probs").

# %% [markdown]
# #### R3
# Router replay mode `R3` (same file, "Rollout Router Replay"): the experts picked during rollout are replayed in
# training, so the trained forward routes as the sampling engine did.

# %% [markdown]
# #### THD
# The packed layout: a batch's sequences laid end to end in one row of tokens (total tokens T, heads H, head dim
# D) with their boundaries in `cu_seqlens`; no padding (`verl/workers/engine/megatron/transformer_impl.py`,
# `"thd" if use_remove_padding`).

# %% [markdown]
# #### BSHD
# The padded layout: batch x sequence x heads x head dim, every sequence padded to one length (same file, the
# `else` of the line above).

# %% [markdown]
# #### FSDP
# PyTorch's Fully Sharded Data Parallel: DP where parameters, gradients and optimizer state are sharded and
# gathered layer by layer. One of verl's engines (`verl/workers/engine/fsdp/`).

# %% [markdown]
# #### PEFT
# Hugging Face's Parameter-Efficient Fine-Tuning library: the base model stays frozen and only small added weights
# train, such as [LoRA](#LoRA) adapters. verl's FSDP engine wraps the model with PEFT's `get_peft_model` when
# `model.lora_rank` > 0 (or loads saved adapters with `PeftModel.from_pretrained` when `lora_adapter_path` is
# given), after calling `enable_input_require_grads()` on either path, which makes the frozen embedding's output
# require grad (Hugging Face's way to train adapters while the model's own weights stay fixed; `_build_lora_module`
# in `verl/workers/engine/fsdp/transformer_impl.py`). That output, saved by gradient checkpointing, is what the leak
# of lessons 01 and 02 kept under FSDP (#6699).

# %% [markdown]
# #### LoRA
# Low-rank adaptation: a weight matrix W stays frozen and training learns a low-rank update B x A beside it (rank
# `lora_rank`, scaled by `lora_alpha`, in `verl/trainer/config/model/hf_model.yaml`), so only a small share of the
# parameters gets gradients and optimizer state.

# %% [markdown]
# #### Megatron
# NVIDIA's Megatron-LM (its library, Megatron-Core): TP, PP with 1F1B, CP and EP. verl's other main engine
# (`verl/workers/engine/megatron/`; `verl/trainer/config/engine/megatron.yaml`).

# %% [markdown]
# #### distributed-optimizer
# Megatron's distributed optimizer: the optimizer state (fp32 master weights, Adam moments) is sharded across the
# data-parallel ranks instead of copied on each, and gradients are reduce-scattered to the shard that updates them
# (`use_distributed_optimizer: True` in `verl/trainer/config/engine/megatron.yaml`).

# %% [markdown]
# #### pinned-memory
# Page-locked host memory (`tensor.pin_memory()`): the GPU can copy to and from it directly and asynchronously,
# unlike ordinary pageable memory. verl's Megatron offload keeps parameters and buffers there while they are off
# the device (`pin_memory()` in `verl/utils/megatron_utils.py`).

# %% [markdown]
# #### MTP
# Multi-token prediction: extra layers that predict tokens further ahead; verl's model config has an `mtp`
# block (`verl/trainer/config/model/hf_model.yaml`; `verl/models/mcore/mtp_patch.py`).

# %% [markdown]
# #### GRPO
# Group Relative Policy Optimization: no critic; each response's advantage is its reward compared with the other
# responses to the same prompt (`AdvantageEstimator.GRPO` in `verl/trainer/ppo/core_algos.py`).

# %% [markdown]
# #### clip-higher
# Clipping the PPO ratio asymmetrically, with a larger upper bound (`clip_ratio_high` above `clip_ratio_low`,
# `verl/trainer/config/actor/actor.yaml`), so unlikely tokens can gain more probability in one step.

# %% [markdown]
# #### Hydra
# The configuration library verl's entry points use (`@hydra.main` in `verl/trainer/main_ppo.py`): YAML files
# composed and overridden from the command line; a block with `_target_` names the class to build.

# %% [markdown]
# #### NPU
# A neural processing unit; in verl, Huawei's Ascend accelerators, reached through `torch_npu`
# (`is_npu_available` in `verl/utils/device.py`).

# %% [markdown]
# #### gloo
# The `torch.distributed` communication backend that runs on CPUs (NCCL is the GPU one, HCCL Ascend's). verl's
# process groups use gloo for CPU tensors beside the device's backend (`cpu:gloo,...` in
# `verl/utils/distributed.py`); the course runs real gloo ranks on one machine's loopback, so a laptop can run
# distributed code (`verlstudy.common.dist.run_local`).

# %% [markdown]
# #### Ascend
# Huawei's NPU family (the 910B-based "A2" and the "A3" machines), programmed with the CANN toolkit; verl builds
# Ascend images in `docker/ascend/` of its repository and runs Megatron there through MindSpeed.

# %% [markdown]
# #### KL
# The Kullback-Leibler divergence of the policy from the frozen reference, estimated per token from the two
# log-probs by `kl_penalty` in `verl/trainer/ppo/core_algos.py` (estimators such as `kl`/`k1`, `mse`/`k2` and
# `low_var_kl`/`k3`). Added to the actor's loss with `actor.use_kl_loss` (`kl_loss_coef`, `kl_loss_type`,
# `verl/trainer/config/actor/actor.yaml`) or to the reward with `algorithm.use_kl_in_reward`.

# %% [markdown]
# #### PPO
# Proximal Policy Optimization: the update maximises advantage x ratio (new probability / old probability), with
# the ratio clipped to `1 +- clip_ratio` so one step cannot move the policy far (`compute_policy_loss_vanilla` in
# `verl/trainer/ppo/core_algos.py`; `clip_ratio: 0.2` in `verl/trainer/config/actor/actor.yaml`). Its advantages
# come from a [critic](#actor); [GRPO](#GRPO) keeps the clipped loss and drops the critic.

# %% [markdown]
# #### replay-buffer
# In verl 0.9.1's default trainer, the store the rollout writes its trajectories to and the trainer samples each
# step's batch from (`ReplayBuffer` in `verl/trainer/ppo/v1/replay_buffer.py`, built by `_build_replay_buffer` in
# `verl/trainer/ppo/v1/trainer_base.py`), kept in TransferQueue, a key-value store.

# %% [markdown]
# #### jagged
# A nested tensor with `layout=torch.jagged`: sequences of different lengths packed back to back in one `values()`
# buffer, with `offsets()` marking where each starts. verl's engines return per-sequence outputs this way
# (`torch.nested.nested_tensor_from_jagged(..., cu_seqlens)` in `verl/workers/engine/fsdp/transformer_impl.py`).

# %% [markdown]
# #### dynamic-CP
# Dynamic context parallelism, `dynamic_context_parallel` of `McoreEngineConfig` (`verl/workers/config/engine.py`):
# instead of one fixed [CP](#CP) size, Megatron-Core's Dynamic CP scheduler spreads each batch's sequences over groups
# of DP x CP ranks, at most `max_seqlen_per_dp_cp_rank` tokens per rank (verl's adapter:
# `verl/utils/dynamic_cp_scheduler.py`). verl's engine allows it for language models only, with remove-padding, no
# VPP and no FP8 (`_check_dcp_unsupported_features` in `verl/workers/engine/megatron/transformer_impl.py`).

# %% [markdown]
# #### AST
# Abstract syntax tree: a program parsed into its statements and expressions (Python's `ast` module), so a check
# can find every place a value is stored without running the code. Lesson 02's static check is the course's; a
# verl fork's test does the same for the four engine files (lesson 02 cites it); verl 0.9.1 holds neither.

# %% [markdown]
# #### DSA
# DeepSeek Sparse Attention (DeepSeek-V3.2's): a small indexer picks, for each query, the earlier tokens that
# attention then reads. Megatron-Core selects it with `experimental_attention_variant="dsa"`, and verl 0.9.1's
# attention patch hands it the hidden states and the compressed query it needs (`verl/models/mcore/patch.py`);
# lesson 07's recipe turns it on.

# %% [markdown]
# #### flash-linear-attention
# The `fla` Python package: Triton kernels for linear-attention layers such as Gated DeltaNet. verl 0.9.1 imports
# it for Qwen3.5 (`verl/models/transformers/qwen3_5.py`) and offers `"fla"` kernels in its engine config
# (`verl/workers/config/engine.py`); lesson 08's Ascend images installed it before #7604.

# %% [markdown]
# #### digest
# The course authors' own summary of each PR: what they read in its thread and diff while writing the lessons.
# It is not part of this repository and not upstream's statement, so a lesson that repeats something only the
# digest says writes "the course's digest says" and computes no claim on it; everything else a lesson states is
# checked against verl's source and the PR threads, or computed in the notebook.

# %% [markdown]
# ## The arc each lesson follows
# Each lesson after this one takes one upstream change: a merged verl PR and, in 01-06, 08 and 09, the PRs
# around it (a precursor, a sibling, a revert and redo, a follow-up fix), and walks as much of this arc as its story
# has: the **symptom** a user saw, **reproduce** it on a CPU, find the **cause**, apply the **fix**, add the
# **guard** (a test that would have caught it); every lesson then ends with **exercises**, a check against
# **upstream** verl's own code, **takeaways** and the **claims table**.

# %% [markdown]
# The next cell reads every notebook and marks
# `y` where a section heading names a stage (the course's rule, in `l00_start_here/arc.py`: the heading's label, the
# part before any colon, uses the stage's word). The table is the arc each lesson really follows: a `-` in the first
# five columns is a stage that lesson does not have as a section of its own (a dependency-stack lesson has no symptom
# to reproduce); the last four are in every lesson.

# %%
from verlstudy.lessons.l00_start_here.arc import arc_table, course_arcs, read_cells

from verlstudy.kit.tables import show_table

arcs = course_arcs(notebooks_dir())
show_table(arc_table(arcs))
pr_lessons = [a for a in arcs if a.code != "00"]  # this lesson is the tour, not a PR
claim("lesson notebooks read", len(arcs), expected=len(minutes))
tail = ("exercises", "upstream", "takeaways", "claims table")
with_tail = sum(all(a.stages[s] is not None for s in tail) for a in pr_lessons)
claim("PR lessons ending exercises, upstream, takeaways, claims table", with_tail, expected=len(pr_lessons))
claim("PR lessons whose named stages come in arc order", sum(a.in_order for a in pr_lessons), expected=len(pr_lessons))
claim("PR lessons naming every stage in a heading", sum(not a.missing for a in pr_lessons), expected=3)
for a in pr_lessons:
    print(f"{a.code}: " + (" -> ".join(s for s in a.stages if a.stages[s] is not None)))

# %% [markdown]
# ## Running the course
# In a terminal, in the course's folder (`python` is the one with the course installed: `.venv/bin/python` after
# `make setup`, or `source .venv/bin/activate` first):
#
# | what | command |
# | --- | --- |
# | set up and run every lesson, write `build/report.md` | `make course` |
# | run the tests (unit tests, nbval, papermill, structure) | `make test` |
# | run some lessons with parameters | `python -m verlstudy run 01 04 -p seed=1 --device cpu` |
# | write the student edition (solutions replaced by stubs) into `student/` | `make student` |
# | the same, into a folder you choose | `python -m verlstudy student --out DIR` |
# | check the environment (Python, torch, the kernel, accelerators, verl) | `python -m verlstudy doctor` |
# | compare every lesson's helpers with upstream verl's own code | `python -m verlstudy verify-upstream` |

# %% [markdown]
# On a GPU or NPU machine, install its torch build first, then add `--device cuda` (or `npu`); on a CPU,
# accelerator cells print one skip line.

# %% [markdown]
# ## Parameters, the papermill way
# The cell tagged `parameters` holds `device`, `seed` and `n_draws`. `papermill -p seed 3` (or
# `python -m verlstudy run 00 -p seed=3`) injects a cell after it; the next cell validates every value, so a bad
# one stops the run with a line naming it:

# %%
with expect_error(ValueError):
    pick_device("tpu")
with expect_error(TypeError):
    check_int("n_draws", "four", minimum=1)

# %% [markdown]
# ## Why seeding matters: nbval compares text
# `pytest --nbval` re-executes each notebook and compares every text output with the stored one. A
# random draw is only comparable if it is seeded; a timing or an address never is.

# %%
import torch

seed_everything(seed)
first = torch.randn(n_draws)
seed_everything(seed)
second = torch.randn(n_draws)
print("draws:", [round(x, 4) for x in first.tolist()])
claim("seeded draws repeat exactly", torch.equal(first, second))

# %%
noisy = "step 3 took 0.42 s; tensor at 0x7f00deadbeef saved to /tmp/run1/out.pt"
print(sanitize(noisy))  # the raw line would itself break the next nbval run
claim("unstable fragments found in the noisy line", len(unstable_fragments(noisy)), expected=3)

# %% [markdown]
# ## Claims and expected errors
# `claim(name, ours, expected, rtol=...)` asserts and prints one stable line; if a later change breaks
# the number, the notebook stops right there. `expect_error(Type)` shows an error happening: it
# prints `expected Type: message`, and fails if nothing was raised.

# %%
bytes_per_value = torch.tensor([], dtype=torch.bfloat16).element_size()
claim("bytes in one bf16 [4096 x 1024] activation", 4096 * 1024 * bytes_per_value, expected=8 * 2**20, unit="B")
with expect_error(AssertionError):
    with expect_error(ValueError):
        pass  # nothing raised: an expected error that does not happen is itself a failure

# %% [markdown]
# ## Exercises
# **0.1** Write `seeded_sample(seed, n)`: it receives an int `seed` (0 to 2**32 - 1) and an int `n` >= 1 and
# returns a torch tensor of shape `(n,)`, dtype float32, holding the `n` standard-normal draws torch's own
# random generator makes from `seed`, *without* seeding or drawing from any global random stream, not even for a
# moment (other cells must not change because you sampled here). The checker compares with the reference on several seeds and sizes. A wrong try
# names the mistake; later tries climb the hint ladder (below); `show_solution("0.1")` prints the solution.

# %% tags=["solution", "exercise-0.1"]
def seeded_sample(seed: int, n: int) -> torch.Tensor:
    """Return `n` standard-normal draws (a tensor), the same for the same `seed`, leaving the global stream alone."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=generator)


# %% tags=["checker", "exercise-0.1"]
check_exercise("0.1", seeded_sample)

# %% [markdown]
# **0.2** Write `find_unstable(text)`: it receives a line of text and returns the fragments that would differ
# between two runs, each as the whole matched string, in a list (any order; a tuple or a set passes too); stable
# text gives `[]`.

# %% [markdown]
# The six kinds, in the forms the checker writes them: a memory address (`0x` and at least 6 hex
# digits, lowercase or uppercase); a duration (a number, maybe with decimals, maybe one space, then `s`, `ms` or
# `us`); a date `YYYY-MM-DD`, maybe followed by `THH:MM`; a path starting `/tmp/`; a process id (`pid` and its
# digits after one space); a local port (`127.0.0.1:` or `localhost:` and the digits).

# %% [markdown]
# A stable number, such as
# the 3 in "3 steps", is not one. The checker tries named lines, then generated ones.

# %% tags=["solution", "exercise-0.2"]
import re


def find_unstable(text: str) -> list[str]:
    """The fragments of `text` that change run to run."""
    patterns = [
        r"0x[0-9a-fA-F]{6,}",  # a memory address
        r"\b\d+(?:\.\d+)?\s?(?:s|ms|us)\b",  # a duration
        r"\b\d{4}-\d\d-\d\d(?:T\d\d:\d\d)?",  # a date, maybe with a time
        r"/tmp/[\w./-]+",  # a temporary path
        r"\bpid \d+",  # a process id
        r"(?:127\.0\.0\.1|localhost):\d+",  # a local port
    ]
    return [m.group(0) for pattern in patterns for m in re.finditer(pattern, text)]


# %% tags=["checker", "exercise-0.2"]
check_exercise("0.2", find_unstable)

# %% [markdown]
# ## How a verdict is reached, and the student edition
# `make student` (or `python -m verlstudy student --out DIR`) writes the student edition, the notebooks a learner
# runs. It differs from this full edition in three ways:
# - every cell tagged `solution` and `exercise-N.M` keeps its imports, signatures and docstrings, and
#   each function body becomes `raise NotImplementedError("exercise N.M")`; the checker cell right
#   after it, tagged `checker` and the same `exercise-N.M`, stays as it is;
# - no cell keeps a stored output: every output on screen is one the learner ran, so no result shows
#   before they predict it;
# - a markdown cell tagged `after-you-try-N.M` (text that states exercise N.M's answer) moves to just
#   after that exercise's checker, collapsed: open it once you have tried.

# %% [markdown]
# Each checker declares the texts that would give its answer away, and a test of the course fails if
# one shows in any cell before the exercise, printed outputs included. This lesson's own exercise
# cells, read from its notebook:

# %%
from verlstudy.lessons.l00_start_here.editions import demo_tries, demo_verdict, exercise_cells, rung_of

rows = exercise_cells(read_cells(notebooks_dir() / "00_start_here.ipynb"))
for row in rows:
    print(row)
paired = [r["next cell"] == ["checker", f"exercise-{r['exercise']}"] for r in rows]
claim("solution cells here, each followed by its checker", sum(paired), expected=2)

# %% [markdown]
# `check_exercise` gives one of three verdicts: **correct**; **not yet right**, naming the mistake;
# **not attempted**, when the answer still raises `NotImplementedError`, as stubs do. All three on 0.1: a stub,
# a wrong answer, your `seeded_sample`. `demo_verdict` runs `check_exercise` but holds back its line and record,
# so the report counts only checker cells.

# %%
def seeded_sample_stub(seed: int, n: int) -> torch.Tensor:
    """Exercise 0.1 as the student edition hands it out."""
    raise NotImplementedError("exercise 0.1")


answers = {
    "the stub": seeded_sample_stub,
    "no seed at all": lambda seed, n: torch.randn(n),  # a plausible wrong answer
    "your seeded_sample": seeded_sample,  # last, so exercise_results() ends on your own verdict
}
verdicts = {name: demo_verdict("0.1", answer) for name, answer in answers.items()}
for name, (verdict, message) in verdicts.items():
    print(f"{name:>20} -> {verdict}" + (f": {message}" if message else ""))
claim("verdict for the stub", verdicts["the stub"][0], expected="not attempted")
claim("verdict for the unseeded answer", verdicts["no seed at all"][0], expected="not yet right")

# %% [markdown]
# ## Hints climb a ladder, and the solution is one call away
# Wrong tries name the mistake; later ones add rungs: **where to look**, a **question** (a smaller case),
# then the **method** in words, never the code. `exercise_hint("N.M")` prints all three;
# `show_solution("N.M")` the reference. The demo's tries stay out of the attempt log:

# %%
from verlstudy.kit.exercises import METHOD_AFTER_TRIES, QUESTION_AFTER_TRIES, WHERE_AFTER_TRIES

tries = demo_tries("0.1", answers["no seed at all"], tries=METHOD_AFTER_TRIES)
for number, lines in enumerate(tries, start=1):
    print(f"try {number}:", *lines, sep="\n  ")
rungs = {"where to look": WHERE_AFTER_TRIES, "a question": QUESTION_AFTER_TRIES, "method": METHOD_AFTER_TRIES}
for rung, after in rungs.items():
    first = next(n for n, lines in enumerate(tries, start=1) if any(rung_of(ln) == rung for ln in lines))
    claim(f"the try that adds {rung}", first, expected=after)

# %% [markdown]
# ## Where progress shows
# - Each checker cell prints `exercise N.M: <verdict>` and records it; `exercise_results()` lists them, as does
#   the claims table.
# - `python -m verlstudy run` counts them in `build/report.md`.
# - `python -m verlstudy progress DIR` reads the attempt logs (`.verlstudy/` beside each notebook), executing
#   nothing; `--verify` re-executes changed notebooks.

# %%
from verlstudy.kit.exercises import exercise_results

print(exercise_results())
claim("exercises with a verdict in this lesson", sorted(exercise_results()), expected=["0.1", "0.2"])

# %% [markdown]
# ## Optional: an accelerator cell
# Cells like this one are tagged `gpu`; on a CPU they print one line and move on.

# %% tags=["gpu"]
if skip_unless("cuda"):
    x = torch.ones(1024, device="cuda")
    claim("sum of 1024 ones on the GPU", float(x.sum().item()), expected=1024.0)

# %% [markdown]
# ## Checked against upstream verl
# The helpers here re-implement upstream code in small form and can drift from it. With `verl` installed, the
# next cell compares upstream's own function with ours on generated inputs (or says why there is none); a
# disagreement stops the notebook. Without verl: one skip line.

# %% tags=["nbval-ignore-output"]
from verlstudy.lessons.l00_start_here.upstream import upstream_check

upstream_check()

# %% [markdown]
# ## Takeaways
# - verl's RL step: rollout, reward, old and reference log-probs, advantages, then the update in mini-batches of
#   micro-batches; the glossary above holds the words the lessons use.
# - One registry, one command to run everything, one to test everything.
# - Every lesson after this one ends with exercises, the upstream check, takeaways and the claims table; of
#   symptom, reproduce, cause, fix and guard it has the sections its story has (the arc table above).
# - In the student edition answers start as stubs and no output is stored: "not attempted", then "not yet right"
#   with the mistake named and the hint ladder (where to look, a question, the method; all with `exercise_hint`),
#   or "correct"; `show_solution("N.M")` prints the reference when you decide to read it.
# - Every number in a lesson is a checked claim; every expected failure goes through `expect_error`.
# - Outputs must be the same on every run: seed, round, and never print addresses, timings or paths.
#
# ## Open questions
# - The checker of 0.2 tries generated lines: which unstable fragment could a line hold that none of the six kinds
#   covers, and how would you make nbval tolerate it without hiding a real change?
# - A claim fails loudly when a number moves. When should a lesson's claim be a range, and who decides the width?
# - The hint ladder climbs with wrong tries. What would a ladder look like that climbs with time instead?

# %%
claims_table()
