# %% [markdown]
# # 01 · Attributing a per-micro-batch memory leak to its allocation site
#
# Upstream: [verl PR #7874](https://github.com/verl-project/verl/pull/7874) (the same leak under FSDP
# with PEFT: [#6699](https://github.com/verl-project/verl/pull/6699)).
#
# Under Megatron pipeline parallelism, the last pipeline stage's memory grew with every micro-batch of
# a mini-batch (upstream: +45 GiB on the last-stage rank, +2.4 GiB elsewhere). Upstream found the
# cause with `torch.cuda.memory._record_memory_history`: the allocation stacks pointed at Megatron's
# `create_tensor_recv_prev`. The stored per-micro-batch output still had a `grad_fn`, so it pinned
# its graph, and the graph's input was a receive buffer allocated fresh for every micro-batch.
#
# **You will learn** to *watch* memory grow with the number of micro-batches, *find* the allocation
# site that holds it with a CPU allocation tracker built like `_record_memory_history`, *prove* the
# mechanism with control experiments (forward only, no pipeline, deeper stages, two real ranks),
# and *see* the fix (`detach_tree` on the stored output) flatten the curve without changing a bit of
# the loss or the gradients.
#
# **Time:** 60 minutes. **Assumes:** PyTorch autograd (`requires_grad`, `grad_fn`, `.backward()`),
# what pipeline parallelism and micro-batches are.
#
# **Upstream code cited:** `verl/workers/engine/utils.py::detach_tree` and `postprocess_batch_func`;
# `verl/workers/engine/megatron/transformer_impl.py` (`output["model_output"] = detach_tree(...)`);
# `verl/workers/engine/base.py::infer_batch` (forward only runs under `torch.no_grad()`); Megatron's
# `megatron/core/pipeline_parallel/p2p_communication.py::create_tensor_recv_prev` and
# `schedules.py` (`forward_data_store`). Everything here is our own code, in `verlstudy.common.memtrace`,
# `verlstudy.lessons.l01_memory_leak` (`pipeline`, `measure`, `gloo_ranks`) and `verlstudy.common.dist`.
#
# Facts checked against verl 0.9.1

# %% tags=["parameters"]
device = "auto"  # "auto" | "cpu" | "cuda"; the tracker runs on CPU, the optional CUDA cell on a GPU
seed = 0
seq_len = 64  # S: tokens per micro-batch
hidden = 32  # H: hidden size
dtype = "float32"  # "float32" | "bfloat16"
num_micro_batches = 8  # micro-batches in one mini-batch

# %%
from pathlib import Path

import torch

from verlstudy.lessons.l01_memory_leak import pipeline as pl
from verlstudy.lessons.l01_memory_leak.gloo_ranks import gloo_pipeline_worker
from verlstudy.lessons.l01_memory_leak.measure import (
    UPSTREAM_CONTROLS,
    ResidencyError,
    assert_flat_residency,
    controls_table,
    measure_controls,
)
from verlstudy.kit.exercises import check_exercise
from verlstudy.kit.claims import claim, claims_table, expect_error, reset_claims
from verlstudy.kit.resources import data_dir
from verlstudy.kit.devices import pick_device, skip_unless
from verlstudy.common.dist import run_local
from verlstudy.common.memtrace import AllocationTracker, bytes_per_step, snapshot_top_sites
from verlstudy.kit.params import check_choice, check_int
from verlstudy.kit.plots import bar_plot, line_plot
from verlstudy.kit.seeding import seed_everything

dev = pick_device(device)
seed = seed_everything(check_int("seed", seed, minimum=0))
seq_len = check_int("seq_len", seq_len, minimum=1, maximum=4096)
hidden = check_int("hidden", hidden, minimum=1, maximum=1024)
dtype = check_choice("dtype", dtype, ("float32", "bfloat16"))
num_micro_batches = check_int("num_micro_batches", num_micro_batches, minimum=3, maximum=64)
reset_claims()
cfg = pl.PipelineConfig(seq_len=seq_len, hidden=hidden, dtype=dtype)
print(cfg)

