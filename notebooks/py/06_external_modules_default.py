# %% [markdown]
# # 06 · External modules loaded by an environment variable
#
# Upstream: [verl PR #7827](https://github.com/verl-project/verl/pull/7827), which set
# `VERL_USE_EXTERNAL_MODULES=megatron_adaptor` by default in the Ascend A2/A3 images and NPU tests, and its
# follow-up [verl PR #7886](https://github.com/verl-project/verl/pull/7886), which took it out of the images
# again.
#
# `megatron_adaptor` patches Megatron so that it runs on Ascend NPUs. #7827 made verl load it in every
# container, through an environment variable that verl reads when it is imported. Two NPU CI jobs still
# failed with the variable set, and every other process that imported verl was now patched whether it wanted
# to be or not.
#
# **You will learn** where such a variable acts (only in a process that imports verl), when it acts too late
# (a library imported before verl has already bound the unpatched function), why a worker subprocess that
# never imports verl stays unpatched even though it inherits the variable, why a default baked into an image
# is a silent change for everyone, and what to do instead. The same PRs also show the other half of
# "configuration in many files": refs pinned separately in a Dockerfile, an install script and a CI workflow
# drift apart, and a small checker finds where.
#
# **Time:** 30 minutes. **Assumes:** Python imports (`sys.modules`, `from x import y`), environment
# variables, subprocesses.
#
# **Upstream files cited** (paths inside verl):
# - `verl/__init__.py`, lines 49-52 in verl 0.9.1: `modules = os.getenv("VERL_USE_EXTERNAL_MODULES", "")`,
#   then `if modules: modules = modules.split(","); import_external_libs(modules)`. It runs once, when
#   `verl` is first imported in a process.
# - `verl/utils/import_utils.py::import_external_libs`: `importlib.import_module(name)` for each entry, as
#   given (no stripping of blanks).
# - `docker/ascend/Dockerfile.ascend_9.1.0_a2` and `..._a3`: `ENV VERL_USE_EXTERNAL_MODULES=megatron_adaptor`
#   added by #7827 and removed by #7886; `.github/workflows/npu_unit_tests.yml` keeps its own job-level
#   setting.
# - `tests/special_distributed/run_all.sh` runs `test_megatron_dynamic_cp_features.py`, which imports
#   `megatron.core` before any verl import (#7886's first example).
#
# Facts checked against verl 0.9.1.

# %% tags=["parameters"]
device = "auto"  # "auto" | "cpu" | "cuda" | "npu"
timeout_s = 20.0  # seconds any one subprocess experiment may take before it is stopped
seed = 0

# %%
import importlib
import tempfile

from verlstudy.kit.exercises import check_exercise
from verlstudy.kit.claims import claim, claims_table, expect_error, reset_claims
from verlstudy.kit.resources import data_dir
from verlstudy.common.pins import (
    env_settings,
    file_kind,
    image_env_settings,
    naming_problems,
    pins_in_files,
    pins_table,
    read_files,
    ref_drift,
)
from verlstudy.kit.devices import pick_device, skip_unless
from verlstudy.lessons.l06_external_modules.modules_env import (
    ADAPTOR,
    ENV_VAR,
    TOY_SOURCES,
    ExternalModuleError,
    Experiment,
    import_external_modules,
    lesson_experiments,
    outcomes_table,
    parse_module_list,
    predict_patched,
    run_experiments,
    split_like_verl_091,
    write_toy_packages,
)
from verlstudy.kit.params import check_float, check_int
from verlstudy.kit.seeding import seed_everything

dev = pick_device(device)
timeout_s = check_float("timeout_s", timeout_s, minimum=1.0, maximum=120.0)
seed_everything(check_int("seed", seed, minimum=0))
reset_claims()
print(f"running on {dev.type}")

# %% [markdown]
# ## Symptom: the variable was set, and two jobs still ran unpatched
# #7886 (upstream's own account) lists the two places where `VERL_USE_EXTERNAL_MODULES=megatron_adaptor`,
# set in the image, did not help: `model_rmpad_ascend` kept failing because its test file imports
# `megatron.core` before anything imports verl, and `reward_model_vllm_ascend` failed because vLLM's
# EngineCore/worker subprocesses, started from Ray actors, never import verl at all. And in every other
# container process that did import verl, the adaptor's patches were applied silently. (What the patch was
# needed for, per #7886: avoiding an `nvidia_resiliency_ext.__version__` import crash on the NPU stack.)
#
# ## How verl reads the variable
# verl splits the value on commas and imports each piece as given. Our hook does the same but strips blanks
# and skips empty entries, and names the entry when an import fails:

# %%
for value in ("megatron_adaptor", "megatron_adaptor, json", "megatron_adaptor,"):
    print(f"{value!r:28} verl 0.9.1 imports {split_like_verl_091(value)!r:34} ours: {parse_module_list(value)!r}")
claim("verl 0.9.1 keeps the blank in 'a, b' and the empty entry in 'a,'", split_like_verl_091("a, b,")[1:] == [" b", ""])
with expect_error(ModuleNotFoundError):  # what verl's importlib.import_module call then does
    importlib.import_module(split_like_verl_091("json, json")[1])
