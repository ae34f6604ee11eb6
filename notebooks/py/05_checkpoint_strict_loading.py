# %% [markdown]
# # 05 · strict=False checkpoint loading, audited
#
# **Upstream:** [verl PR #7836](https://github.com/verl-project/verl/pull/7836) fixed the
# [GRPO](00_start_here.ipynb#GRPO) recipe for GLM-5.2 of [#7788](https://github.com/verl-project/verl/pull/7788) by
# setting `actor_rollout_ref.actor.checkpoint.strict=False`: GLM-5.2's [MTP](00_start_here.ipynb#MTP) layers are
# built neither for training nor for [rollout](00_start_here.ipynb#rollout), so the strict Hugging Face export
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

# %%
# On Colab this installs the course (a minute); anywhere else it does nothing and prints nothing.
import importlib.util, subprocess, sys
if "google.colab" in sys.modules and importlib.util.find_spec("verlstudy") is None:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "verlstudy @ git+https://github.com/verlstudy/verlstudy"], check=True)
    importlib.invalidate_caches()

# %% tags=["parameters"]
device = "auto"  # "auto" | "cpu" | "cuda" | "npu"
vocab = 32  # toy vocabulary
hidden = 16  # toy hidden size
n_layers = 2  # residual layers between embedding and head (the danger renames layer 1)
n_shards = 3  # shards of the source HF checkpoint
n_tokens = 64  # tokens of the probe batch used to compare outputs
seed = 0

# %%
import gc; gc.disable()  # speed only: no collections while the imports build torch's large, long-lived heap

import torch

from verlstudy.kit.claims import claim, claims_table, expect_error
from verlstudy.kit.devices import skip_unless
from verlstudy.kit.exercises import check_exercise, exercise_hint
from verlstudy.kit.show import show_source, upstream_source
from verlstudy.lessons.l05_checkpoint.checkpoint import MTP_PREFIX, TinyLM, TinyLMWithMTP, output_change
from verlstudy.lessons.l05_checkpoint.export import ExportIncomplete, export_hf_weights, load_export, source_index
from verlstudy.lessons.l05_checkpoint.params import lesson_params

gc.freeze(); gc.enable()  # that heap is set aside: every later garbage collection scans just new objects

params = lesson_params(device, vocab, hidden, n_layers, n_shards, n_tokens, seed)
vocab, hidden, n_layers, n_shards, n_tokens = (params.vocab, params.hidden, params.n_layers, params.n_shards,
                                              params.n_tokens)

# %% [markdown]
# ## The setting: a released checkpoint with MTP, a trained model without
# `released` stands in for the HF checkpoint the run started from: it has an MTP head. Its index
# (`source_index`, the course's: cut by tensor count, where HF cuts by bytes) is what the export must
# match. `trained` is the model as the trainer built it, without MTP (`TinyLM`): as in Megatron-Bridge
# v0.5.0's GLM-5 bridge, the MTP layers are not built at all. Here it starts from the released weights.
#
# **Names.** The toy calls its MTP head `mtp.*`, the naming of e.g. Qwen3.5 and DeepSeek-V4 checkpoints. It is
# the only MTP prefix Megatron-Bridge v0.5.0's `save_hf_weights` ignores, and v0.6.0's docstring calls it
# "DeepSeek-style". GLM-5 does not use it (nor does DeepSeek-V3): its MTP layer is one more decoder layer,
# `model.layers.{num_hidden_layers}.*`, i.e. `model.layers.78.*`
# after layers 0-77 (Megatron-Bridge v0.6.0 `glm5_bridge.py`; #4960 calls them "appended MTP tensors"). For GLM-5
# an allow-list must name the whole module `model.layers.78`: a plain prefix `model.layers.7` also covers layer
# 78, and layers 70-77. Exercise 5.1 is exactly that hazard.

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
# Read them in order. `CheckpointConfig.strict: bool = True`, "Whether to perform strict validation during weight
# export"; the recipe's override `actor_rollout_ref.actor.checkpoint.strict=False` lands there through
# Hydra (see [Hydra](00_start_here.ipynb#Hydra)). `should_save_hf_model` is true when `"hf_model"` is in
# `save_contents`, or when `"model"` is and `use_dist_checkpointing` is off. That switch picks the format of the
# `model` slot: on, Megatron's own sharded format (`megatron.core.dist_checkpointing`, under `model/dist_ckpt/`);
# off, HF weights through the bridge (`MegatronCheckpointManager`'s docstring). The
# recipe keeps the default `save_contents` (model, optimizer, extra) and sets `use_dist_checkpointing=False`, so
# *every* checkpoint save exports HF weights (the recipe ships with `trainer.save_freq=-1`, so only once saving is
# turned on). `_save_model_as_hf_via_bridge` has three branches. `self.vanilla_bridge` follows the config key
# `vanilla_mbridge` (the deprecated legacy `mbridge` backend; the manager derives it as `self.provider is None`,
# and the engine, `workers/engine/megatron/transformer_impl.py`, leaves the provider None exactly then): it calls
# `save_weights`, without `strict`. Otherwise, with PEFT (parameter-efficient fine-tuning such as LoRA: small
# adapter weights trained instead of the model), it calls `save_hf_adapter`, without `strict`. Only Megatron-Bridge
# without PEFT, the recipe's case, calls `save_hf_weights(self.model, hf_ckpt_path, strict=self.checkpoint_config.strict)`:
# the only reader of the flag.
#
# The next cell runs those two methods, cut out of verl's source, on a stand-in manager whose bridge is the
# course's `CourseBridge` (its `save_hf_weights` runs the course's export below, as Megatron-Bridge v0.5.0; its
# other two exports are only recorded), with the recipe's settings and then with each thing changed once.

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


