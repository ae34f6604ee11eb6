# %% [markdown]
# # 08 · A dependency-stack upgrade as data: manifests, diffs, drift
#
# Upstream: [verl PR #7604](https://github.com/verl-project/verl/pull/7604), "upgrade Ascend stack to
# Megatron 0.18.0", and the correction that followed it in
# [verl PR #7827](https://github.com/verl-project/verl/pull/7827).
#
# #7604 moved the Ascend A2/A3 images from Megatron `core_r0.16.0` to Megatron 0.18: it installed the Ascend
# adaptor (MegatronAdaptor), TransformerEngineNPU, MindSpeed-Ops, MindSpeed-Bridge and Megatron-Bridge
# `v0.5.0`, switched the NPU scripts away from vanilla mbridge (`vanilla_mbridge=False`) and removed old
# transformers pins. Its description says "MindSpeed and Megatron-LM core_r0.18.0"; #7827 then had to
# "correct the Megatron-LM ref to core_v0.18.0": NVIDIA names its Megatron-LM release *tags* `core_vX.Y.Z`,
# while the Ascend repos keep *branches* `core_rX.Y.Z`. One letter, in every file that pins the ref, and a slip
# that need not fail the build: Megatron-LM has `core_rX.Y.Z` release *branches* too (verl 0.9.1's
# `verl/models/mcore/model_forward_1f1b_overlap.py` links to `blob/core_r0.14.0`), and a branch can move on
# after the release it was cut for. Only a check that knows each repository's scheme catches it.
#
# **You will learn** to write a stack as a manifest (data, not prose), to diff two manifests (added, removed,
# changed, tag vs branch), to parse the refs that Dockerfiles, install scripts and CI workflows pin, to catch
# the r/v naming slip and a pin that disagrees between two files, and to generate every file's pins from one
# manifest so that the checker comes back clean.
#
# **Time:** 30 minutes. **Assumes:** git tags and branches, `pip install name==version`, reading a Dockerfile.
#
# **Upstream files cited** (paths inside verl):
# - `docker/ascend/Dockerfile.ascend_9.1.0_a2` and `..._a3`: the images #7604 upgraded (not in the wheel).
# - `verl/trainer/config/engine/megatron.yaml`: `vanilla_mbridge: False`, "Whether to use the deprecated
#   legacy mbridge backend instead of Megatron-Bridge"; `use_mbridge: True`.
# - `verl/trainer/constants_ppo.py`: cites `https://github.com/NVIDIA/Megatron-LM/blob/core_v0.18.0/...`,
#   Megatron-LM's release tag; `verl/models/mcore/model_forward_1f1b_overlap.py` cites `.../blob/core_r0.14.0/...`,
#   one of its release branches.
#
# - `docker/ascend/Dockerfile.ascend_9.1.0_a2` at ead7f6c51 (#7338) and `scripts/install_vllm_mcore_npu.sh` at
#   5ba5f2f51 (#7404): the image and install script *before* #7604. `data/stacks/before_upgrade/` is the course's
#   rewrite of them with the same pins and shell shapes (python 3.12 base image, `torch==2.10.0+cpu` inside an
#   `if ...; then \`, transformers at a commit, `pip install mbridge` with no version).
# - Upstream PR-branch commit 1b0be36f5 (2026-08-11) put Megatron-LM on `--branch core_r0.18.0` in both 9.1.0
#   images; 49d3564f0 reverted it. The post-#7604 files are not in the course's stored upstream history, so the
#   "after" manifest is the course's reconstruction from #7604/#7827's descriptions, and `data/stacks/hand_edited/`
#   is a fixture the course wrote with planted defects: claims that count them say "fixture self-check".
#
# Facts checked against verl 0.9.1.

# %% tags=["parameters"]
device = "auto"  # "auto" | "cpu" | "cuda" | "npu"
seed = 0

# %%
from collections import Counter

