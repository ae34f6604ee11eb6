# %% [markdown]
# # 05 · strict=False checkpoint loading, audited
#
# **Upstream:** [verl PR #7836](https://github.com/verl-project/verl/pull/7836) fixed the
# [GRPO](00_start_here.ipynb#GRPO) recipe for GLM-5.2 of [#7788](https://github.com/verl-project/verl/pull/7788) by
# setting `actor_rollout_ref.actor.checkpoint.strict=False`: GLM-5.2's [MTP](00_start_here.ipynb#MTP) layers "are
# unused in both training/[rollout](00_start_here.ipynb#rollout)" (#7836's comment in the recipe), so the strict
# Hugging Face export
# (written by Megatron-Bridge, which converts [Megatron](00_start_here.ipynb#Megatron) weights to Hugging Face's
# format) could not write a complete checkpoint (with Megatron-Bridge v0.5.0 it leaves out every shard that holds
# an MTP tensor, and reports it in printed lines, one of them starting `Error:`, but raises nothing). The flag fixes the recipe, and switches the check off for every
# other weight too.
#
# **You will** read where verl hands `strict` to the export, watch a toy export drop whole shards (Megatron-Bridge
# v0.5.0, the recipe's pin) and succeed (v0.6.0), see `strict=False` write an export that lost a real layer, and
# write the fix yourself: an allow-list of whole module names that may be missing, and nothing else.
#
# **Time:** 30 minutes. **Assumes:** `nn.Module.state_dict()`; an HF checkpoint is sharded, and an index maps each
# tensor name to its shard file. Files and commits are listed under "Sources" at the end.
#
# Facts checked against verl 0.9.1.

# %% tags=["parameters"]
device = "auto"  # "auto" | "cpu" | "cuda" | "npu"
vocab = 32  # toy vocabulary
hidden = 16  # toy hidden size
n_layers = 2  # residual layers between embedding and head (the danger renames layer 1)
n_shards = 3  # shards of the source HF checkpoint
n_tokens = 64  # tokens of the probe batch used to compare outputs
seed = 0

# %%
import importlib.util, subprocess, sys
if "google.colab" in sys.modules and not importlib.util.find_spec("verlstudy"):  # Colab only: this release of the course
    subprocess.run(f"{sys.executable} -m pip install -q --no-deps git+https://github.com/verlstudy/verlstudy@v0.1.0 && {sys.executable} -m verlstudy.kit.colab || echo 'The course did not install: Runtime > Restart session, then run this cell again.'", shell=True)

import torch

from verlstudy.kit.claims import claim, claims_table, expect_error
from verlstudy.kit.devices import skip_unless
from verlstudy.kit.exercises import check_exercise, exercise_hint
from verlstudy.kit.show import show_source, upstream_source
from verlstudy.lessons.l05_checkpoint.checkpoint import MTP_PREFIX, TinyLM, TinyLMWithMTP, output_change
from verlstudy.lessons.l05_checkpoint.export import ExportIncomplete, export_hf_weights, load_export, source_index
from verlstudy.lessons.l05_checkpoint.params import lesson_params

params = lesson_params(device, vocab, hidden, n_layers, n_shards, n_tokens, seed)
vocab, hidden, n_layers, n_shards, n_tokens = (params.vocab, params.hidden, params.n_layers, params.n_shards,
                                              params.n_tokens)

# %% [markdown]
# ## The setting: a released checkpoint with MTP, a trained model without
# `released` stands in for the HF checkpoint the run started from, with an MTP head; its index (the course's
# `source_index`) is what the export must match. `trained` is the model the trainer built, without MTP, as
# Megatron-Bridge v0.5.0's GLM-5 bridge builds it.
#
# **Names.** The toy's MTP head is `mtp.*` (Qwen3.5, DeepSeek-V4). GLM-5's is one more decoder layer,
# `model.layers.78.*` after layers 0-77 (Megatron-Bridge v0.6.0 `glm5_bridge.py`): a plain prefix `model.layers.7`
# also covers it. Exercise 5.1 is that hazard.

