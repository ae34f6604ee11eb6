# %% [markdown]
# # 06 · External modules loaded by an environment variable
#
# **Upstream:** [verl PR #7827](https://github.com/verl-project/verl/pull/7827) set
# `VERL_USE_EXTERNAL_MODULES=megatron_adaptor` by default in the [Ascend](00_start_here.ipynb#Ascend) images, so
# that verl imports `megatron_adaptor` (which patches [Megatron](00_start_here.ipynb#Megatron) for Ascend
# [NPU](00_start_here.ipynb#NPU)s) whenever verl itself is
# imported. Two NPU CI jobs still failed, and every other process in those containers that imported verl was
# patched whether it wanted it or not; [#7886](https://github.com/verl-project/verl/pull/7886) took the default out again.
#
# **You will** read verl's hook from the installed source, run it in throwaway subprocesses to see where such a
# variable acts and where it comes too late, see why an image default is a silent change for everyone, and
# find a ref pinned differently in two files.
#
# **Time:** 30 minutes. **Assumes:** Python imports (`sys.modules`, `from x import y`), environment variables,
# subprocesses. Files and commits are listed under "Sources" at the end.
#
# Facts checked against verl 0.9.1.

# %% tags=["parameters"]
device = "auto"  # "auto" | "cpu" | "cuda" | "npu"
timeout_s = 20.0  # seconds any one subprocess experiment may take before it is stopped
seed = 0

# %%
import importlib.util, subprocess, sys
if "google.colab" in sys.modules and not importlib.util.find_spec("verlstudy"):  # Colab only: this release of the course
    subprocess.run(f"{sys.executable} -m pip install -q --no-deps git+https://github.com/verlstudy/verlstudy@v0.1.0 && {sys.executable} -m verlstudy.kit.colab || echo 'The course did not install: Runtime > Restart session, then run this cell again.'", shell=True)

from verlstudy.kit.claims import claim, claims_table, expect_error
from verlstudy.kit.devices import skip_unless
from verlstudy.kit.exercises import check_exercise, exercise_hint
from verlstudy.kit.show import show_change, upstream_source
from verlstudy.lessons.l06_external_modules.params import lesson_params

timeout_s = lesson_params(device, timeout_s, seed).timeout_s

# %% [markdown]
# ## Symptom: the variable was set, and two jobs still ran unpatched
# Per #7886, without `megatron_adaptor` `import megatron.core` *crashes* on the NPU stack, and the image's variable
# did not help twice: `model_rmpad_ascend`'s test imports `megatron.core` before verl, and vLLM's EngineCore (the
# process that schedules requests and drives vLLM's model workers, vLLM `docs/design/arch_overview.md`) and worker
# processes (started from a Ray actor: a long-lived process Ray starts) "never import verl". Every other process
# that imported verl was patched silently.

# %% [markdown]
# ### Predict first: exercise 6.1
# Before you see how verl reads the variable: it holds module names separated by commas, typed by hand into
# a Dockerfile or a workflow, so it may hold blanks (`"a, b"`) or a trailing comma (`"a,"`). A wrong
# try's message names the mistake; the second adds where to look, the third a question, the fourth the method.
# `exercise_hint("6.1")` prints every rung and `show_solution("6.1")` the answer, any time.
#
# **6.1** Write `parse_modules(value)`, a forgiving parser: the module names in a comma-separated value,
# with blanks around names stripped and empty entries dropped (an empty value names no modules). Only a comma
# separates names: a blank *inside* an entry stays in it, so the import names the bad entry. The next
# section shows whether verl itself is that forgiving. It receives a `str` (blanks may be spaces or tabs) and
# returns the names in order as a list of strings (a tuple passes too).

# %% tags=["solution", "exercise-6.1"]
def parse_modules(value: str) -> list[str]:
    """Module names in `value`, e.g. ' a , b,,' -> ['a', 'b']."""
    return [part.strip() for part in value.split(",") if part.strip()]


# %% tags=["checker", "exercise-6.1"]
check_exercise("6.1", parse_modules)

# %% [markdown]
# ## How verl reads the variable
# verl's own lines, from the installed 0.9.1: the hook at the top level of `verl/__init__.py`, and the function
# it calls in `verl/utils/import_utils.py`.

# %% tags=["upstream-source", "nbval-ignore-output"]
_ = upstream_source("__init__.py", None, contains="VERL_USE_EXTERNAL_MODULES", context=3)
_ = upstream_source("utils/import_utils.py", "import_external_libs")

