# %% [markdown]
# # 09 · Removing a dead config key without breaking anyone silently
#
# Upstream: [verl PR #7544](https://github.com/verl-project/verl/pull/7544) removed `grad_offload` from verl's
# engine configs (a field of their shared base class, in YAML only for the [Megatron](00_start_here.ipynb#Megatron)
# engine); its sibling [#7466](https://github.com/verl-project/verl/pull/7466) removed another dead key,
# `actor.router_replay`, and added a `dataclasses.fields` test that keeps it gone. In verl 0.9.0 the Megatron engine
# copied `grad_offload` into a private attribute and never read it: a user who set it got nothing. Removing it is a
# *breaking* change that touches three places at once: the dataclass field, the YAML key and the generated flat
# config CI compares.
#
# **You will** find the dead key with an AST search (and see what it cannot tell: fields read by computed name),
# run it over every config class of two verl releases, see how a half-done removal fails, remove the key with
# every check green, and write the test that keeps it gone.
#
# **Time:** 40 minutes. **Assumes:** Python dataclasses, YAML, a first look at the `ast` module, and
# [Hydra](00_start_here.ipynb#Hydra)-style `_target_` configs. Facts checked against verl 0.9.1 (and 0.9.0 for
# the state before the fix); the files are listed under Sources at the end.

# %% tags=["parameters"]
device = "auto"  # "auto" | "cpu" | "cuda" | "npu"
hidden = 16  # width of the toy engine's one linear layer
diff_context = 1  # context lines around each change in the diff a stale generated file gets
seed = 0

# %%
import importlib.util, subprocess, sys
if "google.colab" in sys.modules and not importlib.util.find_spec("verlstudy"):  # Colab only: this release of the course
    subprocess.run(f"{sys.executable} -m pip install -q --no-deps git+https://github.com/verlstudy/verlstudy@v0.1.0 && {sys.executable} -m verlstudy.kit.colab || echo 'The course did not install: Runtime > Restart session, then run this cell again.'", shell=True)

import dataclasses
import tempfile
from pathlib import Path

import torch

from verlstudy.kit.claims import claim, claims_table, expect_error
from verlstudy.kit.devices import skip_unless
from verlstudy.kit.exercises import check_exercise, exercise_hint
from verlstudy.kit.plots import bar_plot
from verlstudy.kit.resources import data_dir
from verlstudy.kit.show import show_change
from verlstudy.kit.upstream import upstream_cell
from verlstudy.lessons.l09_dead_config import errors, field_reads, golden, loading, schema, verl_tree, workspace
from verlstudy.lessons.l09_dead_config import upstream as l09_upstream
from verlstudy.lessons.l09_dead_config.params import lesson_params

dev, hidden, diff_context = lesson_params(device, hidden, diff_context, seed)
PKG = data_dir() / "engine_config"

# %% [markdown]
# ## Symptom: a flag that does nothing
# The trainer config is composed from YAML files (`conf/trainer.yaml` mounts `conf/engine/megatron.yaml` at
# `actor.megatron`, `ref.megatron` and `critic.megatron`), and every block with a `_target_` becomes a
# dataclass. We build the engine with `grad_offload` off and on, take one training step so that every
# parameter has a gradient buffer, and ask the engine to offload.

# %%
pkg = workspace.import_fresh(PKG)
ROOT = PKG / "conf" / "trainer.yaml"
actor_cfg = schema.instantiate(loading.compose(ROOT))["actor"]["megatron"]
print(type(actor_cfg).__name__, {k: getattr(actor_cfg, k) for k in ("param_offload", "grad_offload")})


def offloaded_bytes(**flags: bool) -> dict[str, int]:
    engine = pkg.engine.MegatronEngine(dataclasses.replace(actor_cfg, **flags), hidden=hidden)
    engine.train_step(torch.ones(4, hidden))
    return engine.offload("cpu")


runs = {
    "grad_offload=False": offloaded_bytes(grad_offload=False),
    "grad_offload=True": offloaded_bytes(grad_offload=True),
    "param_offload=True": offloaded_bytes(param_offload=True),
}
for name, moved in runs.items():
    print(f"{name:>20}: {moved}")

# %% [markdown]
# The bytes released are fp32 gradient buffers although the weights are bf16: like Megatron (verl turns on
# `grad_reduce_in_fp32`), the toy keeps main gradients in fp32, and offloading *frees* them on the device, as
# verl's `offload_megatron_model_to_cpu` does (`grad_data.storage().resize_(0)`).

# %%
_ = bar_plot(
    {name: moved["grad"] for name, moved in runs.items()},
    title="Gradient-buffer bytes released on the device",
    ylabel="bytes",
)
claim("grad_offload=True changes nothing the engine does", runs["grad_offload=True"] == runs["grad_offload=False"])
claim(
    "fp32 gradient-buffer bytes released with param_offload=True",
    runs["param_offload=True"]["grad"],
    expected=(hidden * hidden + hidden) * torch.finfo(torch.float32).bits // 8,
    unit="B",
    upstream="megatron_utils.py::offload_megatron_model_to_cpu: grad_data.storage().resize_(0)",
)

