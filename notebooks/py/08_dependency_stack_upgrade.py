# %% [markdown]
# # 08 · A dependency-stack upgrade as data: manifests, diffs, unpinned clones
#
# Upstream: [verl PR #7604](https://github.com/verl-project/verl/pull/7604) moved verl's
# [Ascend](00_start_here.ipynb#Ascend) [NPU](00_start_here.ipynb#NPU) images from
# [Megatron](00_start_here.ipynb#Megatron) `core_r0.16.0` to 0.18 and added five components;
# [#7827](https://github.com/verl-project/verl/pull/7827), whose main change loads `megatron_adaptor` by default in
# those images and the NPU tests (lesson 06), also corrected Megatron-LM from the release *branch* `core_r0.18.0`
# to the release *tag* `core_v0.18.0`.
#
# **You will** write the stack before and after as data, diff it, read upstream's real image and install files
# (before and after each PR) with a pin parser, and find what a reader of the PR would miss: three components cloned
# with no ref at all. You will tell a real disagreement from an architecture variant, and generate every file's
# pins from one manifest so a CI check comes back clean.
#
# **Time:** 30 minutes. **Assumes:** git tags and branches, `pip install name==version`, reading a Dockerfile.
# Facts checked against verl 0.9.1; the files and commits are listed under Sources at the end.

# %% tags=["parameters"]
device = "auto"  # "auto" | "cpu" | "cuda" | "npu"
seed = 0

# %%
import importlib.util, subprocess, sys
if "google.colab" in sys.modules and not importlib.util.find_spec("verlstudy"):  # Colab only: this release of the course
    subprocess.run(f"{sys.executable} -m pip install -q --no-deps git+https://github.com/verlstudy/verlstudy@v0.1.0 && {sys.executable} -m verlstudy.kit.colab || echo 'The course did not install: Runtime > Restart session, then run this cell again.'", shell=True)

from collections import Counter

from verlstudy.common.pins import pins_in_files, pins_table, read_files, ref_drift, ref_findings, unpinned_installs
from verlstudy.common.refs import ref_finding
from verlstudy.kit.claims import claim, claims_table
from verlstudy.kit.devices import skip_unless
from verlstudy.kit.exercises import check_exercise
from verlstudy.kit.lesson_start import start_lesson
from verlstudy.kit.resources import data_dir
from verlstudy.lessons.l08_dependency_stack import manifests as mf
from verlstudy.lessons.l08_dependency_stack.layers import draw_layers
from verlstudy.kit.show import show_change, show_source
from verlstudy.lessons.l08_dependency_stack.real_files import component_drift, pin_lines, side_by_side, split_drift
from verlstudy.lessons.l08_dependency_stack.real_files import unpinned_clones

start_lesson(device, seed)  # the lesson's only parameters: the device, then the seed
stacks = data_dir() / "stacks"  # the upgrade itself is fixed, not a parameter: every claim is about it

# %% [markdown]
# ## The stack as data
# A manifest lists each component once: the repository (or `pypi:` package), the kind of ref (`tag`, `branch`,
# `commit`, `version`, or `unpinned`: a clone with no ref) and the ref, written from upstream's real image files
# (`data/stacks/*.toml` cite them). What each component is: see Sources.

# %%
old = mf.load_manifest(stacks / "ascend_megatron_0.16.toml")
new = mf.load_manifest(stacks / "ascend_megatron_0.18.toml")
for m in (old, new):
    print(f"{m.name}  settings: {dict(m.settings)}")
    for c in m.components:
        print(f"  {c.name:<22} {c.kind:<8} {c.ref or '-':<14} {c.repo}")

# %% [markdown]
# ## The upgrade as a diff
# Matching components by name gives what was added, removed and changed, including a branch-to-tag switch a
# version bump would hide:

# %%
from verlstudy.kit.tables import show_table

diff = mf.upgrade_diff(old, new)
show_table(diff.table())
claim("components added", sorted(c.name for c in diff.added)
      == sorted(["MegatronAdaptor", "TransformerEngineNPU", "MindSpeed-Ops", "MindSpeed-Bridge", "Megatron-Bridge"]),
      upstream="#7604: adaptor, TransformerEngineNPU, MindSpeed Ops, MindSpeed Bridge, Megatron Bridge")