# %%
released = TinyLMWithMTP(vocab, hidden, n_layers)
index = source_index(released.state_dict(), n_shards)
trained = TinyLM(vocab, hidden, n_layers)
trained.load_state_dict({k: v for k, v in released.state_dict().items() if not k.startswith(MTP_PREFIX)})
mtp_keys = [k for k in index["weight_map"] if k.startswith(MTP_PREFIX)]
for file in sorted(set(index["weight_map"].values())):
    print(f"{file}: {', '.join(k for k, f in index['weight_map'].items() if f == file)}")
missing_count = len(index["weight_map"]) - len(trained.state_dict())
claim("source tensors the trained model does not have", missing_count, expected=len(mtp_keys))

# %% [markdown]
# ## verl's own save path hands `strict` to the export
# First verl's own lines, read from the installed 0.9.1: the config field with its docstring line, the property
# that decides whether a save exports HF weights, and the method that makes the export call.

# %% tags=["upstream-source", "nbval-ignore-output"]
upstream_source("trainer/config/config.py", "CheckpointConfig", contains="strict: bool", context=12)
upstream_source("utils/checkpoint/megatron_checkpoint_manager.py", "MegatronCheckpointManager.should_save_hf_model")
_ = upstream_source("utils/checkpoint/megatron_checkpoint_manager.py",
                    "MegatronCheckpointManager._save_model_as_hf_via_bridge")

# %% [markdown]
# Read them in order. `strict` defaults to True; the recipe's `actor_rollout_ref.actor.checkpoint.strict=False`
# lands there through [Hydra](00_start_here.ipynb#Hydra). `should_save_hf_model` holds when `save_contents` has
# `"hf_model"`, or `"model"` with `use_dist_checkpointing` (save Megatron's own sharded format instead,
# `megatron_checkpoint_manager.py:118-120`) off: the recipe's case, so every save exports HF weights (once
# `save_freq` turns saving on). Of the three branches, `vanilla_mbridge` (the older converter *mbridge*, "the
# deprecated legacy mbridge backend", `trainer/config/engine/megatron.yaml:97-99`) calls `save_weights` and
# [PEFT](00_start_here.ipynb#PEFT) calls `save_hf_adapter`, both without `strict`; only Megatron-Bridge without PEFT
# passes it, to `save_hf_weights`.
#
# The next cell runs those two methods, cut out of verl's source, on a stand-in manager whose bridge is the
# course's `CourseBridge`, with the recipe's settings, then each changed once.

# %%
from verlstudy.kit.upstream import upstream_cell
from verlstudy.lessons.l05_checkpoint.upstream import DEFAULT_SAVE_CONTENTS, CourseBridge, verl_save


def through_verl() -> None:
    calls = {}
    with_hf_model = (*DEFAULT_SAVE_CONTENTS, "hf_model")
    settings = {"recipe (strict=True)": {}, "strict=False": {"strict": False},
                "use_dist_checkpointing": {"use_dist_checkpointing": True},
                "use_dist_checkpointing + hf_model": {"use_dist_checkpointing": True, "save_contents": with_hf_model},
                "PEFT": {"peft": True}, "vanilla_mbridge": {"vanilla_bridge": True}}
    for name, changed in settings.items():
        bridge = CourseBridge(index)
        verl_save(bridge, trained, **({"strict": True} | changed))
        calls[name] = [(c["method"], c["strict"]) for c in bridge.calls]
        print(f"{name:<34} calls: {calls[name]}")
    claim("strict reaches the export only through save_hf_weights", list(calls.values()) == [
        [("save_hf_weights", True)], [("save_hf_weights", False)], [], [("save_hf_weights", True)],
        [("save_hf_adapter", None)], [("save_weights", None)]],
        upstream="verl 0.9.1 megatron_checkpoint_manager.py: should_save_hf_model, _save_model_as_hf_via_bridge")


upstream_cell(through_verl)

# %% [markdown]
# ## Symptom: the strict export drops whole shards, real tensors included
# `export_hf_weights` is the course's reconstruction of Megatron-Bridge's `save_generator`. As v0.5.0 (the
# recipe's pin) does, a strict export writes a shard only once all its tensors arrived: no shard holding an MTP
# tensor is written. Nothing raises; the log counts the *real* tensors lost without naming them. The last line,
# the course's, names them.