# %% [markdown]
# ## 1. Symptom: live memory grows with every micro-batch
# The toy pipeline keeps upstream's structure (see `verlstudy.lessons.l01_memory_leak.pipeline`): two stages; stage 1 receives
# its input into a fresh `create_tensor_recv_prev` buffer with `requires_grad=True`; the last stage's
# `loss_func` returns `(loss, {"model_output": log_probs})` with **per-token** log-probs (S values,
# like verl's); the schedule appends that dict to `forward_data_store` once per micro-batch and only
# consumes the store when the mini-batch ends. `AllocationTracker` records every storage created
# while it is active; we read its live bytes after each micro-batch, without and with the fix.

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
# ## 2. Root cause, step 1: which allocation site holds the memory?
# Upstream read the allocation stacks of a `_record_memory_history` snapshot. Our tracker keeps the
# same thing on CPU: each live storage with the Python stack that created it (torch's own frames
# trimmed). Here are the sites of what the **last** micro-batch allocated and is still alive after it
# finished, then the full stack of the biggest one.

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
# the receive buffer, whose `.grad` was just filled by backward. So per micro-batch we predict:
# the buffer (S x H x itemsize), its gradient (the same), and the stored per-token output itself
# (S x itemsize). Walking the graph of the stored output shows exactly that leaf:

# %%
stored = leak_run.forward_data_store[-1]["model_output"]
buffers = [t for t in pl.graph_leaves(stored) if not isinstance(t, torch.nn.Parameter)]
print(f"model_output: shape {tuple(stored.shape)}, grad_fn {type(stored.grad_fn).__name__}")
print(f"non-parameter leaves its graph reaches: {[tuple(t.shape) for t in buffers]}, grad kept: {buffers[0].grad is not None}")
predicted = pl.predicted_leak_bytes(cfg)
for name, nbytes in predicted.items():
    print(f"  predicted {nbytes:>6} B  {name}")
claim("predicted = measured bytes per micro-batch (exact)", int(leak_slope), expected=sum(predicted.values()), unit="B")
claim("each named part is a tracker site, byte for byte", {s.function: s.bytes for s in leak_sites} == pl.predicted_leak_sites(cfg))
del stored, buffers

# %% [markdown]
# The store lives until the mini-batch ends. Then the engine merges it (`postprocess_batch_func`) and
# drops it, and everything it pinned goes at once: residency is bounded by the micro-batches of one
# mini-batch, which is why the leak shows only at scale (hundreds of micro-batches). The merge keeps
# the autograd link, as upstream's does, so the merged tensor pins the graphs until it is dropped too.

# %%
merged = pl.consume_store(leak_run.forward_data_store)
print(f"merged model_output {tuple(merged.shape)}, grad_fn {type(merged.grad_fn).__name__}: {tracker.live_bytes()} B still live")
del merged
claim("mini-batch end: live bytes once the merged store is dropped", tracker.live_bytes(), expected=0, unit="B")

# %% [markdown]
# ## 4. Controls: when does it *not* leak?
# Upstream separated the cases with control runs. We repeat them, measuring bytes per micro-batch:
# - **forward only** (how verl computes old log-probs: `infer_batch` runs under `torch.no_grad()`):
#   no graph is built, so nothing but the outputs can be pinned;
# - **PP=1**: no receive buffer; the graph's leaves are the parameters, which exist anyway;
# - **more layers per stage**: backward frees the saved activations, so depth must not matter.
#
# Upstream's digest figures (forward only 0.76 MiB, PP=1 0.31 MiB per micro-batch, on a real model)
# are quoted as upstream's, *unverified*; ours are for this toy's sizes.

# %%
controls = measure_controls(cfg, 4, layers=(2, 4), seed=seed)  # the slope is exact from 4 micro-batches
bar_plot(controls, title="Bytes retained per micro-batch", ylabel="bytes")
print(controls_table(controls))
own = cfg.seq_len * cfg.itemsize
claim("forward only keeps only the outputs", controls["forward only"], expected=own, unit="B",
      upstream=UPSTREAM_CONTROLS["forward only"])