# %% [markdown]
# The hook runs once, at verl's first import in a process: a non-empty value is split on commas and each entry
# imported *as given*, blanks and empty entries included. The hook cannot be imported alone (`verl.protocol` pulls
# in Ray), so the course finds its statements with `ast` and runs them against an `importlib` that only records:

# %%
from verlstudy.kit.upstream import upstream_cell
from verlstudy.lessons.l06_external_modules.modules_env import (
    ENV_VAR,
    ExternalModuleError,
    import_external_modules,
    parse_module_list,
)
from verlstudy.lessons.l06_external_modules.upstream import env_hook, upstream_imports


def show_upstream_hook() -> None:
    hook = env_hook()
    print(f"{hook.cite()}: {len(hook.code.splitlines())} statements' lines, run below")
    for value in ("megatron_adaptor", "megatron_adaptor, json", "megatron_adaptor,"):
        print(f"{value!r:26} upstream imports {upstream_imports(value)!r:34} course's parser: {parse_module_list(value)!r}")
    claim("where the hook is", hook.cite(), expected="verl/__init__.py lines 49-52", upstream="verl 0.9.1, found by ast")
    claim("upstream keeps the blank in 'a, b' and the empty entry in 'a,'", upstream_imports("a, b,")[1:] == [" b", ""],
          upstream="verl/__init__.py + verl/utils/import_utils.py::import_external_libs")


upstream_cell(show_upstream_hook)  # prints one skip line instead when verl is absent

# %% [markdown]
# The course's parser (`parse_module_list`, the course's design, not verl's; your 6.1) strips blanks, drops empty
# entries and checks each name. As a change from its reconstruction of verl's split:

# %%
from verlstudy.lessons.l06_external_modules.modules_env import split_like_verl_091

show_change(split_like_verl_091, parse_module_list)

# %% [markdown]
# And an import that fails names its entry:

# %%
with expect_error(ExternalModuleError, match="megatron_adaptr"):
    import_external_modules(environ={ENV_VAR: "json,megatron_adaptr"})

# %% [markdown]
# ## Reproduce: three processes, one variable
# We write three throwaway packages to a temporary folder: `toylib` stands in for `megatron.core` (an
# attention op, and a model module that uses it), `toylib_adaptor` for `megatron_adaptor` (it replaces the
# op), and `toyverl` for verl: its `__init__` is upstream's own code, the hook statements and
# `import_external_libs` shown above, taken from the installed verl (not printed again). Each experiment runs
# in a fresh `python -I -S` subprocess with a clean environment: no torch, no network, at most `timeout_s`.
#
# **A stand-in, labelled.** In #7886 the unpatched process *crashed* while importing `megatron.core`. The toy
# shows the same ordering rule with a milder, visible symptom: `toylib/model.py` binds `attention` with
# `from ... import` when it is imported, so a patch that comes later leaves it unpatched. Both failures have one
# cause: the patch must run before the library is imported.

# %%
import tempfile

from verlstudy.lessons.l06_external_modules.modules_env import TOY_SOURCES, write_toy_packages
from verlstudy.lessons.l06_external_modules.upstream import toy_hook_source

toyverl_source, origin = toy_hook_source()
for path in ("toylib/ops.py", "toylib/model.py", "toylib_adaptor.py"):
    print(f"--- {path}\n{TOY_SOURCES[path]}")
print(f"--- toyverl/__init__.py: {len(toyverl_source.splitlines())} lines, from {origin}")
scratch = tempfile.TemporaryDirectory(prefix="verlstudy06-")
root = write_toy_packages(scratch.name, toyverl_source)

# %% [markdown]
# First, upstream's own errors. A child process sets the variable to `"a, b"` or to `"a,"` (with toy module
# names) and imports `toyverl`; real `importlib`, but only the toy packages are there to import:

# %%
from verlstudy.lessons.l06_external_modules.modules_env import hook_errors

values = ["toylib_adaptor, toylib.ops", "toylib_adaptor,"]
errors = hook_errors(values, root, timeout_s=timeout_s)
for value, error in zip(values, errors):
    print(f"{ENV_VAR}={value!r:30} -> {error}")
claim("'a, b': upstream's hook fails on the blank", errors[0], expected="ModuleNotFoundError: No module named ' toylib'",
      upstream="verl/__init__.py hook in a child, real importlib")
claim("'a,': upstream's hook fails on the empty entry", errors[1], expected="ValueError: Empty module name",
      upstream="verl/__init__.py hook in a child, real importlib")