_ = upstream_cell(through_verl)

# %% [markdown]
# ## Symptom: the strict export drops whole shards, real tensors included
# `export_hf_weights` is the course's reconstruction of Megatron-Bridge's `save_generator` (see `export.py` for
# the facts it carries). As v0.5.0 does (the recipe's pin), a strict export writes a shard only once every
# tensor the source index puts in it has arrived. The MTP tensors never arrive, so every shard holding one is
# not written at all. The export raises nothing; its log (v0.5.0 prints the same facts in its own words) names
# each incomplete shard and the MTP keys it never received, but of the *real* tensors that shared those shards
# it gives only a count, then the total not written. The last line, the course's, names them.

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
# Nothing raised: the checkpoint on disk simply lacks those shards. Megatron-Bridge v0.6.0 changed both sides.
# #4189 (`_model_omits_mtp`, `_mtp_source_key_prefixes` in `auto_bridge.py`) drops the source's MTP keys from the
# expected set when the built model has no MTP (prefixes `mtp.` and `model.layers.{num_hidden_layers}.`), so every
# shard completes and the strict export of this model *succeeds*; #4513 makes a strict export raise whenever
# tensors still stay unwritten, which here happens only for a real loss:

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
claim("the randomly initialised layer changes the outputs", broken_diff > 0.1)
print(f"max |logit difference| from the trained model: MTP left out {faithful_diff:.3f}, "
      f"layers.1 renamed {broken_diff:.3f}")

# %% [markdown]
# ## Root cause
# `strict` is one bit for the whole source index: on, every source tensor must be written; off, none has
# to be. The recipe needs something in between: "the MTP tensors may be missing, nothing else".
# Megatron-Bridge has exactly that mechanism, for MTP: `save_hf_weights` passes
# `ignored_source_key_prefixes` to `save_generator`, which drops those keys from the expected index. In
# v0.5.0 it is `("mtp.",)`, set only when a config sets the MTP layer count to 0 and the source has `mtp.*`
# keys. GLM-5's HF config says 1 while its bridge builds no MTP, so the prefix is not set, and it would not
# match anyway: GLM-5's MTP tensors are `model.layers.78.*`, not `mtp.*` (the course's reading of why the recipe
# needed strict=False). v0.6.0 (#4189) strips the MTP keys whenever the *built* model has no MTP layers
# (`mtp_num_layers` None or 0), with the prefixes `mtp.` and `model.layers.{num_hidden_layers}.`, where GLM-4.x
# and GLM-5 keep their MTP layer: that is the symptom's v0.6.0 column.
#
# The prefixes are matched with plain `str.startswith`: the trailing dot is all that keeps `mtp.` from
# covering a module named `mtp_extra`. Written as `"mtp"`, it silently covers it:

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
# wrong answer's message names the mistake; from the third wrong try the checker adds the method, and
# `exercise_hint("5.1")` prints it whenever you ask.
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
# it must return the key names sorted, as a list (a tuple passes too), and leave `state_dict` unchanged.