# %%
pinned = export_hf_weights(trained.state_dict(), index, strict=True, bridge="v0.5.0")  # the recipe's pin
print("\n".join(pinned.log))
real_lost = [k for k in pinned.unwritten if not k.startswith(MTP_PREFIX)]
print(f"not written: {len(pinned.unwritten)} = {len(mtp_keys)} MTP + {len(real_lost)} real: {', '.join(real_lost)}")
mtp_files = {index["weight_map"][k] for k in mtp_keys}
claim("tensors a strict export leaves unwritten (all of every shard holding MTP)", len(pinned.unwritten),
      expected=sum(f in mtp_files for f in index["weight_map"].values()),
      upstream="Megatron-Bridge state.py::save_generator: incomplete shards are not written under strict")

# %% [markdown]
# The checkpoint on disk simply lacks those shards. Megatron-Bridge v0.6.0 changed both sides: #4189 drops the
# source's MTP keys when the built model has none (`mtp.` and `model.layers.{num_hidden_layers}.`), so this strict
# export *succeeds*; #4513 raises when tensors still go unwritten, here only for a real loss:

# %%
newer = export_hf_weights(trained.state_dict(), index, strict=True, bridge="v0.6.0")
print(newer.summary())
claim("v0.6.0: the strict export of the MTP-less model succeeds", newer.unwritten == () and not newer.dropped,
      upstream="Megatron-Bridge v0.6.0 #4189: MTP source keys dropped when the built model omits MTP")
without_layer1 = {k: v for k, v in trained.state_dict().items() if not k.startswith("layers.1.")}
with expect_error(ExportIncomplete, match="layers.1.weight"):
    export_hf_weights(without_layer1, index, strict=True, bridge="v0.6.0")  # #4513: raises

# %% [markdown]
# The picture: each source tensor, shard by shard, under the three exports (green written, grey not expected,
# yellow an MTP tensor lost, red a real tensor lost).

# %%
from verlstudy.lessons.l05_checkpoint.shard_map import shard_map

relaxed = export_hf_weights(trained.state_dict(), index, strict=False)
shard_map(index, {"v0.5.0 strict": pinned, "v0.6.0 strict": newer, "strict=False": relaxed})

# %% [markdown]
# So with the recipe's pin the strict export is not usable for this model; with v0.6.0 it would have been.
#
# ## Reproduce: the recipe's fix
# With strict=False the incomplete shards are written with what they got (partial shards), and the new
# index lists only the tensors written: every tensor the trained model has is in the export.

# %%
print(relaxed.summary())
claim("strict=False writes every tensor the model has", relaxed.written() == sorted(trained.state_dict()),
      upstream="recipe sets checkpoint.strict=False: MTP omitted from exported HF weights")
claim("only MTP tensors are left out", list(relaxed.unwritten) == sorted(mtp_keys))

# %% [markdown]
# ## The danger: strict=False also writes an export that lost a real layer
# Now a converter that yields layer 1 under another name (`layers.1.linear.*`, say after a module rename).
# strict stops at the first unknown name; strict=False skips the renamed tensors with a warning line and
# writes an export without `layers.1`. Nothing fails.

# %%
renamed = [(k.replace("layers.1.", "layers.1.linear."), v) for k, v in trained.state_dict().items()]
with expect_error(KeyError, match="layers.1.linear.weight"):
    export_hf_weights(renamed, index, strict=True)
broken = export_hf_weights(renamed, index, strict=False)  # no error: the danger
print("\n".join(broken.log))
claim("strict=False exports without layers.1", "layers.1.weight" in broken.unwritten)

# %% [markdown]
# A later load that does not check (strict=False again, or a loader that initialises what is missing)
# gives `layers.1` random values, and the model's outputs change. The MTP-only export loads faithfully:

# %%
probe = torch.randint(0, vocab, (1, n_tokens))
faithful, victim = TinyLM(vocab, hidden, n_layers), TinyLM(vocab, hidden, n_layers)
faithful.load_state_dict(load_export(relaxed), strict=False)
print(f"missing after the broken export: {victim.load_state_dict(load_export(broken), strict=False).missing_keys}")
faithful_diff, broken_diff = output_change(trained, faithful, probe)[0], output_change(trained, victim, probe)[0]
claim("max |logit difference| after loading the MTP-less export", faithful_diff, expected=0.0)
claim("the randomly initialised layer changes the outputs", broken_diff > 0.0)  # the faithful load: exactly 0.0
print(f"max |logit difference| from the trained model: MTP left out {faithful_diff:.3f}, "
      f"layers.1 renamed {broken_diff:.3f}")