with expect_error(ValueError, match="Empty module name"):
    importlib.import_module(split_like_verl_091("json,")[1])
with expect_error(ExternalModuleError, match="megatron_adaptr"):
    import_external_modules(environ={ENV_VAR: "json,megatron_adaptr"})

# %% [markdown]
# ## Reproduce: three processes, one variable
# We write three throwaway packages to a temporary folder: `toylib` stands in for `megatron.core` (an
# attention op, and a model module that uses it), `toylib_adaptor` for `megatron_adaptor` (it replaces the
# op), and `toyverl` for verl (its `__init__` reads the variable, as verl's does). Then each experiment runs
# in a fresh `python -I -S` subprocess with a clean environment: no torch, no network, at most `timeout_s`.

# %%
for path in ("toylib/ops.py", "toylib/model.py", "toylib_adaptor.py", "toyverl/__init__.py"):
    print(f"--- {path}\n{TOY_SOURCES[path]}")

# %%
experiments = lesson_experiments()
with tempfile.TemporaryDirectory(prefix="verlstudy06-") as folder:
    outcomes = run_experiments(experiments, write_toy_packages(folder), timeout_s=timeout_s)
print(outcomes_table(outcomes))
seen = {o.experiment.name: o for o in outcomes}

# %%
verl_first = seen["image default, verl imported first"]
library_first = seen["image default, library imported first"]
worker = seen["image default, worker never imports verl"]
claim("verl imported first: the library is patched", verl_first.patched)
claim("library imported first: unpatched, variable set all the same", not library_first.patched,
      upstream="#7886: test_megatron_dynamic_cp_features.py imports megatron.core first (model_rmpad_ascend)")
claim("worker subprocess inherits the variable and stays unpatched", worker.patched and not worker.worker_patched,
      upstream="#7886: vLLM EngineCore/worker subprocesses never import verl (reward_model_vllm_ascend)")
claim("no experiment process imported torch", not any(o.torch_imported for o in outcomes))

# %% [markdown]
# ## Root cause: a patch acts only on what has not been bound yet
# `toylib/model.py` does `from toylib.ops import attention`: at import time it copies a reference to
# whatever `attention` is *then*. The adaptor replaces `toylib.ops.attention` later; a model module imported
# before that keeps the original. So a patch must run before the library it patches is imported, in *every*
# process that uses the library. An import-time hook in verl guarantees neither: it runs only where verl is
# imported, and only at that moment. The rule fits every process above:

# %%
predicted = [predict_patched(e.imports, e.env_value) for e in experiments]
print("predicted:", predicted)
print("measured: ", [o.patched for o in outcomes])
claim("patched iff the adaptor is imported before the library (all 5 processes)",
      predicted == [o.patched for o in outcomes])

# %% [markdown]
# ## Why a default in the image is a silent change for everyone
# Where a variable is set decides who it reaches. A Dockerfile `ENV` is part of every container started from
# the image, for every job, every user, every process; a workflow's job-level `env:` reaches that job's steps
# only. Our fixture files in `data/deps/` model the state after #7827 (written here, not copied):

# %%
files = read_files(data_dir() / "deps")
settings = [s for name, text in files.items() for s in env_settings(text, file_kind(name), name) if s.name == ENV_VAR]
for s in settings:
    print(f"{s.file}:{s.line}: {s.name}={s.value} (scope: {s.scope})")
claim("the variable is set in the image and again at job level", [s.scope for s in settings] == ["image", "job npu_unit_tests"])

# %% [markdown]
# With the image default, *any* process that imports verl first is patched (row 1), including processes that
# never asked for it, such as a data-preparation script or a CPU unit test run inside the same image: CI on
# that image no longer tests what a stock install does. Nothing is printed when it happens.
#
# ## Fix: opt in where it is needed, and import the patch where the library is used
# #7886 removed the `ENV` line from the images (row 4: no default, nothing patched) and kept the job-level
# opt-in of `npu_unit_tests.yml`. The job-level variable still has the two limits above; what reaches a test
# that imports Megatron first, or a worker that never imports verl, is importing the adaptor itself at that
# entry point, before Megatron (row 5):

# %%
no_default = seen["no default (after #7886)"]
explicit = seen["explicit import at every entry point"]
claim("without the image default nothing is patched", not no_default.patched, upstream="#7886 drops the image ENV")
claim("an explicit import at each entry point patches driver and worker", explicit.patched and explicit.worker_patched)

# %% [markdown]
# ## Guard: tests that would have caught it
# Two cheap checks. First, a lint: no Dockerfile may bake `VERL_USE_EXTERNAL_MODULES` into an image
# (`image_env_settings` lists the `ENV` lines that do). Second, a test that starts the *worker's* entry point
# as a process of its own and asserts that it is patched, instead of trusting the driver's environment. Under
# the #7827 setup (variable inherited, worker never imports verl) that test fails; with the adaptor imported
# at the worker's entry point it passes.