claim("removed from the image: the transformers commit and flash-linear-attention",
      sorted(c.name for c in diff.removed) == ["flash-linear-attention", "transformers"],
      upstream="Dockerfile.ascend_9.1.0_a2: ead7f6c51 (verl) vs 3d36367 (wwj-git-rgb/verl)")
megatron = {ch.name: ch for ch in diff.changed}["Megatron-LM"]
claim("Megatron-LM moves from a branch to a tag", (megatron.old.kind, megatron.new.kind) == ("branch", "tag"),
      upstream="#7827: Megatron-LM ref corrected to core_v0.18.0")
claim("components the after-image clones with no ref", [c.name for c in new.components if c.kind == "unpinned"],
      expected=["TransformerEngineNPU", "MindSpeed-Ops", "MindSpeed-Bridge"],
      upstream="`git clone --depth 1` with no --branch: 3d36367 and 6fc912f07")

# %% [markdown]
# ### Predict first: exercise 8.1
# A pin is only as fixed as what it names. A tag stays where it was made; a branch moves with every push (Megatron-LM
# publishes both for a release: the branch `core_r0.18.0` and the tag `core_v0.18.0`, its refs in Sources; #7827
# moved verl from the first to the second); a commit hash never moves; a clone with no ref takes whatever the default branch holds on
# the day of the build. Which of these a ref is depends on the repository, not on its spelling: a name that looks
# like a tag can be a branch. **8.1** Write `pin_policy(ref, tags, branches)`: it receives a ref (a string, or
# `None` or `""` for no ref) and the repository's own tag names and branch names (any collection of strings: a
# list, tuple or set; a name is never in both), and returns one word, a `str`: `"unpinned"` for no ref, `"tag"` or
# `"branch"` when the ref is one of those names, `"commit"` for a ref in neither list that is 7 to 40 lower-case
# hex digits, and `"missing"` for anything else (a ref the repository does not have). The checker tries named
# cases, then generated ones.

# %% tags=["solution", "exercise-8.1"]
def pin_policy(ref: str | None, tags, branches) -> str:
    """What `ref` pins in a repository with these tags and branches: unpinned, tag, branch, commit or missing."""
    if not ref:
        return "unpinned"
    if ref in set(tags):
        return "tag"
    if ref in set(branches):
        return "branch"
    is_hash = 7 <= len(ref) <= 40 and all(ch in "0123456789abcdef" for ch in ref)
    return "commit" if is_hash else "missing"


# %% tags=["checker", "exercise-8.1"]
check_exercise("8.1", pin_policy)

# %% [markdown]
# ## Before and after: upstream's real files, side by side
# The course's rewrites of upstream's A2 image (A2 and A3: two generations of Ascend machines; verl's
# `docker/ascend/Dockerfile.ascend_9.1.0_a2` and `_a3` build on CANN's `910b` and `a3` base images) and install
# script before #7604, after it, and the image alone after #7827 (no post-#7827 install script was read: a `-` in that column means not read, not removed). Same pins, same
# shell shapes; `unpinned_clones` adds clones that name no ref:

# %%
sets = {"before #7604": "before_upgrade", "after #7604": "after_upgrade", "after #7827 (image only)": "after_fix"}
files = {title: read_files(stacks / folder) for title, folder in sets.items()}
pins = {title: pins_in_files(f) for title, f in files.items()}
clones = {title: unpinned_clones(f) for title, f in files.items()}
repos = sorted({p.repo for ps in pins.values() for p in ps} | {c.repo for cs in clones.values() for c in cs})
show_table(side_by_side(pins, clones, repos))
after_unpinned = sorted({c.repo for c in clones["after #7827 (image only)"]})
claim("repositories cloned with no ref after #7827", after_unpinned,
      expected=["ascend/mindspeed-bridge", "ascend/mindspeed-ops", "ascend/transformerenginenpu"],
      upstream="yellowbee686/verl@6fc912f07 Dockerfile.ascend_9.1.0_a2: git clone --depth 1 <repo> (no --branch)")