# %% [markdown]
# ## Root cause
# `strict` is one bit for the whole index: on, every source tensor must be written; off, none has to be. The
# recipe needs "MTP may be missing, nothing else". Megatron-Bridge has that, for MTP: `save_hf_weights` passes
# `ignored_source_key_prefixes` to `save_generator`, which drops those keys from the expected set. They are
# matched as plain string prefixes, the course's copy of the rule:

# %%
from verlstudy.lessons.l05_checkpoint.checkpoint import matches_string_prefix

show_source(matches_string_prefix)

# %% [markdown]
# Why v0.5.0 did not drop GLM-5's MTP keys is not the config. It sets the prefix `("mtp.",)` when the config's MTP
# layer count is 0 and the source has `mtp.*` keys. On verl's path the count *is* 0: with `model.mtp.enable` off
# (verl's default, False), `check_mtp_config` sets it to 0, and the checkpoint manager writes that `config.json`
# before calling `save_hf_weights`. Only the naming leaves the prefix unset: GLM-5 has no `mtp.*` key, its MTP
# layer is `model.layers.78.*`. v0.6.0 (#4189) also strips `model.layers.{num_hidden_layers}.`.
#
# A plain prefix has its own hazard: only the trailing dot keeps `mtp.` from covering a module `mtp_extra`.
# Written as `"mtp"`, it silently covers it:

# %%
from verlstudy.lessons.l05_checkpoint.export import shard_file

extra = {**index["weight_map"], "mtp_extra.scale": shard_file(n_shards, n_shards)}  # a made-up module
loose = export_hf_weights(trained.state_dict(), extra, strict=True, ignored_source_prefixes=("mtp",))
print(loose.summary())
claim("a 'mtp' prefix also ignores mtp_extra.scale", "mtp_extra.scale" in loose.ignored)

# %% [markdown]
# ### Predict first: exercises 5.1 and 5.2
# Before the fix below shows the course's design, write its two parts yourself: a matcher that does not
# let `"mtp"` cover `mtp_extra`, and the audit that says which missing keys a `strict=False` load hid. A
# wrong try's message names the mistake; the second adds where to look, the third a question, the fourth the
# method. `exercise_hint("5.1")` prints every rung and `show_solution("5.1")` the answer, any time.
#
# **5.1** Write `matches_module(key, pattern)`: True when `key` lies inside the module that `pattern`
# names (with or without a trailing dot), or is that name itself. `"mtp"` must match `"mtp.proj.weight"`
# but not `"mtp_norm.weight"`, and `"model.layers.7"` must not match GLM-5's MTP layer `"model.layers.78.eh_proj.weight"`.
# It receives two strings (dot-separated names, the pattern never empty; a dot is a dot, not any character) and must return a `bool` (`True`/`False`,
# not 1/0). The checker tries named cases, then generated keys and patterns.

# %% tags=["solution", "exercise-5.1"]
def matches_module(key: str, pattern: str) -> bool:
    """Return True if `key` is the module `pattern` names or lies inside it (whole module names only)."""
    module = pattern.rstrip(".")
    return key == module or key.startswith(module + ".")


# %% tags=["checker", "exercise-5.1"]
check_exercise("5.1", matches_module)

# %% [markdown]
# **5.2** Write `silently_missing(model, state_dict, allowed)`: load `state_dict` into `model` with plain
# `strict=False` (the model must end up holding the checkpoint's weights), then return the sorted list of
# missing keys that no module in `allowed` covers: exactly the keys a `strict=False` load would have
# hidden from you. Modules match whole names (use your `matches_module`): `"mtp."` covers `mtp.head.weight`,
# not `mtp_extra.weight`, nor a nested `blocks.mtp.weight`. It receives an `nn.Module`, a `dict` of name ->
# tensor (which may also hold keys the model does not have: those are not "missing"; a buffer the model saves counts
# like a weight, one it never saves, a non-persistent buffer, is never missing) and a tuple of patterns;
# it must return the key names sorted, as a list (a tuple passes too), and leave `state_dict` unchanged. A right
# load keeps the model's own tensor objects and their dtype, holds copies (no memory shared with the checkpoint),
# and a second load into the same model works the same way.

