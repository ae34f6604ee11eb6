# %% [markdown]
# # 02 · detach_tree and the detach-placement trap
#
# Upstream: [verl PR #7874](https://github.com/verl-project/verl/pull/7874) (precursor for
# [FSDP](00_start_here.ipynb#FSDP): [#6699](https://github.com/verl-project/verl/pull/6699)).
#
# **What happened.** Lesson 01 found the leak: every engine keeps one output dict per
# [micro-batch](00_start_here.ipynb#micro-batch) until the [mini-batch](00_start_here.ipynb#mini-batch) ends, and a
# tensor in `model_output` that still has a `grad_fn` pins that micro-batch's
# [autograd graph](00_start_here.ipynb#autograd-graph). #7874's fix is one small function, `detach_tree`; by
# verl 0.9.1 it wraps all four places verl's engines store `"model_output"` (fsdp, megatron, automodel and
# torchtitan; the veomni and mindspeed engines inherit FSDP's and Megatron's).
#
# **What you will do.** Write `detach_tree` and check its five properties against verl's own; detach in the
# wrong place and watch the loss stay normal while the gradient dies (silently when a live loss term sits
# outside `model_output`, loudly in verl's own `ppo_loss`); catch it with a `requires_grad` contract; rebuild
# #6699's weakref regression test; and run the course's own static check of the call sites on verl's engines
# in 0.9.0 and 0.9.1.
#
# **Time:** 45 minutes. **Assumes:** lesson 01, PyTorch autograd (`requires_grad`, `grad_fn`, `.detach()`), what
# a [GRPO](00_start_here.ipynb#GRPO) advantage is. Sources are listed at the end. Facts checked against verl 0.9.1

# %% tags=["parameters"]
device = "auto"  # "auto" | "cpu" | "cuda" | "npu"
seed = 0
n_leaves = 1000  # leaves in the already-detached tree of the cost check
steps = 12  # bandit training steps per placement
group_size = 8  # responses per prompt (GRPO group)
lr = 0.5
kl_coef = 0.001  # the allowed ranges are those over which every claim holds (see lesson_setup)

# %%
import importlib.util, subprocess, sys
if "google.colab" in sys.modules and not importlib.util.find_spec("verlstudy"):  # Colab only: this release of the course
    subprocess.run(f"{sys.executable} -m pip install -q --no-deps git+https://github.com/verlstudy/verlstudy@v0.1.0 && {sys.executable} -m verlstudy.kit.colab || echo 'The course did not install: Runtime > Restart session, then run this cell again.'", shell=True)

import gc, logging
from collections import namedtuple

import torch

from verlstudy.common.memtrace import AllocationTracker
from verlstudy.common.trees import count_new_tensors, detach_tree, detach_tree_always, grad_attached_paths
from verlstudy.kit.claims import claim, claims_table, expect_error
from verlstudy.kit.devices import skip_unless
from verlstudy.kit.exercises import check_exercise
from verlstudy.kit.plots import line_plot
from verlstudy.kit.resources import data_dir
from verlstudy.kit.show import show_change, show_source, upstream_diff
from verlstudy.kit.upstream import upstream_cell
from verlstudy.lessons.l02_detach import astcheck, trees
from verlstudy.lessons.l02_detach.setup import lesson_setup
from verlstudy.lessons.l02_detach.upstream import REVIEWED_WRITES, differences, engine_sources, unwrapped_stores, upstream_detach_tree

dev, seed, n_leaves, steps, group_size, lr, kl_coef = lesson_setup(device, seed, n_leaves, steps, group_size, lr, kl_coef)
print(f"running on {dev.type}")

# %% [markdown]
# ## 1 · `detach_tree`'s design, one property at a time
# Upstream's rules (`verl/workers/engine/utils.py::detach_tree`, added by #7874): a tensor is detached **only if it requires grad**, otherwise the same object comes
# back; a dict becomes a new dict, a list or tuple the same type, recursively; anything else is
# returned unchanged; the input is never mutated.

# %% [markdown]
# ### Write it first: exercise 2.1
# Before this section checks the course's version one property at a time, write your own.
# **2.1** Write `my_detach_tree(obj)` with upstream's rules: detach a tensor only if it requires grad
# (else return the same object), dict -> new dict, list/tuple -> same type, recursively, anything else
# unchanged, never mutate the input. (Plain tuples are enough; no namedtuples needed.)

# %% [markdown]
# Your function receives one value: a tensor, a dict, a list, a tuple (nested to any depth) or anything else. Containers must
# come back as **the same type** (a list as a list, a tuple as a tuple, a dict as a new dict); tensors that need
# no detaching must come back as the very same objects.

# %% [markdown]
# The checker builds fresh trees (nested up to eight
# levels) of live outputs, leaves and `nn.Parameter`s that require grad, views, every float dtype, masks and
# integer tensors, strings, numbers and None; it compares what comes back with the rules leaf by leaf and checks
# that your input is left exactly as it was. A wrong answer's message names the mistake; the second wrong try adds
# where to look, the third a question, the fourth the method; `exercise_hint("2.1")` shows all three when you ask.

