# %% [markdown]
# # 01 · Attributing a per-micro-batch memory leak to its allocation site
#
# Upstream: [verl PR #7874](https://github.com/verl-project/verl/pull/7874) (the same leak under
# [FSDP](00_start_here.ipynb#FSDP) with [PEFT](00_start_here.ipynb#PEFT):
# [#6699](https://github.com/verl-project/verl/pull/6699)).
#
# **What happened.** Under [Megatron](00_start_here.ipynb#Megatron) pipeline parallelism
# ([PP](00_start_here.ipynb#PP)) with the [1F1B](00_start_here.ipynb#1F1B) schedule, the last stage's memory
# grew with every [micro-batch](00_start_here.ipynb#micro-batch) of a [mini-batch](00_start_here.ipynb#mini-batch):
# upstream's last-stage rank climbed to +45 GiB while the other ranks sat flat at +2.4 GiB (#7874, "on our runs": a
# level that did not grow, of contents the PR we could read does not give). The PR names the cause:
# each stored `model_output` still had a `grad_fn`, so it pinned its
# [autograd graph](00_start_here.ipynb#autograd-graph), whose input is a receive buffer Megatron allocates fresh
# for every micro-batch (`create_tensor_recv_prev`), about `seq_len_per_cp_rank x hidden x 2 B` each (the PR's
# formula; section 3b derives it). The fix, `detach_tree`, detaches what is stored.
#
# **What you will do.** Watch memory grow on a CPU toy pipeline, find the allocation site with a tracker of
# the course's own, predict the bytes exactly, run controls and two real ranks, then apply the fix and read
# verl's own change.
#
# **Time:** 60 minutes. **Assumes:** PyTorch autograd (`requires_grad`, `grad_fn`, `.backward()`).
# Sources are listed at the end. Facts checked against verl 0.9.1.

# %% tags=["parameters"]
device = "auto"  # "auto" | "cpu" | "cuda"; the tracker runs on CPU, the optional CUDA cell on a GPU
seed = 0
seq_len = 64  # S: tokens per micro-batch
hidden = 32  # H: hidden size
dtype = "float32"  # "float32" | "bfloat16"
num_micro_batches = 8  # micro-batches in one mini-batch

# %%
import importlib.util, subprocess, sys
if "google.colab" in sys.modules and not importlib.util.find_spec("verlstudy"):  # Colab only: this release of the course
    subprocess.run(f"{sys.executable} -m pip install -q --no-deps git+https://github.com/verlstudy/verlstudy@v0.1.0 && {sys.executable} -m verlstudy.kit.colab || echo 'The course did not install: Runtime > Restart session, then run this cell again.'", shell=True)

import torch

from verlstudy.lessons.l01_memory_leak.setup import lesson_setup

dev, seed, cfg, num_micro_batches = lesson_setup(device, seed, seq_len, hidden, dtype, num_micro_batches)
print(cfg)

# %% [markdown]
# The lesson's tools: the course's tracker and toy pipeline, verl's own functions loaded beside them (`up`), and the
# kit's helpers that show code.

# %%
import matplotlib.pyplot as plt

from verlstudy.common.dist import run_local
from verlstudy.common.memtrace import AllocationTracker, bytes_per_step, snapshot_top_sites
from verlstudy.kit.claims import claim, claims_table, expect_error
from verlstudy.kit.devices import skip_unless
from verlstudy.kit.exercises import check_exercise
from verlstudy.kit.plots import bar_plot, fit_layout, line_plot
from verlstudy.kit.resources import data_dir
from verlstudy.kit.show import show_change, show_source, upstream_diff, upstream_source
from verlstudy.kit.upstream import upstream_cell, verl_version
from verlstudy.kit.tables import show_table
from verlstudy.lessons.l01_memory_leak import measure, pipeline as pl, upstream as up
from verlstudy.lessons.l01_memory_leak.gloo_ranks import gloo_pipeline_runs, levels_after
from verlstudy.lessons.l01_memory_leak.schedule import plot_schedule
from verlstudy.lessons.l01_memory_leak.store import (
    consume_store, graph_leaves, store_for, store_output, store_output_as_is,
)

# %% [markdown]
# ## 0. The schedule, and where the outputs pile up
# Under [1F1B](00_start_here.ipynb#1F1B) a stage holds each graph from forward to backward: at most as many
# graphs as stages. The last stage also *stores* each output, graph attached, until the mini-batch ends
# (Megatron's `forward_data_store`): one graph per micro-batch. Below: 4 stages, 8 micro-batches; `B0@7` is
# micro-batch 0's backward at step 7.

# %%
held = plot_schedule(4, 8)
claim("1F1B: stage 0 never holds more graphs than there are stages", max(held["stage 0"]), expected=4)
claim("last stage, fix: at most one graph in flight", max(held["last stage, detach_tree (fix)"]), expected=1)
claim("last stage, store keeps graphs: one per micro-batch at the end",
      held["last stage, store keeps graphs (leak)"][-1], expected=8)

# %% [markdown]
# The toy (two stages, one process) is the loop below, in the course's code: later stages read their input from
# a fresh buffer that requires grad (as Megatron's `create_tensor_recv_prev` does); the last stage's `loss_func`
# returns the loss and a `{"model_output": ...}` dict, which `store_output_as_is` appends as it is (`store_for`
# picks the store).