# %% [markdown]
# ### Predict first: exercise 6.2
# Next the experiments run processes that import these packages in different orders, with and without the
# variable. Predict them first, from the sources printed above.
#
# **6.2** Write `will_be_patched(imports, env_value)`: given the order in which a process imports
# `toyverl`, `toylib_adaptor`, `toylib.ops` and `toylib.model`, and the value of `VERL_USE_EXTERNAL_MODULES`
# (`None` when unset), return whether `toylib.model.forward()` ends up patched once the script finally imports
# `toylib.model`. `toyverl` runs upstream's hook. The value is empty or names only toy-world modules (the adaptor,
# `toylib`, `toylib.ops`, `json`, `os`; never `toylib.model`), comma-separated without blanks. `imports` is a list
# of those module names, each at most once, and may be empty; return a `bool` and leave `imports` unchanged. The checker compares you with the rule the experiments below measure.

# %% tags=["solution", "exercise-6.2"]
def will_be_patched(imports: list[str], env_value: str | None) -> bool:
    """Return whether `toylib.model.forward()` ends up patched (a bool).

    `imports` lists the modules in the order the process imports them; `env_value` is the value of
    VERL_USE_EXTERNAL_MODULES, or None when it is unset.
    """
    named = (env_value or "").split(",")  # split as verl splits it
    for module in imports:
        if module == "toylib_adaptor" or (module == "toyverl" and "toylib_adaptor" in named):
            return True
        if module == "toylib.model":
            return False
    return False


# %% tags=["checker", "exercise-6.2"]
check_exercise("6.2", will_be_patched)

# %% [markdown]
# Now five processes, each a subprocess of its own: the image default with verl imported first, the same
# with the library imported first, a driver whose worker subprocess never imports verl, no default, and an
# explicit import at every entry point. Compare each row with what your `will_be_patched` says:

# %%
from verlstudy.kit.tables import show_table
from verlstudy.lessons.l06_external_modules.modules_env import lesson_experiments, outcomes_table, run_experiments

experiments = lesson_experiments()
outcomes = run_experiments(experiments, root, timeout_s=timeout_s)
show_table(outcomes_table(outcomes))
seen = {o.experiment.name: o for o in outcomes}

# %%
verl_first = seen["image default, verl imported first"]
library_first = seen["image default, library imported first"]
worker = seen["image default, worker never imports verl"]
claim("verl imported first: the library is patched", verl_first.patched)
claim("library imported first: unpatched, variable set all the same", not library_first.patched,
      upstream="#7886: test_megatron_dynamic_cp_features.py imports megatron.core first (model_rmpad_ascend)")
claim("worker subprocess inherits the variable and stays unpatched", worker.patched and not worker.worker_patched,
      upstream="#7886 says vLLM EngineCore/worker subprocesses never import verl (reward_model_vllm_ascend)")
claim("no experiment process imported torch", not any(o.torch_imported for o in outcomes))

# %% [markdown]
# The same five processes as a picture: a row per process (a worker under its driver), a box per import, in
# order. Blue: verl's hook importing the adaptor; grey: the hook finding nothing; green: the library measured
# `patched`. Labels map rows to real processes (the course's mapping, from #7827 and #7886):

# %%
from verlstudy.lessons.l06_external_modules.timeline import draw_timeline

STANDS_FOR = {
    "image default, verl imported first": "#7827: trainer driver (imports verl first)",
    "image default, library imported first": "#7827: a test importing megatron.core first",
    "image default, worker never imports verl": "#7827: a driver starting a worker",
    "image default, worker never imports verl / worker": "its worker (vLLM's, as #7886 describes it)",
    "no default (after #7886)": "after #7886: a process importing verl",
    "explicit import at every entry point": "course's advice: a driver",
    "explicit import at every entry point / worker": "its worker",
}
fig = draw_timeline(outcomes, STANDS_FOR)

# %% [markdown]
# Read down the green boxes: each has the adaptor (or the hook importing it) to its left. Read the red ones: the
# test row has verl's hook too, one box too late; the worker row has the variable but nothing that reads it.

# %% [markdown]
# ## Root cause: a patch acts only on what has not been bound yet
# `toylib/model.py` does `from toylib.ops import attention`: at import time it copies a reference to
# whatever `attention` is *then*. The adaptor replaces `toylib.ops.attention` later; a model module imported
# before that keeps the original. So a patch must run before the library it patches is imported, in *every*
# process that uses the library. An import-time hook in verl guarantees neither: it runs only where verl is
# imported, and only at that moment. The course's rule, as code:

# %%
from verlstudy.kit.show import show_source
from verlstudy.lessons.l06_external_modules.modules_env import predict_patched

show_source(predict_patched)

# %% [markdown]
# It fits every process above:

# %%

predicted = [predict_patched(e.imports, e.env_value) for e in experiments]
print("predicted:", predicted)
print("measured: ", [o.patched for o in outcomes])
claim("patched iff the adaptor is imported before the library (all 5 processes)",
      predicted == [o.patched for o in outcomes])

# %% [markdown]
# ## Why a default in the image is a silent change for everyone
# A Dockerfile `ENV` reaches every container of the image: every job, user and process. A workflow's job-level
# `env:` reaches that job's steps only. The fixtures in `data/deps/` are the course's: #7827's `ENV` line, the
# job-level setting, and one planted ref drift used further down:

# %%
from verlstudy.common.pins import env_settings, file_kind, read_files
from verlstudy.kit.resources import data_dir

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
# ## What #7886 changed
# #7886 removed `ENV VERL_USE_EXTERNAL_MODULES=megatron_adaptor` from `Dockerfile.ascend_9.1.0_a2` and
# `..._a3`, the images for Ascend's A2 and A3 machines (built on CANN's `910b` and `a3` images; row 4: no
# default, nothing patched), and left the job-level opt-in of `npu_unit_tests.yml` untouched. Per its description
# that is all it changed: no code in verl, and no new way to reach the two processes that stayed unpatched. The
# job-level variable keeps both limits above.

# %%
no_default = seen["no default (after #7886)"]
claim("without the image default nothing is patched", not no_default.patched, upstream="#7886 drops the image ENV")

# %% [markdown]
# ## The course's advice: import the patch at each entry point
# A process is patched for sure when its own entry point imports the adaptor before Megatron (row 5). #7886 did
# not do this, but the merged #7875 did, for the Ascend tests: `import megatron_adaptor` before a test imports
# `megatron.core`. It works where you write the entry point: a driver, a test file, a Ray actor class of verl's.
#
# vLLM's worker processes are started by vLLM, but verl *does* run code in them. verl 0.9.1 hands vLLM a worker
# extension class, read here from the installed source:

# %% tags=["upstream-source", "nbval-ignore-output"]
_ = upstream_source("workers/rollout/vllm_rollout/vllm_async_server.py", None, contains='"worker_extension_cls":',
                    context=1)
_ = upstream_source("workers/rollout/vllm_rollout/vllm_async_server.py", "vLLMHttpServer._get_worker_extension_cls")

# %% [markdown]
# vLLM imports `verl.workers.rollout.vllm_rollout.utils.vLLMColocateWorkerExtension` in every worker process it
# starts, and importing it first runs `verl/__init__.py`, the hook included. So in 0.9.1 the worker processes do
# import verl, which #7886's "never import verl" does not describe. Which process crashed the course cannot
# confirm: it had cited #7877 (the spawned EngineCore, unpickling a message that refers to Megatron), but that PR is
# in neither the PR threads nor the verl mirror the course can read.
# What verl does not control is *when*: vLLM resolves the extension while it sets the worker
# up, after its own imports and after its general plugins (entry points in the `vllm.general_plugins` group):
# `WorkerWrapperBase.init_worker` (vLLM `vllm/v1/worker/worker_base.py`) calls `load_general_plugins()`, then
# resolves `worker_cls`, then `worker_extension_cls`. A separate EngineCore process that does not load the
# extension never runs the hook (the course's reading; verl's merged #7837, "Reapply the patch in spawned engine
# processes", treats that gap). So, in the course's reading, a patch that must come before Megatron in those
# processes goes either at the top of the module vLLM imports (verl's worker extension) or through vLLM's
# earliest hook, its general plugins; the inherited variable helps only as far as verl is imported first.

# %%
explicit = seen["explicit import at every entry point"]
claim("an explicit import at each entry point patches driver and worker", explicit.patched and explicit.worker_patched)

# %% [markdown]
# ## The same limit: `VERL_USE_EXTERNAL_PLUGINS`
# verl's second import-time hook, `VERL_USE_EXTERNAL_PLUGINS` (default `auto`), loads the `verl.plugins` entry
# points (`none`: off; a comma list: those). Read in the same place, it has the same limit: only processes that
# import verl, after what they imported first.

# %%
from verlstudy.lessons.l06_external_modules.upstream import PLUGINS_VAR