# %% [markdown]
# ## Root cause: assigned, never read
# Reading the engine by eye finds it in a small file; in verl's `transformer_impl.py` (over a thousand lines)
# a search is surer. These are every line of our engine that mentions an offload flag:

# %%
engine_lines = (PKG / "engine.py").read_text().splitlines()
for number, line in enumerate(engine_lines, start=1):
    if "_is_offload" in line:
        print(f"engine.py:{number}: {line.strip()}")

# %% [markdown]
# ### Predict first: exercise 9.1
# `grad_offload` is in the engine, so a search for the name finds it; what tells a dead flag from a live one
# is whether its copy is ever *read* (used in a condition, an argument, an expression) or only *assigned*.
# Before the search below runs, write its heart yourself. **9.1** Write `attribute_reads(source)`
# returning the attribute names (the `name` of `x.name`) that the Python code `source` (a string) *reads*:
# `self._x = cfg.a` reads `a`, and only assigns `_x`; `cfg.n += 1` reads `n`, then stores it; `del cfg.b` deletes
# `b`, which is not a read. Return a
# `set` of strings (a `frozenset`, or a list without repeats, passes too; a list that names an attribute twice
# does not, since each name read counts once). The `ast` module parses the source for you. The checker tries
# named sources, then generated ones; a wrong try names the mistake, the second adds where to look, the third a
# question, the fourth the method (`exercise_hint("9.1")` prints them all), and `show_solution("9.1")` the answer.

# %% tags=["solution", "exercise-9.1"]
import ast


def attribute_reads(source: str) -> set[str]:
    """Return the set of attribute names that the Python code `source` reads (not those it only assigns)."""
    tree = ast.parse(source)
    loads = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}
    augmented = {n.target.attr for n in ast.walk(tree) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Attribute)}
    return loads | augmented


# %% tags=["checker", "exercise-9.1"]
check_exercise("9.1", attribute_reads)

# %% [markdown] tags=["after-you-try-9.1"]
# **After you try 9.1** (open once you have run the checker)
#
# Every `x.name` in the parsed tree is an `ast.Attribute` node, and its `ctx` says
# what the code does with it: `ast.Load` where it is read, `ast.Store` where it is assigned (`self._x = ...`).
# `ast.walk` visits every node, so it also reaches the `config` inside `engine.config.router_replay.mode` and
# the attributes passed as a call's arguments; a loop over the top-level statements would not. One exception:
# `cfg.n += 1` marks `n` as a store, though running it reads `n` first, so an `ast.AugAssign`'s attribute target
# counts as a read too.

# %% [markdown]
# `field_reads.dead_fields(sources, McoreEngineConfig)` builds the search on such reads (also counting
# `getattr(x, "name")` and `x["name"]`), for every field: a read that is only *copied* (`self._x = cfg.field`)
# counts only if the copy is itself read somewhere, followed through chains of copies. It matches attributes
# by name, whatever object they hang on, so it can miss a dead field whose name is reused elsewhere:
# `full_determinism` counts as live for a Megatron user because verl's other engine backends read it:
# [FSDP](00_start_here.ipynb#FSDP), and VeOmni, TorchTitan and Automodel (each built on the training library of
# that name, in `verl/workers/engine/{veomni,torchtitan,automodel}/`), though verl's Megatron engine never does.
# And code can read a config without naming a field: `for f in fields(cfg): getattr(cfg, f.name)`. Where the
# search finds such a *reflective* read of the config class (`fields`, `asdict`, `vars` or `getattr` with a
# computed name, on a variable annotated with the class), or finds the field's name written as a string, it does
# not call the field dead: it reports "read reflectively: cannot tell". A loop over the fields that skips some by
# name before reading any (`if not f.name.endswith("_implementation"): continue`) reads only the fields it keeps,
# so the search applies that test: a field the loop skips gets no "cannot tell" from it.
#
# The heart of it is `live`. A first version treated any read as life, as a grep does; following the copies is
# the fix, as a change:

# %%
show_change(field_reads._search_any_read_is_live, field_reads._search)

# %% [markdown]
# On the toy engine, the search with the fix:

# %%
sources = [PKG / "config.py", PKG / "engine.py"]
dead = field_reads.dead_fields(sources, pkg.config.McoreEngineConfig)
for d in dead:
    print(d)
claim(
    "dead fields found by the AST search",
    ", ".join(d.name for d in dead),
    expected="grad_offload",
    upstream="verl 0.9.0: _is_offload_grad assigned once in transformer_impl.py, read nowhere",
)

# %% [markdown]
# ## The same search on verl itself
# Our engine is two files; verl 0.9.x is over 360. The search reads them as text (nothing is imported) and
# keys each by its path inside the package (verl has dozens of `utils.py` and `__init__.py`). The
# fields come from upstream's `McoreEngineConfig` itself, read with `ast` from `verl/workers/config/engine.py`
# (and its bases). Only files that mention a name being followed are parsed, so both releases take well
# under a second.