# %%
show_source(pl.create_tensor_recv_prev)
show_source(pl._run_micro_batch)
show_source(store_for)
_ = show_source(store_output_as_is)

# %% [markdown]
# ## 1. Symptom: live memory grows with every micro-batch
# The toy of section 0: two stages; stage 1 receives its input into a fresh `create_tensor_recv_prev` buffer
# with `requires_grad=True`; the last stage's `loss_func` returns `(loss, {"model_output": {"log_probs": ...}})`
# with **per-token** log-probs (S values, in a dict like verl's `model_output`); the schedule appends that dict
# to `forward_data_store` once per micro-batch and only consumes the store when the mini-batch ends.

# %% [markdown]
# `AllocationTracker` (the course's tool) records every storage created while it is active; we read its live
# bytes after each micro-batch, without and with the fix. It is a `TorchDispatchMode`: while one is active, PyTorch
# calls its `__torch_dispatch__` for every operator that runs, so the tracker sees each new storage and its stack.

# %% [markdown]
# ### Predict first: exercise 1.1
# Before the next cell measures it: how many bytes does one leaking micro-batch leave alive on the last
# stage? You know the mechanism from the PR (the stored output still has a `grad_fn`, and the last
# stage's input is a fresh receive buffer that requires grad) and the toy's shapes from above.

# %% [markdown]
# **1.1** Write `predict_leak(seq_len, hidden, itemsize)`: the bytes one leaking micro-batch leaves alive
# on the last stage. It receives three ints: S (tokens per micro-batch), H (hidden size) and the bytes per
# element of the dtype (4 for float32, 2 for bfloat16; the checker also tries 1 and 8, and sizes of real models
# up to S = 32768 and H = 16384).

# %% [markdown]
# Return the number of bytes (a whole number). The checker compares your number with the bytes the tracker
# measures per micro-batch, on named cases and then on generated sizes. A wrong answer's message names the
# mistake; the second wrong try adds where to look, the third a question, the fourth the method in words;
# `exercise_hint("1.1")` shows all three at once, `show_solution("1.1")` the solution.

# %% tags=["solution", "exercise-1.1"]
def predict_leak(seq_len: int, hidden: int, itemsize: int) -> int:
    """Return the bytes one leaking micro-batch leaves alive on the last pipeline stage (a whole number).

    `seq_len` is S (tokens per micro-batch), `hidden` is H, `itemsize` the bytes per element of the dtype.
    """
    return 2 * seq_len * hidden * itemsize + seq_len * itemsize


# %% tags=["checker", "exercise-1.1"]
check_exercise("1.1", predict_leak)

# %% [markdown] tags=["after-you-try-1.1"]
# **After you try 1.1** (open once you have run the checker)
#
# Three parts stay per micro-batch: the receive buffer (a graph leaf the stored output still reaches), its
# `.grad` from backward, and the stored per-token output. Sections 3 and 3b measure each.

# %% [markdown]
# The measurement, at this notebook's S, H and dtype:

# %%
tracker = AllocationTracker()
leak_run = pl.run_pipeline(cfg, num_micro_batches, tracker=tracker, seed=seed)
fix_tracker = AllocationTracker()
fix_run = pl.run_pipeline(cfg, num_micro_batches, tracker=fix_tracker, detach_outputs=True, seed=seed)
steps = list(range(1, num_micro_batches + 1))
line_plot(
    {
        "stored as is (leak)": (steps, [b / 1024 for b in leak_run.live_bytes]),
        "detach_tree (fix)": (steps, [b / 1024 for b in fix_run.live_bytes]),
    },
    title="Live memory after each micro-batch (one process, both stages)",
    xlabel="micro-batch",
    ylabel="KiB",
)
leak_slope, fix_slope = leak_run.slope, fix_run.slope
added = {b - a for a, b in zip(leak_run.live_bytes, leak_run.live_bytes[1:])}
print(f"bytes added per micro-batch: leak {sorted(added)}, fix {int(fix_slope)}")
claim("leak: every micro-batch adds the same bytes", len(added) == 1 and leak_slope > 0)
claim("the fixed run grows more slowly", fix_slope < leak_slope)

# %% [markdown]
# ### Find a site yourself first: exercise 1.2
# Section 2 names the site that holds this leak. Try the tool on a leak of your own first.
# `AllocationTracker` records every storage created while it is active, with the Python stack that
# created it: `tracker.mark()` returns a marker, and `tracker.top_sites(n, since=marker)` groups what was
# allocated after that marker and is still alive by allocation site, largest first (each site has
# `.function`, `.bytes`, `.count` and `.label()`).

# %% [markdown]
# **1.2 Find a planted leak.** With the fix applied, a pipeline can still grow: someone added a "debug"
# helper that keeps something per micro-batch. Write `find_growth_site(tracker, run_micro_batch)`: each
# call of `run_micro_batch` runs one more micro-batch inside the active `tracker`; return the *function
# name* that allocates what keeps growing the most, counted in bytes.