claim("PP=1 keeps only the outputs", controls["PP=1"], expected=own, unit="B", upstream=UPSTREAM_CONTROLS["PP=1"])
claim("retained bytes do not depend on depth", controls["2 layers/stage"] == controls["4 layers/stage"] == int(leak_slope))

# %% [markdown]
# ## 5. The asymmetry: two real ranks, only the last stage grows
# Now the same stages run as two `torch.distributed` gloo processes on loopback (one stage per rank,
# 1F1B order, `send`/`recv` into a fresh receive buffer), launched by `verlstudy.common.dist.run_local`
# (forked ranks, short timeouts, always reaped). Each rank measures its live bytes at the end of
# mini-batches of 1, 2 and 3 micro-batches. Only the last stage stores outputs, so only it should grow;
# stage 0 holds at most its in-flight micro-batches: O(pipeline depth), not O(micro-batches).

# %%
counts = (1, 2, 3)
ranks = run_local(gloo_pipeline_worker, 2, cfg, counts, False, seed, timeout_s=60, collective_timeout_s=20)
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
# ## 6. The fix: detach what is stored
# verl's fix calls `detach_tree` (here `verlstudy.common.trees.detach_tree`, lesson 02) on `model_output`
# where each engine stores it: a tensor that requires grad is detached (same data, no `grad_fn`),
# anything else comes back as is. Backward is unaffected because it runs on the separately returned,
# still-attached loss. The stored outputs keep their own S x itemsize bytes per micro-batch and nothing
# else; the loss and every gradient are bit-identical.

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
      and all(pl.graph_leaves(out["model_output"]) == [] for out in fix_run.forward_data_store))
claim("fix: losses bit-identical", leak_run.losses == fix_run.losses)
claim("fix: gradients bit-identical",
      leak_run.grads.keys() == fix_run.grads.keys()
      and all(torch.equal(leak_run.grads[k], fix_run.grads[k]) for k in leak_run.grads))

# %% [markdown]
# ## 7. The guard: a test that would have caught it
# CI cannot assert absolute GPU memory, but it can assert the *shape* of residency on CPU: per
# micro-batch, only the stored outputs' own bytes may stay alive. The guard passes with the fix and,
# without it, fails naming the site (upstream guards the mechanism with a weakref test and the four
# engine call sites with an AST check: lesson 02).

# %%
print("with the fix:", assert_flat_residency(cfg, 3), "bytes per micro-batch")
with expect_error(ResidencyError, match="create_tensor_recv_prev"):
    assert_flat_residency(cfg, 3, detach_outputs=False)

# %% [markdown]
# ## 8. Reading upstream's own numbers with the same tool
# In #6699 (FSDP + PEFT), `memory_allocated` read 24.8, 37.9, ~50 and 64 GiB at micro-batch 250, 300,
# 350 and 400, then OOM; upstream estimated ~0.27 GiB per micro-batch. These are upstream's figures,
# quoted, not measured here; the least-squares slope of them agrees with their estimate.

# %%
upstream_gib = {250: 24.8, 300: 37.9, 350: 50.0, 400: 64.0}
upstream_slope = bytes_per_step(list(upstream_gib.values()), list(upstream_gib))
claim("slope of #6699's quoted memory figures", upstream_slope, expected=0.27, rtol=0.05, unit="GiB/micro-batch",
      upstream="~0.27 GiB per micro-batch (#6699)")

# %% [markdown]
# ## 9. Exercises
# **1.1 Predict the leak.** Write `predict_leak(seq_len, hidden, itemsize)`: the bytes one leaking
# micro-batch leaves alive on the last stage. The checker runs the pipeline with three configurations
# (different S, H, dtype, depth) and compares your number with the measured slope.

# %% tags=["solution", "exercise-1.1"]
def predict_leak(seq_len: int, hidden: int, itemsize: int) -> int:
    """Return the bytes one leaking micro-batch leaves alive on the last pipeline stage, as an int.

    `seq_len` is S (tokens per micro-batch), `hidden` is H, `itemsize` the bytes per element of the dtype.
    """
    return 2 * seq_len * hidden * itemsize + seq_len * itemsize