# %%
def scan_both_releases() -> None:
    before, after = verl_tree.scan_release("0.9.0"), verl_tree.scan_release()
    for scan in (before, after):
        print(f"verl {scan.release}: {scan.files} files, {len(scan.fields)} fields of {scan.class_name}")
        for d in scan.dead:
            print("   ", d)
    gone, cls = sorted(set(before.fields) - set(after.fields)), "verl/workers/config/engine.py::McoreEngineConfig"
    claim("fields removed between verl 0.9.0 and 0.9.1", ", ".join(gone), expected="grad_offload", upstream=cls)
    where = "verl 0.9.0 verl/workers/engine/megatron/transformer_impl.py"
    claim("verl 0.9.0: grad_offload is copied and never read", "grad_offload" in before.dead_names(), upstream=where)
    fixture = set(schema.field_names(pkg.config.McoreEngineConfig))
    claim("every field of the course's fixture is in upstream's class", fixture <= set(before.fields), upstream=cls)
    candidates = ", ".join(n for n in after.dead_names() if n not in gone)
    claim("verl 0.9.1: fields read nowhere", candidates, expected="dist_checkpointing_prefix", upstream="verl 0.9.1")


_ = upstream_cell(scan_both_releases, releases=["0.9.0"])

# %% [markdown]
# The field that #7544 removed, in upstream's own code: `EngineConfig` in 0.9.0 and 0.9.1, then the one line of
# the 0.9.0 engine that copied it (read at run time from the two installed releases; not stored here):

# %% tags=["upstream-source", "nbval-ignore-output"]
from verlstudy.kit.show import upstream_diff

upstream_diff("workers/config/engine.py", "EngineConfig", old="0.9.0", contains="grad_offload")
upstream_diff("workers/engine/megatron/transformer_impl.py", None, old="0.9.0", contains="_is_offload_grad")

# %% [markdown]
# The diff removes the field and its comment from the base class of every engine config, so FSDP, VeOmni,
# TorchTitan and Automodel lose it too, and so does verl 0.9.1's MindSpeed engine (Ascend's Megatron, registered
# for `megatron` on NPU), which takes `McoreEngineConfig` itself: 0.9.1 has no MindSpeed engine config (0.9.0's
# `MindSpeedEngineConfig`, a subclass of `McoreEngineConfig`, is gone). The engine diff removes the only line that
# read it, a copy into `_is_offload_grad` that nothing read. Now the same search over *every*
# config dataclass in `verl/workers/config/` of both releases. The table lists the classes where it found
# something: the fields it calls dead (no read by name, no reflective read that keeps them, no string naming
# them), and how many it cannot tell about. These are candidates to check by hand, not verdicts: a field can be
# read by a recipe outside the package, through YAML interpolation, or by a reflective read of an object whose
# type is not written down. `VeOmniEngineConfig` shows why the loop's name test matters: verl's VeOmni engine
# reads its config in a `fields()` loop that first skips every field whose name does not end in
# `_implementation`. The 14 it keeps are read: one, `attn_implementation`, is also read by name, and for the other
# 13 the search, which does not follow the values, says "cannot tell". Of the 38 it skips, three are read nowhere
# else, so they are dead, as `grad_offload` was in 0.9.0. Treating every `fields()` loop as a read of every field
# would have hidden them.

# %%
from verlstudy.kit.tables import show_table


def scan_every_config_class() -> None:
    before, after = verl_tree.scan_config_classes("0.9.0"), verl_tree.scan_config_classes()
    show_table(verl_tree.config_table(before, after))
    veomni = {s.class_name: s for s in after}["VeOmniEngineConfig"]
    print(next(str(d) for d in veomni.dead if d.name == "moe_implementation"))
    claim("config dataclasses searched in verl 0.9.0 and 0.9.1", (len(before), len(after)), expected=(52, 48))
    print("skipped by the loop's name test, read nowhere:", ", ".join(veomni.dead_names()))
    loop = ("veomni/transformer_impl.py:77-80: for f in fields(engine_config): if not f.name.endswith("
            "'_implementation'): continue; getattr(engine_config, f.name)")
    kept = [n for n in veomni.fields if n.endswith("_implementation")]
    claim("verl 0.9.1 VeOmniEngineConfig: fields the loop keeps, and fields it skips",
          (len(kept), len(veomni.fields) - len(kept)), expected=(14, 38), upstream=loop)
    claim("verl 0.9.1 VeOmniEngineConfig: fields read reflectively, cannot tell", len(veomni.cannot_tell_names()),
          expected=13, upstream=loop)
    claim("verl 0.9.1 VeOmniEngineConfig: the kept field it can tell about is read by name",
          sorted(set(kept) - set(veomni.cannot_tell_names()) - set(veomni.dead_names())),
          expected=["attn_implementation"], upstream="verl 0.9.1 workers/config/engine.py: self.attn_implementation")
    claim("verl 0.9.1 VeOmniEngineConfig: every field it cannot tell about ends in _implementation",
          all(n.endswith("_implementation") for n in veomni.cannot_tell_names()), upstream=loop)
    claim("verl 0.9.1 VeOmniEngineConfig: fields called dead", veomni.dead_names(),
          expected=["ckpt_manager", "load_checkpoint_path", "force_use_huggingface"],
          upstream="verl 0.9.1: the three names occur in no .py file but workers/config/engine.py (the class)")


