"""verlstudy.deps: finding pins in Dockerfile / shell / workflow text, drift, naming, manifests, diffs."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verlstudy.common.pins import (
    env_settings,
    file_kind,
    image_env_settings,
    naming_problems,
    parse_pins,
    pins_in_files,
    pins_table,
    read_files,
    ref_drift,
    ref_findings,
    unpinned_installs,
)
from verlstudy.common.refs import Drift, Pin, ref_naming_problem, repo_key
from verlstudy.course.registry import project_root
from verlstudy.lessons.l08_dependency_stack.manifests import (
    Component,
    StackManifest,
    load_manifest,
    manifest_mismatches,
    manifest_pins,
    manifest_problems,
    parse_manifest,
    pin_components,
    render_dockerfile,
    render_install_script,
    render_workflow,
    tree_problems,
    upgrade_diff,
)
from verlstudy.lessons.l08_dependency_stack.real_files import (
    Clone,
    component_drift,
    component_name,
    side_by_side,
    split_drift,
    unpinned_clones,
)

DATA = project_root() / "data"
MINDSPEED = "https://gitcode.com/Ascend/MindSpeed.git"
MEGATRON = "https://github.com/NVIDIA/Megatron-LM.git"


def refs(text: str, kind: str = "shell") -> list[tuple[str, str, str]]:
    return [(p.repo, p.ref, p.via) for p in parse_pins(text, kind)]


# ---------------------------------------------------------------- repo identity


@pytest.mark.parametrize(
    ("given_repo", "key"),
    [
        ("https://github.com/NVIDIA/Megatron-LM.git", "nvidia/megatron-lm"),
        ("https://gitcode.com/Ascend/MindSpeed", "ascend/mindspeed"),
        ("git@github.com:Ascend/MindSpeed.git", "ascend/mindspeed"),
        ("git+ssh://git@github.com/NVIDIA/Megatron-LM.git", "nvidia/megatron-lm"),
        ("Ascend/MindSpeed", "ascend/mindspeed"),
        ("Megatron-LM", "megatron-lm"),
        ("pypi:Torch_NPU", "pypi:torch-npu"),
    ],
)
def test_repo_key_ignores_host_scheme_case_and_dot_git(given_repo, key):
    assert repo_key(given_repo) == key


@pytest.mark.parametrize("bad", ["", "   ", None, 3])
def test_repo_key_rejects_non_strings(bad):
    with pytest.raises(TypeError, match="repo must be"):
        repo_key(bad)


# ---------------------------------------------------------------- naming rule


def test_a_name_the_repository_never_uses_is_caught_with_the_fix_suggested():
    mindspeed = ref_naming_problem("Ascend/MindSpeed", "core_v0.18.0")
    assert mindspeed is not None and "did you mean 'core_r0.18.0'" in mindspeed


def test_megatron_lms_release_branch_is_a_policy_question_not_a_naming_slip():
    from verlstudy.common.refs import ref_finding

    assert ref_naming_problem(MEGATRON, "core_r0.18.0") is None
    assert ref_naming_problem(MEGATRON, "core_r0.18.0", "branch") is None
    assert ref_naming_problem(MEGATRON, "core_r0.18.0", "tag") is not None  # recorded as a tag: that is a slip
    finding = ref_finding(MEGATRON, "core_r0.18.0")
    assert finding is not None and finding.kind == "policy" and "prefer the tag 'core_v0.18.0'" in finding.message


@pytest.mark.parametrize(
    ("repo", "ref", "kind"),
    [
        (MEGATRON, "core_v0.18.0", None),
        (MEGATRON, "core_v0.15.0rc4", None),
        (MEGATRON, "core_v0.18.0", "tag"),
        ("Ascend/MindSpeed", "core_r0.18.0", "branch"),
        ("Ascend/MegatronAdaptor", "core_r0.18.0", None),
        ("NVIDIA-NeMo/Megatron-Bridge", "v0.5.0", "tag"),
        ("vllm-project/vllm", "releases/v0.23.0", "branch"),  # no scheme: not judged
        (MEGATRON, "ba7b5ebce12af60627a80985792a1449ce45f46c", None),  # a commit is the strictest pin
        (MEGATRON, "anything", "commit"),
    ],
)
def test_refs_that_fit_pass(repo, ref, kind):
    assert ref_naming_problem(repo, ref, kind) is None


def test_a_fitting_name_recorded_as_the_wrong_kind_is_flagged():
    problem = ref_naming_problem(MEGATRON, "core_v0.18.0", "branch")
    assert problem is not None and "recorded as a branch" in problem


def test_a_ref_without_an_r_v_counterpart_gets_no_suggestion():
    problem = ref_naming_problem(MEGATRON, "main")
    assert problem is not None and "did you mean" not in problem


def test_naming_rule_rejects_bad_arguments():
    with pytest.raises(TypeError, match="ref must be"):
        ref_naming_problem(MEGATRON, "")
    with pytest.raises(ValueError, match="kind='label'"):
        ref_naming_problem(MEGATRON, "core_v0.18.0", "label")


# ---------------------------------------------------------------- shell parsing


def test_git_clone_branch_forms_and_quotes():
    text = (
        f"git clone --depth 1 --branch core_v0.18.0 {MEGATRON}\n"
        "git clone -b 'core_r0.18.0' https://gitcode.com/Ascend/MindSpeed.git ms\n"
        'git clone --branch="v0.5.0" https://github.com/NVIDIA-NeMo/Megatron-Bridge\n'
        "git clone --filter blob:none https://gitcode.com/Ascend/MegatronAdaptor.git\n"  # no ref: not a pin
    )
    assert refs(text) == [
        ("nvidia/megatron-lm", "core_v0.18.0", "git clone --branch"),
        ("ascend/mindspeed", "core_r0.18.0", "git clone --branch"),
        ("nvidia-nemo/megatron-bridge", "v0.5.0", "git clone --branch"),
    ]


def test_checkout_after_clone_replaces_the_clone_ref_and_follows_cd_and_dash_c():
    text = (
        "git clone -b main https://gitcode.com/Ascend/MindSpeed.git\n"
        "cd MindSpeed && git checkout core_r0.18.0\n"
        "cd ..\n"
        "git clone https://gitcode.com/Ascend/MegatronAdaptor.git ma; git -C ma checkout 1881e01\n"
        "git checkout -- README.md\n"  # restores a file: pins nothing
    )
    assert refs(text) == [
        ("ascend/mindspeed", "core_r0.18.0", "git checkout"),
        ("ascend/megatronadaptor", "1881e01", "git checkout"),
    ]


def test_checkout_of_a_new_branch_pins_its_start_point_only():
    text = (
        "git clone https://gitcode.com/Ascend/MindSpeed.git && cd MindSpeed\n"
        "git checkout -b local core_r0.18.0\n"
        "git clone https://gitcode.com/Ascend/MegatronAdaptor.git && cd MegatronAdaptor && git checkout -b mine\n"
    )
    assert [(p.repo, p.ref) for p in parse_pins(text, "shell")] == [("ascend/mindspeed", "core_r0.18.0")]


def test_checkout_with_no_clone_before_it_is_not_a_pin():
    assert refs("git checkout v1.2.3\n") == []


def test_pip_pins_git_urls_extras_several_per_line_and_other_specifiers_ignored():
    text = (
        "pip install --no-deps a==1.0 'b[extra]==2.0' \"c>=3\" d "
        '"git+https://github.com/NVIDIA/Megatron-LM.git@core_v0.18.0#egg=megatron-core" && '
        "python3 -m pip install e==5; uv pip install F_G==6 | tee log\n"
        "pip install -e git+ssh://git@github.com/NVIDIA-NeMo/Megatron-Bridge.git@v0.5.0\n"
        "pip install git+https://github.com/x/y.git\n"  # no ref: not a pin
        "pip3 install --resume-retries 999 h==7\n"
    )
    assert [(r, ref) for r, ref, _ in refs(text)] == [
        ("pypi:a", "1.0"),
        ("pypi:b", "2.0"),
        ("nvidia/megatron-lm", "core_v0.18.0"),
        ("pypi:e", "5"),
        ("pypi:f-g", "6"),
        ("nvidia-nemo/megatron-bridge", "v0.5.0"),
        ("pypi:h", "7"),
    ]


def test_comments_are_dropped_but_hash_inside_a_url_is_kept():
    text = (
        "# pip install old==1\n"
        "pip install new==2  # was old==1\n"
        "pip install 'git+https://github.com/a/b.git@v1#egg=b'\n"
        "echo '# not a comment' && pip install q==3\n"
    )
    assert [(r, ref) for r, ref, _ in refs(text)] == [("pypi:new", "2"), ("a/b", "v1"), ("pypi:q", "3")]


def test_line_continuations_join_and_report_the_first_line():
    text = f"set -e\ngit clone --depth 1 \\\n    --branch core_v0.18.0 \\\n    {MEGATRON}\npip install z==1\n"
    pins = parse_pins(text, "shell", "x.sh")
    assert [(p.ref, p.line) for p in pins] == [("core_v0.18.0", 2), ("1", 5)]
    assert pins[0].file == "x.sh"


def test_shell_variables_expand_and_unknown_ones_stay_visible():
    text = (
        "REF=core_v0.18.0\n"
        f'git clone -b "${{REF}}" {MEGATRON}\n'
        f"git clone -b ${{OTHER:-core_v0.17.0}} {MEGATRON} b\n"
        f"git clone -b $MISSING {MEGATRON} c\n"
        "export VERL_USE_EXTERNAL_MODULES=megatron_adaptor\n"
    )
    assert [p.ref for p in parse_pins(text, "shell")] == ["core_v0.18.0", "core_v0.17.0", "$MISSING"]
    [setting] = env_settings(text, "shell", "s.sh")
    assert (setting.name, setting.value, setting.scope, setting.line) == (
        "VERL_USE_EXTERNAL_MODULES",
        "megatron_adaptor",
        "script export",
        5,
    )


def test_unbalanced_quotes_are_a_clear_error():
    with pytest.raises(ValueError, match="cannot split shell text"):
        parse_pins("pip install 'a==1\n", "shell")


# ---------------------------------------------------------------- Dockerfile and workflow


def test_dockerfile_args_env_run_continuations_and_comment_lines():
    text = (
        "FROM ubuntu:22.04\n"
        "ARG MEGATRON_REF=core_v0.18.0\n"
        "ARG UNSET\n"
        "RUN git clone --branch ${MEGATRON_REF} " + MEGATRON + " \\\n"
        "    # a comment line inside the instruction is dropped by Docker\n"
        "    && pip install x==1\n"
        'RUN ["pip", "install", "y==2"]\n'
        "ENV VERL_USE_EXTERNAL_MODULES=megatron_adaptor OTHER=1\n"
        "ENV LEGACY value with spaces\n"
        "ENV A=1 stray\n"
    )
    assert [(p.ref, p.line) for p in parse_pins(text, "dockerfile")] == [("core_v0.18.0", 4), ("1", 4), ("2", 7)]
    settings_ = env_settings(text, "dockerfile", "D")
    assert [(s.name, s.value, s.scope, s.line) for s in settings_] == [
        ("VERL_USE_EXTERNAL_MODULES", "megatron_adaptor", "image", 8),
        ("OTHER", "1", "image", 8),
        ("LEGACY", "value with spaces", "image", 9),
        ("A", "1", "image", 10),
    ]


WORKFLOW = """\
name: t
env:
  MEGATRON_REF: core_v0.18.0