# %% tags=["solution", "exercise-5.2"]
def silently_missing(model: torch.nn.Module, state_dict: dict, allowed: tuple[str, ...]) -> list[str]:
    """Load with strict=False; return the sorted missing keys that no allowed module covers."""
    result = model.load_state_dict(state_dict, strict=False)
    return sorted(k for k in result.missing_keys if not any(matches_module(k, p) for p in allowed))


# %% tags=["checker", "exercise-5.2"]
check_exercise("5.2", silently_missing)

# %% [markdown]
# ## Fix: an audited export that names the modules that may be missing
# `export_hf_weights_audited(weights, index, allow_unwritten=("mtp.",))` (the course's design, with
# Megatron-Bridge's ignored prefixes as precedent) checks the stream against the index *before* writing:
# source tensors inside an allowed module may be missing; any other missing source tensor, and any tensor the
# index does not know, raises `ExportAuditError` naming them, and no shard is written. It matches whole
# module names, so `"mtp"` and `"mtp."` both mean the module `mtp`: a key lies in module `name` when it is
# `name` itself or starts with `name + "."`, so neither covers `mtp_extra`. Your 5.1 and 5.2 are its two
# halves, the matcher and the list of missing keys that no allowed module covers. Here is the whole of it:

# %%
from verlstudy.lessons.l05_checkpoint.export import ExportAuditError, export_hf_weights_audited

_ = show_source(export_hf_weights_audited)

# %% [markdown]
# The audit happens before `_write` (the same streaming loop as the plain export) is ever called: `absent` is
# every source tensor the stream does not hold; `ok` keeps those inside an allowed module (whole-name matching,
# your 5.1); `denied` (your 5.2's answer) and `unknown` (names the index does not have) must both be empty, or
# nothing is written. Only then is the expected set narrowed to exactly the allowed absentees and the shards
# written strictly. A pattern that matched nothing is kept as `unused_patterns`, so a typo is visible.

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
# Who reads the export back? Not verl's own resume: it loads the HF export into the same MTP-less model that was
# trained (`megatron_checkpoint_manager.py::_load_model_as_hf_via_bridge`, `bridge.load_hf_weights(self.model,
# ...)`). Nor the recipe's rollout: it starts from dummy weights (`load_format='dummy'`) and receives the weights
# by weight sync (the trainer copies its current weights into the inference engine). The reader with an MTP head
# is an *outside consumer*: a server that uses the checkpoint's MTP layer (`model.layers.78`) for speculative
# decoding (a small extra head proposes the next tokens, the full model checks them), such as vLLM or SGLang with
# MTP. Hugging Face `transformers` does not count: its `GlmMoeDsa` model builds no MTP layer and ignores
# `model.layers.78.*` on load, so for GLM-5 a plain `transformers` load is exactly the load that does *not* need
# layer 78. A server that builds the MTP head and loads it from the export is the load this section guards (the
# toy's `TinyLMWithMTP` plays that model). `load_state_dict(strict=True)` refuses the export; plain `strict=False` accepts the broken
# export too. `load_state_dict_audited(model, state_dict, allow_missing=("mtp.",))` compares key sets and
# shapes first and raises `CheckpointMismatchError` before a single weight is copied. (`strict=False`
# never relaxes shapes: a tensor of the wrong size fails either way.) verl has the pattern in small:
# `fsdp_checkpoint_manager.py` (the [FSDP](00_start_here.ipynb#FSDP) trainer's) loads a LoRA-only checkpoint with `strict=False`, then raises on unexpected keys.

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
# The same PR corrected the Megatron-LM and MegatronAdaptor refs in the recipe's header, in two ways (#7788's copy
# in yellowbee686/verl@89dad2d7 against #7836's in zhtmike/verl@946020d): Megatron-LM moved from the branch
# `core_r0.18.0` (commit dc0ee41) to the tag `core_v0.18.0` (ba7b5eb); MegatronAdaptor kept its branch name
# `core_r0.18.0` and only moved its commit (746fe27 to eb0e504). The naming question below is Megatron-LM's.
# MindSpeed and MegatronAdaptor are the [Ascend](00_start_here.ipynb#Ascend) side of the stack: MindSpeed is
# Huawei's Ascend acceleration library for Megatron, MegatronAdaptor its Ascend adaptation plugin for Megatron
# (Huawei's MindSpeed documentation; lesson 06 shows how the adaptor is loaded). NVIDIA Megatron-LM
# publishes releases as *tags* named `core_vX.Y.Z`; the recipe pins the Ascend repos (MindSpeed, MegatronAdaptor)
# to *branches* named `core_rX.Y.Z` (its header; the Ascend Dockerfile after #7827 clones MindSpeed
# `--branch core_r0.18.0`). Megatron-LM *also* has `core_rX.Y.Z` release branches
# (verl 0.9.1's `verl/models/mcore/model_forward_1f1b_overlap.py` links to `blob/core_r0.14.0`; #7788's recipe
# pinned `core_r0.18.0`), so #7788's ref was real, not a typo: a branch can move on after the release, the tag
# cannot. Pinning the branch where the tag was meant is a *policy* question (branch or tag), the same position
# lessons 06 and 08 take. The table is `data/checkpoint/glm5_2_recipe_refs.csv`, taken from the recipe's header
# (whose column is headed "Branch" for all of them; the `kind` column is ours); each ref is checked with
# `verlstudy.common.refs.ref_finding` (lesson 08 checks refs across whole files).