claim("the post-#7604 install script still pins transformers 5.10.4",
      {p.ref for p in pins["after #7604"] if p.repo == "pypi:transformers"} == {"5.10.4"},
      upstream="wwj-git-rgb/verl@3d36367 scripts/install_vllm_mcore_npu.sh, steps 1 and 5")
gone = sorted({p.repo for p in pins["before #7604"]} - {p.repo for ps in list(pins.values())[1:] for p in ps})
claim("pinned before #7604, pinned nowhere after", gone, expected=["huggingface/transformers", "pypi:flash-linear-attention"])
claim("mbridge: installed with no version before #7604, not at all after",
      [sorted({p.file for p in unpinned_installs(f) if p.repo == "pypi:mbridge"}) for f in files.values()]
      == [sorted(files["before #7604"]), [], []])

# %% [markdown]
# The table rests on real lines. Megatron-LM's, file by file, as the course's rewrites hold them:

# %%
for title, found in pins.items():
    print(f"{title}:\n  " + "\n  ".join(pin_lines(files[title], [p for p in found if p.repo == "nvidia/megatron-lm"])))

# %% [markdown]
# The same three stacks as layers, each component coloured by what pins it (green: a tag or a version, blue: a
# commit, yellow: a branch, red: nothing). mbridge, installed with no version before #7604, leaves; three red boxes
# arrive with MindSpeed's layer and the bridge; #7827 turns Megatron-LM from a branch into a tag:

# %%
kinds = {c.key: c.kind for c in old.components} | {"pypi:mbridge": "unpinned"}
after = {c.key: c.kind for c in new.components}
draw_layers({"before #7604": kinds, "after #7604": after | {"nvidia/megatron-lm": "branch"}, "after #7827": after})
claim("unpinned components per stack (before, after #7604, after #7827)",
      [sum(k == "unpinned" for k in d.values()) for d in (kinds, after, after)], expected=[1, 3, 3])

# %% [markdown]
# What the PR descriptions do not say. Three new components are cloned with no `--branch`: each build takes the
# default branch of that day. torchvision `0.25.0` vs `0.25.0+cpu` is no disagreement: `+cpu` is a PEP 440 *local
# version*, the CPU wheel, installed only on x86_64. And before #7604 transformers came two ways: commit
# `cc7ab9be` (image) and `5.10.4` from PyPI (script).

# %% [markdown]
# Grouped by repository key, those two transformers pins never meet: a git repository and a PyPI package are
# different keys. The lesson's drift check groups by the package a pin installs. The fix, as a change from the
# repository-keyed check:

# %%
from verlstudy.common.pins import ref_drift

show_change(ref_drift, component_drift)

# %% [markdown]
# A commit and a version cannot be shown to be the same code, so `split_drift` counts that pair as real:

# %%
show_source(split_drift)

# %%
for title, found in pins.items():
    real, variants = split_drift(component_drift(found))
    print(f"{title}: real drift {[d.repo for d in real]}; architecture variants {[d.repo for d in variants]}")
before_real, before_variants = split_drift(component_drift(pins["before #7604"]))
print("\n".join(d.describe() for d in before_real))
claim("pre-#7604 image and script: components in real disagreement", [d.repo for d in before_real],
      expected=["transformers (huggingface/transformers, pypi:transformers)"],
      upstream="ead7f6c51 Dockerfile.ascend_9.1.0_a2: git checkout cc7ab9be... then pip install -e transformers; "
      "5ba5f2f51 scripts/install_vllm_mcore_npu.sh: pip install transformers==5.10.4")
claim("grouped by repository key instead, the same pins show no real disagreement",
      split_drift(ref_drift(pins["before #7604"]))[0], expected=[])
claim("torchvision 0.25.0 vs 0.25.0+cpu is an architecture variant", [d.repo for d in before_variants]
      == ["pypi:torchvision"],
      upstream="ead7f6c51: torchvision==0.25.0+cpu inside the x86_64 branch; 5ba5f2f51: torchvision==0.25.0")
claim("after #7604 and after #7827: no component in real disagreement",
      [len(split_drift(component_drift(pins[t]))[0]) for t in ("after #7604", "after #7827 (image only)")],
      expected=[0, 0])

