# %% [markdown]
# # 00 · Start here: how this course runs, and how it checks itself
#
# **verlstudy** takes merged pull requests of [verl](https://github.com/verl-project/verl), the LLM
# reinforcement-learning trainer, and makes each one's lesson *happen* on a laptop CPU: a memory leak
# grows and then stops, a gradient silently turns to zero and an assertion catches it, a
# sequence-parallel scatter crashes and padding fixes it.
#
# **You will learn** how a lesson is laid out, how to run one on CPU, GPU or NPU, how papermill
# parameters and nbval keep the stored outputs honest, and the two habits every lesson relies on:
# *claims* (every number stated is computed and checked) and *expected errors* (a failure is shown
# without stopping the notebook).
#
# **Time:** 15 minutes. **Assumes:** Python and a first look at PyTorch. No upstream PR: this lesson is
# about the course itself. Facts checked against verl 0.9.1 (see `data/upstream_verified.json`).

# %% tags=["parameters"]
device = "auto"  # "auto" | "cpu" | "cuda" | "npu"
seed = 0
n_draws = 4

# %%
import json
import subprocess
import sys

from verlstudy.kit.exercises import check_exercise
from verlstudy.kit.claims import claim, claims_table, expect_error, reset_claims
from verlstudy.kit.devices import pick_device, skip_unless
from verlstudy.kit.hygiene import sanitize, unstable_fragments
from verlstudy.kit.params import check_int
from verlstudy.kit.plots import bar_plot
from verlstudy.kit.seeding import seed_everything

dev = pick_device(device)
seed_everything(check_int("seed", seed, minimum=0))
n_draws = check_int("n_draws", n_draws, minimum=1, maximum=1000)
reset_claims()
print(f"running on {dev.type}")

# %% [markdown]
# ## The course map
# The registry in `verlstudy.course.registry` is the one list of lessons: `verlstudy list` prints it, the runner
# executes it, and the tests check that it and `notebooks/` agree. A lesson never imports the course
# machinery (an import rule the tests enforce), so this one runs the `verlstudy` command, as you would.

# %%
def verlstudy(*args: str) -> str:
    """Run the `verlstudy` command with this kernel's Python; return what it prints (a [FAIL] shows, not raises)."""
    done = subprocess.run([sys.executable, "-m", "verlstudy", *args], capture_output=True, text=True)
    return (done.stdout + done.stderr).rstrip("\n")


print(verlstudy("list"))
lessons = json.loads(verlstudy("list", "--json"))
claim("lessons in the registry", len(lessons), expected=10)

# %%
minutes = {lesson["code"]: lesson["minutes"] for lesson in lessons}
bar_plot(minutes, title="Minutes per lesson", ylabel="minutes")
claim("minutes in the whole course", sum(minutes.values()), expected=400)

# %% [markdown]
# ## Running the course
# | what | command |
# | --- | --- |
# | set up and run every lesson, write `build/report.md` | `make course` |
# | run the tests (unit tests, nbval, papermill, structure) | `make test` |
# | run some lessons with parameters | `verlstudy run 01 04 -p seed=1 --device cpu` |
# | check the environment | `verlstudy doctor` |
#
# On a GPU or NPU machine, install the torch build for it first, then `verlstudy run --device cuda`
# (or `npu`). Accelerator cells are optional: on a CPU they print one skip line.
#
# `verlstudy doctor` checks what the course needs. Its versions differ from machine to machine, so
# this cell is tagged `nbval-ignore-output`: nbval runs it but does not compare what it prints.

# %% tags=["nbval-ignore-output"]
print(verlstudy("doctor"))

# %% [markdown]
# ## Parameters, the papermill way
# The cell above tagged `parameters` holds `device`, `seed` and `n_draws`. `papermill -p seed 3`
# (or `verlstudy run 00 -p seed=3`) injects a new cell after it; the next cell validates every value,
# so a bad one stops the run with a line that names it:

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
# **0.1** Write `seeded_sample(seed, n)` returning `n` standard-normal draws that are the same for the
# same seed, *without* moving the global random stream (other cells must not change because you
# sampled here). Hint: `torch.Generator`.

# %% tags=["solution", "exercise-0.1"]
def seeded_sample(seed: int, n: int) -> torch.Tensor:
    """Return `n` standard-normal draws (a tensor), the same for the same `seed`, leaving the global stream alone."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=generator)


# %% tags=["checker", "exercise-0.1"]
check_exercise("0.1", seeded_sample)

# %% [markdown]
# **0.2** Write `find_unstable(text)` returning the fragments of `text` that would differ between two
# runs (memory addresses, timings, dates, temporary paths, process ids, local ports), as a list of
# strings. Stable text gives `[]`.

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
# ## Optional: an accelerator cell
# Cells like this one are tagged `gpu`; on a CPU they print one line and move on.

# %% tags=["gpu"]
if skip_unless("cuda"):
    x = torch.ones(1024, device="cuda")
    claim("sum of 1024 ones on the GPU", float(x.sum().item()), expected=1024.0)

# %% [markdown]
# ## Checked against upstream verl
# The helpers here re-implement upstream code in small form, so they can drift from it as verl moves. When
# the `verl` package is installed (`make setup` installs it without its heavy dependencies), the next cell
# loads upstream's own function from verl's source and compares it with ours on generated inputs, or says
# why this lesson has no single function to compare. A disagreement stops the notebook here; without verl
# the cell prints a one-line skip. `verlstudy verify-upstream` runs every lesson's comparison at once.

# %% tags=["nbval-ignore-output"]
from verlstudy.lessons.l00_start_here.upstream import upstream_check

upstream_check()

# %% [markdown]
# ## Takeaways
# - One registry, one command to run everything, one to test everything.
# - Every number in a lesson is a checked claim; every expected failure goes through `expect_error`.
# - Outputs must be the same on every run: seed, round, and never print addresses, timings or paths.

# %%
claims_table()
