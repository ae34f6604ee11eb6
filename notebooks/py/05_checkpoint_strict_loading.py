# %% [markdown]
# # 05 · strict=False checkpoint loading, audited
#
# Upstream: [verl PR #7836](https://github.com/verl-project/verl/pull/7836), which fixed the GLM-5.2 GRPO
# recipe of [#7788](https://github.com/verl-project/verl/pull/7788).
#
# GLM-5.2 has multi-token-prediction (MTP) layers. verl's GLM-5.2 recipe uses them in neither training nor
# rollout, and they are left out of the exported Hugging Face weights, so the recipe turns the checkpoint's
# strict key check off: `actor_rollout_ref.actor.checkpoint.strict=False`. That fixes the recipe, but it
# also switches the check off for every other weight.
#
# **You will learn** what `strict` checks (the set of weight names, not their values), why `strict=True`
# fails on an export without MTP, how plain `strict=False` also hides a *real* missing layer, which then
# keeps its random initial values and changes the model's outputs, and how to load with an *audited*
# loader that allows only the `mtp.` prefix and fails on anything else. You will also read the recipe's
# dependency refs: a `core_v0.18.0` tag for NVIDIA Megatron-LM, `core_r0.18.0` branches for the Ascend repos.
#
# **Time:** 30 minutes. **Assumes:** `nn.Module.state_dict()` / `load_state_dict()`.
#
# **Upstream files cited** (paths inside verl):
# - `examples/ascend_extras/grpo_trainer/run_glm5_2_megatron.sh`: the recipe. It sets
#   `actor_rollout_ref.actor.checkpoint.strict=False` with the comment "MTP layers are unused in both
#   training/rollout and are omitted from exported HF weights", and its header lists the dependency refs.
#   The `examples/` folder is not part of the verl 0.9.1 wheel.
# - `verl/trainer/config/config.py::CheckpointConfig.strict` (default `True`, documented as "Whether to
#   perform strict validation during weight export") and `verl/trainer/config/actor/actor.yaml`
#   (`checkpoint.strict: True`).
# - `verl/utils/checkpoint/megatron_checkpoint_manager.py`: the flag is passed on as
#   `bridge.save_hf_weights(..., strict=self.checkpoint_config.strict)` (Megatron-Bridge export).
# - `verl/utils/checkpoint/fsdp_checkpoint_manager.py`: a LoRA-only checkpoint is loaded with
#   `strict=False` and then *checked*: unexpected keys raise. That is the audited pattern in small.
#
# In verl the flag guards the Megatron-to-HF weight *export*; here we show the same contract (the model's
# weight names must match the checkpoint's, one to one) with PyTorch's own `load_state_dict(strict=...)` on
# the CPU. The danger and the fix are the same on both sides.
#
# Facts checked against verl 0.9.1.

# %% tags=["parameters"]
device = "auto"  # "auto" | "cpu" | "cuda" | "npu"
vocab = 32  # toy vocabulary
hidden = 16  # toy hidden size
n_layers = 2  # residual layers between embedding and head (the danger removes layer 1)
n_tokens = 64  # tokens of the probe batch used to compare outputs
seed = 0

# %%
import csv

import torch

from verlstudy.lessons.l05_checkpoint.checkpoint import (
    MTP_PREFIX,
    CheckpointMismatchError,
    TinyLMWithMTP,
    export_roundtrip,
    export_without,
    load_state_dict_audited,
    output_change,
)
from verlstudy.kit.exercises import check_exercise
from verlstudy.kit.claims import claim, claims_table, expect_error, reset_claims
from verlstudy.kit.resources import data_dir
from verlstudy.common.refs import ref_naming_problem
from verlstudy.kit.devices import pick_device, skip_unless
from verlstudy.kit.params import check_int
from verlstudy.kit.plots import bar_plot
from verlstudy.kit.seeding import seed_everything

dev = pick_device(device)
vocab = check_int("vocab", vocab, minimum=2, maximum=4096)
hidden = check_int("hidden", hidden, minimum=1, maximum=1024)
n_layers = check_int("n_layers", n_layers, minimum=2, maximum=16)
n_tokens = check_int("n_tokens", n_tokens, minimum=1, maximum=100_000)
seed_everything(check_int("seed", seed, minimum=0))
reset_claims()
print(f"running on {dev.type}")

# %% [markdown]
# ## Symptom: the export has no MTP weights, and a strict load refuses it
# `TinyLMWithMTP` is a next-token model (embedding, residual layers, head) with an extra `mtp` head that
# `forward()` never calls, as GLM-5.2's MTP layers are unused in this recipe. `trained` stands in for
# trained weights; `export_roundtrip` writes them the way the exporter does (everything except `mtp.*`),
# saves them with `torch.save` and reads them back.