from verlstudy.kit.exercises import check_exercise, exercise_hint
from verlstudy.kit.claims import claim, claims_table, reset_claims
from verlstudy.kit.resources import data_dir
from verlstudy.lessons.l08_dependency_stack.manifests import (
    StackManifest,
    load_manifest,
    manifest_mismatches,
    manifest_pins,
    manifest_problems,
    render_dockerfile,
    render_install_script,
    render_workflow,
    tree_problems,
    upgrade_diff,
)
from verlstudy.common.pins import pins_in_files, pins_table, read_files, ref_drift, ref_findings, unpinned_installs
from verlstudy.common.refs import ref_finding, ref_naming_problem
from verlstudy.kit.devices import pick_device, skip_unless
from verlstudy.kit.params import check_int
from verlstudy.kit.plots import bar_plot
from verlstudy.kit.seeding import seed_everything

dev = pick_device(device)
seed_everything(check_int("seed", seed, minimum=0, maximum=2**32 - 1))
reset_claims()
stacks = data_dir() / "stacks"
# The lesson is about this one upgrade (#7604, then #7827): fixed, not parameters, since every claim is about it.
old_manifest, new_manifest = "ascend_megatron_0.16.toml", "ascend_megatron_0.18.toml"
print(f"running on {dev.type}; manifests: {', '.join(sorted(p.name for p in stacks.glob('*.toml')))}")

# %% [markdown]
# ## The stack as data
# A manifest lists each component once: the repository (or `pypi:` package), the kind of ref (a `tag`, a
# `branch`, a `commit`, or a package `version`) and the ref. Settings the stack implies go in `[settings]`.

# %%
old = load_manifest(stacks / old_manifest)
new = load_manifest(stacks / new_manifest)
for m in (old, new):
    print(f"{m.name}  settings: {dict(m.settings)}")
    for c in m.components:
        print(f"  {c.name:<22} {c.kind:<8} {c.ref:<14} {c.repo}")

# %% [markdown]
# ## The upgrade as a diff
# Matching components by name gives what the upgrade added, removed and changed, including a switch from a
# branch to a tag, which a plain version bump would hide:

# %%
diff = upgrade_diff(old, new)
print(diff.table())
claim("components added", sorted(c.name for c in diff.added)
      == sorted(["MegatronAdaptor", "TransformerEngineNPU", "MindSpeed-Ops", "MindSpeed-Bridge", "Megatron-Bridge"]),
      upstream="#7604: adaptor, TransformerEngineNPU, MindSpeed Ops, MindSpeed Bridge, Megatron Bridge")
claim("the transformers commit pin removed", [c.name for c in diff.removed] == ["transformers"],
      upstream="#7604: obsolete transformer pins removed; Dockerfile.ascend_9.1.0_a2@ead7f6c51 checks out cc7ab9be")
megatron = {ch.name: ch for ch in diff.changed}["Megatron-LM"]
claim("Megatron-LM moves from a branch to a tag", (megatron.old.kind, megatron.new.kind) == ("branch", "tag"),
      upstream="#7827: Megatron-LM ref corrected to core_v0.18.0")
claim("the new stack sets vanilla_mbridge=False", diff.settings == (("vanilla_mbridge", True, False),),
      upstream="verl 0.9.1 engine/megatron.yaml: vanilla_mbridge: False")

# %% [markdown]
# ### Predict first: exercise 8.1
# Megatron-LM moved from `core_r0.16.0` to `core_v0.18.0`, and #7827 had to fix exactly that letter. Before
# the checks below report on real files, write the fix yourself. **8.1** Write `fix_ref(repo, ref)`: when
# `ref` breaks the repository's naming scheme because `core_r` and `core_v` were swapped, return the
# corrected ref; otherwise return `ref` unchanged (a repository without a scheme, a commit hash, a ref that
# already fits, or one whose swap would still break the scheme). `ref_naming_problem(repo, ref)` tells you
# whether a ref fits. A wrong answer's message names the mistake; from the third wrong try the checker adds
# the method, and `exercise_hint("8.1")` prints it on request.