_ = upstream_cell(scan_every_config_class, releases=["0.9.0"])

# %% [markdown]
# Keyed by file name alone, as the search first was, same-named files replace one another and fields read
# only in a replaced file look dead:

# %%
def keyed_by_name() -> None:
    wrong = verl_tree.scan_keyed_by_name(only=("param_offload", "use_mbridge"))
    right = verl_tree.scan_release()
    print(f"keyed by name: {wrong.files} of {right.files} files kept; dead: {', '.join(wrong.dead_names())}")
    claim("files left when verl 0.9.1 is keyed by file name", wrong.files, expected=242)
    claim("keyed by name, use_mbridge looks dead (verl 0.9.1 reads it)", "use_mbridge" in wrong.dead_names())


_ = upstream_cell(keyed_by_name)

# %% [markdown]
# In 0.9.1 `grad_offload` is gone and one field of `McoreEngineConfig` is left that no Python file of the package
# reads: `dist_checkpointing_prefix`. It is not dead from birth but orphaned. #4139 added it for loading a *dist
# checkpoint* (Megatron-Core's distributed-checkpoint format, `megatron.core.dist_checkpointing`, which verl loads
# when `use_dist_checkpointing` is set in megatron.yaml) whose state-dict keys carry a prefix; megatron.yaml still
# says "e.g. Nemo2 will append prefix 'module.'" (NeMo 2, NVIDIA's training framework). #6067, which moved
# loading into the engines, dropped its three call sites. The loader still takes the argument
# (`load_mcore_dist_weights(..., prefix="")` in `verl/utils/model.py`), but the Megatron engine calls it without
# one. A user who sets it gets nothing, as with `grad_offload`. Two fixes: **re-wire** it (pass the field as the
# loader's `prefix`), or **remove** it by the same three-place removal. What decides is whether anyone still loads
# such prefixed (NeMo 2-style) dist checkpoints through verl; the search cannot answer that, and it covers only
# the verl package, so a recipe outside it could still read the key.

# %% [markdown]
# ## The contract: three places that must agree
# The field is written in the dataclass, the YAML block, and (three times) in the generated flat config, the
# file people read to see every option at once. The fixture's `check_generated` is a *golden check*: the committed
# file is the "golden" expected output, and the check regenerates it from the YAML and compares, as the pre-commit
# hook's `git diff --exit-code` does. Before any change, everything agrees:

# %%
GENERATED = PKG / "conf" / "_generated_trainer.yaml"


def mentions(path: Path, word: str = "grad_offload") -> list[int]:
    return [i for i, line in enumerate(path.read_text().splitlines(), start=1) if word in line]


for path in (PKG / "config.py", PKG / "conf" / "engine" / "megatron.yaml", GENERATED):
    print(f"{path.relative_to(PKG)}: grad_offload on lines {mentions(path)}")
defaults = loading.load_yaml(ROOT).data["defaults"]
engine_blocks = [e for e in defaults if isinstance(e, dict) and next(iter(e)).startswith("engine@")]
claim(
    "grad_offload lines in the generated config",
    len(mentions(GENERATED)),
    expected=len(engine_blocks),
    upstream="3 in verl 0.9.0's _generated_ppo_megatron_trainer.yaml (actor, ref, critic)",
)
golden.check_generated(GENERATED, ROOT)
claim("before the change, the generated file matches a regeneration", golden.generated_diff(GENERATED, ROOT) == "")

# %% [markdown]
# ## Half-done removal 1: the dataclass loses the field, the YAML keeps it
# We work on a temporary copy of the package (its path is never printed). Each edit goes through
# `replace_once`, which fails unless the text occurs exactly once, so an edit cannot half-apply.

# %%
FIELD_EDIT = ("    # whether to offload grad\n    grad_offload: bool = False\n", "")
YAML_EDIT = ("# Whether to offload gradients to CPU\ngrad_offload: False\n\n", "")
ENGINE_EDIT = ("        self._is_offload_grad = engine_config.grad_offload\n", "")
DOC_EDIT = (
    "# Whether to offload model parameters to CPU\n",
    "# Whether to offload model parameters to CPU and release gradient buffers while inactive\n",
)
workdir = tempfile.TemporaryDirectory()

half1 = workspace.copy_package(PKG, Path(workdir.name) / "half1")
workspace.replace_once(half1 / "config.py", *FIELD_EDIT)
half1_pkg = workspace.import_fresh(half1)
half1_tree = loading.compose(half1 / "conf" / "trainer.yaml")
print("McoreEngineConfig fields now:", len(schema.field_names(half1_pkg.config.McoreEngineConfig)))