# %% tags=["solution", "exercise-5.2"]
def silently_missing(model: torch.nn.Module, state_dict: dict, allowed: tuple[str, ...]) -> list[str]:
    """Load with strict=False; return the sorted missing keys that no allowed module covers."""
    result = model.load_state_dict(state_dict, strict=False)
    return sorted(k for k in result.missing_keys if not any(matches_module(k, p) for p in allowed))


# %% tags=["checker", "exercise-5.2"]
check_exercise("5.2", silently_missing)

# %% [markdown]
# ## Fix: an audited export that names the modules that may be missing
# First the matcher (your 5.1). It matches whole module names, so `"mtp"` and `"mtp."` both mean the module `mtp`:
# a key lies in module `name` when it is `name` or starts with `name + "."`, and neither covers `mtp_extra`. The
# fix, as a change:

# %%
from verlstudy.kit.show import show_change
from verlstudy.lessons.l05_checkpoint.checkpoint import matches_prefix

show_change(matches_string_prefix, matches_prefix)

# %% [markdown]
# Then the export. `export_hf_weights_audited(weights, index, allow_unwritten=("mtp.",))` checks the stream
# against the index *before* writing: source tensors in an allowed module may be missing; any other missing source
# tensor, or one the index does not know, raises `ExportAuditError` naming it, and nothing is written. Your 5.2 is
# its list of missing keys:

# %%
from verlstudy.lessons.l05_checkpoint.export import ExportAuditError, export_hf_weights_audited

_ = show_source(export_hf_weights_audited)

# %% [markdown]
# The audit runs before `_write` is called: `absent` is every source tensor the stream lacks, `ok` those in an
# allowed module; `denied` and `unknown` must be empty, or nothing is written. Then the shards are written
# strictly. A pattern that matched nothing is kept as `unused_patterns`, so a typo shows.

# %%
audited = export_hf_weights_audited(trained.state_dict(), index, allow_unwritten=(MTP_PREFIX,))
print(audited.summary())
claim("the audited export writes every model tensor", audited.written() == sorted(trained.state_dict()))
with expect_error(ExportAuditError, match="layers.1.weight"):
    export_hf_weights_audited(renamed, index, allow_unwritten=(MTP_PREFIX,))
with expect_error(ExportAuditError, match="mtp_extra.scale"):
    export_hf_weights_audited(trained.state_dict(), extra, allow_unwritten=("mtp",))
typo = export_hf_weights_audited(trained.state_dict(), index, allow_unwritten=(MTP_PREFIX, "mpt."))
claim("an allowed module that matched nothing is reported", typo.unused_patterns == ("mpt.",))

# %% [markdown]
# ## The load side (the course's extension): the same allow-list when reading weights back
# Who reads the export back with an MTP head? Not verl's resume (`_load_model_as_hf_via_bridge` loads into the
# same MTP-less model), nor the recipe's rollout (dummy weights, then a weight sync before the first rollout:
# `trainer/ppo/v1/trainer_sync.py:31-33`), nor `transformers` (its `GlmMoeDsa` ignores `model.layers.78.*`). In
# the course's reading, an *outside* server using the MTP layer for speculative decoding (an extra head proposes
# tokens, the model checks them) would; `TinyLMWithMTP` plays it.
# `load_state_dict(strict=True)` refuses the export, `strict=False` accepts the broken one too;
# `load_state_dict_audited(model, state_dict, allow_missing=("mtp.",))` compares keys and shapes first and raises
# `CheckpointMismatchError` before copying a weight. verl's [FSDP](00_start_here.ipynb#FSDP) checkpoint manager does
# this in small: a LoRA load with `strict=False`, then a raise on unexpected keys.

# %%
from verlstudy.lessons.l05_checkpoint.checkpoint import CheckpointMismatchError, load_state_dict_audited

with expect_error(RuntimeError, match="Missing key(s)"):
    TinyLMWithMTP(vocab, hidden, n_layers).load_state_dict(load_export(relaxed), strict=True)
full_config = TinyLMWithMTP(vocab, hidden, n_layers)
print(load_state_dict_audited(full_config, load_export(audited), allow_missing=(MTP_PREFIX,)).summary())
untouched = TinyLMWithMTP(vocab, hidden, n_layers)
before = {k: v.clone() for k, v in untouched.state_dict().items()}
with expect_error(CheckpointMismatchError, match="layers.1.weight"):
    load_state_dict_audited(untouched, load_export(broken), allow_missing=(MTP_PREFIX,))