# %% [markdown]
# Megatron-LM's `core_r0.16.0` and `core_r0.18.0` are real release branches; #7827's `core_v0.18.0` is the tag.
# Preferring the tag is a policy choice (a branch can move after the release), reported as a `policy` finding,
# as in lessons 05 and 06:

# %%
policy = {title: ref_findings(found, "policy") for title, found in pins.items()}
for title, found in policy.items():
    print(f"{title}: {len(found)} policy finding(s)" + "".join(f"\n  {f}" for f in found))
claim("policy findings on Megatron-LM's release branch: before, after #7604, after #7827",
      [len(v) for v in policy.values()], expected=[2, 2, 0],
      upstream="#7604 wrote core_r0.18.0; #7827 corrected it to core_v0.18.0")

# %% [markdown]
# ## A real drift upstream: #7345, reverted by #7492
# Before #7604, the merged [#7345](https://github.com/verl-project/verl/pull/7345) ("Fix npu nightly ci") added a
# step to the NPU e2e workflow cloning Megatron-LM and MindSpeed at `core_r0.18.0`, while the image that workflow
# runs in stayed on `core_r0.16.0`. Eight days later [#7492](https://github.com/verl-project/verl/pull/7492)
# removed the step ("revert megatron version on ascend ci"). The course's rewrite of both files:

# %%
ci_files = read_files(stacks / "after_7345")
ci_pins = pins_in_files(ci_files)
print("\n".join(pin_lines(ci_files, ci_pins)))
ci_real, _ = split_drift(component_drift(ci_pins))
print("\n".join(d.describe() for d in ci_real))
claim("#7345's workflow and its image disagree on Megatron-LM and MindSpeed", sorted(d.repo for d in ci_real),
      expected=["ascend/mindspeed", "nvidia/megatron-lm"],
      upstream="verl 060bebc56 (#7345): workflow core_r0.18.0, sglang 8.5.0 image core_r0.16.0; e78efedbe (#7492)")

# %% [markdown]
# Which Megatron the job then imported the course has not checked (the clones land in `/Megatron-LM` and
# `/MindSpeed`; the image installed Megatron-LM from a `git+` URL). The check would have flagged the PR.
#
# ## Symptom: the same upgrade, edited by hand in four files
# `data/stacks/hand_edited/` is the course's fixture, with planted defects: two Dockerfiles, an install script and
# a CI workflow, each edited separately. `verlstudy.common.pins` finds every pin (`git clone --branch`,
# `git checkout`, `pip install`, `actions/checkout`), following `ARG`s, shell variables and `env:` blocks:

# %%
hand_files = read_files(stacks / "hand_edited")
hand = pins_in_files(hand_files)
show_table(pins_table(hand))

# %% [markdown]
# Why drift is likely: each fact is written down many times. Megatron-LM's ref alone appears in every file.

# %%
places = dict(Counter(p.repo.split("/")[-1] for p in hand))
print(places)
claim("fixture self-check: places that pin Megatron-LM", places["megatron-lm"], expected=len(hand_files))

# %% [markdown]
# ## Reproduce: the r/v trap and a pin that disagrees
# `ref_findings` reports `policy` (a Megatron-LM release branch where the tag exists) and `naming` (a ref that fits
# none of the repository's release names, like MindSpeed `core_v0.18.0`: likely a slip). The drift check reports
# every component pinned to more than one ref.

# %%
problems = ref_findings(hand)
print("\n".join(problems))
drifts = component_drift(hand)
print("\n".join(d.describe() for d in drifts))
claim("Megatron-LM core_r0.18.0 is a policy finding, with the tag core_v0.18.0 suggested",
      ref_finding("NVIDIA/Megatron-LM", "core_r0.18.0").kind == "policy"
      and "prefer the tag 'core_v0.18.0'" in ref_finding("NVIDIA/Megatron-LM", "core_r0.18.0").message,
      upstream="#7604 wrote core_r0.18.0; #7827 corrected it to core_v0.18.0")
claim("fixture self-check: policy and naming findings in the hand-edited files",
      (len(ref_findings(hand, "policy")), len(ref_findings(hand, "naming"))) == (3, 1))
claim("fixture self-check: components pinned two ways", sorted(d.repo for d in drifts)
      == ["ascend/mindspeed", "nvidia-nemo/megatron-bridge", "nvidia/megatron-lm"])