jobs:
  unit:
    env:
      VERL_USE_EXTERNAL_MODULES: megatron_adaptor
    steps:
      - uses: actions/checkout@v4
      - uses: actions/checkout@v4
        with:
          repository: Ascend/MindSpeed
          ref: core_r0.18.0
      - name: install
        env:
          BRIDGE: v0.5.0
        run: |
          pip install a==1
          git clone -b "$MEGATRON_REF" https://github.com/NVIDIA/Megatron-LM.git
          pip install git+https://github.com/NVIDIA-NeMo/Megatron-Bridge.git@${BRIDGE}
      - run: pip install b==2
"""


def test_workflow_scopes_checkout_action_and_run_blocks_with_line_numbers():
    pins = parse_pins(WORKFLOW, "workflow", "w.yml")
    assert [(p.repo, p.ref, p.via, p.line) for p in pins] == [
        ("ascend/mindspeed", "core_r0.18.0", "actions/checkout", 13),
        ("pypi:a", "1", "pip ==", 18),
        ("nvidia/megatron-lm", "core_v0.18.0", "git clone --branch", 19),
        ("nvidia-nemo/megatron-bridge", "v0.5.0", "pip git+", 20),
        ("pypi:b", "2", "pip ==", 21),
    ]
    scopes = [(s.name, s.scope) for s in env_settings(WORKFLOW, "workflow", "w.yml")]
    assert scopes == [
        ("MEGATRON_REF", "workflow"),
        ("VERL_USE_EXTERNAL_MODULES", "job unit"),
        ("BRIDGE", "step install"),
    ]


def test_invalid_workflow_yaml_and_unknown_kinds_are_clear_errors():
    with pytest.raises(ValueError, match="not valid YAML"):
        parse_pins("jobs: [unclosed\n", "workflow", "w.yml")
    with pytest.raises(ValueError, match="kind='makefile'"):
        parse_pins("", "makefile")
    with pytest.raises(TypeError, match="text must be"):
        parse_pins(b"pip install a==1", "shell")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("Dockerfile", "dockerfile"),
        ("docker/Dockerfile.ascend_a3", "dockerfile"),
        ("base.dockerfile", "dockerfile"),
        ("install.sh", "shell"),
        (".github/workflows/npu.yml", "workflow"),
        ("ci.yaml", "workflow"),
    ],
)
def test_file_kind_from_name(name, kind):
    assert file_kind(name) == kind


def test_file_kind_unknown_is_a_clear_error():
    with pytest.raises(ValueError, match=r"Dockerfile\*, \*.sh or \*.yml"):
        file_kind("README.md")


# ---------------------------------------------------------------- drift


def test_no_drift_when_every_place_agrees():
    files = {
        "install.sh": f"git clone -b core_v0.18.0 {MEGATRON}\n",
        "Dockerfile": f"RUN git clone -b core_v0.18.0 {MEGATRON}\n",
    }
    assert ref_drift(files) == []


def test_drift_across_files_names_every_place():
    files = {
        "Dockerfile.a3": f"ARG R=core_v0.18.0\nRUN git clone -b ${{R}} {MEGATRON}\n",
        "install.sh": f"git clone -b core_r0.18.0 {MEGATRON}\n",
    }
    [drift] = ref_drift(files)
    assert drift.repo == "nvidia/megatron-lm"
    assert drift.refs == ("core_r0.18.0", "core_v0.18.0")
    assert drift.describe() == (
        "nvidia/megatron-lm is pinned 2 ways: core_r0.18.0 at install.sh:1; core_v0.18.0 at Dockerfile.a3:2"
    )


def test_drift_within_one_file_and_from_pins():
    pins = [Pin("pypi:x", "1", "pip ==", "a.sh", 1), Pin("pypi:x", "2", "pip ==", "a.sh", 5)]
    assert ref_drift(pins) == [Drift("pypi:x", (("1", "a.sh", 1), ("2", "a.sh", 5)))]


def test_drift_rejects_bad_input():
    with pytest.raises(ValueError, match="non-empty mapping"):
        ref_drift({})
    with pytest.raises(TypeError, match="iterable of Pin"):
        ref_drift([("pypi:x", "1")])  # type: ignore[list-item]


def test_lesson_06_fixtures_drift_only_on_megatron_and_set_the_variable_in_image_and_job():
    files = read_files(DATA / "deps")
    assert sorted(files) == ["Dockerfile.ascend_a3", "install_npu.sh", "npu_unit_tests.yml"]
    [drift] = ref_drift(files)
    assert drift.repo == "nvidia/megatron-lm" and drift.refs == ("core_r0.18.0", "core_v0.18.0")
    scopes = {
        s.scope
        for name, text in files.items()
        for s in env_settings(text, file_kind(name), name)
        if s.name == "VERL_USE_EXTERNAL_MODULES"
    }
    assert scopes == {"image", "job npu_unit_tests"}


def test_read_files_rejects_a_missing_folder(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        read_files(tmp_path / "nope")


def test_pins_table_and_naming_problems_have_locations():
    pins = parse_pins(f"git clone -b core_r0.18.0 {MEGATRON}\ngit clone -b core_v0.18.0 {MINDSPEED}\n", "shell", "i.sh")
    table = pins_table(pins)
    assert table.header == ("repo", "ref", "pinned by", "where")
    assert table.rows[0] == ("nvidia/megatron-lm", "core_r0.18.0", "git clone --branch", "i.sh:1")
    assert table.text().splitlines()[2] == "| nvidia/megatron-lm | core_r0.18.0 | git clone --branch | i.sh:1 |"
    [problem] = naming_problems(pins)  # Megatron-LM's release branch is policy, not naming
    assert problem.startswith("i.sh:2: mindspeed ref 'core_v0.18.0'")


# ---------------------------------------------------------------- manifests and the upgrade diff


def _manifest(*components: tuple[str, str, str, str], settings_: str = "") -> str:
    body = [f'name = "m"\n{settings_}']
    for name, repo, kind, ref in components:
        body.append(f'[[component]]\nname = "{name}"\nrepo = "{repo}"\nkind = "{kind}"\nref = "{ref}"\n')
    return "\n".join(body)


def test_fixture_upgrade_diff_matches_the_pr():
    old = load_manifest(DATA / "stacks" / "ascend_megatron_0.16.toml")
    new = load_manifest(DATA / "stacks" / "ascend_megatron_0.18.toml")
    diff = upgrade_diff(old, new)
    assert [c.name for c in diff.added] == [
        "MegatronAdaptor",
        "TransformerEngineNPU",
        "MindSpeed-Ops",
        "MindSpeed-Bridge",
        "Megatron-Bridge",
    ]
    # mbridge was never pinned (pip install mbridge); the "Install others" line with flash-linear-attention is gone
    assert [c.name for c in diff.removed] == ["transformers", "flash-linear-attention"]
    changes = {ch.name: ch.what for ch in diff.changed}
    assert changes == {
        "Megatron-LM": "ref core_r0.16.0 -> core_v0.18.0, branch -> tag",
        "MindSpeed": "ref core_r0.16.0 -> core_r0.18.0",
    }
    assert diff.unchanged == ("vllm", "vllm-ascend", "torch", "torchvision", "setuptools")
    assert diff.settings == (("vanilla_mbridge", True, False),)
    table = diff.table()
    assert table.header == ("change", "component", "before", "after")
    assert ("changed", "Megatron-LM", "branch core_r0.16.0", "tag core_v0.18.0") in table.rows
    assert table.rows[-1] == ("setting", "vanilla_mbridge", "true", "false")
    assert "| setting | vanilla_mbridge | true | false |" in table.text()
    assert [p.split(": ")[1] for p in manifest_problems(new)] == ["unpinned"] * 3
    [policy] = manifest_problems(old)
    assert policy.startswith("Megatron-LM: policy:") and "prefer the tag 'core_v0.16.0'" in policy


def test_diff_of_a_manifest_with_itself_is_empty_and_repo_moves_show():
    m = parse_manifest(_manifest(("A", "https://h/o/a.git", "tag", "v1")))
    moved = parse_manifest(_manifest(("A", "https://h/fork/a.git", "tag", "v1")))
    same = upgrade_diff(m, m)
    assert (same.added, same.removed, same.changed, same.settings) == ((), (), (), ())
    assert upgrade_diff(m, moved).changed[0].what == "repo o/a -> fork/a"
    with pytest.raises(TypeError, match="old must be a StackManifest"):
        upgrade_diff({}, m)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name = 1\n", "top-level string `name`"),
        ('name = "m"\n', "at least one \\[\\[component\\]\\]"),
        ("name = [\n", "not valid TOML"),
        (_manifest(("A", "https://h/o/a", "label", "x")), "kind='label'"),
        (_manifest(("A", "pypi:a", "tag", "1")), "kind 'version' goes with repo 'pypi:"),
        (_manifest(("A", "https://h/o/a", "version", "1")), "kind 'version' goes with repo 'pypi:"),
        (_manifest(("A", "https://h/o/a", "commit", "main")), "7-40 hex digits"),
        (_manifest(("A", "pypi:a", "version", "1"), ("A", "pypi:b", "version", "2")), "listed twice"),
        ('name = "m"\n[[component]]\nname = "A"\nrepo = "pypi:a"\nkind = "version"\n', "lacks string field"),
        (
            'name = "m"\n[[component]]\nname = "A"\nrepo = "pypi:a"\nkind = "version"\nref = "1"\nurl = "x"\n',
            "unknown field",
        ),
        (
            'name = "m"\nsettings = 3\n' + _manifest(("A", "pypi:a", "version", "1"))[10:],
            "\\[settings\\] must be a table",
        ),
    ],
)
def test_bad_manifests_are_clear_errors(text, message):
    with pytest.raises(ValueError, match=message):
        parse_manifest(text)


def test_load_manifest_wants_toml(tmp_path):
    with pytest.raises(ValueError, match=r"must end in \.toml"):
        load_manifest(tmp_path / "m.yaml")
    with pytest.raises(KeyError, match="no component 'nope'"):
        load_manifest(DATA / "stacks" / "ascend_megatron_0.18.toml").component("nope")


# ---------------------------------------------------------------- one source of truth


def _render_all(m: StackManifest) -> dict[str, str]:
    return {
        "Dockerfile.gen": render_dockerfile(m),
        "install.sh": render_install_script(m),
        "ci.yml": render_workflow(m),
    }


def test_hand_edited_fixture_is_caught_and_the_generated_files_are_clean():
    manifest = load_manifest(DATA / "stacks" / "ascend_megatron_0.18.toml")
    hand = pins_in_files(read_files(DATA / "stacks" / "hand_edited"))
    assert {d.repo for d in ref_drift(hand)} == {
        "nvidia/megatron-lm",
        "ascend/mindspeed",
        "nvidia-nemo/megatron-bridge",
    }
    assert len(naming_problems(hand)) == 1  # MindSpeed core_v: a name it never uses
    assert len(ref_findings(hand, "policy")) == 3  # Megatron-LM core_r branches: real, movable, a policy question
    assert len(manifest_mismatches(hand, manifest)) == 5
    generated = pins_in_files(_render_all(manifest))
    assert {(p.repo, p.ref) for p in generated} == manifest_pins(manifest)
    assert ref_drift(generated) == [] and naming_problems(generated) == []
    assert manifest_mismatches(generated, manifest) == []


def test_before_upgrade_files_carry_the_real_pre_7604_pins_and_drift():
    old = load_manifest(DATA / "stacks" / "ascend_megatron_0.16.toml")
    files = read_files(DATA / "stacks" / "before_upgrade")
    assert sorted(files) == ["Dockerfile.ascend_a2", "install_npu.sh"]
    pins = pins_in_files(files)
    # the image is the old manifest's source: it pins exactly the manifest
    assert {(p.repo, p.ref) for p in pins if p.file == "Dockerfile.ascend_a2"} == manifest_pins(old)
    assert "py3.12" in files["Dockerfile.ascend_a2"] and "ead7f6c51" in files["Dockerfile.ascend_a2"]
    assert "5ba5f2f51" in files["install_npu.sh"]
    [drift] = ref_drift(pins)  # the real one: torchvision without and with +cpu
    assert (drift.repo, drift.refs) == ("pypi:torchvision", ("0.25.0", "0.25.0+cpu"))
    mismatches = manifest_mismatches(pins, old)
    assert len(mismatches) == 6 and all(m.startswith("install_npu.sh:") for m in mismatches)
    assert ref_findings(pins, "naming") == []
    assert len(ref_findings(pins, "policy")) == 2
    assert naming_problems(pins) == []  # the branch is policy everywhere, never a naming slip
    assert {p.file for p in unpinned_installs(files) if p.repo == "pypi:mbridge"} == set(files)


@pytest.mark.parametrize("render", [render_dockerfile, render_install_script, render_workflow, manifest_pins])
def test_renderers_want_a_manifest(render):
    with pytest.raises(TypeError, match="manifest must be a StackManifest"):
        render({"name": "m"})


def test_renderers_reject_bad_names():
    manifest = load_manifest(DATA / "stacks" / "ascend_megatron_0.18.toml")
    with pytest.raises(ValueError, match="base_image must be one image name"):
        render_dockerfile(manifest, base_image="ubuntu 22.04")
    with pytest.raises(ValueError, match="job="):
        render_workflow(manifest, job="two words")


def test_tree_problems_counts_every_kind_of_finding():
    manifest = load_manifest(DATA / "stacks" / "ascend_megatron_0.18.toml")
    found = tree_problems(read_files(DATA / "stacks" / "hand_edited"), manifest)
    assert len(found) == 5 + 4 + 3 + 3  # ... and the manifest's three unpinned clones
    assert len(tree_problems(_render_all(manifest), manifest)) == 3
    commits = {n: "e40ec34036eb7e04ad11b983f8c6b0dc9fcd88f9" for n in ("TransformerEngineNPU", "MindSpeed-Ops")}
    pinned = pin_components(manifest, commits | {"MindSpeed-Bridge": "d82eec3"})
    assert tree_problems(_render_all(pinned), pinned) == []


def test_pin_components_refuses_unknown_names_and_non_hashes():
    manifest = load_manifest(DATA / "stacks" / "ascend_megatron_0.18.toml")
    with pytest.raises(ValueError, match="does not have"):
        pin_components(manifest, {"nope": "abcdef1"})
    with pytest.raises(ValueError, match="hex"):
        pin_components(manifest, {"MindSpeed-Ops": "main"})


def test_unpinned_clones_and_split_drift_on_the_real_files():
    after = read_files(DATA / "stacks" / "after_fix")
    assert sorted(c.repo for c in unpinned_clones(after)) == [
        "ascend/mindspeed-bridge",
        "ascend/mindspeed-ops",
        "ascend/transformerenginenpu",
    ]
    text = "git clone https://x.org/a/Repo.git && cd Repo && git fetch origin abc1234 && git checkout abc1234 && cd .."
    assert unpinned_clones({"f": text}) == []
    assert (
        unpinned_clones({"f": "git clone -b v1 https://x.org/a/b.git\ngit clone --branch=v2 https://x.org/a/c"}) == []
    )
    before = pins_in_files(read_files(DATA / "stacks" / "before_upgrade"))
    real, variants = split_drift(ref_drift(before))
    assert (real, [d.repo for d in variants]) == ([], ["pypi:torchvision"])
    # grouped by the package installed, the image's transformers commit meets the script's PyPI version
    real, variants = split_drift(component_drift(before))
    assert [d.repo for d in real] == ["transformers (huggingface/transformers, pypi:transformers)"]
    assert real[0].refs == ("5.10.4", "cc7ab9be508ce6ed3637bba9e50367b29b742dc6")
    assert [d.repo for d in variants] == ["pypi:torchvision"]
    with pytest.raises(TypeError, match="mapping"):
        unpinned_clones(["not", "a", "mapping"])


def test_an_unpinned_component_has_no_ref():
    text = '[[component]]\nname = "x"\nrepo = "https://g.com/a/x.git"\nkind = "unpinned"\nref = "main"\n'
    with pytest.raises(ValueError, match="no ref"):
        parse_manifest('name = "m"\n' + text)


def test_image_env_settings_finds_only_dockerfile_env():
    files = read_files(DATA / "deps")
    [baked] = image_env_settings(files, "VERL_USE_EXTERNAL_MODULES")
    assert (baked.file, baked.line, baked.value) == ("Dockerfile.ascend_a3", 19, "megatron_adaptor")
    assert image_env_settings({"x.sh": "export V=1\n", "w.yml": "env:\n  V: 1\n"}, "V") == []
    with pytest.raises(TypeError, match="environment variable name"):
        image_env_settings(files, "")


def test_manifest_mismatches_reports_unlisted_repos():
    m = parse_manifest(_manifest(("a", "pypi:a", "version", "1")))
    pins = parse_pins("pip install a==2 b==1\n", "shell", "x.sh")
    assert manifest_mismatches(pins, m) == [
        "x.sh:1: pypi:a at 2, but the manifest says version 1",
        "x.sh:1: pypi:b is pinned here but the manifest does not list it",
    ]


_names = st.text(string.ascii_letters, min_size=1, max_size=8)
_refs = st.text(string.ascii_letters + string.digits + "._-", min_size=1, max_size=12).filter(lambda r: r[0].isalnum())
_component = st.one_of(
    st.builds(lambda n, r: (n, f"pypi:{n}", "version", r), _names, _refs),
    st.builds(
        lambda n, r, k: (n, f"https://github.com/org/{n}.git", k, r), _names, _refs, st.sampled_from(["tag", "branch"])
    ),
    st.builds(
        lambda n, r: (n, f"https://github.com/org/{n}.git", "commit", r),
        _names,
        st.text("0123456789abcdef", min_size=7, max_size=40),
    ),
)


@settings(max_examples=40, deadline=None)
@given(st.lists(_component, min_size=1, max_size=6, unique_by=lambda c: c[0].lower()))
def test_generated_files_round_trip_every_manifest(components):
    m = StackManifest("generated", tuple(Component(*c) for c in components))
    for name, text in _render_all(m).items():
        assert {(p.repo, p.ref) for p in parse_pins(text, file_kind(name), name)} == manifest_pins(m), name


def test_component_drift_merges_a_git_repository_with_the_pypi_package_of_its_name():
    pins = parse_pins("pip install Flash_Linear.Attention==0.5.0 torch==2.10\n", "shell", "a.sh") + parse_pins(
        "git clone --branch v0.4 https://github.com/fla-org/flash-linear-attention.git\n", "shell", "b.sh"
    )
    assert component_name("pypi:flash-linear-attention") == component_name("fla-org/Flash_Linear_Attention")
    [drift] = component_drift(pins)
    assert drift.repo == "flash-linear-attention (fla-org/flash-linear-attention, pypi:flash-linear-attention)"
    assert drift.refs == ("0.5.0", "v0.4")
    assert split_drift([drift]) == ([drift], [])
    assert component_drift(parse_pins("pip install a==1\n", "shell", "x") * 2) == []
    with pytest.raises(TypeError, match="Pin"):
        component_drift(["pypi:a"])


def test_side_by_side_is_a_table_with_a_column_per_set_of_files():
    before = [Pin("a/x", "v1", "git clone --branch", "D", 1), Pin("a/x", "v1+cpu", "pip ==", "S", 2)]
    after = [Pin("a/x", "v2", "git clone --branch", "D", 1)]
    table = side_by_side({"before": before, "after": after}, {"after": [Clone("a/y", "D", 3)]}, ["a/x", "a/y"])
    assert table.header == ("component", "before", "after")
    assert table.rows == (("a/x", "v1 / v1+cpu", "v2"), ("a/y", "-", "no ref (default branch)"))
    assert table.text().splitlines()[1] == "| --- | --- | --- |"


@pytest.mark.parametrize("value", [None, 7, "abc", float("nan")])
def test_lesson_08_helpers_name_an_argument_of_the_wrong_type(value):
    # issue 43 item 8: these ended in a raw TypeError ('NoneType' object is not iterable / has no len())
    from verlstudy.lessons.l08_dependency_stack.layers import draw_layers
    from verlstudy.lessons.l08_dependency_stack.manifests import load_manifest
    from verlstudy.lessons.l08_dependency_stack.real_files import side_by_side

    calls = [
        (lambda v: draw_layers(v), r"argument columns must be a mapping \{column title: \{repo: pin kind\}\}"),
        (lambda v: draw_layers({"a": v}), r"argument columns\['a'\] must be a mapping \{repo: pin kind\}"),
        (lambda v: side_by_side(v, {}, []), r"argument columns must be a mapping \{column title: list of Pins\}"),
        (lambda v: side_by_side({"a": v}, {}, []), r"argument columns\['a'\] must be a list, each item a Pin"),
        (lambda v: side_by_side({}, v, []), r"argument clones must be a mapping"),
        (lambda v: side_by_side({}, {}, v), r"argument repos must be a list, each item a repository key"),
    ]
    if not isinstance(value, str):
        calls.append((lambda v: load_manifest(v), r"argument path must be a \.toml manifest's path"))
    for call, named in calls:
        with pytest.raises(TypeError, match=named) as info:
            call(value)
        assert "\n" not in str(info.value)