claim("a refused load copies nothing", all(torch.equal(before[k], v) for k, v in untouched.state_dict().items()))
with expect_error(CheckpointMismatchError, match="shape mismatch"):
    wider = TinyLMWithMTP(vocab + 8, hidden, n_layers)  # a config that disagrees with the export
    load_state_dict_audited(wider, load_export(audited), allow_missing=(MTP_PREFIX,))

# %% [markdown]
# ## Guard: the test that would have caught it
# Export through the audited export, read back through the audited loader, compare outputs with the trained
# model: it passes on the MTP-less model and fails on the renamed converter, where strict=False passed.

# %%
def exports_faithfully(weights: list | dict) -> bool:
    """The guard: audited export (only MTP may be missing), audited load, identical outputs on the probe."""
    model = TinyLMWithMTP(vocab, hidden, n_layers)
    try:
        exported = export_hf_weights_audited(weights, index, allow_unwritten=(MTP_PREFIX,))
        load_state_dict_audited(model, load_export(exported), allow_missing=(MTP_PREFIX,))
    except (ExportAuditError, CheckpointMismatchError):
        return False
    return output_change(trained, model, probe) == (0.0, 0.0)


claim("guard passes on the MTP-less model", exports_faithfully(trained.state_dict()))
claim("guard fails on the renamed converter", not exports_faithfully(renamed))

# %% [markdown]
# ## The recipe's dependency refs
# #7836 also corrected the recipe header's refs: Megatron-LM from the branch `core_r0.18.0` to the tag
# `core_v0.18.0`; MegatronAdaptor kept its branch and moved its commit. MindSpeed and MegatronAdaptor are the
# [Ascend](00_start_here.ipynb#Ascend) side (lesson 06 loads the adaptor). Megatron-LM releases as `core_vX.Y.Z`
# tags *and* `core_rX.Y.Z` branches, so #7788's ref was real, not a typo: pinning the branch is a *policy* question,
# as in lessons 06 and 08. Commits and sources: see Sources.

# %%
from verlstudy.common.refs import ref_finding, ref_naming_problem
from verlstudy.kit.resources import data_dir, read_data_csv
from verlstudy.kit.tables import Table, show_table

refs = read_data_csv(data_dir() / "checkpoint" / "glm5_2_recipe_refs.csv", ["repo", "ref", "kind", "commit"])
problems = {row["repo"]: ref_naming_problem(row["repo"], row["ref"], row["kind"]) for row in refs}
show_table(Table.of(["repository", "ref", "kind", "commit", "naming"],
                    [[row["repo"], row["ref"], row["kind"], row["commit"][:7],
                      "ok" if problems[row["repo"]] is None else "WRONG"] for row in refs]))
pins = {row["repo"]: (row["ref"], row["kind"]) for row in refs}
claim(
    "Megatron-LM is pinned to the tag core_v0.18.0",
    pins["NVIDIA/Megatron-LM"] == ("core_v0.18.0", "tag"),
    upstream="recipe header: NVIDIA/Megatron-LM core_v0.18.0",
)
claim(
    "MindSpeed and MegatronAdaptor are pinned to core_r0.18.0 branches",
    all(pins[r] == ("core_r0.18.0", "branch") for r in ("Ascend/MindSpeed", "Ascend/MegatronAdaptor")),
    upstream="recipe header: Ascend/MindSpeed, Ascend/MegatronAdaptor core_r0.18.0",
)
claim("every ref fits its repository's naming scheme", all(p is None for p in problems.values()))

# %% [markdown]
# The rules (`verlstudy.common.refs`, lesson 08) are the course's. Swap the letter both ways: MindSpeed's
# `core_v` is treated as a naming slip (every MindSpeed ref seen is `core_r`; no `core_v` is known, not proven
# absent); Megatron-LM's `core_r0.18.0` is a real, movable release branch (a policy note):

# %%
swaps = (("NVIDIA/Megatron-LM", "core_r0.18.0"), ("Ascend/MindSpeed", "core_v0.18.0"))
swap_findings = [ref_finding(repo, ref) for repo, ref in swaps]
print("\n".join(f"{f.kind}: {f.message}" for f in swap_findings))
claim("the swap is flagged both ways (Megatron-LM: policy; MindSpeed: naming)",
      [f.kind for f in swap_findings] == ["policy", "naming"])