# %% [markdown]
# Careful: the first micro-batch also makes one-off
# allocations (parameter gradients) that are not growth. Your function receives an active
# `AllocationTracker` and a function of no arguments; return the name as a **str** (for example
# `"some_helper"`), not a `Site` and not its label. The checker tries pipelines with a score cache, an
# activation log or nothing planted, at several sizes, and one where a second helper keeps a few tiny
# tensors per micro-batch; `exercise_hint("1.2")` shows where to look and the
# method if you are stuck.

# %% tags=["solution", "exercise-1.2"]
def find_growth_site(tracker, run_micro_batch):
    """Return the name (a str) of the function that allocates what keeps growing.

    Each call of `run_micro_batch` (no arguments) runs one more micro-batch inside the active `tracker`.
    """
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    return tracker.top_sites(1, since=mark)[0].function


# %% tags=["checker", "exercise-1.2"]
check_exercise("1.2", find_growth_site)

# %% [markdown] tags=["after-you-try-1.2"]
# **After you try 1.2** (open once you have run the checker)
#
# Growth is what one more micro-batch leaves alive. A marker set after the first micro-batch hides its
# one-off allocations; the largest site of what the next micro-batch left is the leak. Section 2 reads this
# lesson's leak the same way.

# %% [markdown]
# ## 2. Root cause, step 1: which allocation site holds the memory?
# The PR names the site but, in the part we could read, not how it was found (the course's
# [digest](00_start_here.ipynb#digest), its authors' notes on each PR, says upstream read
# `torch.cuda.memory._record_memory_history` snapshots; for the FSDP precursor, #6699's commit message does cite "memory-history profiling in #6698").

# %% [markdown]
# The course's tool for the same job on CPU is `AllocationTracker`: each live storage with the Python stack that
# created it (torch's own frames trimmed). Below: the sites of what the **last** micro-batch allocated and is still
# alive after it, then the innermost frames of the biggest one's stack (of equal sizes, the earliest allocated).

# %%
last_mb = leak_run.marks[-1]
leak_sites = tracker.top_sites(5, since=last_mb)
for site in leak_sites:
    print(f"{site.bytes:>8} B  x{site.count}  {site.label()}")
largest = max(tracker.live(since=last_mb), key=lambda a: (a.nbytes, -a.seq))
print("stack of the largest survivor, innermost first:")
for frame in largest.frames[:4]:
    print(f"  {frame.function} ({frame.file}:{frame.line})")
claim("top site of what survives a micro-batch", leak_sites[0].function, expected="create_tensor_recv_prev")

# %% [markdown]
# ## 3. Root cause, step 2: the prediction matches to the byte
# Why would a receive buffer outlive its micro-batch? The stored `model_output` has a `grad_fn`.
# Backward frees the graph's *saved activations*, but the graph's nodes stay as long as something
# references them, and each leaf's `AccumulateGrad` node holds its leaf tensor. The last stage's leaf is
# the receive buffer, whose `.grad` was just filled by backward.

# %% [markdown]
# So per micro-batch we predict:
# the buffer (S x H x itemsize), its gradient (the same), and the stored per-token output itself
# (S x itemsize). This three-part prediction is the course's; section 3b sets it beside the PR's own
# figure. Walking the graph of the stored output shows exactly that leaf:

# %%
stored = leak_run.forward_data_store[-1]["model_output"]["log_probs"]
buffers = [t for t in graph_leaves(stored) if not isinstance(t, torch.nn.Parameter)]
print(f"model_output.log_probs: shape {tuple(stored.shape)}, grad_fn {type(stored.grad_fn).__name__}")
print(f"non-parameter leaves its graph reaches: {[tuple(t.shape) for t in buffers]}, grad kept: {buffers[0].grad is not None}")
predicted = pl.predicted_leak_bytes(cfg)
for name, nbytes in predicted.items():
    print(f"  predicted {nbytes:>6} B  {name}")
claim("predicted = measured bytes per micro-batch (exact)", int(leak_slope), expected=sum(predicted.values()), unit="B")
claim("each named part is a tracker site, byte for byte", measure.bytes_by_function(leak_sites) == pl.predicted_leak_sites(cfg))
del stored, buffers

# %% [markdown]
# ### 3b. The PR's figure is the buffer alone
# PR #7874 sizes the retained bytes as the [P2P](00_start_here.ipynb#P2P) receive buffer,
# `seq_len_per_cp_rank x hidden x 2B` per micro-batch (2 bytes: bfloat16), independent of layer count.

# %% [markdown]
# The toy
# measures that buffer and two more parts, for reasons of its own:
# - **the buffer's gradient**: backward fills the buffer's `.grad`, and the toy's `backward_step` reads
#   it to send it back without clearing it. Megatron's `schedules.py::backward_step` also collects
#   `x.grad` of each input tensor without resetting it (the course's reading of Megatron-LM's source),
#   so by the same mechanism the gradient would stay with the buffer there; the part of the PR we could
#   read does not say whether its figure counts it, and the toy cannot measure Megatron.

# %% [markdown]
# - **the stored output itself** (S values): it is meant to be kept, and it is all the fix leaves.

# %% [markdown]
# Run in bfloat16, as upstream's figure assumes, the toy's buffer term is the PR's formula exactly:

# %%
bf16 = pl.config_with(cfg, dtype="bfloat16")
bf16_slope, bf16_sites, _ = measure.measure_slope(bf16, 3, seed=seed)
bf16_parts = measure.bytes_by_function(bf16_sites)
print(f"bfloat16, S={bf16.seq_len}, H={bf16.hidden}: {bf16_parts}")
claim("bfloat16: receive buffer per micro-batch = the PR's S x H x 2 B", bf16_parts["create_tensor_recv_prev"],
      expected=bf16.seq_len * bf16.hidden * 2, unit="B", upstream="seq_len_per_cp_rank x hidden x 2B (#7874)")
claim("bfloat16: all the toy keeps = buffer + its gradient + S x 2 B of output", int(bf16_slope),
      expected=2 * bf16.seq_len * bf16.hidden * 2 + bf16.seq_len * 2, unit="B")

# %% [markdown]
# At the mini-batch's end the engine merges the store (`postprocess_batch_func`) and drops it, so the leak is
# bounded by one mini-batch. Like upstream's, the merge keeps the autograd link: until `merged` is dropped, the
# tracker counts each buffer and its gradient, and the parameter gradients the graphs reach (the merged outputs
# were made outside it).

# %%
merged = consume_store(leak_run.forward_data_store)["log_probs"]
print(f"merged log_probs {tuple(merged.shape)}, grad_fn {type(merged.grad_fn).__name__}: {tracker.live_bytes()} B still live")
del merged
claim("mini-batch end: live bytes once the merged store is dropped", tracker.live_bytes(), expected=0, unit="B")

# %% [markdown]
# ## 4. Controls: when does it *not* leak?
# The course's digest of #7874 says upstream ran control runs (forward only, PP=1); the part of the PR
# description we could read does not.

# %% [markdown]
# The course runs its own controls, measuring bytes per micro-batch:
# - **forward only** (how verl computes [old log-probs](00_start_here.ipynb#old-log-prob): `infer_batch` runs under `torch.no_grad()`):
#   no graph is built, so nothing but the outputs can be pinned. verl 0.9.1's old-log-prob pass also
#   asks for entropy (`_compute_old_log_prob` in the default trainer, `verl/trainer/ppo/v1/trainer_base.py`,
#   sets `"calculate_entropy": True`; the legacy `ray_trainer.py` does the same), so we run
#   it both with log-probs only and with log-probs + entropy;

# %% [markdown]
# - **PP=1**: no receive buffer; the graph's leaves are the parameters, which exist anyway. Training
#   computes entropy only when `entropy_coeff != 0` or `actor.calculate_entropy` is set (`_update_actor`, same
#   file), so this run stores log-probs only;
# - **more layers per stage**: backward frees the saved activations, so depth must not matter.

# %%
controls = measure.measure_controls(cfg, 3, layers=(2, 4), seed=seed)  # each micro-batch adds the same: 3 give the exact slope
fig = bar_plot(controls, title="Bytes retained per micro-batch (log scale)", ylabel="bytes", show=False)
fig.axes[0].set_yscale("log")  # the outputs-only runs keep ~1/60 of the leak: invisible on a linear axis
fig.axes[0].set_ylim(bottom=100)
fig.axes[0].tick_params(axis="x", labelrotation=30, labelsize=8)
fit_layout(fig)  # laid out again for the turned labels, then shown in one draw
plt.show()
show_table(measure.controls_table(controls))
own = cfg.seq_len * cfg.itemsize
claim("forward only keeps only the outputs", controls["forward only"], expected=own, unit="B")
claim("forward only + entropy keeps two per-token outputs", controls["forward only + entropy"], expected=2 * own,
      unit="B")
claim("PP=1 keeps only the outputs", controls["PP=1"], expected=own, unit="B")
claim("retained bytes do not depend on depth", controls["2 layers/stage"] == controls["4 layers/stage"] == int(leak_slope))

# %% [markdown]
# **What the controls establish.** With no graph (forward only) or no fresh leaf (PP=1), nothing beyond the
# stored outputs stays; and the leak does not grow with depth.

# %% [markdown]
# With verl 0.9.1's settings (entropy in the forward-only pass; none in training at the default
# `entropy_coeff: 0` of `trainer/config/actor/actor.yaml`), those outputs are two per-token tensors for forward
# only and one for PP=1.

# %% [markdown]
# The table's last column, for reference only: the course's digest gives forward only about 0.76 MiB and PP=1
# about 0.31 MiB per micro-batch, figures not in the part of the PR we could read. The toy does not explain them,
# and no claim here rests on them.

# %% [markdown]
# ### 4b. The larger variant: a stored output the loss never reads
# Section 3's rule, "backward frees the saved activations, not the graph's leaves", holds only for the
# part of the graph backward *visits*: outputs the loss uses. verl #7166 (FSDP engine) reports the
# general case: for a loss that does not backward through every tensor stored in `model_output`, the
# untraversed entries keep their autograd graphs, and the tensors saved for backward, alive for the
# whole mini-batch.

# %% [markdown]
# A report in a Megatron-LM fork is one such case (ISEEKYAN/Megatron-LM#177, in that
# fork's `lite` runtime, a port of verl-project/Megatron-LM#32): under [CP](00_start_here.ipynb#CP)>1,
# log-probs gathered through a differentiable all-gather are off the loss's backward path, and the cp=0
# last-stage rank grew by about 0.5 GB per micro-batch.