# %% tags=["solution", "exercise-8.1"]
def fix_ref(repo: str, ref: str) -> str:
    """`ref` with core_r/core_v swapped if that is what breaks `repo`'s naming scheme, else `ref`."""
    if ref_naming_problem(repo, ref) is None:
        return ref
    for wrong, right in (("core_r", "core_v"), ("core_v", "core_r")):
        if ref.startswith(wrong) and ref_naming_problem(repo, right + ref[len(wrong):]) is None:
            return right + ref[len(wrong):]
    return ref


# %% tags=["checker", "exercise-8.1"]
check_exercise("8.1", fix_ref)

# %% [markdown]
# ## Before the upgrade: the real files already drifted
# `data/stacks/before_upgrade/` is the course's rewrite of upstream's pre-#7604 image and install script (cited
# above). Parsing them needs two shell shapes the real files use: a pin after `if ...; then \` on a continued
# line, and an empty line inside a continued `RUN` (Docker skips it). The image is the old manifest's source, so
# what the parser finds beyond it is the install script disagreeing with the image:

# %%
before_files = read_files(stacks / "before_upgrade")
before = pins_in_files(before_files)
print(pins_table(before))
before_drift = ref_drift(before)
print("\n".join(d.describe() for d in before_drift))
claim("pre-#7604 files: the one repository pinned two ways is torchvision (0.25.0 vs 0.25.0+cpu)",
      [(d.repo, d.refs) for d in before_drift] == [("pypi:torchvision", ("0.25.0", "0.25.0+cpu"))],
      upstream="install_vllm_mcore_npu.sh@5ba5f2f51: torchvision==0.25.0; Dockerfile.ascend_9.1.0_a2@ead7f6c51: 0.25.0+cpu")
claim("the image pins torch 2.10.0+cpu only inside `if ...; then \\`",
      [p.ref for p in before if p.repo == "pypi:torch"] == ["2.10.0+cpu"],
      upstream="Dockerfile.ascend_9.1.0_a2@ead7f6c51")
claim("the script installs transformers 5.10.4 from PyPI; the image builds a git commit",
      {p.ref for p in before if p.repo == "pypi:transformers"} == {"5.10.4"}
      and [p.ref[:8] for p in before if p.repo == "huggingface/transformers"] == ["cc7ab9be"],
      upstream="install_vllm_mcore_npu.sh@5ba5f2f51 and Dockerfile.ascend_9.1.0_a2@ead7f6c51")
print("\n".join(manifest_mismatches(before, old)))
claim("install-script pins that disagree with the image (old manifest) or are not in it", len(manifest_mismatches(before, old)),
      expected=6)
unpinned = sorted({p.file for p in unpinned_installs(before_files) if p.repo == "pypi:mbridge"})
claim("both pre-#7604 files install mbridge with no version", unpinned == sorted(before_files),
      upstream="Dockerfile.ascend_9.1.0_a2@ead7f6c51 and install_vllm_mcore_npu.sh@5ba5f2f51: pip install mbridge")

# %% [markdown]
# Megatron-LM's `core_r0.16.0` is not a slip: it is a real release branch. A branch can move after the release;
# the tag `core_v0.16.0` cannot. Preferring the tag is the course's advice, so the checker reports it as a
# separate `policy` finding, not a `naming` error:

# %%
before_findings = ref_findings(before)
print("\n".join(before_findings))
claim("pre-#7604 files: ref findings are policy only (Megatron-LM's branch, in both files)",
      len(before_findings) == 2 and all(": policy: megatron-lm ref 'core_r0.16.0'" in f for f in before_findings))