# %% [markdown]
# ## Exercises
# **5.1** and **5.2** came just before the fix. Any still "not yet right"? Go back now: `exercise_hint("5.N")`
# prints every hint (the method last), `show_solution("5.N")` the answer.

# %% [markdown]
# ## On an accelerator
# With a GPU, the audited export loads onto the device: `load_state_dict` copies CPU tensors into CUDA
# parameters, so the report and the outputs are the same.

# %% tags=["gpu"]
if skip_unless("cuda"):
    on_gpu = TinyLMWithMTP(vocab, hidden, n_layers).to("cuda")
    gpu_report = load_state_dict_audited(on_gpu, load_export(audited), allow_missing=(MTP_PREFIX,))
    with torch.no_grad():
        gpu_diff = float((on_gpu(probe.to("cuda")).cpu() - trained(probe)).abs().max())
    print(gpu_report.summary())
    claim("GPU audited load is ok", gpu_report.ok)
    claim("GPU outputs match the CPU model", gpu_diff, expected=0.0, atol=1e-4)

# %% [markdown]
# ## Checked against upstream verl
# With verl installed, the next cell runs verl's own save path beside the course's export on generated cases; a
# disagreement stops the notebook, and without verl it prints one skip line.

# %% tags=["nbval-ignore-output"]
from verlstudy.lessons.l05_checkpoint.upstream import upstream_check

upstream_check()

# %% [markdown]
# ## Takeaways
# - In verl 0.9.1 `checkpoint.strict` is passed to one call, Megatron-Bridge's `save_hf_weights`, which runs
#   with Megatron-Bridge (`vanilla_mbridge=False`) and no PEFT when the save holds `"hf_model"`, or `"model"`
#   with `use_dist_checkpointing=False`: in the recipe every checkpoint save. The recipe ships with `save_freq=-1`.
# - A model built without MTP never yields the source's MTP tensors: strict leaves their shards unwritten
#   (real tensors sharing them included) and raises nothing in Megatron-Bridge v0.5.x, the recipe's pin (its
#   log names the missing MTP keys but only counts the real tensors lost);
#   v0.6.0 (#4189) strips the MTP keys of an MTP-less model and exports it strictly, and (#4513) raises
#   whenever tensors still stay unwritten. strict=False writes partial shards.
# - strict is one bit for the whole index: strict=False also writes an export that lost a real layer, and a
#   load that does not check gives that layer random values.
# - Name what may be missing: an allow-list of whole module names (`("mtp.",)`), checked before anything
#   is written, failing on everything else; Megatron-Bridge's ignored source prefixes are the precedent,
#   matched by plain string prefix. The same list guards the load side (the course's extension).
# - Refs are names of different kinds: Megatron-LM's `core_v0.18.0` is a tag, the Ascend repos'
#   `core_r0.18.0` are branches (the recipe's header); Megatron-LM's own `core_r0.18.0` branch is real, so pinning it is a policy
#   choice (branch or tag), not a typo.
#
# ## Open questions
# - With verl's `model.mtp.enable` on, the MTP layer is built and exported. What would the recipe then need
#   `strict=False` for, if anything?
# - The audited export refuses unknown names. Which honest converter changes (a renamed module, a fused weight)
#   would it refuse, and how would you allow them without reopening the hole?
# - Should Megatron-Bridge's ignored prefixes match whole modules? What existing user could that break?