# %% [markdown]
# The toy's last stage can also compute per-token entropy with the formula of verl's
# `entropy_from_logits` (logsumexp(z) - sum(softmax(z) * z)) and store it in `model_output`:
# - **entropy in the loss**: `loss - 0.0 * mean(entropy)`, the shape of verl 0.9.1's `ppo_loss`
#   (`policy_loss -= entropy_coeff * entropy_loss`): backward visits the entropy graph and frees it;

# %% [markdown]
# - **entropy stored, the loss ignores it** (#7166's condition, built here by the course): backward
#   never reaches that graph, so it keeps what it saved: the logits and the softmax, S x V each, and a
#   logsumexp of S values, which with the stored entropy itself makes the claim's 2 x S.

# %%
entropy_rows = measure.measure_entropy(cfg, 3, vocabs=(cfg.vocab, 2 * cfg.vocab), seed=seed)
bar_plot(entropy_rows, title="Bytes retained per micro-batch, entropy in model_output", ylabel="bytes")
s_, v_, isz = cfg.seq_len, cfg.vocab, cfg.itemsize
claim("entropy in the loss: only its own S values more", entropy_rows["entropy in the loss"] - int(leak_slope),
      expected=s_ * isz, unit="B")
claim("entropy stored, unread: + logits and softmax (2 x S x V) + 2 x S", entropy_rows[f"entropy stored, V={v_}"]
      - int(leak_slope), expected=2 * s_ * v_ * isz + 2 * s_ * isz, unit="B",
      upstream="log-probs off the loss path: ~0.5 GB per micro-batch on the cp=0 rank (ISEEKYAN/Megatron-LM#177)")
claim("doubling V adds another 2 x S x V per micro-batch", entropy_rows[f"entropy stored, V={2 * v_}"]
      - entropy_rows[f"entropy stored, V={v_}"], expected=2 * s_ * v_ * isz, unit="B")
pp1_sites = measure.bytes_by_function(measure.measure_slope(pl.config_with(cfg, pp_size=1), 3, entropy="stored", seed=seed)[1])
print("PP=1, entropy stored, survivors by site:", pp1_sites)
claim("it needs no pipeline: at PP=1 the sites are as predicted", pp1_sites == pl.predicted_leak_sites(
      pl.config_with(cfg, pp_size=1), "stored"))
claim("detach_tree: only the two per-token outputs stay", entropy_rows["entropy stored + detach_tree"],
      expected=2 * s_ * isz, unit="B")

# %% [markdown]
# verl's own `entropy_from_logits`, loaded from the installed source, gives the toy's entropy on the
# toy's logits bit for bit (without verl this cell prints one skip line):

# %%
upstream_cell(lambda: claim("upstream entropy_from_logits = the toy's, bit for bit",
                            up.compare_entropy_with_upstream(cfg, seed)[0],
                            upstream=f"verl {verl_version()} {up.UPSTREAM_ENTROPY}"))

# %% [markdown]
# Why it is the larger variant: the receive buffer costs S x H per micro-batch, the unread entropy's
# graph 2 x S x V, and vocabularies are far wider than hidden sizes. The course's arithmetic, for
# illustrative sizes (not upstream's figures):

# %%
S, H, V = 8192, 4096, 151_936  # tokens per micro-batch, hidden, a Qwen-sized vocabulary; bfloat16
print(f"receive buffer S x H x 2 B: {S * H * 2 / 2**20:.0f} MiB; unread entropy graph 2 x S x V x 2 B: "
      f"{2 * S * V * 2 / 2**30:.2f} GiB per micro-batch")

# %% [markdown]
# ## 5. The asymmetry: two real ranks, only the last stage grows
# Now the same stages run as two `torch.distributed` [gloo](00_start_here.ipynb#gloo) processes on loopback (one
# stage per rank, 1F1B order, `send`/`recv` into a fresh receive buffer), launched by
# `verlstudy.common.dist.run_local`. Each rank measures its live bytes at the end of
# mini-batches of 1, 2 and 3 micro-batches.

# %% [markdown]
# Only the last stage stores outputs (in Megatron, the
# `is_last_stage` guard in `schedules.py`, as the PR points out), so only it should grow; stage 0 holds
# at most its in-flight micro-batches: O(pipeline depth), not O(micro-batches). Upstream's other ranks "sat flat
# at +2.4 GiB": a level, not growth, so the first claim below sets it beside stage 0's 0 B per micro-batch. The
# same launch then runs the stages once more on a fresh model, storing with `detach_tree`, for the timeline after this one.

# %%
counts, steps_n = (1, 2, 3), 6  # mini-batch sizes to compare; one more of 6 micro-batches for the timeline
runs = ((counts, False), ((1, 2), True))  # the leak, then detach_tree (read below): one launch runs both
both = run_local(gloo_pipeline_runs, 2, cfg, runs, seed, steps_n, timeout_s=60, collective_timeout_s=20)
ranks, fixed = [rank_runs[0] for rank_runs in both], [rank_runs[1] for rank_runs in both]
line_plot(
    {f"rank {r['rank']}": (list(counts), [r["end_bytes"][c] / 1024 for c in counts]) for r in ranks},
    title="Live memory at the end of a mini-batch, per rank (gloo)",
    xlabel="micro-batches",
    ylabel="KiB",
)
claim("gloo: stage 0 bytes per micro-batch", int(ranks[0]["slope"]), expected=0, unit="B",
      upstream="the other ranks sat flat at +2.4 GiB (#7874)")