# %% [markdown]
# ## Symptom: the same upgrade, edited by hand in four files
# `data/stacks/hand_edited/` is the course's fixture, with planted defects, of the upgrade as it looks when each
# file is edited separately: two image Dockerfiles, an install script and a CI workflow (its Megatron-LM
# `--branch core_r0.18.0` has the shape of upstream PR-branch commit 1b0be36f5). `verlstudy.common.pins` finds every pin in them
# (`git clone --branch`, `git checkout`, `pip install name==v`, `pip install git+URL@ref`, `actions/checkout`
# with `repository`/`ref`), following `ARG`s, shell variables and workflow `env:` blocks:

# %%
hand_files = read_files(stacks / "hand_edited")
hand = pins_in_files(hand_files)
print(pins_table(hand))

# %% [markdown]
# Why drift is likely: each fact is written down many times. Megatron-LM's ref alone appears in every file.

# %%
places = dict(Counter(p.repo.split("/")[-1] for p in hand))
bar_plot(places, title="places that pin each component (hand-edited files)", ylabel="pins")
claim("fixture self-check: places that pin Megatron-LM", places["megatron-lm"], expected=len(hand_files))

# %% [markdown]
# ## Reproduce: the r/v trap and a pin that disagrees
# The naming rule knows each repository's scheme: Megatron-LM release tags `core_vX.Y.Z`, the Ascend repos'
# branches `core_rX.Y.Z`, Megatron-Bridge tags `vX.Y.Z`; a commit hash always passes. Megatron-LM's own
# `core_rX.Y.Z` branches exist, so pinning one is a `policy` finding; a ref that fits no scheme (MindSpeed
# `core_v0.18.0`) is a `naming` one. The drift check groups pins by repository (host and case ignored) and
# reports every repository pinned to more than one ref.

# %%
problems = ref_findings(hand)
print("\n".join(problems))
drifts = ref_drift(hand)
print("\n".join(d.describe() for d in drifts))
claim("Megatron-LM core_r0.18.0 is a policy finding, with the tag core_v0.18.0 suggested",
      ref_finding("NVIDIA/Megatron-LM", "core_r0.18.0").kind == "policy"
      and "prefer the tag 'core_v0.18.0'" in ref_finding("NVIDIA/Megatron-LM", "core_r0.18.0").message,
      upstream="#7604 wrote core_r0.18.0; #7827 corrected it to core_v0.18.0")
claim("fixture self-check: policy and naming findings in the hand-edited files",
      (len(ref_findings(hand, "policy")), len(ref_findings(hand, "naming"))) == (3, 1))
claim("fixture self-check: repositories pinned two ways", sorted(d.repo for d in drifts)
      == ["ascend/mindspeed", "nvidia-nemo/megatron-bridge", "nvidia/megatron-lm"])

# %% [markdown]
# ## Root cause: no single source of truth
# Every one of those pins restates something the manifest already says. Compared with the manifest, the
# hand-edited files disagree in these places:

# %%
mismatches = manifest_mismatches(hand, new)
print("\n".join(mismatches))
claim("fixture self-check: hand-edited pins that disagree with the manifest", len(mismatches), expected=5)
print(manifest_problems(old))
claim("the old manifest's one finding is the policy one on Megatron-LM's branch", len(manifest_problems(old)) == 1
      and manifest_problems(old)[0].startswith("Megatron-LM: policy:") and manifest_problems(new) == [])

# %% [markdown]
# ## Fix: generate the pins from the manifest
# Write the refs once, in the manifest, and generate what every file pins: the Dockerfile gets one `ARG` per
# component, the workflow one job-level `env:` entry, the install script the refs themselves. Changing a ref
# is then a one-line change to the manifest, and the files cannot disagree.

# %%
generated = {
    "Dockerfile.ascend_a2": render_dockerfile(new, base_image="swr.cn-south-1.myhuaweicloud.com/ascendhub/cann:9.1.0-910b-ubuntu22.04-py3.12"),
    "Dockerfile.ascend_a3": render_dockerfile(new, base_image="swr.cn-south-1.myhuaweicloud.com/ascendhub/cann:9.1.0-a3-ubuntu22.04-py3.12"),
    "install_npu.sh": render_install_script(new),
    "npu_e2e.yml": render_workflow(new, job="e2e_ppo_megatron"),
}
print("\n".join(generated["Dockerfile.ascend_a3"].splitlines()[:8]) + "\n...")
gen = pins_in_files(generated)
claim("every generated file pins exactly the manifest", all(
    {(p.repo, p.ref) for p in gen if p.file == name} == manifest_pins(new) for name in generated))