# %% [markdown]
# The first job that starts fails. Upstream builds a `_target_` block with `hydra.utils.instantiate` (called by
# `verl/utils/config.py::omega_conf_to_dataclass`), which calls the class with the block's keys and wraps
# what goes wrong. `schema.instantiate_like_hydra` is the course's reconstruction of that path: as Hydra's
# `_call_target` (`hydra/_internal/instantiate/_instantiate2.py`) does, the error names the target class, then
# Python's own message, then the key path (`full_key:`); no file, no line, no way forward. It happened upstream:
# #7466 left `router_replay` in `ref.yaml`, a TypeError that the merged #7536 fixed.

# %%
with expect_error(schema.InstantiationError, match="unexpected keyword argument 'grad_offload'"):
    schema.instantiate_like_hydra(half1_tree.data["actor"]["megatron"], full_key="actor.megatron")

# %% [markdown]
# The strict loader fails at the same point but says where the key is written and what to do. And the
# golden check does **not** notice this half: the YAML and the generated file still agree with each other.

# %%
with expect_error(errors.RemovedKeyError, match="engine/megatron.yaml:9"):
    schema.instantiate(half1_tree)
half1_diff = golden.generated_diff(half1 / "conf" / "_generated_trainer.yaml", half1 / "conf" / "trainer.yaml")
claim("half-done removal 1: the golden check sees no difference", half1_diff == "")

# %% [markdown]
# ### Predict first: exercise 9.2
# So this half is found only when a job starts. Comparing each YAML block with its dataclass finds it at
# commit time, without starting anything. **9.2** Write `yaml_only_keys(cls, data)` returning the sorted
# dotted names of keys in the YAML mapping `data` that are not fields of dataclass `cls`, recursing into
# fields whose type is itself a dataclass (`router_replay.x`), or an `Optional` of one (verl 0.9.1 types
# `profiler` so). Fields are what `dataclasses` calls fields (inherited ones too; not a `ClassVar`, not an attribute
# `__post_init__` sets). `_target_` is allowed in every block. The
# fixture's `config.py` starts with `from __future__ import annotations` (verl's config modules do not). It
# receives a dataclass type and a mapping (leave it as it is) and returns the keys as a sorted `list` of strings
# (a sorted tuple passes; a set does not, since the order is asked). The checker tries named blocks, then
# generated ones, three levels deep; a wrong try names the mistake; the next tries add where to look, a question
# and the method, all of which `exercise_hint("9.2")` prints; `show_solution("9.2")` gives the answer.

# %% tags=["solution", "exercise-9.2"]
import typing


def block_class(annotation: object) -> type | None:
    """The dataclass a field's block is built as: the type itself, or the one dataclass of an Optional."""
    if typing.get_origin(annotation) in (typing.Union, type(int | None)):
        arms = [a for a in typing.get_args(annotation) if a is not type(None)]
        annotation = arms[0] if len(arms) == 1 else None
    return annotation if isinstance(annotation, type) and dataclasses.is_dataclass(annotation) else None


def yaml_only_keys(cls: type, data: dict, prefix: str = "") -> list[str]:
    """Sorted dotted keys of `data` that are not fields of `cls` (recursing into dataclass fields)."""
    types_ = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out = []
    for key, value in data.items():
        if key == "_target_":
            continue
        if key not in names:
            out.append(prefix + key)
        elif (inner := block_class(types_[key])) is not None and isinstance(value, dict):
            out += yaml_only_keys(inner, value, prefix + key + ".")
    return sorted(out)


# %% tags=["checker", "exercise-9.2"]
check_exercise("9.2", yaml_only_keys)

# %% [markdown] tags=["after-you-try-9.2"]
# **After you try 9.2** (open once you have run the checker)
#
# The names come from `dataclasses.fields(cls)`, the types do not: under
# `from __future__ import annotations` a field's `.type` is the string `'RouterReplayConfig'`, and
# `dataclasses.is_dataclass` of a string is False. `typing.get_type_hints(cls)` resolves the strings to the
# classes. A key that is not a field is reported with the blocks above it; a field whose type is a dataclass (or
# an `Optional` of one, unwrapped with `typing.get_origin`/`get_args`) is checked the same way, one level down,
# with the prefix `router_replay.`; `_target_` is skipped in every block.

# %% [markdown]
# The course's `schema.yaml_field_mismatches` is that comparison (it also lists the fields a YAML block leaves
# out). On half-done removal 1 it names the key the dataclass lost, with no job started:

# %%
half1_yaml = loading.load_yaml(half1 / "conf" / "engine" / "megatron.yaml").data
half1_mismatch = schema.yaml_field_mismatches(half1_pkg.config.McoreEngineConfig, half1_yaml)
print("half-done removal 1, YAML vs dataclass:", half1_mismatch)
claim(
    "half-done removal 1: the YAML/dataclass comparison names the key",
    ", ".join(half1_mismatch["yaml_only"]),
    expected="grad_offload",
)

# %% [markdown]
# ## Half-done removal 2: dataclass and YAML edited, generated file forgotten
# Now the config loads, so every run works, but the committed flat config still lists `grad_offload`, three
# times, for every reader to copy. The golden check fails and shows the diff that regenerating would apply:

# %%
half2 = workspace.copy_package(PKG, Path(workdir.name) / "half2")
workspace.replace_once(half2 / "config.py", *FIELD_EDIT)
workspace.replace_once(half2 / "conf" / "engine" / "megatron.yaml", *YAML_EDIT)
half2_pkg = workspace.import_fresh(half2)
half2_cfg = schema.instantiate(loading.compose(half2 / "conf" / "trainer.yaml"))["actor"]["megatron"]
print("loads:", type(half2_cfg).__name__)
HALF2_GENERATED, HALF2_ROOT = half2 / "conf" / "_generated_trainer.yaml", half2 / "conf" / "trainer.yaml"
with expect_error(errors.StaleGeneratedConfigError):
    golden.check_generated(HALF2_GENERATED, HALF2_ROOT, context=diff_context)

# %%
stale_diff = golden.generated_diff(HALF2_GENERATED, HALF2_ROOT)
removed_lines = [line for line in stale_diff.splitlines() if line.startswith("-") and not line.startswith("---")]
claim("lines the stale generated file has too many", len(removed_lines), expected=len(engine_blocks))

# %% [markdown]
# ## The removal, done properly
# All three places change together, plus the engine line that copied the flag, plus the documentation of the
# flag that really does the job (verl 0.9.1's wording). Then regenerate and run every check.

# %%
fixed = workspace.copy_package(PKG, Path(workdir.name) / "fixed")
workspace.replace_once(fixed / "config.py", *FIELD_EDIT)
workspace.replace_once(fixed / "engine.py", *ENGINE_EDIT)
workspace.replace_once(fixed / "conf" / "engine" / "megatron.yaml", *YAML_EDIT)
workspace.replace_once(fixed / "conf" / "engine" / "megatron.yaml", *DOC_EDIT)
golden.write_generated(fixed / "conf" / "trainer.yaml", fixed / "conf" / "_generated_trainer.yaml")

for path in sorted(p for p in PKG.rglob("*") if p.suffix in (".py", ".yaml")):
    name = path.relative_to(PKG)
    before, after = path.read_text().splitlines(), (fixed / name).read_text().splitlines()
    if before != after:
        print(f"{name}: -{len(before) - len(after)} lines")

# %%
fixed_pkg = workspace.import_fresh(fixed)
fixed_cls = fixed_pkg.config.McoreEngineConfig
fixed_tree = loading.compose(fixed / "conf" / "trainer.yaml")
fixed_cfg = schema.instantiate(fixed_tree)["actor"]["megatron"]
fixed_diff = golden.generated_diff(fixed / "conf" / "_generated_trainer.yaml", fixed / "conf" / "trainer.yaml")
mismatch = schema.yaml_field_mismatches(fixed_cls, loading.load_yaml(fixed / "conf" / "engine" / "megatron.yaml").data)
fixed_dead = field_reads.dead_fields([fixed / "config.py", fixed / "engine.py"], fixed_cls)
print(f"loads: {type(fixed_cfg).__name__}; YAML vs dataclass: {mismatch}; dead fields: {fixed_dead}")
claim("after the removal, YAML and dataclass agree", mismatch == {"yaml_only": [], "dataclass_only": []})
claim("after the removal, the generated file matches a regeneration", fixed_diff == "")
claim("dead fields after the removal", len(fixed_dead), expected=0)

# %% [markdown]
# ## Old user configs: fail loudly, with a way forward
# Somebody's run file from last month still says `grad_offload: true`. The PR says what it means for them:
# the option was never consumed, so removing it does not change what runs; its usage example deletes the
# `grad_offload` line and keeps `param_offload: true` as it was. The course's message asks only that: delete the
# key. It does not offer `param_offload` as a replacement: `param_offload` also moves the parameters off the
# device, which the user never asked for. The removal table (`errors.REMOVED_KEYS`) turns the old
# key into that message, with the line:

# %%
user_yaml = "actor:\n  megatron:\n    grad_offload: true\n    tensor_model_parallel_size: 1\n"
with expect_error(errors.RemovedKeyError, match="removing it changes nothing; delete 'grad_offload'"):
    loading.merge(fixed_tree, loading.parse_yaml(user_yaml, "my_run.yaml"))
with expect_error(errors.RemovedKeyError, match="removed in verl 0.9.1"):
    loading.apply_overrides(fixed_tree, ["ref.megatron.grad_offload=true"])

# %% [markdown]
# A key that never existed is a typo, not a removal: the message suggests the closest valid names.

# %%
with expect_error(errors.UnknownKeyError, match="did you mean 'param_offload'"):
    loading.apply_overrides(fixed_tree, ["actor.megatron.param_ofload=true"])
user_tree = loading.parse_yaml(user_yaml.replace("    grad_offload: true\n", ""), "my_run.yaml")
migrated_cfg = schema.instantiate(loading.merge(fixed_tree, user_tree))["actor"]["megatron"]
claim("the old config, with the key deleted, builds the same engine config", migrated_cfg == fixed_cfg)

