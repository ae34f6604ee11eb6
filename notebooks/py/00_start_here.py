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

from verlstudy.kit.exercises import check_exercise, exercise_hint
from verlstudy.kit.claims import claim, claims_table, expect_error, reset_claims
from verlstudy.kit.devices import pick_device, skip_unless
from verlstudy.kit.hygiene import sanitize, unstable_fragments
from verlstudy.kit.params import check_int
from verlstudy.kit.plots import bar_plot
from verlstudy.kit.seeding import seed_everything

dev = pick_device(device)
seed_everything(check_int("seed", seed, minimum=0, maximum=2**32 - 1))
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
# ## The arc every lesson follows
# Each lesson after this one takes one verl PR through the same arc: the **symptom** a user saw,
# **reproduce** it on a CPU, find the **cause**, apply the **fix**, add the **guard** (a test that would
# have caught it), then **exercises**, a check against **upstream** verl's own code, **takeaways**, and
# the **claims table** that ends every notebook. The next cell does not take that on trust: it reads
# every notebook of the course and marks `y` where a section heading names a stage. The rule is the
# course's own (in `l00_start_here/arc.py`): a heading names a stage when its label, the part before
# any colon, uses the stage's word. A lesson whose story does not split that way shows `-`: the table
# is the honest answer, not a promise.

# %%
from verlstudy.kit.resources import notebooks_dir
from verlstudy.lessons.l00_start_here.arc import arc_table, course_arcs, read_cells

arcs = course_arcs(notebooks_dir())
print(arc_table(arcs))
pr_lessons = [a for a in arcs if a.code != "00"]  # this lesson is the tour, not a PR
claim("lesson notebooks read", len(arcs), expected=len(lessons))
tail = ("exercises", "upstream", "takeaways", "claims table")
with_tail = sum(all(a.stages[s] is not None for s in tail) for a in pr_lessons)
claim("PR lessons ending exercises, upstream, takeaways, claims table", with_tail, expected=len(pr_lessons))
claim("PR lessons whose named stages come in arc order", sum(a.in_order for a in pr_lessons), expected=len(pr_lessons))
claim("PR lessons naming every stage in a heading", sum(not a.missing for a in pr_lessons), expected=3)

# %% [markdown]
# ## Running the course
# | what | command |
# | --- | --- |
# | set up and run every lesson, write `build/report.md` | `make course` |
# | run the tests (unit tests, nbval, papermill, structure) | `make test` |
# | run some lessons with parameters | `verlstudy run 01 04 -p seed=1 --device cpu` |
# | write the student edition (solutions replaced by stubs) into `student/` | `make student` |
# | the same, into a folder you choose | `verlstudy student --out DIR` |
# | check the environment | `verlstudy doctor` |
#
# On a GPU or NPU machine, install the torch build for it first, then `verlstudy run --device cuda`
# (or `npu`). Accelerator cells are optional: on a CPU they print one skip line.
#
# `verlstudy doctor` checks what the course needs. In a terminal it also starts the kernel the lessons
# run on, once, and runs a cell in it (the interpreter it reports and the torch it imports), which
# takes a few seconds; here `--no-kernel-start` only resolves that kernel, to keep this lesson quick.
# Its versions differ from machine to machine, so this cell is tagged `nbval-ignore-output`: nbval
# runs it but does not compare what it prints.

# %% tags=["nbval-ignore-output"]
print(verlstudy("doctor", "--no-kernel-start"))

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
# sampled here). Every exercise works the same way: a wrong try names the mistake; stuck, run
# `exercise_hint("0.1")` for the method (it also shows by itself from the third wrong try on).

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
# ## How a verdict is reached, and the student edition
# `make student` (or `verlstudy student --out DIR`) writes the student edition, the notebooks a learner
# runs. It differs from this full edition in three ways:
# - every cell tagged `solution` and `exercise-N.M` keeps its imports, signatures and docstrings, and
#   each function body becomes `raise NotImplementedError("exercise N.M")`; the checker cell right
#   after it, tagged `checker` and the same `exercise-N.M`, stays as it is;
# - no cell keeps a stored output: every output on screen is one the learner ran, so no result shows
#   before they predict it;
# - a markdown cell tagged `after-you-try-N.M` (text that states exercise N.M's answer) moves to just
#   after that exercise's checker, collapsed: open it once you have tried.
#
# Each checker declares the texts that would give its answer away, and a test of the course fails if
# one shows in any cell before the exercise, printed outputs included. This lesson's own exercise
# cells, read from its notebook:

# %%
from verlstudy.lessons.l00_start_here.editions import demo_tries, demo_verdict, exercise_cells