claim("drift, ref findings and mismatches after generating", len(ref_drift(gen)) + len(ref_findings(gen))
      + len(manifest_mismatches(gen, new)), expected=0)

# %% [markdown]
# ## Guard: one check for CI
# The check a CI job would run over the real tree: every pin must match the manifest, follow its repository's
# naming scheme, and agree with every other pin. A CI job fails when the list is not empty: it is not empty
# for the hand-edited files, and empty for the generated ones.

# %%
hand_found = tree_problems(hand_files, new)
print(f"hand-edited files: {len(hand_found)} problems, first: {hand_found[0]}")
claim("fixture self-check: the CI check's findings on the hand-edited files", len(hand_found),
      expected=len(mismatches) + len(problems) + len(drifts))
claim("the CI check is clean on the generated files", tree_problems(generated, new) == [])

# %% [markdown]
# ## Exercises
# **8.1** came earlier, before the checks that answer it. **8.2** Write `pip_line(manifest)`: one shell
# command, `pip install ...`, that pins every component of a manifest: `name==version` for a `pypi:`
# package, `git+URL@ref` for a git repository. The checker parses your command back with
# `verlstudy.common.pins` and compares it with both manifests.

# %% tags=["solution", "exercise-8.2"]
def pip_line(manifest: StackManifest) -> str:
    """`pip install` with a pin for each component of `manifest`."""
    args = [f"{c.repo[len('pypi:'):]}=={c.ref}" if c.is_pypi else f"git+{c.repo}@{c.ref}" for c in manifest.components]
    return "pip install " + " ".join(args)


# %% tags=["checker", "exercise-8.2"]
check_exercise("8.2", pip_line, [old, new])

# %% [markdown]
# ## On an Ascend machine
# With an NPU, compare what is installed with the manifest's PyPI pins.

# %% tags=["npu"]
if skip_unless("npu"):
    from importlib.metadata import PackageNotFoundError, version

    for c in (c for c in new.components if c.is_pypi):
        try:
            have = version(c.repo[len("pypi:"):])
        except PackageNotFoundError:
            have = "not installed"
        print(f"{c.name}: manifest {c.ref}, installed {have}")

# %% [markdown]
# ## Checked against upstream verl
# The helpers here re-implement upstream code in small form, so they can drift from it as verl moves. When
# the `verl` package is installed (`make setup` installs it without its heavy dependencies), the next cell
# loads upstream's own function from verl's source and compares it with ours on generated inputs, or says
# why this lesson has no single function to compare. A disagreement stops the notebook here; without verl
# the cell prints a one-line skip. `verlstudy verify-upstream` runs every lesson's comparison at once.

# %% tags=["nbval-ignore-output"]
from verlstudy.lessons.l08_dependency_stack.upstream import upstream_check

upstream_check()

# %% [markdown]
# ## Takeaways
# - Write a stack down as data; an upgrade is then a diff you can read (added, removed, changed, tag vs branch).
# - A ref copied into several files will drift, and a one-letter slip (`core_r` vs `core_v`) follows the
#   copies; parse the files and check them: naming scheme, agreement, manifest. Even upstream's pre-#7604
#   image and install script disagreed (torchvision `0.25.0+cpu` vs `0.25.0`) and left mbridge unpinned.
# - A real release branch where a tag exists (Megatron-LM `core_r0.16.0`) is a policy finding (the course's
#   advice: prefer the tag), kept apart from naming slips.
# - Generate the pins from one manifest; the check then guards the generator, not every hand edit.

# %%
claims_table()