def show_plugins_hook() -> None:
    plugins = env_hook(PLUGINS_VAR)
    print(f"--- {plugins.cite()}, first statement:\n{plugins.code.splitlines()[0]}")
    claim("VERL_USE_EXTERNAL_PLUGINS is read at verl's import too", plugins.cite(),
          expected="verl/__init__.py lines 60-76", upstream="verl 0.9.1, found by ast")
    claim("its default 'auto' loads the 'verl.plugins' entry points",
          "'auto'" in plugins.code.splitlines()[0] and "group='verl.plugins'" in plugins.code)


upstream_cell(show_plugins_hook)

# %% [markdown]
# ## Guard: tests that would have caught it
# Two cheap checks. A lint: no Dockerfile bakes `VERL_USE_EXTERNAL_MODULES` into an image (`image_env_settings`).
# A test that starts the *worker's* entry point as its own process and asserts it is patched: it fails under
# #7827's setup and passes with the adaptor imported at that entry point.

# %%
from verlstudy.common.pins import image_env_settings
from verlstudy.lessons.l06_external_modules.modules_env import ADAPTOR, Experiment

baked = image_env_settings(files, ENV_VAR)
print("lint:", [f"{s.file}:{s.line}: ENV {s.name}={s.value}" for s in baked])
claim("the lint finds the image default (one ENV line)", len(baked), expected=1)
worker_entry = (
    Experiment("worker entry point, #7827 image default", ("toylib.model",), ADAPTOR),
    Experiment("worker entry point, explicit import", (ADAPTOR, "toylib.model"), None),
)
before, after = run_experiments(worker_entry, root, timeout_s=timeout_s)
scratch.cleanup()
claim("the worker test fails under the image default and passes with the explicit import",
      (before.patched, after.patched) == (False, True))

# %% [markdown]
# ## The same PRs, the other half: one ref, pinned in three files
# The Ascend stack's refs are written separately into Dockerfiles, install scripts and CI workflows; #7827
# also corrected the Megatron-LM ref to the tag `core_v0.18.0` (its description). The drift below is
# planted by the course, not taken from #7827: in our fixtures the Dockerfile has the corrected ref and
# the install script keeps the old one, to show what a missed file looks like. The old ref `core_r0.18.0` is
# not a typo: Megatron-LM really has `core_rX.Y.Z` release branches (its refs list `refs/heads/core_r0.18.0`
# beside `refs/tags/core_v0.18.0`; see Sources). A branch can move after the release,
# the tag cannot, so pinning the branch is a *policy* finding (branch or tag), the position lessons 05 and 08
# take too; a ref that breaks the course's naming rule for a repository is a *naming* finding (e.g. MindSpeed
# `core_v...`: every MindSpeed ref the course has seen is `core_r`, though MindSpeed's full list of refs was not
# checked). `verlstudy.common.pins`
# parses every `git clone --branch`, `git checkout`, `pip install name==v`, `pip install git+URL@ref` and
# `actions/checkout` ref out of the three files (lesson 08 builds on this):

# %%
from verlstudy.common.pins import pins_in_files, pins_table, ref_drift, ref_findings

pins = pins_in_files(files)
show_table(pins_table(pins))
drifts = ref_drift(pins)
for d in drifts:
    print("DRIFT:", d.describe())
for finding in ref_findings(pins):
    print("REF:", finding)
claim("repositories pinned differently in two files", len(drifts), expected=1)
claim("the drift the course planted: Megatron-LM, Dockerfile vs install script",
      drifts[0].repo == "nvidia/megatron-lm" and drifts[0].refs == ("core_r0.18.0", "core_v0.18.0"))

# %% [markdown]
# ## Exercises
# **6.1** came before "How verl reads the variable", **6.2** before the experiments. Any still "not yet right"?
# `exercise_hint("6.N")` prints every hint (the method last), `show_solution("6.N")` the answer.

# %% [markdown]
# ## On an Ascend machine
# With an NPU, ask the installed stack: are `megatron_adaptor` and verl importable? (`python -c "import
# megatron.core; import verl"` with the variable set shows row 2 for real.)

# %% tags=["npu"]
if skip_unless("npu"):
    import importlib.util

    for name in ("verl", "megatron.core", "megatron_adaptor"):
        print(f"{name}: {'installed' if importlib.util.find_spec(name.split('.')[0]) else 'not installed'}")

# %% [markdown]
# ## Checked against upstream verl
# With verl installed, the next cell runs verl's own hook beside the course's parser on generated values; a
# disagreement stops the notebook, and without verl it prints one skip line.