# %% [markdown]
# ## Root cause: no single source of truth
# Every one of those pins restates something the manifest already says. Compared with the manifest, the
# hand-edited files disagree in these places:

# %%
mismatches = mf.manifest_mismatches(hand, new)
print("\n".join(mismatches))
claim("fixture self-check: hand-edited pins that disagree with the manifest", len(mismatches), expected=5)
print("\n".join(mf.manifest_problems(old) + mf.manifest_problems(new)))
claim("the old manifest's one finding is the policy one on Megatron-LM's branch", len(mf.manifest_problems(old)) == 1
      and mf.manifest_problems(old)[0].startswith("Megatron-LM: policy:"))
claim("the new manifest's findings are its three unpinned clones",
      [p.split(":")[0] for p in mf.manifest_problems(new)], expected=["TransformerEngineNPU", "MindSpeed-Ops", "MindSpeed-Bridge"])

# %% [markdown]
# ## Fix: pin what floats, then generate the pins from the manifest
# First, pin the three floating clones, at the commits #7836's GLM-5.2 recipe header records (a set someone ran
# together). Then write refs once, in the manifest, and generate every file's pins: one `ARG` per component, one
# `env:` entry, the script's refs. A ref change is then one line.

# %%
pinned = mf.pin_components(new, {
    "TransformerEngineNPU": "e40ec34036eb7e04ad11b983f8c6b0dc9fcd88f9",
    "MindSpeed-Ops": "dbee3f41b156bb051fc046facf69548400be2be1",
    "MindSpeed-Bridge": "d82eec3ce2b31deb82cc5474b6813498efded908",
})
# the base images ship Ascend's CANN toolkit 9.1.0, one for A2 machines (910b) and one for A3
cann = "swr.cn-south-1.myhuaweicloud.com/ascendhub/cann:9.1.0-{}-ubuntu22.04-py3.12"
generated = {
    "Dockerfile.ascend_a2": mf.render_dockerfile(pinned, base_image=cann.format("910b")),
    "Dockerfile.ascend_a3": mf.render_dockerfile(pinned, base_image=cann.format("a3")),
    "install_npu.sh": mf.render_install_script(pinned),
    "npu_e2e.yml": mf.render_workflow(pinned, job="e2e_ppo_megatron"),
}
print("\n".join(generated["Dockerfile.ascend_a3"].splitlines()[:8]) + "\n...")
gen = pins_in_files(generated)
claim("every generated file pins exactly the manifest", all(
    {(p.repo, p.ref) for p in gen if p.file == name} == mf.manifest_pins(pinned) for name in generated))
claim("drift, ref findings, mismatches and unpinned clones after generating", len(ref_drift(gen)) + len(ref_findings(gen))
      + len(mf.manifest_mismatches(gen, pinned)) + len(unpinned_clones(generated)), expected=0)

# %% [markdown]
# ## Guard: one check for CI
# Over the real tree: every pin matches the manifest, passes the ref findings and agrees with every other pin, and
# no clone floats. The job fails on a non-empty list: the hand-edited files fail, the generated ones pass.

# %%
hand_found = mf.tree_problems(hand_files, new)
print(f"hand-edited files: {len(hand_found)} problems, first: {hand_found[0]}")
claim("fixture self-check: the CI check's findings on the hand-edited files", len(hand_found),
      expected=len(mismatches) + len(problems) + len(drifts) + 3)
claim("the CI check is clean on the generated files", mf.tree_problems(generated, pinned) == [])

# %% [markdown]
# ## Exercises
# **8.1** came earlier, before the files that answer it. **8.2** Write `pip_line(manifest)`: it receives a
# `StackManifest` whose components are all pinned (`.components`, each with `.repo`, `.ref`, `.is_pypi`) and returns
# one shell command as a `str`: an install (`pip install ...`, `pip3 install ...` or `python -m pip install ...`)
# that pins every component, `package==version` for a `pypi:` package (the name after `pypi:`), `git+URL@ref` for a
# git repository. The checker reads your command as a POSIX shell splits it and as pip parses each word, and
# compares the pins pip would install with the manifest's, on generated manifests (GitHub and GitCode repositories,
# tags, branches with `/`, commit hashes, package names with capitals, dots and dashes, pre-releases) and on the
# lesson's pinned one: a line pip would refuse, or one that installs something else, is not right.