# %% tags=["solution", "exercise-2.1"]
def my_detach_tree(obj):
    """Return obj with every grad-requiring tensor detached; already-detached tensors come back as is."""
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: my_detach_tree(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(my_detach_tree(v) for v in obj)
    return obj


# %% tags=["checker", "exercise-2.1"]
check_exercise("2.1", my_detach_tree)

# %% [markdown] tags=["after-you-try-2.1"]
# **After you try 2.1** (open once you have run the checker)
#
# Test `requires_grad`, not `grad_fn`: a leaf that requires grad has no `grad_fn` yet pins what its gradient
# reaches. A tensor needing no detach comes back as itself, at no cost; containers are rebuilt, never assigned
# into.

# %% [markdown]
# The course's `detach_tree` on an engine-like dict:

# %%
Pair = namedtuple("Pair", "chosen rejected")
logits = torch.randn(2, 4, 6, requires_grad=True)
log_probs = torch.log_softmax(logits, -1).amax(-1)
model_output = {
    "log_probs": log_probs,
    "entropy": [log_probs.exp(), torch.zeros(2, 4)],
    "response_mask": torch.ones(2, 4, dtype=torch.bool),
    "pair": Pair(log_probs[0], torch.zeros(4)),
    "meta": ("step", 3),
}
attached_before = grad_attached_paths(model_output, "model_output")
print("grad-attached before:", attached_before)
out = detach_tree(model_output)
print("grad-attached after: ", grad_attached_paths(out, "model_output"))

# %%
claim("already-detached leaf comes back as the same object", out["response_mask"] is model_output["response_mask"])
claim("detached leaf shares the original's storage", out["log_probs"].data_ptr() == log_probs.data_ptr())
claim(
    "container types kept (dict, list, tuple, namedtuple)",
    [type(out[k]).__name__ for k in ("entropy", "meta", "pair")] == ["list", "tuple", "Pair"] and type(out) is dict,
)
claim("input not mutated (same leaves still require grad)", grad_attached_paths(model_output, "model_output") == attached_before)
claim("non-tensor leaves unchanged", out["meta"] == ("step", 3))
claim(
    "nested leaves detached at every depth (list and namedtuple inside the dict)",
    {"model_output.entropy[0]", "model_output.pair.chosen"} <= set(attached_before)
    and grad_attached_paths(out, "model_output") == [],
)

# %% [markdown]
# **Namedtuples: the course's decision.** Upstream rebuilds a tuple with `type(obj)(generator)`: a two-field
# namedtuple raises `TypeError`, a one-field one silently stores the generator (section 1b runs verl's function
# on `Pair`). No engine output in verl 0.9.1 holds one. The course's version rebuilds namedtuples with
# `type(obj)._make(...)`, keeping type and field names.

# %%
print("ours:", type(out["pair"]).__name__, out["pair"]._fields)

# %% [markdown]
# **[Jagged](00_start_here.ipynb#jagged) tensors.** Engines return per-sequence outputs as nested tensors with
# `layout=torch.jagged`. A jagged tensor is a `torch.Tensor`, so `detach_tree` detaches it whole: offsets and
# values must come through unchanged. We build it as upstream's FSDP engine does, with
# `nested_tensor_from_jagged(values, cu_seqlens)`, a view that keeps the autograd link to `values`.

# %%
# torch 2.13's nested_tensor_from_jagged logs a spurious "is_fx_tracing" warning once; keep stderr clean.
logging.getLogger("torch.fx._symbolic_trace").setLevel(logging.ERROR)
per_sequence = [torch.randn(n, requires_grad=True) * 1.0 for n in (3, 5, 2)]
cu_seqlens = torch.tensor([0, 3, 8, 10])
jagged = torch.nested.nested_tensor_from_jagged(torch.cat(per_sequence), cu_seqlens)
jagged_out = detach_tree({"log_probs": jagged})["log_probs"]
print("offsets:", jagged_out.offsets().tolist(), "| requires_grad:", jagged.requires_grad, "->", jagged_out.requires_grad)
claim(
    "jagged tensor detached, layout and offsets kept",
    jagged_out.layout == torch.jagged
    and not jagged_out.requires_grad
    and torch.equal(jagged_out.offsets(), jagged.offsets())
    and torch.equal(jagged_out.values(), jagged.values()),
)

# %% [markdown]
# **The cost.** Many outputs (masks, advantages, anything computed under `no_grad`) are already detached. A
# naive version calling `.detach()` on every tensor makes one new tensor object per leaf per micro-batch; the
# identity rule makes none. (The PR calls that object a `TensorImpl`, the C++ object behind a Python tensor;
# `benchmarks/detach_tree.py` times the two.)

# %%
already_detached = {f"k{i}": torch.zeros(2) for i in range(n_leaves)}
new_ours = count_new_tensors(already_detached, detach_tree(already_detached))
new_naive = count_new_tensors(already_detached, detach_tree_always(already_detached))
claim(
    f"new tensors for {n_leaves} already-detached leaves, detach_tree",
    new_ours,
    expected=0,
    upstream="none: no throwaway TensorImpl per key per micro-batch",
)
claim(f"new tensors for {n_leaves} already-detached leaves, always-detach", new_naive, expected=n_leaves)

# %% [markdown]
# ## 1b · Upstream's own `detach_tree`, on the same inputs
# The next cell loads `detach_tree` from the installed verl's source (it needs only `torch`) and runs
# it on this section's dict, the jagged tensor and the already-detached tree, beside the course's.
# Without verl it prints one skip line.

# %%
def compare_with_verl():
    verl_detach = upstream_detach_tree()
    no_pair = {k: v for k, v in model_output.items() if k != "pair"}
    same = [differences(t, detach_tree, verl_detach) for t in (no_pair, {"log_probs": jagged}, already_detached)]
    print("first difference per input (None = same types, objects, grad-ness, values):", same)
    claim("upstream detach_tree gives the same trees (engine-like dict, jagged tensor, detached tree)",
          same == [None, None, None], upstream="verl 0.9.1 verl/workers/engine/utils.py::detach_tree")
    claim(f"upstream detach_tree: new tensors for {n_leaves} already-detached leaves",
          count_new_tensors(already_detached, verl_detach(already_detached)), expected=0)
    with expect_error(TypeError):
        verl_detach(model_output["pair"])  # verl's own function on a two-field namedtuple


upstream_cell(compare_with_verl)

# %% [markdown]
# ### Before the trap: exercise 2.2
# Now put a `detach_tree` (the course's, imported above, or your own) to work in an engine step.
# **2.2** Write `forward_step(policy, micro_batch, loss_function)` that computes per-action log-probs
# (`log_softmax` of `policy(micro_batch["states"])`, gathered at `micro_batch["actions"]`), calls
# `loss, metrics = loss_function({"log_probs": ...}, micro_batch)` and returns
# `(loss, {"model_output": {"log_probs": ...}, "metrics": metrics})`.

# %% [markdown]
# The engine keeps the micro-batch, and
# the Megatron, TorchTitan and Automodel engines that output, until the mini-batch ends (lesson 01; only verl's
# FSDP engine drops `model_output` after each training backward unless `return_model_output` is set), and the
# loss must still train the policy: the checker
# runs your step inside the engine's own loop (two mini-batches of 2-3 micro-batches: the engine's backward on
# your loss after each step, then an optimizer step) and compares the gradients and updated parameters with the
# reference's. So the step does no backward or `zero_grad` of its own, stores nothing under `"model_output"`
# that requires grad, keeps no graph alive once it returns, and leaves `micro_batch` as it was.

# %% [markdown]
# Your function receives a `torch.nn.Module`, a
# dict of tensors (`"states"`, `"actions"`, and `"advantages"` the loss may read) and the loss function; it
# must return a **tuple** `(loss, dict)`, with the log-probs as a tensor of shape `(B,)` (also for B = 1). The
# checker tries several policy sizes and batch sizes, with a loss that reads only the log-probs and one that
# also reads the micro-batch. Section 2 then shows what a misplaced detach does; `exercise_hint("2.2")` shows
# where to look and the method if you are stuck.

# %% tags=["solution", "exercise-2.2"]
def forward_step(policy, micro_batch, loss_function):
    """Return (live loss, output dict whose 'model_output' holds no grad-attached tensor)."""
    log_softmax = torch.log_softmax(policy(micro_batch["states"]), dim=-1)
    model_output = {"log_probs": log_softmax.gather(-1, micro_batch["actions"][:, None]).squeeze(-1)}
    loss, metrics = loss_function(model_output, micro_batch)
    return loss, {"model_output": detach_tree(model_output), "metrics": metrics}


# %% tags=["checker", "exercise-2.2"]
check_exercise("2.2", forward_step)

# %% [markdown] tags=["after-you-try-2.2"]
# **After you try 2.2** (open once you have run the checker)
#
# Two objects, two rules: the loss must keep its graph (backward needs it), the stored copy must hold none
# (the engine keeps it for the whole mini-batch). The order of the lines is the whole answer; section 2
# shows what happens when the detach moves up one line.

# %% [markdown]
# ## 2 · The trap: detach in the wrong place
# A GRPO-style step on a toy contextual bandit (4 prompts, 6 actions, reward 1 for each prompt's target action).
# The loss has two terms, as verl's actor loss does: a policy-gradient term and a
# [KL](00_start_here.ipynb#KL) penalty against the frozen reference, with the `low_var_kl` (k3) estimator of
# `verl/trainer/ppo/core_algos.py::kl_penalty`.

# %% [markdown]
# In the course's construction of the silent case, the KL term reads the live log-probs and the
# policy-gradient term reads `model_output`. The trap and the fix, as a change of the course's own step
# (`trees.policy_step` calls one or the other):

# %%
show_change(trees.loss_detached_before, trees.loss_detached_after)

# %% [markdown]
# The trap is one misplaced line: `model_output = detach_tree(model_output)` before the loss, then
# `stored = model_output` (right: `stored = detach_tree(model_output)` there). Both placements train from one
# seed. The figure logs what a dashboard would for the wrong placement (loss, KL, gradient norm, mean reward),
# beside the right one's gradient norm and reward.

# %%
runs = {p: trees.train_placement_bandit(p, steps=steps, group_size=group_size, lr=lr, kl_coef=kl_coef, seed=seed)
        for p in ("after_loss", "before_loss")}
right, wrong = runs["after_loss"], runs["before_loss"]
step_ids = list(range(steps))
curves = {"loss (to 1e-6)": [round(x, 6) + 0.0 for x in wrong.losses], "KL": wrong.kls, "grad norm": wrong.grad_norms,
          "mean reward": wrong.rewards}
series = {f"{name}, detach before loss": (step_ids, ys) for name, ys in curves.items()}
series |= {"grad norm, after loss": (step_ids, right.grad_norms), "mean reward, after loss": (step_ids, right.rewards)}
_ = line_plot(series, title="Wrong placement: KL and grad norm sit at exactly 0.0", xlabel="step", ylabel="value", digits=3)

# %%
claim("step-0 loss identical in both placements", right.losses[0] == wrong.losses[0])
loss_gap = max(abs(a - b) for a, b in zip(right.losses, wrong.losses))
claim("largest loss gap between the runs (advantages have unit std)", loss_gap, expected=0, atol=0.01, digits=2)
claim("wrong placement: largest policy gradient norm over all steps", max(wrong.grad_norms), expected=0)
claim("wrong placement: largest change of any policy parameter", wrong.param_change, expected=0)
nonzero_steps = sum(g > 0 for g in right.grad_norms)
claim(f"right placement: steps with a non-zero policy gradient (of {steps})", nonzero_steps, expected=steps, rtol=0.25)
claim("right placement: the policy moved", right.param_change > 0)
claim("wrong placement: KL exactly 0.0 at every step", wrong.kls == [0.0] * steps)
claim("wrong placement: largest |loss| over all steps (zero up to float rounding)", max(map(abs, wrong.losses)),
      expected=0, atol=1e-6, digits=2)
first_update = next(i for i, g in enumerate(right.grad_norms) if g > 0)  # step 0 unless its batch had no signal
claim("right placement: KL above 0 from the step after its first update on", all(k > 0 for k in right.kls[first_update + 1:]))
late_gain = sum(right.rewards[-3:]) / 3 - sum(wrong.rewards[-3:]) / 3
print(f"mean reward of the last 3 steps, right minus wrong placement: {late_gain:.3f}")
claim("the right placement ends with a higher reward (by more than 0.1)", late_gain > 0.1)

# %% [markdown]
# **Why the loss looks normal.** `.detach()` never changes a value, so the loss is the same number in both
# placements at step 0. On-policy the ratio is exactly 1 and GRPO advantages are centred in each group, so the
# policy-gradient term is ~0, connected or not. The right placement's loss is only `kl_coef` times a small KL:
# both curves sit near 0.

# %% [markdown]
# **Why backward does not complain.** The KL term reads the live log-probs, so the loss still
# requires grad. But the actor starts equal to the reference, where the k3 estimator's gradient is
# exactly zero (`d/dlogp [e^(r-logp) - (r-logp) - 1] = 1 - e^0 = 0`). With the policy-gradient term
# cut, the total gradient is exactly zero, the optimizer never moves the policy, and it stays at the
# reference: zero forever.

# %% [markdown]
# **Which metric gives it away.** Not the loss; the reward only slowly and noisily. The KL does: a policy
# drifts from its reference after its first update (step 0's, unless no group's rewards differed: then its
# advantages are all 0), so a KL of *exactly* 0.0 at step 5 says it has not moved. So does a gradient norm of
# exactly 0.0.

# %% [markdown]
# **The loud case, as verl's loss is structured.** Let the KL term read `model_output["log_probs"]`
# too, as `ppo_loss` does for all its terms (`kl_reads="model_output"`). Detached before the loss,
# nothing in the loss requires grad any more, and the first backward raises:

# %%
with expect_error(RuntimeError, match="does not require grad"):
    trees.train_placement_bandit("before_loss", steps=1, group_size=group_size, kl_coef=kl_coef, seed=seed,
                           kl_reads="model_output")
verl_shaped = trees.train_placement_bandit("after_loss", steps=steps, group_size=group_size, lr=lr, kl_coef=kl_coef,
                                     seed=seed, kl_reads="model_output")
claim("verl-shaped loss, right placement: same loss curve as the silent engine's", verl_shaped.losses == right.losses)

# %% [markdown]
# ## 3 · The guard: a `requires_grad` contract
# Three rules, checked after `loss.backward()` by the course's `check_train_step` (below): the returned loss requires
# grad; nothing stored requires grad; every trainable parameter got a non-zero gradient. Only the
# third one catches the trap; the second one catches lesson 01's leak.

# %% [markdown]
# One caveat for the third rule: in GRPO a batch where every group got equal rewards has all-zero
# advantages, and at the reference the KL gradient is zero too, so even the right placement gets an
# exactly zero gradient on such a batch (some seeds draw one: the step count claimed above). Check the rule on a
# batch that carries signal, as below, or over several steps.

# %%
_ = show_source(trees.check_train_step)

# %%
def one_step(placement):
    torch.manual_seed(seed)
    policy = torch.nn.Sequential(torch.nn.Embedding(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 6))
    states, actions = torch.arange(4).repeat_interleave(2), torch.tensor([0, 1, 2, 3, 4, 5, 0, 1])
    with torch.no_grad():
        old = torch.log_softmax(policy(states), -1).gather(-1, actions[:, None]).squeeze(-1)
    advantages = torch.tensor([1.0, -1.0] * 4)
    loss, output = trees.policy_step(policy, states, actions, old, advantages, old.clone(), kl_coef=kl_coef,
                               placement=placement)
    loss.backward()
    return loss, output, policy


loss, output, policy = one_step("after_loss")
trees.check_train_step(loss, output, policy.named_parameters())
claim("contract passes the right placement", True)
loss, output, policy = one_step("before_loss")
with expect_error(trees.ContractError, match="all-zero gradient"):
    trees.check_train_step(loss, output, policy.named_parameters())

# %% [markdown]
# ## 4 · #6699's regression test: a weakref on the checkpoint-saved input
# #6699's leak needed no pipeline, only a large run to show: Qwen3-8B with [LoRA](00_start_here.ipynb#LoRA) on
# FSDP2, about 400 micro-batches per update, `memory_allocated` from 24.8 to 64 GiB and then out of memory (commit
# dbbf0853f; only the Megatron variant of #7874, whose retained receive buffer exists only between pipeline stages,
# needs PP >= 2).

# %% [markdown]
# Its regression test pins the *mechanism* instead, on CPU (it runs in `cpu_unit_tests`), in
# `tests/workers/test_engine_forward_step_detach_on_cpu.py`: a tiny model with a frozen embedding whose output is
# forced to require grad (as [PEFT](00_start_here.ipynb#PEFT)'s `enable_input_require_grads` does) and a
# `torch.utils.checkpoint` block; a weakref to the checkpoint-saved input
# must be alive while the loss exists and dead after `del loss; gc.collect()` while the output is still held.

# %% [markdown]
# The checkpoint keeps its input for recomputation, so that input lives exactly as long as the graph. The cell
# below is the course's miniature of that test, not upstream's file.

# %%
# one forward, a loss, the output held as an engine holds it; then `del loss` and gc.collect()
lifetimes = {wrap: trees.saved_input_lifetime(detach=wrap, seed=seed) for wrap in (True, False)}
for wrap, result in lifetimes.items():
    print(f"wrapped={wrap}: (alive while loss lives, alive after del loss, grad-attached) = {result}")
claim("wrapped: saved input alive with the loss, freed after del loss", lifetimes[True][:2] == (True, False),
      upstream="#6699's test: weakref alive while loss exists, dead after del loss; gc.collect()")
claim("unwrapped: the held output keeps the saved input alive", lifetimes[False][1])

# %% [markdown]
# **As bytes:** `trees.retained_per_micro_batch` reads an allocator per micro-batch (lesson 01's
# `AllocationTracker` on CPU, CUDA's in section 7). Wrapped, a held micro-batch keeps only its log-probs
# (`4 x tokens` bytes); unwrapped, also the checkpoint-saved embedding output and its gradient
# (`2 x tokens x hidden x 4` bytes, #6699's "embedding output plus its gradient buffer").

# %%
torch.manual_seed(seed)
tiny, tiny_ids = trees.TinyCheckpointedLM(vocab=16, hidden=8), torch.randint(16, (2, 5))
with AllocationTracker() as tracker:
    per_mb = {wrap: trees.retained_per_micro_batch(tiny, tiny_ids, wrap=wrap, measure=tracker.live_bytes)
              for wrap in (True, False)}
claim("CPU: bytes retained per held micro-batch, wrapped (its log-probs)", per_mb[True], expected=tiny_ids.numel() * 4)
claim("CPU: bytes retained per held micro-batch, unwrapped", per_mb[False],
      expected=tiny_ids.numel() * 4 + 2 * tiny_ids.numel() * 8 * 4)

# %% [markdown]
# ## 5 · The static check: every call site wraps what it stores
# The weakref test pins the mechanism. The static check of the four engine call sites that the course's
# [digest](00_start_here.ipynb#digest) of #7874 mentions lives in a verl fork: [zhiyu-zhao-ucas/verl_meta_token](https://github.com/zhiyu-zhao-ucas/verl_meta_token)
# (commit 9ac85640), `tests/workers/test_engine_detach_tree_on_cpu.py`, "Regression guard for verl#6698 on the
# non-FSDP engines".

# %% [markdown]
# It parses the four engines' `transformer_impl.py` into an [AST](00_start_here.ipynb#AST) and requires each
# `"model_output"` store (a subscript assignment or a dict key) to be a direct `detach_tree(...)` call; that rule
# passes on 0.9.1 and fails on 0.9.0 at the four stores #7874 wrapped. verl's repository, as we can read it, does
# not hold this file (only #6699's weakref test): not merged.

# %% [markdown]
# `verlstudy.lessons.l02_detach.astcheck` is the course's own, wider static check: it finds
# every place a value is stored under `"model_output"` (dict entry, subscript assignment,
# `dict(model_output=...)`, `setdefault`, and writes *into* the stored dict) and reports those not
# wrapped in `detach_tree(...)`, following a variable back to its assignment.

# %% [markdown]
# Upstream has two call-site shapes: a dict display `"model_output": detach_tree(model_output)` (fsdp, automodel, torchtitan) and a
# subscript assignment `output["model_output"] = detach_tree(model_output)` (megatron).

# %% [markdown]
# The example engines in
# `data/engines/` use both, one per upstream engine (torchtitan's deliberately unwrapped), plus a fifth shape
# of the course's own that no upstream engine has (`detach_tree` into a variable, stored through
# `dict(model_output=...)`). The megatron one also writes routing indices into the stored dict, which a
# reviewer has cleared by name (`REVIEWED_WRITES`; more on that below).

# %%
engine_dir = data_dir() / "engines"
sources = {name: (engine_dir / f"{name}_engine.py").read_text() for name in astcheck.EXAMPLE_ENGINES}
report = astcheck.check_sources(sources, reviewed=REVIEWED_WRITES)
for name, stores in report.items():
    for store in stores:
        print(f"{name:>10}: {store.describe()}")
unwrapped = [name for name, stores in unwrapped_stores(report).items() if stores]
claim("example engines with an unwrapped model_output store", ", ".join(unwrapped), expected="torchtitan")

# %% [markdown]
# The static verdict agrees with what each engine really stores: run every engine's `forward_step`
# once and look for grad-attached leaves in its output.

# %%
def load_engine(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}_engine", engine_dir / f"{name}_engine.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bandit_policy = torch.nn.Sequential(torch.nn.Embedding(4, 8), torch.nn.Linear(8, 6))
micro_batch = {"states": torch.tensor([0, 1, 2, 3]), "actions": torch.tensor([5, 0, 1, 2])}
def pg_only(mo, mb):
    loss = -mo["log_probs"].mean()
    return loss, {"pg_loss": round(loss.item(), 4)}
leaking = []
for name in astcheck.EXAMPLE_ENGINES:
    _, stored = load_engine(name).forward_step(bandit_policy, micro_batch, pg_only)
    print(f"{name:>10}: grad-attached stored leaves {grad_attached_paths(stored, 'output')}")
    leaking += [name] if grad_attached_paths(stored) else []
claim("static verdict matches the engines' real outputs", leaking == unwrapped)

# %% [markdown]
# **What the static check cannot see.** It checks *that* the stored value is wrapped, not *where*:
# the trap's engine moves the `detach_tree` call above the loss and still passes.

# %%
trap_source = '''
def forward_step(policy, batch, loss_fn):
    outputs = detach_tree(prepare_outputs(policy(batch)))
    loss, metrics = loss_fn(outputs, batch)
    return loss, {"model_output": outputs, "metrics": metrics}
'''
print(astcheck.find_stores(trap_source)[0].describe())
claim("the AST check passes the trap's engine (only the contract catches it)",
      astcheck.stored_outputs_without("detach_tree", trap_source) == [])

# %% [markdown]
# ### Upstream's four store sites in 0.9.0 and 0.9.1
# The store lines of fsdp's, automodel's, torchtitan's and megatron's `transformer_impl.py`, from the installed
# 0.9.0 (before #7874) to 0.9.1. The part of #7874's description we could read covers Megatron only, so the other
# three changes are dated to that interval, not credited to it.

# %% tags=["upstream-source", "nbval-ignore-output"]
for engine in ("fsdp", "automodel", "torchtitan"):
    upstream_diff(f"workers/engine/{engine}/transformer_impl.py", None, contains='"model_output": detach_tree')
_ = upstream_diff("workers/engine/megatron/transformer_impl.py", None, contains='output["model_output"] = detach_tree')

# %% [markdown]
# **Reading it.** Three engines build the per-micro-batch output as a dict display, and 0.9.1 wraps the
# `"model_output"` entry in `detach_tree`; Megatron assigns it by subscript (only
# `if forward_only or not self.engine_config.dynamic_context_parallel`: under
# [dynamic CP](00_start_here.ipynb#dynamic-CP) training it stores
# none) and wraps it the same way. Each gets a comment naming where the output goes next (`output_lst`,
# Megatron's `forward_data_store`). FSDP's diff also removes #6699's inline dict comprehension, which
# `detach_tree` replaces. verl 0.9.0's `verl/workers/engine/utils.py` has no `detach_tree`; 0.9.1 has it.

# %% [markdown]
# In 0.9.1 veomni and mindspeed define no store of their own; 0.9.0's veomni wrote only its grad-free routing
# indices into `model_output`, the kind of write megatron's routing line is.

# %% [markdown]
# The next cell runs the course's check, unreviewed, on the four real `transformer_impl.py` files
# of both releases, then on 0.9.1 copies with every `detach_tree(...)` call removed
# (`astcheck.unwrap_calls` turns `detach_tree(x)` into `(x)`, keeping every line number).

# %%
def engines_before_and_after():
    for release, expected in (("0.9.0", "fsdp, megatron, automodel, torchtitan"), (None, "none")):
        flagged = unwrapped_stores(astcheck.check_sources(engine_sources(release)))
        for name, stores in flagged.items():
            print(f"{release or '0.9.1'} {name:>10}: " + ("; ".join(f"line {s.line} {s.kind}" for s in stores) or "ok"))
        stores = [n for n, found in flagged.items() if any(s.written_key is None for s in found)]
        where = f"verl {release or '0.9.1'} verl/workers/engine/*/transformer_impl.py"
        claim(f"verl {release or '0.9.1'}: engines with a flagged model_output store", ", ".join(stores) or "none",
              expected=expected, upstream=where)
        claim(f"verl {release or '0.9.1'}: flagged writes into model_output (megatron's routed_experts)",
              sum(s.written_key == "routed_experts" for found in flagged.values() for s in found), expected=2)
    copies = {name: astcheck.unwrap_calls(text) for name, text in engine_sources().items()}
    caught = [n for n, (text, k) in copies.items() if k and astcheck.stored_outputs_without("detach_tree", text)]
    claim("0.9.1 copies with the detach_tree call removed: engines caught", ", ".join(caught),
          expected=", ".join(astcheck.UPSTREAM_ENGINES))


upstream_cell(engines_before_and_after, releases=["0.9.0"])

# %% [markdown]
# **Reading it.** In 0.9.0 the check flags megatron's `output["model_output"] = model_output` in
# `postprocess_micro_batch_func`, and automodel's and torchtitan's `"model_output": model_output`
# entries in `forward_step`: the true positives, all three wrapped between 0.9.0 and 0.9.1 (megatron's by #7874).
# Two kinds of line are where a name-based rule misjudges.

# %% [markdown]
# - **FSDP in 0.9.0 is flagged, but it was not leaking.** #6699 had already detached FSDP's output,
#   with an inline dict comprehension rather than a call named `detach_tree`; a rule that looks for
#   the name cannot know that. That comprehension (the course's reconstruction below) detaches every
#   top-level tensor that has a `grad_fn`, which is every engine output; it would miss a nested
#   container and a leaf that requires grad. In 0.9.1 the FSDP engine calls `detach_tree` there.

# %% [markdown]
# - **megatron's `setdefault("model_output", {})["routed_experts"] = ...` in both releases** (a write into
#   each stored micro-batch entry, on the dynamic-CP path only, `_attach_dcp_recorded_routes`), **and a second
#   write, `output["model_output"]["routed_experts"] = ...`** (into the *merged* output that
#   `postprocess_batch_func` returns after the schedule: not the per-micro-batch store this check is about,
#   but a name rule cannot tell). Judging only the `{}` default would call the first safe, though a tensor is
#   written into that dict on the same line; the course's check therefore judges the write, and flags both.

# %% [markdown]
# Both hold integer expert indices (uint8 in 0.9.0, which casts with `.to(torch.uint8)`; int16 in 0.9.1),
#   which cannot require grad, written after the schedule has run: false
#   alarms a name cannot clear. The course handles it by review:
#   `REVIEWED_WRITES` clears writes of `routed_experts` by name, with the reason, and nothing else.

# %%
engine_like = {"log_probs": torch.randn(3, requires_grad=True) * 1.0, "nested": [torch.randn(3, requires_grad=True) * 1.0],
               "leaf": torch.randn(3, requires_grad=True)}
missed = grad_attached_paths(trees.detach_like_6699(engine_like), "model_output")
print("#6699's rule leaves attached:", missed)
claim("#6699's rule detaches a flat engine output; misses only the nested and the leaf tensor",
      missed == ["model_output.nested[0]", "model_output.leaf"])

# %% [markdown]
# ## 6 · Exercises
# Stuck on 2.1 or 2.2? `exercise_hint("2.N")` prints where to look and the method.

# %% [markdown]
# ## 7 · On a GPU
# Section 4's loop runs larger on CUDA's real allocator (the slope of `memory_allocated` over micro-batches: one-off
# parameter gradients drop out) and claims its two figures (unwrapped: #6699's mechanism).

# %% tags=["gpu"]
if skip_unless("cuda"):
    model = trees.TinyCheckpointedLM(vocab=1024, hidden=256).to("cuda")
    ids = torch.randint(1024, (4, 512), device="cuda")
    per_mb_gpu = {wrap: trees.retained_per_micro_batch(model, ids, wrap=wrap, measure=torch.cuda.memory_allocated,
                                                 micro_batches=8) for wrap in (True, False)}
    # rtol: the CUDA caching allocator rounds each block up (to 512 B), which these sizes already are
    claim("CUDA: bytes retained per held micro-batch, wrapped", per_mb_gpu[True], expected=ids.numel() * 4, rtol=0.02)
    claim("CUDA: bytes retained per held micro-batch, unwrapped", per_mb_gpu[False],
          expected=ids.numel() * 4 + 2 * ids.numel() * 256 * 4, rtol=0.02)

# %% [markdown]
# ## Checked against upstream verl
# The helpers here re-implement upstream code in small form and can drift from it. With `verl` installed, the
# next cell compares upstream's own function with ours on generated inputs (or says why there is none); a
# disagreement stops the notebook. Without verl: one skip line.

# %% tags=["nbval-ignore-output"]
from verlstudy.lessons.l02_detach.upstream import upstream_check

upstream_check()

# %% [markdown]
# ## Takeaways
# - `detach_tree` detaches only what requires grad and returns everything else as the same object:
#   no new tensors for an already-detached tree, types and jagged offsets kept, input untouched;
#   verl's own function gives the same trees (on a namedtuple it raises `TypeError`, or with one field
#   silently stores a generator; no engine output holds namedtuples).
# - Put it **where the output is stored, after the loss is built**. Before the loss, with every term
#   reading `model_output` (verl's `ppo_loss`), backward raises; with a live term outside it, backward
#   runs and the policy gets no gradient at all.
# - An RL loss curve cannot tell you whether the gradient flows. A KL or gradient norm that is
#   *exactly* 0.0 step after step can; so can a contract: loss requires grad, stored outputs do not,
#   trainable parameters get non-zero gradients.
# - Pin the mechanism with a weakref test (#6699's, upstream's) and the call sites with a static check (the
#   course's; a fork holds a narrower one that verl has not merged); neither
#   replaces the contract, because the static check cannot see placement, and a name-based rule
#   both flags correct code written another way (#6699's comprehension) and needs a reviewed reason
#   for what it cannot judge (integer routing indices written into the stored dict).

# %% [markdown]
# ## Open questions
# - Detaching before the loss silently zeroed a gradient; detaching after the store is what the fix does. Is there
#   a placement a type checker or a linter could enforce, rather than a test?
# - The static check judges names and cannot see dtypes. What would a check that runs the engine on fake tensors
#   (the meta device) see that it cannot, and what would it miss?
# - verl's FSDP engine drops `model_output` after each backward unless asked; the others keep it to the end of
#   the mini-batch. Which design would you choose for a new engine, and why?

# %% [markdown]
# ## Sources
# - verl PR [#7874](https://github.com/verl-project/verl/pull/7874) (`detach_tree`, its rules and why already
#   detached tensors come back as is) and [#6699](https://github.com/verl-project/verl/pull/6699) (commit
#   dbbf0853f: FSDP's inline detach and the test `tests/workers/test_engine_forward_step_detach_on_cpu.py`).
# - verl 0.9.1 (installed) and 0.9.0 (for the before/after): `verl/workers/engine/utils.py::detach_tree`;
#   `verl/workers/engine/{fsdp,megatron,automodel,torchtitan}/transformer_impl.py` (the store lines; megatron's
#   `_attach_dcp_recorded_routes` and the merged-output `routed_experts` write);
#   `verl/utils/megatron/router_replay_utils.py` (int16 routes); `verl/workers/utils/losses.py::ppo_loss`;
#   `verl/trainer/ppo/core_algos.py::kl_penalty` (`low_var_kl`).
# - The course's own code: `verlstudy.common.trees`, `verlstudy.lessons.l02_detach` (`trees`, `astcheck`,
#   `upstream`) and the example engines in `data/engines/`. The cells marked "upstream" load and run verl's own
#   files; what only the course's digest says is labelled so.

# %%
claims_table()