# %% tags=["nbval-ignore-output"]
from verlstudy.lessons.l06_external_modules.upstream import upstream_check

upstream_check()

# %% [markdown]
# ## Takeaways
# - An import-time hook acts in the processes that import its package, at that moment: not in a test that
#   imports the patched library first, not in a subprocess that never imports the package.
# - A default in a base image changes every process of every user, silently. #7886 removed it and kept the
#   job-level opt-in; #7875 went further for the tests, as the course advises: import a patch explicitly at each
#   entry point that needs it, before the library. Processes started by another framework run verl code only where that
#   framework imports it (vLLM's workers import verl's `worker_extension_cls`), and late: a patch that must
#   come first goes at the top of that module or through the framework's earliest hook (vLLM's general plugins).
# - `VERL_USE_EXTERNAL_PLUGINS` is read at the same moment and has the same limit.
# - A ref written into several files by hand will drift; parse them and compare (lesson 08 goes further).
#   Megatron-LM's `core_r0.18.0` is a real branch: branch or tag is a policy choice, not a naming slip.
#
# ## Open questions
# - vLLM resolves verl's worker extension after its own imports and plugins. If a patch must come before
#   something vLLM imports first, where would you put it, and how would you test that it ran?
# - Should verl's hook strip blanks and drop empty entries, or fail loudly on them? What would each break?
# - A job-level `env:` is narrower than an image `ENV`. Is narrower always better for a patch every NPU job needs?

# %% [markdown]
# ## Sources
# Paths inside verl unless named otherwise.
# - `verl/__init__.py`: the statements that read `VERL_USE_EXTERNAL_MODULES`, split it on commas and hand the
#   pieces to `import_external_libs` (run once, at verl's first import); a few lines further,
#   `VERL_USE_EXTERNAL_PLUGINS` (default `auto`) loads the `verl.plugins` entry points.
# - `verl/utils/import_utils.py::import_external_libs`: `importlib.import_module(name)` per entry, as given.
# - `verl/workers/rollout/vllm_rollout/vllm_async_server.py`: `worker_extension_cls` in the engine arguments and
#   `vLLMHttpServer._get_worker_extension_cls` (verl's `vLLMColocateWorkerExtension`, imported by vLLM's workers).
# - `docker/ascend/Dockerfile.ascend_9.1.0_a2` and `..._a3`: `ENV VERL_USE_EXTERNAL_MODULES=megatron_adaptor` added
#   by #7827 (read in the fork yellowbee686/verl at 6fc912f07) and removed by #7886;
#   `.github/workflows/npu_unit_tests.yml` keeps its own job-level setting.
# - `tests/special_distributed/run_all.sh` runs `test_megatron_dynamic_cp_features.py`, which imports
#   `megatron.core` before any verl import (#7886's first example).
# - verl PR #7875 (merged, "[ci] fix: fix megatron.core import error on Ascend tests"): "`import megatron_adaptor`
#   before the test directly import `megatron.core` to apply the patching first". #7976 (open at the time read)
#   does the same before the vLLM rollout tests.
# - verl PR #7877, which the course had cited for the `reward_model_vllm_ascend` failure in the spawned EngineCore:
#   not found in the PR threads or in the verl mirror the course reads (which ends at #7335, 2026-08-22);
#   unverified.
# - vLLM's processes (`docs/design/arch_overview.md`, "V1 Process Architecture"): EngineCore runs the scheduler,
#   manages the KV cache and dispatches work to one worker process per device, which loads the weights and runs the
#   model; a separate process takes the requests. vLLM is the inference engine verl uses for
#   [rollout](00_start_here.ipynb#rollout).
# - vLLM `docs/design/arch_overview.md` ("V1 Process Architecture"): the API server, engine-core and worker
#   processes.
# - verl 0.9.1 `verl/models/mcore/model_forward_1f1b_overlap.py` links Megatron-LM `blob/core_r0.14.0`; branch or
#   tag: NVIDIA/Megatron-LM's refs (`git ls-remote`, in a mirror) hold `refs/heads/core_r0.18.0` (dc0ee41) and
#   `refs/tags/core_v0.18.0` (ba7b5eb).
# - vLLM `vllm/v1/worker/worker_base.py::WorkerWrapperBase.init_worker`: `load_general_plugins()`, then
#   `resolve_obj_by_qualname(parallel_config.worker_cls)`, then `worker_extension_cls`, which it adds to the worker
#   class's bases.
# - verl PR #7837 (merged), "Reapply the patch in spawned engine processes".

# %%
claims_table()