claim("gloo: last stage bytes per micro-batch", int(ranks[1]["slope"]), expected=int(leak_slope), unit="B",
      upstream="the last-stage rank climbed to +45 GiB (#7874)")
claim("gloo: same losses as the single-process schedule", ranks[1]["losses"] == leak_run.losses[: max(counts)])

# %% [markdown]
# **Inside one mini-batch** (gradient buffers allocated), stage 0's memory rises each
# forward, falls each backward: a **sawtooth**.

# %% [markdown]
# The last stage's store keeps each graph's leaf: a **staircase** (its lows, after backwards). With `detach_tree`,
# the first two lows each add a gradient still in flight to stage 0; then each step is the stored output alone.

# %%
tl0, tl1, tl1_fix = ranks[0]["timeline"], ranks[1]["timeline"], fixed[1]["timeline"]
print("stage 0 steps:", " ".join(step for step, _ in tl0), "| last stage steps:", " ".join(step for step, _ in tl1))
line_plot(
    {name: (list(range(1, len(tl) + 1)), [b / 1024 for _, b in tl])
     for name, tl in (("stage 0", tl0), ("last stage (leak)", tl1), ("last stage (detach_tree)", tl1_fix))},
    title=f"Live memory after each 1F1B step, per rank (gloo, {steps_n} micro-batches)",
    xlabel="step", ylabel="KiB",
)
b0, b1, b1_fix = levels_after(tl0), levels_after(tl1), levels_after(tl1_fix)
claim("sawtooth: stage 0 peaks at 2 micro-batches in flight, returns to one level, ends at 0 B",
      len(set(b0[:-1])) == 1 and b0[-1] == 0 and max(b for _, b in tl0) == 2 * b0[0])
claim("staircase: each last-stage backward leaves exactly the leak more",
      {y - x for x, y in zip(b1, b1[1:])} == {int(leak_slope)})
claim("with detach_tree the steady step is the stored output only", {y - x for x, y in zip(b1_fix[1:], b1_fix[2:])},
      expected={own})

# %% [markdown]
# ## 6. The fix: detach what is stored
# verl's own change, read from the installed releases (0.9.0, before #7874, and 0.9.1): the new `detach_tree` in
# `verl/workers/engine/utils.py`, the Megatron engine's store line, then a second `model_output` write from that file.

# %% tags=["upstream-source", "nbval-ignore-output"]
upstream_diff("workers/engine/utils.py", "detach_tree")
_ = upstream_diff("workers/engine/megatron/transformer_impl.py", None, contains='output["model_output"] = detach_tree')
upstream_source("workers/engine/megatron/transformer_impl.py", contains='["routed_experts"] = layers_topk_idx', context=4)

# %% [markdown]
# **Reading it.** `detach_tree` is new in 0.9.1. A tensor that requires grad comes back detached (same data,
# no `grad_fn`); any other tensor comes back as the same object; dicts, lists and tuples are rebuilt around
# their detached contents; anything else comes back as is. Its docstring states this lesson's mechanism in
# upstream's own words: every backend keeps one output entry per micro-batch until
# `postprocess_batch_func` consumes it, and under Megatron 1F1B the pinned graph's input is a fresh P2P
# receive buffer, `p2p_communication.py::create_tensor_recv_prev`. It also says why gradients do not change:
# backward runs on the separately returned live loss.

# %% [markdown]
# In the Megatron engine, the line that put
# `model_output` into the per-micro-batch output (what reaches `forward_data_store`) now wraps it in
# `detach_tree`, with a comment pointing there.

# %% [markdown]
# The last excerpt is from elsewhere in the same file, outside
# that diff (the write itself is the same in 0.9.0): a second `model_output` line,
# `output["model_output"]["routed_experts"] = layers_topk_idx`, writes routing indices into the *merged*
# output that `postprocess_batch_func` returned, after the schedule; lesson 02 reads it.

# %% [markdown]
# The toy's fix is the same one-line change of its store, with the course's `verlstudy.common.trees.detach_tree`
# (lesson 02); `store_for(detach_outputs=True)` picks the new function:

# %%
show_change(store_output_as_is, store_output)

# %% [markdown]
# The cell after the next stores upstream's own `detach_tree` instead. The stored outputs keep their own
# S x itemsize bytes per micro-batch and nothing else; the loss and every gradient are bit-identical.

# %%
fix_sites = fix_tracker.top_sites(5, since=fix_run.marks[-1])
for site in fix_sites:
    print(f"{site.bytes:>8} B  x{site.count}  {site.label()}")
claim("fix: bytes per micro-batch = stored outputs' own bytes", int(fix_slope), expected=own, unit="B")
claim("fix: growth per micro-batch beyond the stored outputs", int(fix_slope) - own, expected=0, unit="B")
claim("leak minus fix = receive buffer + its gradient", int(leak_slope - fix_slope),
      expected=2 * cfg.seq_len * cfg.hidden * cfg.itemsize, unit="B")