# %% tags=["checker", "exercise-1.1"]
check_exercise("1.1", predict_leak)

# %% [markdown]
# **1.2 Find a planted leak.** With the fix applied, a pipeline can still grow: someone added a "debug"
# helper that keeps something per micro-batch. Write `find_growth_site(tracker, run_micro_batch)`:
# each call of `run_micro_batch` runs one more micro-batch inside the active `tracker`; return the *function
# name* that allocates what keeps growing. Careful: the first micro-batch also makes one-off
# allocations (parameter gradients) that are not growth. The checker tries three pipelines.

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

# %% [markdown]
# ## 10. The same view from a CUDA memory snapshot
# `snapshot_top_sites` reads the pickle that `torch.cuda.memory._dump_snapshot` writes (segments,
# blocks, and each block's allocation frames) and groups live blocks by site, like the tracker.
# `data/memory/pipeline_leak_snapshot.pickle` was **constructed** on CPU in that format from this
# pipeline's tracker (see its README), not recorded on a GPU:

# %%
fixture = data_dir() / "memory" / "pipeline_leak_snapshot.pickle"
snap_sites = snapshot_top_sites(fixture, n=3)
for site in snap_sites:
    print(f"{site.bytes:>8} B  x{site.count}  {site.function}")
claim("snapshot fixture: top site", snap_sites[0].function, expected="create_tensor_recv_prev")

# %% [markdown]
# On a machine with a CUDA GPU, the next cell records a real `_record_memory_history` snapshot of the
# same pipeline (leaking, 4 micro-batches, after one warm-up micro-batch so that the parameter
# gradients exist before recording starts) and reads it with the same reader. On a CPU it prints one
# skip line. One difference from the CPU tracker: on CUDA, autograd runs backward on its own device
# thread, which has no Python frames, so the receive buffer's gradient lands in the `<no Python stack>`
# group, together with everything allocated before recording began (parameters, their gradients).

# %% tags=["gpu"]
if skip_unless("cuda"):
    gpu_cfg = pl.config_with(cfg, device="cuda")
    gpu_model = pl.ToyPipelineModel(gpu_cfg, seed)
    pl.run_pipeline(gpu_cfg, 1, model=gpu_model, seed=seed)  # warm-up: one-off allocations happen here
    torch.cuda.memory._record_memory_history("all", stacks="python", max_entries=100_000)
    gpu_run = pl.run_pipeline(gpu_cfg, 4, model=gpu_model, seed=seed)
    gpu_snapshot = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    for site in snapshot_top_sites(gpu_snapshot, n=5):
        print(f"{site.bytes:>8} B  x{site.count}  {site.label()}")
    del gpu_run, gpu_model

# %% [markdown]
# ## Checked against upstream verl
# The helpers here re-implement upstream code in small form, so they can drift from it as verl moves. When
# the `verl` package is installed (`make setup` installs it without its heavy dependencies), the next cell
# loads upstream's own function from verl's source and compares it with ours on generated inputs, or says
# why this lesson has no single function to compare. A disagreement stops the notebook here; without verl
# the cell prints a one-line skip. `verlstudy verify-upstream` runs every lesson's comparison at once.

# %% tags=["nbval-ignore-output"]
from verlstudy.lessons.l01_memory_leak.upstream import upstream_check

upstream_check()

# %% [markdown]
# ## Takeaways
# - A per-micro-batch store that outlives backward turns any `grad_fn` it holds into residency that
#   grows with the number of micro-batches. Backward frees saved activations, not the graph's leaves.
# - Attribute before you fix: allocation stacks (`_record_memory_history` on GPU, a
#   `TorchDispatchMode` tracker on CPU) named `create_tensor_recv_prev`, and the bytes matched a
#   prediction exactly.
# - Controls make the mechanism undeniable: forward only and PP=1 keep only outputs, depth does not
#   matter, and only the rank that stores outputs grows.
# - The fix detaches at the store; the loss and gradients do not change by a single bit. Lesson 02
#   shows what happens when the detach goes in the wrong place.

# %%
claims_table()