# %% [markdown]
# The course checks values as strictly as keys: `betas: [a, 0.9]` is refused. verl's main path does not refuse
# it: `hydra.utils.instantiate` (`omega_conf_to_dataclass`, `verl/utils/config.py`) hands `['a', 0.9]` to
# `McoreOptimizerConfig.betas` unchecked; only its `dataclass_type=` path refuses it.

# %%
with expect_error(errors.ConfigError, match="'betas[0]' must be float, got str 'a'"):
    schema.build(pkg.config.OptimConfig, loading.parse_yaml("betas: [a, 0.9]\n", "my_optim.yaml"))

# %% [markdown]
# ## Guard: a test that keeps the field gone
# #7466's test is one line over `dataclasses.fields`: `assert "router_replay" not in {f.name for f in
# fields(ActorConfig)}` (`tests/workers/config/test_actor_router_replay_sync_on_cpu.py` on the PR's branch; the
# verl wheel ships only part of verl's `tests/`, and not this file). If a later merge brings the field back (a rebase, a copy-paste from an old branch),
# CI fails with the reason. `schema.assert_field_removed` is that
# test: it passes on the fixed class and fails on the original one.

# %%
schema.assert_field_removed(fixed_cls, "grad_offload")
with expect_error(AssertionError, match="has field 'grad_offload' again"):
    schema.assert_field_removed(pkg.config.McoreEngineConfig, "grad_offload")
has_field = [
    "grad_offload" in {f.name for f in dataclasses.fields(cls)} for cls in (pkg.config.McoreEngineConfig, fixed_cls)
]
claim("grad_offload in dataclasses.fields: original yes, fixed no", has_field == [True, False])

# %% [markdown]
# The same guard on upstream's own classes, executed from their source (`l09_upstream.load_config_classes`):
# it passes on 0.9.1 and fails on 0.9.0. A config made in Python with upstream's class (which derives from
# `BaseConfig`, `_target_` default `''`) is written to YAML and read back equal by the course's helpers.


# %%
def guard_upstream() -> None:
    classes = l09_upstream.load_config_classes()
    new, old = classes["McoreEngineConfig"], l09_upstream.load_config_classes(release="0.9.0")["McoreEngineConfig"]
    schema.assert_field_removed(new, "grad_offload")
    with expect_error(AssertionError, match="has field 'grad_offload' again"):
        schema.assert_field_removed(old, "grad_offload")
    replay = classes["EngineRouterReplayConfig"](mode="R2")
    made = new(param_offload=True, tensor_model_parallel_size=2, router_replay=replay)
    text = schema.dump_yaml(schema.to_dict(made))
    back = schema.build(new, loading.parse_yaml(text, "made_in_python.yaml"))
    claim("upstream's McoreEngineConfig made in Python reads back equal", back == made)


_ = upstream_cell(guard_upstream, releases=["0.9.0"])

# %% [markdown]
# The temporary copies have served their purpose; the original package is imported again.

# %%
workdir.cleanup()
pkg = workspace.import_fresh(PKG)
print("original package has grad_offload:", "grad_offload" in schema.field_names(pkg.config.McoreEngineConfig))

# %% [markdown]
# ## Exercises
# Both exercises came before the sections that use them: **9.1** in the root cause, before the dead-field
# search runs, and **9.2** after half-done removal 1, before the comparison that catches it. Any still "not yet
# right"? Go back to it now; `exercise_hint("9.N")` prints every hint (the method last), `show_solution("9.N")`
# the answer, and the sections since then show the reasoning.

# %% [markdown]
# ## Optional: on a GPU, the bytes really leave the device
# With CUDA present, the engine is moved to the GPU and offloaded with `param_offload=True`, then with
# `grad_offload=True` alone: the first frees the parameters *and* their gradient buffers, the second frees
# nothing.

# %% tags=["gpu"]
if skip_unless("cuda"):

    def freed_on_gpu(**flags: bool) -> int:
        engine = pkg.engine.MegatronEngine(dataclasses.replace(actor_cfg, **flags), hidden=hidden)
        engine.module.to("cuda")
        engine.train_step(torch.ones(4, hidden, device="cuda"))
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        engine.offload("cpu")
        torch.cuda.synchronize()
        return before - torch.cuda.memory_allocated()

    claim("GPU bytes freed with grad_offload=True alone", freed_on_gpu(grad_offload=True), expected=0)
    claim("GPU bytes freed with param_offload=True", freed_on_gpu(param_offload=True) > 0)

# %% [markdown]
# ## Checked against upstream verl
# With verl installed, the next cell builds upstream's own `McoreEngineConfig` beside the course's on generated
# YAML; a disagreement stops the notebook, and without verl it prints one skip line.

# %% tags=["nbval-ignore-output"]
from verlstudy.lessons.l09_dead_config.upstream import upstream_check

upstream_check()