rows = exercise_cells(read_cells(notebooks_dir() / "00_start_here.ipynb"))
for row in rows:
    print(row)
paired = [r["next cell"] == ["checker", f"exercise-{r['exercise']}"] for r in rows]
claim("solution cells here, each followed by its checker", sum(paired), expected=2)

# %% [markdown]
# `check_exercise` gives one of three verdicts: **correct**; **not yet right**, with the checker's
# message naming the mistake; **not attempted**, when the answer still raises `NotImplementedError`, as
# every stub does. Here are all three on exercise 0.1: a stub written the way the student edition
# writes it, a plausible wrong answer, and your `seeded_sample` from above (in the student edition,
# the stub until you fill it in). `demo_verdict` calls `check_exercise` but holds back its printed
# line and its record, so the course's report counts only the checker cells' verdicts.

# %%
def seeded_sample_stub(seed: int, n: int) -> torch.Tensor:
    """Exercise 0.1 as the student edition hands it out."""
    raise NotImplementedError("exercise 0.1")


answers = {
    "the stub": seeded_sample_stub,
    "no seed at all": lambda seed, n: torch.randn(n),  # a plausible wrong answer
    "your seeded_sample": seeded_sample,  # last, so exercise_results() ends on your own verdict
}
verdicts = {name: demo_verdict("0.1", answer) for name, answer in answers.items()}
for name, (verdict, message) in verdicts.items():
    print(f"{name:>20} -> {verdict}" + (f": {message}" if message else ""))
claim("verdict for the stub", verdicts["the stub"][0], expected="not attempted")
claim("verdict for the unseeded answer", verdicts["no seed at all"][0], expected="not yet right")

# %% [markdown]
# ## Hints escalate
# A wrong answer never gets the solution. Its first tries print a **nudge**: the message names the
# mistake, and a second line points to `exercise_hint("N.M")`. From the third wrong try on
# (`METHOD_AFTER_TRIES` in `verlstudy.kit.exercises`) the **method**, how to get there, follows as
# well; `exercise_hint("N.M")` prints it whenever you ask. Here is the unseeded answer checked three
# times in a row. `demo_tries` holds the output back like `demo_verdict`, and afterwards puts back
# your own count of wrong tries and your verdict, so the demo costs you nothing.

# %%
from verlstudy.kit.exercises import METHOD_AFTER_TRIES

tries = demo_tries("0.1", answers["no seed at all"], tries=METHOD_AFTER_TRIES)
for number, lines in enumerate(tries, start=1):
    print(f"try {number}:", *lines, sep="\n  ")
with_method = [any(line.startswith("  method (after") for line in lines) for lines in tries]
claim("wrong tries that print only the nudge", with_method.count(False), expected=2)
claim("the try that adds the method", with_method.index(True) + 1, expected=METHOD_AFTER_TRIES)
exercise_hint("0.2")

# %% [markdown]
# ## Where progress shows
# - Each checker cell prints one line, `exercise N.M: <verdict>`, and records the same verdict as data
#   in the notebook's outputs.
# - `exercise_results()` (in `verlstudy.kit.exercises`) gives this lesson's verdicts so far; the demos
#   above ended on your own answer, so it holds your verdict for 0.1.
# - The claims table at the end lists every claim the lesson checked, then the exercises' verdicts.
# - `verlstudy run` writes a report (`build/report.md`) whose "exercises correct" column counts each
#   lesson's recorded verdicts.
# - A facilitator sees where everyone is with `verlstudy progress DIR` (a learner's student folder, or
#   a folder of learners' folders): it runs the notebooks in fresh kernels into a build folder, never
#   touching DIR, and prints one row per exercise (correct, not yet right or not attempted, with the
#   checker's message) and a total per lesson; `--csv FILE` and `--junit FILE` save the same rows.

# %%
from verlstudy.kit.exercises import exercise_results

print(exercise_results())
claim("exercises with a verdict in this lesson", sorted(exercise_results()), expected=["0.1", "0.2"])

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
# - Every lesson after this one walks symptom, reproduce, cause, fix, guard, exercises, upstream,
#   takeaways and claims table; the table above, read from the notebooks, shows where one names fewer.
# - In the student edition your answers start as stubs and no output is stored: "not attempted" until
#   you write them, then "not yet right" with the mistake named (the method from the third try, or
#   with `exercise_hint`), or "correct".
# - Every number in a lesson is a checked claim; every expected failure goes through `expect_error`.
# - Outputs must be the same on every run: seed, round, and never print addresses, timings or paths.

# %%
claims_table()