# %%
trained = TinyLMWithMTP(vocab, hidden, n_layers)
exported = export_roundtrip(trained, drop=(MTP_PREFIX,))
model_keys = list(trained.state_dict())
mtp_keys = [k for k in model_keys if k.startswith(MTP_PREFIX)]
print(f"model: {len(model_keys)} tensors, of which MTP: {', '.join(mtp_keys)}")
print(f"export: {len(exported)} tensors")
claim(
    "tensors the export leaves out",
    len(model_keys) - len(exported),
    expected=len(mtp_keys),
    upstream="GLM-5.2: MTP layers omitted from exported HF weights",
)

# %% [markdown]
# Resuming (or loading the export into a model built from the full config, MTP head included) with the
# default `strict=True` stops at once. PyTorch lists every missing name, but only after copying every
# weight that did match: the refused model is half loaded, so do not keep using it.

# %%
fresh = TinyLMWithMTP(vocab, hidden, n_layers)  # a new model: its own random initial values
with expect_error(RuntimeError, match="Missing key(s)"):
    fresh.load_state_dict(exported, strict=True)
claim("torch's refused strict load already copied the matching weights", torch.equal(fresh.head.weight, trained.head.weight))

# %% [markdown]
# ## Reproduce: the recipe's fix, and what it also lets through
# With `strict=False` the load goes through. Because `forward()` never touches the MTP head, the model
# computes exactly what the trained one does: this is why the recipe's setting is right *for MTP*.

# %%
probe = torch.randint(0, vocab, (1, n_tokens))
result = fresh.load_state_dict(exported, strict=False)
print(f"missing keys torch reported: {result.missing_keys}")
faithful_diff, _ = output_change(trained, fresh, probe)
claim(
    "max |logit difference| after strict=False load of the MTP-less export",
    faithful_diff,
    expected=0.0,
    upstream="recipe sets checkpoint.strict=False: MTP unused in training/rollout",
)

# %% [markdown]
# Now a second export in which a converter wrote layer 1 under another name (`layers.1.linear.*`, say after
# a module was renamed). Its weights are in the file, just not where the model looks. Plain `strict=False`
# still says nothing: `layers.1` keeps its random initial values, the renamed tensors are dropped, and
# the only trace is a list of names in a return value that the caller never reads.

# %%
renamed = {k.replace("layers.1.", "layers.1.linear."): v for k, v in exported.items()}
victim = TinyLMWithMTP(vocab, hidden, n_layers)
result = victim.load_state_dict(renamed, strict=False)  # no error: the danger
print(f"missing: {result.missing_keys}")
print(f"unexpected: {result.unexpected_keys}")
broken_diff, broken_changed = output_change(trained, victim, probe)
print(f"max |logit difference| {broken_diff:.3f}; greedy next tokens changed: {broken_changed:.1%}")
claim("strict=False passes with a real layer missing", "layers.1.weight" in result.missing_keys)
claim("the randomly initialised layer changes the outputs", broken_diff > 0.1)

# %%
_ = bar_plot(
    {"MTP left out (faithful)": round(faithful_diff, 3), "layers.1 renamed": round(broken_diff, 3)},
    title="Max |logit difference| from the trained model after strict=False",
    ylabel="max |logit diff|",
)

# %% [markdown]
# All of that difference comes from the one layer left at its random initial values: copy the trained
# `layers.1` in, and the outputs match the trained model's exactly.

# %%
victim.load_state_dict({k: v for k, v in exported.items() if k.startswith("layers.1.")}, strict=False)
claim("max |logit difference| once layers.1 holds the trained weights", output_change(trained, victim, probe)[0], expected=0.0)

# %% [markdown]
# ## Root cause
# `strict` is one bit for the whole key set: on, every name must match; off, no name has to. The recipe
# needs something in between: "the `mtp.` names may be missing, nothing else". `load_state_dict` does
# return what it skipped (`missing_keys`, `unexpected_keys`), but only a caller that checks them learns
# anything. Note also what `strict=False` does *not* relax: a tensor of the wrong shape still fails.

# %%
wider = TinyLMWithMTP(vocab + 8, hidden, n_layers)  # a config that disagrees with the checkpoint
with expect_error(RuntimeError, match="size mismatch"):
    wider.load_state_dict(exported, strict=False)

# %% [markdown]
# ## Fix: an audited loader that names what may be missing
# `load_state_dict_audited(model, state_dict, allow_missing=("mtp.",))` compares the key sets first. Keys
# covered by an allowed prefix are reported; any other missing or unexpected key, and any shape mismatch,
# raises `CheckpointMismatchError` listing all of them before a single weight is copied. Prefixes match
# whole module names: `"mtp"` covers `mtp.proj.weight` but not a module called `mtp_norm`.