claim("fix: nothing of the receive buffer or graph survives",
      {s.function for s in fix_sites}.isdisjoint({"create_tensor_recv_prev", "backward_step"})
      and all(graph_leaves(out["model_output"]["log_probs"]) == [] for out in fix_run.forward_data_store))
claim("fix: losses bit-identical", leak_run.losses == fix_run.losses)
claim("fix: gradients bit-identical",
      leak_run.grads.keys() == fix_run.grads.keys()
      and all(torch.equal(leak_run.grads[k], fix_run.grads[k]) for k in leak_run.grads))

# %% [markdown]
# **Upstream's own `detach_tree` as the fix.** The next cell loads `detach_tree` from the installed
# verl source (`verlstudy.kit.upstream`; no verl dependencies needed) and runs the fixed pipeline twice,
# storing the course's output and then upstream's, with entropy in `model_output` so the tree has two
# keys. Without verl it prints one skip line.

# %%
def fix_with_upstream_detach_tree() -> None:
    both = up.compare_fix_with_upstream(cfg, 4, entropy="stored", seed=seed)
    print(f"bytes per micro-batch: course {both.course_slope}, upstream {both.upstream_slope}")
    where = f"verl {verl_version()} {up.UPSTREAM_DETACH}"
    claim("upstream detach_tree as the fix: bytes per micro-batch", both.upstream_slope, expected=2 * own, unit="B",
          upstream=where)
    claim("upstream detach_tree stores what the course's does (values, losses, grads)", both.agree, upstream=where)


upstream_cell(fix_with_upstream_detach_tree)

# %% [markdown]
# ## 7. The guard: a test that would have caught it
# CI cannot assert absolute GPU memory, but it can assert the *shape* of residency on CPU: per
# micro-batch, only the stored outputs' own bytes may stay alive. The guard passes with the fix and,
# without it, fails naming the site.

# %% [markdown]
# This guard is the course's. Upstream's regression test for this leak is
# #6699's weakref test (`tests/workers/test_engine_forward_step_detach_on_cpu.py`, commit dbbf0853f), which
# lesson 02 rebuilds. The static check of the four engine call sites the course's digest of #7874 mentions is in
# a verl fork, not in verl: [zhiyu-zhao-ucas/verl_meta_token](https://github.com/zhiyu-zhao-ucas/verl_meta_token) (commit 9ac85640) holds
# `tests/workers/test_engine_detach_tree_on_cpu.py`, which verl's repository as we can read it does not (lesson 02
# runs its rule and builds the course's own).

# %%
print("with the fix:", measure.assert_flat_residency(cfg, 3), "bytes per micro-batch")
with expect_error(measure.ResidencyError, match="create_tensor_recv_prev"):
    measure.assert_flat_residency(cfg, 3, detach_outputs=False)

# %% [markdown]
# ## 8. Reading upstream's own numbers with the same tool
# In #6699 (FSDP + PEFT, a LoRA run), `memory_allocated` read 24.8, 37.9, ~50 and 64 GiB at micro-batch 250,
# 300, 350 and 400, then OOM; upstream estimated ~0.27 GiB per micro-batch (the docstring of #6699's test).
# Quoted, not measured; their least-squares slope agrees within 5%.

# %%
upstream_gib = {250: 24.8, 300: 37.9, 350: 50.0, 400: 64.0}
upstream_slope = bytes_per_step(list(upstream_gib.values()), list(upstream_gib))
claim("slope of #6699's quoted memory figures", upstream_slope, expected=0.27, rtol=0.05, unit="GiB/micro-batch",
      upstream="~0.27 GiB per micro-batch (#6699)")

# %% [markdown]
# ## 9. Exercises
# Stuck? `exercise_hint("1.N")` prints where to look and the method.

# %% [markdown]
# ## 10. The same view from a CUDA memory snapshot
# `snapshot_top_sites` groups a `torch.cuda.memory._dump_snapshot` pickle's live blocks by site.
# `data/memory/pipeline_leak_snapshot.pickle` is one, **constructed** on CPU by this pipeline's tracker, not recorded
# on a GPU (`data/memory/README.md`): what micro-batches 2-4 left alive, hence x3.

# %%
fixture = data_dir() / "memory" / "pipeline_leak_snapshot.pickle"
snap_sites = snapshot_top_sites(fixture, n=3)
for site in snap_sites:
    print(f"{site.bytes:>8} B  x{site.count}  {site.function}")
claim("snapshot fixture: top site", snap_sites[0].function, expected="create_tensor_recv_prev")

# %% [markdown]
# The next cell records a `_record_memory_history` snapshot of the leaking pipeline, checking it holds exactly one
# receive buffer per recorded micro-batch (4, after one warm-up; on CPU: one skip line).

# %% [markdown]
# Autograd's CUDA backward thread has no Python frames, so the buffer's gradient lands in `<no Python stack>`,
# with all allocated before recording.