# %%
from verlstudy.common.refs import ref_finding, ref_naming_problem
from verlstudy.kit.resources import data_dir, read_data_csv

refs = read_data_csv(data_dir() / "checkpoint" / "glm5_2_recipe_refs.csv", ["repo", "ref", "kind", "commit"])
problems = {row["repo"]: ref_naming_problem(row["repo"], row["ref"], row["kind"]) for row in refs}
print(f"| {'repository':<28} | {'ref':<16} | {'kind':<6} | commit  | naming |")
for row in refs:
    verdict = "ok" if problems[row["repo"]] is None else "WRONG"
    print(f"| {row['repo']:<28} | {row['ref']:<16} | {row['kind']:<6} | {row['commit'][:7]} | {verdict:<6} |")
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
# The rules live in `verlstudy.common.refs` (lesson 08) and are the course's. Swap the letter both ways. For
# MindSpeed the course treats `core_v` as a naming slip: every MindSpeed ref the course has seen (this header and
# the Ascend Dockerfile after #7827) is `core_r`; that MindSpeed has no `core_v` ref at all the course has not
# checked.
# Megatron-LM's `core_r0.18.0` is its real, movable release branch (a policy note):

# %%
swaps = (("NVIDIA/Megatron-LM", "core_r0.18.0"), ("Ascend/MindSpeed", "core_v0.18.0"))
swap_findings = [ref_finding(repo, ref) for repo, ref in swaps]
print("\n".join(f"{f.kind}: {f.message}" for f in swap_findings))
claim("the swap is flagged both ways (Megatron-LM: policy; MindSpeed: naming)",
      [f.kind for f in swap_findings] == ["policy", "naming"])

# %% [markdown]
# ## Exercises
# The two exercises came before the fix that answers them: **5.1** and **5.2** just before "Fix: an audited
# export". Any still "not yet right"? Go back to it now; `exercise_hint("5.N")` prints the method, and the
# audited export and the load side since then show the reasoning.

# %% [markdown]
# ## On an accelerator
# With a GPU, the audited export is loaded onto the device through the audited loader; `load_state_dict`
# copies CPU tensors into CUDA parameters, so the report and the outputs are the same.

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
# - Huawei's MindSpeed documentation (hiascend.com, the MindSpeed index page): MindSpeed Core, an Ascend
#   acceleration library for Megatron; MegatronAdaptor, an Ascend adaptation plugin library for Megatron.
# - huggingface/transformers `src/transformers/models/glm_moe_dsa/modular_glm_moe_dsa.py` (at 4c94ecd):
#   `GlmMoeDsaPreTrainedModel._keys_to_ignore_on_load_unexpected` lists `model\.layers\.78.*`; the model builds
#   no MTP layer.

# %%
claims_table()