# %%
audited = TinyLMWithMTP(vocab, hidden, n_layers)
report = load_state_dict_audited(audited, exported, allow_missing=(MTP_PREFIX,))
print(report.summary())
claim("audited load of the faithful export is ok", report.ok)
claim("only MTP tensors are left at initial values", list(report.missing_allowed) == mtp_keys)
claim("audited model computes what the trained one does", output_change(trained, audited, probe) == (0.0, 0.0))

# %% [markdown]
# The renamed export now fails, naming both halves of the problem, and the model is left as it was:

# %%
untouched = TinyLMWithMTP(vocab, hidden, n_layers)
before = {k: v.clone() for k, v in untouched.state_dict().items()}
with expect_error(CheckpointMismatchError, match="layers.1.weight"):
    load_state_dict_audited(untouched, renamed, allow_missing=(MTP_PREFIX,))
claim("a refused load copies nothing", all(torch.equal(before[k], v) for k, v in untouched.state_dict().items()))

# %% [markdown]
# No pattern can make a wrong shape fit, and a pattern that matches nothing (a typo such as `mpt.`) is
# reported instead of passing silently:

# %%
with expect_error(CheckpointMismatchError, match="shape mismatch"):
    load_state_dict_audited(wider, exported, allow_missing=(MTP_PREFIX,))
typo = load_state_dict_audited(TinyLMWithMTP(vocab, hidden, n_layers), exported, allow_missing=(MTP_PREFIX, "mpt."))
print(typo.summary())
claim("a pattern that matched nothing is reported", typo.unused_patterns == ("mpt.",))

# %% [markdown]
# ## Guard: the test that would have caught it
# A unit test that loads the export through the audited loader and compares outputs with the trained model
# fails on the renamed export, where a `strict=False` load passed. Bad patterns fail loudly too: a bare
# string (which Python would read one letter at a time) and the empty pattern (which would allow everything).

# %%
def export_loads_faithfully(state_dict: dict[str, torch.Tensor]) -> bool:
    """The guard: audited load with only MTP allowed, then identical outputs on the probe batch."""
    model = TinyLMWithMTP(vocab, hidden, n_layers)
    try:
        load_state_dict_audited(model, state_dict, allow_missing=(MTP_PREFIX,))
    except CheckpointMismatchError:
        return False
    return output_change(trained, model, probe) == (0.0, 0.0)


claim("guard passes on the faithful export", export_loads_faithfully(exported))
claim("guard fails on the renamed export", not export_loads_faithfully(renamed))
with expect_error(TypeError, match="bare string"):
    load_state_dict_audited(TinyLMWithMTP(vocab, hidden, n_layers), exported, allow_missing="mtp.")
with expect_error(ValueError, match="empty pattern"):
    load_state_dict_audited(TinyLMWithMTP(vocab, hidden, n_layers), exported, allow_missing=("",))

# %% [markdown]
# ## The recipe's dependency refs
# The same PR corrected the Megatron-LM and MegatronAdaptor refs in the recipe's header. NVIDIA Megatron-LM
# publishes releases as *tags* named `core_vX.Y.Z`; the Ascend repos (MindSpeed, MegatronAdaptor) keep a
# *branch* per Megatron release named `core_rX.Y.Z`. A swapped letter need not fail loudly: Megatron-LM also
# has `core_rX.Y.Z` release *branches* (verl 0.9.1's `verl/models/mcore/model_forward_1f1b_overlap.py` links
# to `blob/core_r0.14.0`), which can move on after the release, so `core_r0.18.0` there may clone something
# other than the tagged release. The table is `data/checkpoint/glm5_2_recipe_refs.csv`, taken from the
# recipe's header (whose column is headed "Branch" for all of them; the `kind` column is ours); each ref is
# checked with `verlstudy.common.refs.ref_naming_problem` (lesson 08 checks refs across whole files).

# %%
with open(data_dir() / "checkpoint" / "glm5_2_recipe_refs.csv", newline="") as f:
    refs = list(csv.DictReader(f))
problems = {row["repo"]: ref_naming_problem(row["repo"], row["ref"], row["kind"]) for row in refs}
print(f"| {'repository':<28} | {'ref':<16} | {'kind':<6} | commit  | naming |")
for row in refs:
    verdict = "ok" if problems[row["repo"]] is None else "WRONG"
    print(f"| {row['repo']:<28} | {row['ref']:<16} | {row['kind']:<6} | {row['commit'][:7]} | {verdict:<6} |")