# %% [markdown]
# ## Sources
# Paths inside verl unless named otherwise.
# - `examples/ascend_extras/grpo_trainer/run_glm5_2_megatron.sh`, the recipe (not in the 0.9.1 wheel): read in the
#   fork zhtmike/verl at commit 946020d, a fork commit with #7836's content: `checkpoint.strict=False` with the
#   comment "MTP layers are unused in both training/rollout and are omitted from exported HF weights",
#   `use_mbridge=True`, `vanilla_mbridge=False`, `use_dist_checkpointing=False`, `trainer.save_freq=-1`,
#   `rollout.load_format='dummy'`, and a header pinning NVIDIA-NeMo/Megatron-Bridge `v0.5.0` (fcbb603). #7788's
#   header, for the refs section, read in the fork yellowbee686/verl at commit 89dad2d7.
# - `verl/trainer/config/config.py::CheckpointConfig.strict` (default `True`; `save_contents` defaults to model,
#   optimizer, extra).
# - verl's MTP switch: `verl/trainer/config/model/hf_model.yaml` `mtp.enable: False` (0.9.0 and 0.9.1;
#   `actor_rollout_ref.model.mtp.enable`, `verl/workers/config/model.py::MtpConfig`); with it off,
#   `verl/utils/megatron_utils.py::check_mtp_config` (called by the Megatron engine, `transformer_impl.py`) sets the
#   HF config's MTP count (`num_nextn_predict_layers` or `mtp_num_hidden_layers`) to 0 and the provider's
#   `mtp_num_layers` to None; `MegatronCheckpointManager.save_checkpoint` calls `_save_hf_config_and_tokenizer`
#   (writing that config) before `_save_model_as_hf_via_bridge`.
# - The recipe's refs: #7788's header in yellowbee686/verl@89dad2d7 against #7836's in zhtmike/verl@946020d:
#   Megatron-LM `core_r0.18.0` (dc0ee41) to `core_v0.18.0` (ba7b5eb); MegatronAdaptor `core_r0.18.0`, 746fe27 to
#   eb0e504. Megatron-LM's release branches: verl 0.9.1's `verl/models/mcore/model_forward_1f1b_overlap.py` links
#   `blob/core_r0.14.0`; the Ascend Dockerfile after #7827 clones MindSpeed `--branch core_r0.18.0`. The table is
#   `data/checkpoint/glm5_2_recipe_refs.csv` (the header's column is headed "Branch"; the `kind` column is ours).
#   Branch or tag: NVIDIA/Megatron-LM's refs (`git ls-remote`, in a mirror) hold both `refs/heads/core_r0.18.0`
#   (dc0ee41) and `refs/tags/core_v0.18.0` (ba7b5eb).
# - PEFT: parameter-efficient fine-tuning such as LoRA (small adapter weights trained instead of the model).
# - `verl/utils/checkpoint/megatron_checkpoint_manager.py`: the class docstring (`use_dist_checkpointing`),
#   `vanilla_bridge = self.provider is None`, `should_save_hf_model`, `_save_model_as_hf_via_bridge` (the one reader
#   of `strict`), `_load_model_as_hf_via_bridge` (resume: `load_hf_weights(self.model, ...)`);
#   `verl/workers/engine/megatron/transformer_impl.py` (the provider stays None with `vanilla_mbridge`).
# - Megatron-Bridge v0.5.0: `auto_bridge.py::save_hf_weights`, `hf_pretrained/state.py::SafeTensorsStateSource.
#   save_generator` (its printed report: each incomplete shard with its never-yielded keys, a count of the yielded
#   tensors left unwritten, the count not written; no exception) and `_ignore_source_key_prefixes`;
#   `glm_moe_dsa/glm5_bridge.py` sets
#   `provider.mtp_num_layers = None` (its comment: the HF config has `num_nextn_predict_layers=1`, the bridge has no
#   GLM-5 MTP mappings yet).
# - Megatron-Bridge v0.6.0: #4189 (`auto_bridge.py::_model_omits_mtp`, `_mtp_source_key_prefixes`), #4513 (strict
#   raises with the count of unwritten tensors); `glm5_bridge.py` maps GLM-5's MTP layer to
#   `model.layers.{num_hidden_layers}.*`. v0.5.0's `models/deepseek/common.py` maps DeepSeek's MTP layers to HF
#   `model.layers.{i + num_layers}.*` too; HF `mtp.*` names appear in the DeepSeek-V4 and Qwen3.5 bridges, and
#   v0.6.0's `_mtp_source_key_prefixes` docstring calls `mtp.` "DeepSeek-style".
# - Huawei's MindSpeed documentation (hiascend.com, the MindSpeed index page, as the course read it; not
#   re-checked): MindSpeed Core, an Ascend acceleration library for Megatron; MegatronAdaptor, an Ascend adaptation
#   plugin library for Megatron.
# - huggingface/transformers `src/transformers/models/glm_moe_dsa/modular_glm_moe_dsa.py` (at 4c94ecd):
#   `GlmMoeDsaPreTrainedModel._keys_to_ignore_on_load_unexpected` lists `model\.layers\.78.*`; the model builds
#   no MTP layer.

# %%
claims_table()