# %% tags=["gpu"]
if skip_unless("cuda"):
    gpu_cfg = pl.config_with(cfg, device="cuda")
    gpu_model = pl.ToyPipelineModel(gpu_cfg, seed)
    pl.run_pipeline(gpu_cfg, 1, model=gpu_model, seed=seed)  # warm-up: one-off allocations happen here
    torch.cuda.memory._record_memory_history("all", stacks="python", max_entries=100_000)
    gpu_run = pl.run_pipeline(gpu_cfg, 4, model=gpu_model, seed=seed)
    gpu_snapshot = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    gpu_sites = snapshot_top_sites(gpu_snapshot, n=8)
    for site in gpu_sites:
        print(f"{site.bytes:>8} B  x{site.count}  {site.label()}")
    claim("CUDA snapshot: create_tensor_recv_prev holds one buffer per micro-batch",
          measure.bytes_by_function(gpu_sites).get("create_tensor_recv_prev", 0),
          expected=4 * cfg.seq_len * cfg.hidden * cfg.itemsize, unit="B")
    del gpu_run, gpu_model

# %% [markdown]
# ## Checked against upstream verl
# The helpers here re-implement upstream code in small form and can drift from it. With `verl` installed, the
# next cell compares upstream's own function with ours on generated inputs (or says why there is none); a
# disagreement stops the notebook. Without verl: one skip line.

# %% tags=["nbval-ignore-output"]
from verlstudy.lessons.l01_memory_leak.upstream import upstream_check

upstream_check()

# %% [markdown]
# ## Takeaways
# - A per-micro-batch store that outlives backward turns any `grad_fn` it holds into residency that
#   grows with the number of micro-batches. For an output the loss uses, backward frees the saved
#   activations but not the graph's leaves (here the receive buffer and its gradient: the PR's
#   S x H x 2 B buffer, plus a gradient the toy keeps too). For a stored output the loss never reads
#   (an unread `entropy`, #7166's condition), backward never visits its graph, so its saved tensors
#   stay as well: S x V per tensor, the larger variant, and it needs no pipeline.
# - Attribute before you fix: the course's allocation tracker (a `TorchDispatchMode` on CPU; on a GPU,
#   `_record_memory_history` snapshots read by the same code) named `create_tensor_recv_prev`, the site the
#   PR names, and the bytes matched a prediction exactly.
# - Controls narrow the mechanism down: forward only and PP=1 keep only outputs, depth does not
#   matter, and only the rank that stores outputs grows (stage 0's sawtooth against the last stage's
#   staircase). The forward-only and PP=1 figures the course's digest quotes are not reproduced or used.
# - The fix detaches at the store, and upstream's own `detach_tree` does exactly what the course's
#   does: both variants flatten to the stored outputs, the loss and gradients do not change by a
#   single bit. Lesson 02 shows what happens when the detach goes in the wrong place.

# %% [markdown]
# ## Open questions
# - The guard asserts flat residency per micro-batch on CPU. Which GPU-only allocations (NCCL buffers, caching
#   allocator blocks) could still grow with it green, and how would you catch them?
# - The leak kept one micro-batch's graph per stored output. What other per-micro-batch store in an engine could
#   pin a graph the same way without being called `model_output`?
# - Attribution named the P2P receive that allocated the memory, not the line that kept it alive. How would you
#   get from the first to the second in a real run?

# %% [markdown]
# ## Sources
# - verl PR [#7874](https://github.com/verl-project/verl/pull/7874) (the figures +45 GiB / +2.4 GiB, the site
#   `create_tensor_recv_prev`, `seq_len_per_cp_rank x hidden x 2B`) and
#   [#6699](https://github.com/verl-project/verl/pull/6699) (commit dbbf0853f: the FSDP + PEFT figures, the test
#   `tests/workers/test_engine_forward_step_detach_on_cpu.py`); issue #7166 (stored outputs the loss never reads);
#   ISEEKYAN/Megatron-LM#177 (a fork's `lite` runtime).
# - verl 0.9.1 (installed; 0.9.0 for the diffs): `verl/workers/engine/utils.py::detach_tree` and
#   `postprocess_batch_func`; `verl/workers/engine/megatron/transformer_impl.py` (the store line);
#   `verl/workers/engine/base.py::infer_batch` (forward only under `torch.no_grad()`);
#   `verl/utils/torch_functional.py::entropy_from_logits`; `verl/trainer/ppo/v1/trainer_base.py`, the default
#   trainer (when entropy is computed; the legacy `ray_trainer.py` alike); `verl/workers/utils/losses.py::ppo_loss`;
#   `verl/trainer/config/actor/actor.yaml`.
# - Megatron-LM (NVIDIA/Megatron-LM, read at commit 00c2c0ad): `megatron/core/pipeline_parallel/p2p_communication.py`,
#   where `_communicate` defines `create_tensor_recv_prev()`, a `torch.empty(recv_prev_shape,
#   requires_grad=True, ...)` made for every receive; `schedules.py` (`forward_data_store`, `backward_step`).
# - The course's own code: `verlstudy.common.memtrace` (the tracker), `verlstudy.common.dist`,
#   `verlstudy.lessons.l01_memory_leak` (`pipeline`, `schedule`, `store`, `measure`, `gloo_ranks`, `upstream`).
#   What only the course's [digest](00_start_here.ipynb#digest) of the PRs says is labelled so above.

# %%
claims_table()