# %% tags=["solution", "exercise-8.2"]
def pip_line(manifest) -> str:
    """`pip install` with a pin for each component of `manifest`."""
    args = [f"{c.repo[len('pypi:'):]}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components]
    return "pip install " + " ".join(args)


# %% tags=["checker", "exercise-8.2"]
check_exercise("8.2", pip_line, [pinned])

# %% [markdown]
# ## On an Ascend machine
# With an NPU, compare what is installed with the manifest's PyPI pins.

# %% tags=["npu"]
if skip_unless("npu"):
    from importlib.metadata import PackageNotFoundError, version

    for c in (c for c in pinned.components if c.is_pypi):
        try:
            have = version(c.repo[len("pypi:"):])
        except PackageNotFoundError:
            have = "not installed"
        print(f"{c.name}: manifest {c.ref}, installed {have}")

# %% [markdown]
# ## Checked against upstream verl
# This lesson reads files, not a verl function: the next cell says so (or prints one skip line without verl).

# %% tags=["nbval-ignore-output"]
from verlstudy.lessons.l08_dependency_stack.upstream import upstream_check

upstream_check()

# %% [markdown]
# ## Takeaways
# - Write a stack down as data; an upgrade is then a diff you can read (added, removed, changed, tag vs branch).
# - Read the real files, not the PR description: #7604's images clone TransformerEngineNPU, MindSpeed-Ops and
#   MindSpeed-Bridge with no ref at all, and its install script still pins `transformers==5.10.4`.
# - A pin is a tag, a branch, a commit or nothing; which one depends on the repository, not on its spelling. A
#   release branch where a tag exists (Megatron-LM `core_r0.18.0`) is a policy question; #7827 chose the tag.
# - `0.25.0+cpu` beside `0.25.0` is the x86_64 CPU wheel of the same version, not drift. The pre-#7604 image and
#   script agree on vllm, vllm-ascend, MindSpeed and Megatron-LM, but not on transformers: the image builds commit
#   `cc7ab9be` (pinned since verl's Qwen3.5 NPU image, #5991; #7604 removed it), the script installs 5.10.4 from
#   PyPI. Compare pins by the package they install, not by repository key, or such a pair is never compared. Both
#   files leave mbridge unversioned.
# - Generate the pins from one manifest; the check then guards the generator, not every hand edit.
# - Drift happens upstream too: #7345's workflow asked for `core_r0.18.0` inside an image built at `core_r0.16.0`,
#   until #7492 reverted it.
#
# ## Open questions
# - Which Megatron did #7345's e2e job import, the image's or the clone's? What would you add to the workflow to
#   make it print the answer?
# - Pinning the floating clones to one recipe's commits freezes a set someone ran together. When should a CI
#   image move them, and what test would tell you it is safe?
# - A tag can be deleted and re-pushed. Is a commit hash the only pin that cannot move, and what does it cost?

# %% [markdown]
# ## Sources
# - [#7604](https://github.com/verl-project/verl/pull/7604), titled "[megatron, ci] chore: upgrade Ascend stack to
#   Megatron 0.18.0". [#7827](https://github.com/verl-project/verl/pull/7827), titled "[megatron, ci] fix:
#   configure Megatron integration in Ascend images and tests": its description first loads `megatron_adaptor` by
#   default in the A2/A3 images and NPU unit tests through `VERL_USE_EXTERNAL_MODULES` (lesson 06; the post-#7827
#   image sets `ENV VERL_USE_EXTERNAL_MODULES=megatron_adaptor` before its final `CMD`), then, in its second paragraph, says
#   "Correct the `Megatron-LM` ref to `core_v0.18.0`".
# - Before #7604: `docker/ascend/Dockerfile.ascend_9.1.0_a2` at verl ead7f6c51 (#7338) and
#   `scripts/install_vllm_mcore_npu.sh` at verl 5ba5f2f51 (#7404). The image's transformers commit
#   `cc7ab9be508ce6ed3637bba9e50367b29b742dc6` first appears in verl's Ascend Dockerfiles with
#   [#5991](https://github.com/verl-project/verl/pull/5991) (2026-04-14, "qwen3.5 add npu docker file"); verl's
#   Ascend install guide at 5ba5f2f51 (`docs/ascend_tutorial/get_start/install_guidance.rst`) lists transformers
#   5.10.4, as the script does.
# - After #7604: the same two files at wwj-git-rgb/verl 3d36367e83 (a fork whose files are post-#7604 and
#   pre-#7827: Megatron-LM still `core_r0.18.0`); after #7827: the image at yellowbee686/verl 6fc912f07d (a fork).
#   Rewritten with the same pins in `data/stacks/after_upgrade/` and `after_fix/`.
# - [#7345](https://github.com/verl-project/verl/pull/7345) "[ci] chore: Fix npu nightly ci", merged as verl
#   060bebc56 (2026-08-12): `.github/workflows/e2e_ppo_trainer_megatron_sglang_ascend.yml` gains a step cloning
#   Megatron-LM and MindSpeed `--branch core_r0.18.0` in both jobs, which run in the CANN 8.5.0 SGLang image;
#   `docker/ascend/Dockerfile.ascend.sglang_8.5.0_a3` at that commit checks MindSpeed out at `core_r0.16.0` and
#   installs Megatron-LM `@core_r0.16.0` (and every 9.1.0 image stays on `core_r0.16.0`). On the PR's branch, commits
#   1b0be36f5 (MindSpeed and Megatron-LM to `core_r0.18.0` in both 9.1.0 images) and 49d3564f0 (reverting them) did
#   not reach the merge. [#7492](https://github.com/verl-project/verl/pull/7492) "[ci] fix: revert megatron version
#   on ascend ci", merged as e78efedbe (2026-08-20), removes the step. Read in a mirror of verl-project/verl;
#   rewritten in `data/stacks/after_7345/`.
# - What the components are: Megatron-LM is NVIDIA's training library and MindSpeed the Ascend library that runs it
#   on NPUs; vllm and vllm-ascend generate the [rollout](00_start_here.ipynb#rollout)s. #7604 adds MegatronAdaptor
#   (the `megatron_adaptor` package that patches Megatron for Ascend, lesson 06), TransformerEngineNPU (an NPU port
#   of NVIDIA's Transformer Engine, the fused-kernel library Megatron's layers call), MindSpeed-Ops (Ascend's custom
#   training operators), MindSpeed-Bridge (Ascend's adaptations of model bridges) and Megatron-Bridge (NVIDIA NeMo's
#   Hugging Face <-> Megatron weight converter, lesson 05), which replaces *mbridge*: verl's `megatron.yaml` calls
#   `vanilla_mbridge` "the deprecated legacy mbridge backend".
# - `vanilla_mbridge`: verl's default is `False` in 0.9.0 and 0.9.1 (`verl/trainer/config/engine/megatron.yaml`,
#   "Whether to use the deprecated legacy mbridge backend instead of Megatron-Bridge"); #7604 switched the NPU
#   scripts that passed `vanilla_mbridge=True` (for example `tests/special_npu/nightly_ci_ascend/*.sh` at ead7f6c51).
# - Megatron-LM's refs (`git ls-remote` of NVIDIA/Megatron-LM, in a mirror): `refs/heads/core_r0.18.0` (dc0ee41), a
#   branch, and `refs/tags/core_v0.18.0` (ba7b5eb), a tag.
# - Megatron-LM's release names in verl 0.9.1: `verl/trainer/constants_ppo.py` links `blob/core_v0.18.0/...` (the
#   tag); `verl/models/mcore/model_forward_1f1b_overlap.py` links `blob/core_r0.14.0/...` (a release branch).
# - What the components are: MegatronAdaptor and TransformerEngineNPU as the closed
#   [#7142](https://github.com/verl-project/verl/pull/7142) describes its "MegatronAdaptor + TransformerEngine-NPU
#   stack"; MindSpeed-Ops and MindSpeed-Bridge from their repositories' own descriptions (gitcode.com/Ascend, as
#   the course read them; not re-checked);
#   Megatron-Bridge as lesson 05 reads it.
# - The pinning commits of the fix: the GLM-5.2 recipe header of #7836, as lesson 05 records it.

# %%
claims_table()