# %% [markdown]
# ## Takeaways
# - A config field that is copied and never read is a promise the code does not keep; find such fields with
#   an AST search, not by grepping for the name (the name *is* there, in the copy). Where code reads the
#   config by computed name, say "cannot tell" rather than "dead".
# - An orphaned field (`dist_checkpointing_prefix`) has two fixes, re-wire or remove; who still needs the
#   feature decides.
# - A removal touches the dataclass, the YAML and the generated files together. The two checks are
#   complementary: instantiation catches a YAML key without a field; only the golden check catches a stale
#   generated file.
# - Old configs must fail loudly with the release and what to do (for `grad_offload`: nothing changes, delete
#   the key; `param_offload` is not a replacement); typos get the closest valid names.
# - Keep the field gone with a `dataclasses.fields` test.
#
# ## Open questions
# - `dist_checkpointing_prefix` is read nowhere in 0.9.1. Who would you ask, and what would you search outside
#   the package, before removing it rather than re-wiring it?
# - The search matches attributes by name, whatever object they hang on. What would it take to follow the object's
#   type, and which dead fields would that find?
# - Should an old config with `grad_offload: true` fail, warn or pass? What does each choice cost a user upgrading
#   a long-running job?

# %% [markdown]
# ## Sources
# Paths inside verl; the 0.9.0 wheel still has the flag, 0.9.1 does not.
# - `verl/workers/config/engine.py::EngineConfig`: 0.9.0 has `grad_offload: bool = False`
#   ("whether to offload grad") beside `param_offload` and `optimizer_offload`; 0.9.1 has no such field.
# - `verl/workers/engine/megatron/transformer_impl.py`: in 0.9.0, `MegatronEngine.__init__` sets
#   `self._is_offload_grad = self.engine_config.grad_offload`, the only occurrence of `_is_offload_grad`
#   in the package. `MegatronEngine.initialize()` then makes one offload call on either path: `grad=False` on its
#   forward-only path, and `model=self._is_offload_param` with `grad=self._is_offload_param` on its training path. But
#   `MegatronEngine.to` with `device="cpu"` ignores `grad`: when `model` is true it calls
#   `offload_megatron_model_to_cpu`, which frees the gradient buffers too. So they follow `param_offload` through
#   `model=`, whatever `grad=` says.
# - `verl/trainer/config/engine/megatron.yaml`: 0.9.0 has `grad_offload: False`; 0.9.1 drops it and
#   documents `param_offload` as "Whether to offload model parameters to CPU and release gradient buffers
#   while inactive".
# - `verl/trainer/config/_generated_ppo_megatron_trainer.yaml`: in 0.9.0 `grad_offload: false` appears three
#   times (actor, ref and critic engine blocks). Its header says it is generated by
#   `scripts/generate_trainer_config.sh` and must not be edited by hand (the script itself is not in the
#   wheel; the `autogen-trainer-cfg` hook in `.pre-commit-config.yaml` runs it, and it ends with
#   `git diff --exit-code` on each generated file).
# - `verl/base_config.py::BaseConfig`: every config dataclass derives from it; it carries a `_target_: str = ""`
#   field. `verl/utils/config.py::omega_conf_to_dataclass` builds a block with a `_target_` through
#   `hydra.utils.instantiate`, which consumes the key (the built object's `_target_` stays `''`, as in the
#   course's loader); its `dataclass_type=` path keeps the key in `BaseConfig`'s field (the pop is commented out
#   there), which the course does not copy.
#
# Here the same shapes live in a small package written for this course, `data/engine_config/` (dataclasses,
# YAML, an engine, the generated file), and the config system is the lesson package
# `verlstudy.lessons.l09_dead_config`: `loading` (YAML, composition, overrides), `schema` (dataclasses),
# `golden` (the generated file's check), `field_reads` (the dead-field search), `errors` and `workspace`;
# `verl_tree` runs the search on verl's own source and `upstream` loads verl's config classes from source.
#
# Facts checked against verl 0.9.1 (and 0.9.0 for the state before the fix); the cells that read verl print
# one skip line each when it (or the 0.9.0 release `make setup` fetches) is absent.
# - `verl/utils/megatron_utils.py::offload_megatron_model_to_cpu`: copies the parameter buffers to the host and
#   frees the gradient buffers (`grad_data.storage().resize_(0)`); `grad_reduce_in_fp32` makes them fp32.
# - `verl/workers/engine/veomni/transformer_impl.py::_build_ops_implementation_config`: the reflective read of
#   `VeOmniEngineConfig`, a `fields()` loop that skips every field whose name does not end in `_implementation`;
#   `ckpt_manager`, `load_checkpoint_path` and `force_use_huggingface` occur in no other `.py` file of 0.9.1.
# - `full_determinism` is read by the FSDP, VeOmni, TorchTitan and Automodel engines, not by Megatron's.
# - `dist_checkpointing_prefix`: added by #4139, its call sites dropped by #6067; `verl/utils/model.py::
#   load_mcore_dist_weights` keeps `prefix=""`.
# - Hydra (facebookresearch/hydra) `hydra/_internal/instantiate/_instantiate2.py::_call_target`: wraps the call's
#   error as `Error in call to target '<target>':\n<repr(error)>`, then `full_key: <key path>`.
# - verl PR #7536 (merged): fixes #7466's half-done removal, `router_replay` kept in `ref.yaml` (a TypeError).

# %%
claims_table()