pinned = {row["repo"]: (row["ref"], row["kind"]) for row in refs}
claim(
    "Megatron-LM is pinned to the tag core_v0.18.0",
    pinned["NVIDIA/Megatron-LM"] == ("core_v0.18.0", "tag"),
    upstream="recipe header: NVIDIA/Megatron-LM core_v0.18.0",
)
claim(
    "MindSpeed and MegatronAdaptor are pinned to core_r0.18.0 branches",
    all(pinned[r] == ("core_r0.18.0", "branch") for r in ("Ascend/MindSpeed", "Ascend/MegatronAdaptor")),
    upstream="recipe header: Ascend/MindSpeed, Ascend/MegatronAdaptor core_r0.18.0",
)
claim("every ref fits its repository's naming scheme", all(p is None for p in problems.values()))

# %% [markdown]
# The naming rule lives in `verlstudy.common.refs` (lesson 08). Swap the letter and it says what was meant:

# %%
swaps = (("NVIDIA/Megatron-LM", "core_r0.18.0"), ("Ascend/MindSpeed", "core_v0.18.0"))
swap_problems = [ref_naming_problem(repo, ref) for repo, ref in swaps]
print("\n".join(str(p) for p in swap_problems))
claim("the r/v swap is caught both ways", all(p is not None for p in swap_problems))

# %% [markdown]
# ## Exercises
# **5.1** Write `matches_module(key, pattern)`: True when `key` lies inside the module that `pattern`
# names (with or without a trailing dot), or is that name itself. `"mtp"` must match `"mtp.proj.weight"`
# but not `"mtp_norm.weight"`, and `"layers.1"` must not match `"layers.10.weight"`.

# %% tags=["solution", "exercise-5.1"]
def matches_module(key: str, pattern: str) -> bool:
    """Return True if `key` is the module `pattern` names or lies inside it (whole module names only)."""
    module = pattern.rstrip(".")
    return key == module or key.startswith(module + ".")


# %% tags=["checker", "exercise-5.1"]
check_exercise("5.1", matches_module)

# %% [markdown]
# **5.2** Write `silently_missing(model, state_dict, allowed)`: load `state_dict` into `model` with plain
# `strict=False`, then return the sorted list of missing keys that no pattern in `allowed` covers: exactly
# the keys a `strict=False` load would have hidden from you. (Use your `matches_module`.)

# %% tags=["solution", "exercise-5.2"]
def silently_missing(model: torch.nn.Module, state_dict: dict, allowed: tuple[str, ...]) -> list[str]:
    """Return the sorted missing keys of a strict=False load that no allowed pattern covers."""
    result = model.load_state_dict(state_dict, strict=False)
    return sorted(k for k in result.missing_keys if not any(matches_module(k, p) for p in allowed))


# %% tags=["checker", "exercise-5.2"]
check_exercise("5.2", silently_missing)

# %% [markdown]
# ## On an accelerator
# With a GPU, the same export is loaded onto the device through the audited loader; `load_state_dict`
# copies CPU tensors into CUDA parameters, so the report and the outputs are the same.

# %% tags=["gpu"]
if skip_unless("cuda"):
    on_gpu = TinyLMWithMTP(vocab, hidden, n_layers).to("cuda")
    gpu_report = load_state_dict_audited(on_gpu, exported, allow_missing=(MTP_PREFIX,))
    with torch.no_grad():
        gpu_diff = float((on_gpu(probe.to("cuda")).cpu() - trained(probe)).abs().max())
    print(gpu_report.summary())
    claim("GPU audited load is ok", gpu_report.ok)
    claim("GPU outputs match the CPU model", gpu_diff, expected=0.0, atol=1e-4)

# %% [markdown]
# ## Checked against upstream verl
# The helpers here re-implement upstream code in small form, so they can drift from it as verl moves. When
# the `verl` package is installed (`make setup` installs it without its heavy dependencies), the next cell
# loads upstream's own function from verl's source and compares it with ours on generated inputs, or says
# why this lesson has no single function to compare. A disagreement stops the notebook here; without verl
# the cell prints a one-line skip. `verlstudy verify-upstream` runs every lesson's comparison at once.

# %% tags=["nbval-ignore-output"]
from verlstudy.lessons.l05_checkpoint.upstream import upstream_check

upstream_check()

# %% [markdown]
# ## Takeaways
# - `strict` checks names, one bit for the whole key set. Turning it off for one known-absent module
#   (GLM-5.2's MTP layers) also turns it off for every other weight.
# - A weight missing under `strict=False` keeps its random initial values; the model runs and its outputs
#   change (see the figure above), and nothing fails.
# - Load with an explicit allow-list (`allow_missing=("mtp.",)`), matched on whole module names, that fails
#   on anything else and reports what it left at initial values. verl's FSDP manager does the same check
#   for LoRA-only checkpoints.
# - Shape mismatches are never relaxed by `strict=False`, and no allow-list should relax them either.
# - Refs are names of different kinds: Megatron-LM's `core_v0.18.0` is a tag, the Ascend repos'
#   `core_r0.18.0` are branches.

# %%
claims_table()