# %%
baked = image_env_settings(files, ENV_VAR)
print("lint:", [f"{s.file}:{s.line}: ENV {s.name}={s.value}" for s in baked])
claim("the lint finds the image default (one ENV line)", len(baked), expected=1)
worker_entry = (
    Experiment("worker entry point, #7827 image default", ("toylib.model",), ADAPTOR),
    Experiment("worker entry point, explicit import", (ADAPTOR, "toylib.model"), None),
)
with tempfile.TemporaryDirectory(prefix="verlstudy06-") as folder:
    before, after = run_experiments(worker_entry, write_toy_packages(folder), timeout_s=timeout_s)
claim("the worker test fails under the image default and passes with the explicit import",
      (before.patched, after.patched) == (False, True))

# %% [markdown]
# ## The same PRs, the other half: one ref, pinned in three files
# The Ascend stack's refs were written separately into the Dockerfiles, install scripts and CI workflows;
# #7827 also corrected the Megatron-LM ref to the tag `core_v0.18.0`. In our fixtures the Dockerfile got the
# correction and the install script did not. `verlstudy.common.pins` parses every `git clone --branch`,
# `git checkout`, `pip install name==v`, `pip install git+URL@ref` and `actions/checkout` ref out of the
# three files (lesson 08 builds on this):

# %%
pins = pins_in_files(files)
print(pins_table(pins))
drifts = ref_drift(pins)
for d in drifts:
    print("DRIFT:", d.describe())
for problem in naming_problems(pins):
    print("NAMING:", problem)
claim("repositories pinned differently in two files", len(drifts), expected=1)
claim("the drifting repository is Megatron-LM (Dockerfile vs install script)",
      drifts[0].repo == "nvidia/megatron-lm" and drifts[0].refs == ("core_r0.18.0", "core_v0.18.0"),
      upstream="#7827: corrected the Megatron-LM ref to core_v0.18.0")

# %% [markdown]
# ## Exercises
# **6.1** Write `parse_modules(value)`: the module names in a comma-separated value, with blanks around names
# stripped and empty entries dropped (an empty value names no modules).

# %% tags=["solution", "exercise-6.1"]
def parse_modules(value: str) -> list[str]:
    """Module names in `value`, e.g. ' a , b,,' -> ['a', 'b']."""
    return [part.strip() for part in value.split(",") if part.strip()]


# %% tags=["checker", "exercise-6.1"]
check_exercise("6.1", parse_modules)

# %% [markdown]
# **6.2** Write `will_be_patched(imports, env_value)`: given the order in which a process imports
# `toyverl`, `toylib_adaptor`, `toylib.ops` and `toylib.model`, and the value of `VERL_USE_EXTERNAL_MODULES`
# (`None` when unset), return whether `toylib.model.forward()` ends up patched. The checker compares you with
# the rule the subprocess experiments measured.

# %% tags=["solution", "exercise-6.2"]
def will_be_patched(imports: list[str], env_value: str | None) -> bool:
    """Return whether `toylib.model.forward()` ends up patched (a bool).

    `imports` lists the modules in the order the process imports them; `env_value` is the value of
    VERL_USE_EXTERNAL_MODULES, or None when it is unset.
    """
    named = [m.strip() for m in (env_value or "").split(",")]
    for module in imports:
        if module == "toylib_adaptor" or (module == "toyverl" and "toylib_adaptor" in named):
            return True
        if module == "toylib.model":
            return False
    return False


# %% tags=["checker", "exercise-6.2"]
check_exercise("6.2", will_be_patched)

# %% [markdown]
# ## On an Ascend machine
# With an NPU, the installed stack can be asked the real question: is `megatron_adaptor` importable, and is
# verl? (Run `python -c "import megatron.core; import verl"` with the variable set to see row 2 for real.)

# %% tags=["npu"]
if skip_unless("npu"):
    import importlib.util

    for name in ("verl", "megatron.core", "megatron_adaptor"):
        print(f"{name}: {'installed' if importlib.util.find_spec(name.split('.')[0]) else 'not installed'}")

# %% [markdown]
# ## Checked against upstream verl
# The helpers here re-implement upstream code in small form, so they can drift from it as verl moves. When
# the `verl` package is installed (`make setup` installs it without its heavy dependencies), the next cell
# loads upstream's own function from verl's source and compares it with ours on generated inputs, or says
# why this lesson has no single function to compare. A disagreement stops the notebook here; without verl
# the cell prints a one-line skip. `verlstudy verify-upstream` runs every lesson's comparison at once.

# %% tags=["nbval-ignore-output"]
from verlstudy.lessons.l06_external_modules.upstream import upstream_check

upstream_check()

# %% [markdown]
# ## Takeaways
# - An import-time hook acts in the processes that import its package, at that moment: not in a test that
#   imports the patched library first, not in a subprocess that never imports the package.
# - A default in a base image changes every process of every user, silently; opt in per job, and import a
#   patch explicitly at each entry point that needs it, before the library.
# - A ref written into several files by hand will drift; parse them and compare (lesson 08 goes further).

# %%
claims_table()
