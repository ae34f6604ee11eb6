"""common.shell_pins / pins / refs on the shapes of upstream's real Ascend files (verl docker/ascend/
Dockerfile.ascend_9.1.0_a2 at ead7f6c51, scripts/install_vllm_mcore_npu.sh at 5ba5f2f51): pins after
`if ...; then \\`, empty lines inside a continued RUN, unpinned installs, and branch-vs-tag policy findings."""

from __future__ import annotations

import pytest

from verlstudy.common.pins import parse_pins, read_files, ref_findings, unpinned_installs
from verlstudy.common.refs import RefFinding, ref_finding, ref_naming_problem, ref_policy_note

IF_THEN_RUN = """FROM base
RUN ARCH=$(uname -m) && \\
    if [ "$ARCH" = "x86_64" ]; then \\
        pip install torch==2.10.0+cpu --index-url https://download.pytorch.org/whl/cpu/; \\
        pip install torchvision==0.25.0+cpu --index-url https://download.pytorch.org/whl/cpu/; \\
    fi && \\
    pip install mbridge
"""


def pins(text: str, kind: str) -> list[tuple[str, str, int]]:
    return [(p.repo, p.ref, p.line) for p in parse_pins(text, kind, "f")]


def test_a_pin_after_if_then_on_a_continued_run_line_is_found():
    assert pins(IF_THEN_RUN, "dockerfile") == [("pypi:torch", "2.10.0+cpu", 2), ("pypi:torchvision", "0.25.0+cpu", 2)]


def test_a_pin_after_if_then_in_a_continued_shell_line_is_found():
    text = 'if [ "$A" = x ]; then \\\n  pip install a==1; \\\nelse pip install b==2; fi\n'
    assert pins(text, "shell") == [("pypi:a", "1", 1), ("pypi:b", "2", 1)]


@pytest.mark.parametrize(
    "line",
    [
        "if true; then pip install a==1; fi",
        "if false; then :; elif true; then pip install a==1; fi",
        "for x in 1; do pip install a==1; done",
        "{ pip install a==1; }",
        "if ! pip install a==1; then exit 1; fi",
        "while true; do pip install a==1; break; done",
    ],
)
def test_compound_command_keywords_do_not_hide_the_command_after_them(line):
    assert pins(line + "\n", "shell") == [("pypi:a", "1", 1)]


def test_an_empty_line_inside_a_continued_run_keeps_the_rest_of_the_instruction():
    # upstream's image has an empty line between the Megatron-LM clone and the transformers clone
    text = (
        "FROM base\nRUN git clone --depth 1 --branch core_r0.16.0 https://github.com/NVIDIA/Megatron-LM.git && \\\n"
        "\n    git clone --depth 1 https://github.com/huggingface/transformers.git && \\\n"
        "    cd transformers && git fetch --depth 1 origin cc7ab9be && git checkout cc7ab9be && cd ..\n"
    )
    assert pins(text, "dockerfile") == [
        ("nvidia/megatron-lm", "core_r0.16.0", 2),
        ("huggingface/transformers", "cc7ab9be", 2),
    ]


def test_git_refs_with_slashes_and_editable_git_urls_are_pins_and_ssh_users_are_not_refs():
    text = (
        "pip install git+https://github.com/vllm-project/vllm-ascend.git@releases/v0.23.0\n"
        "pip install -e git+https://github.com/o/r.git@v1#egg=r\n"
        "pip install git+ssh://git@github.com/o/s.git\n"
    )
    assert [(r, ref) for r, ref, _ in pins(text, "shell")] == [
        ("vllm-project/vllm-ascend", "releases/v0.23.0"),
        ("o/r", "v1"),
    ]


def test_unpinned_installs_names_bare_packages_but_not_option_values_or_paths():
    files = {
        "Dockerfile.x": IF_THEN_RUN,
        "i.sh": "pip install -e MindSpeed\npip install -r requirements.txt --index-url https://x/simple mbridge\n"
        "pip install -e . 'transformers==5.10.4' \"nvidia-modelopt[torch]>=0.37.0\" qwen_vl_utils[x]\n",
    }
    assert [(p.repo, p.file, p.line) for p in unpinned_installs(files)] == [
        ("pypi:mbridge", "Dockerfile.x", 2),
        ("pypi:mbridge", "i.sh", 2),
        ("pypi:qwen-vl-utils", "i.sh", 3),
    ]
    with pytest.raises(ValueError, match="non-empty mapping"):
        unpinned_installs({})


def test_a_megatron_release_branch_is_a_policy_finding_not_a_naming_one():
    found = ref_finding("https://github.com/NVIDIA/Megatron-LM.git", "core_r0.16.0")
    assert isinstance(found, RefFinding) and found.kind == "policy"
    assert "prefer the tag 'core_v0.16.0'" in found.message
    assert ref_finding("Ascend/MindSpeed", "core_v0.18.0").kind == "naming"  # no such scheme there: a slip
    assert ref_finding("NVIDIA/Megatron-LM", "core_v0.18.0") is None
    assert ref_finding("NVIDIA/Megatron-LM", "core_r0.18.0", "tag").kind == "naming"  # recorded as a tag: wrong
    assert ref_policy_note("Ascend/MindSpeed", "core_r0.18.0") is None
    # one position across the course: the naming rule itself does not call the release branch a slip
    assert ref_naming_problem("NVIDIA/Megatron-LM", "core_r0.18.0") is None
    with pytest.raises(TypeError, match="non-empty string"):
        ref_policy_note("NVIDIA/Megatron-LM", "")


def test_ref_findings_labels_each_kind_and_filters():
    text = (
        "git clone -b core_r0.18.0 https://github.com/NVIDIA/Megatron-LM.git\n"
        "git clone https://gitcode.com/Ascend/MindSpeed.git && git -C MindSpeed checkout core_v0.18.0\n"
    )
    found = ref_findings(parse_pins(text, "shell", "i.sh"))
    assert [f.split(": ")[:2] for f in found] == [["i.sh:1", "policy"], ["i.sh:2", "naming"]]
    assert ref_findings(parse_pins(text, "shell", "i.sh"), "naming") == [found[1]]
    with pytest.raises(ValueError, match="kind='slip'"):
        ref_findings([], "slip")


def test_a_data_file_deleted_from_a_folder_is_named_not_read_as_fewer_files(tmp_path, monkeypatch):
    # issue 43 item 8: a deleted data file was read as a failed claim (the folder read gave fewer files)
    import shutil

    from verlstudy.kit import resources

    data = tmp_path / "data"
    shutil.copytree(resources.data_dir() / "stacks", data / "stacks")
    shutil.copy(resources.data_dir() / "FILES", data / "FILES")
    (data / "stacks" / "after_7345" / "Dockerfile.ascend.sglang_a3").unlink()
    monkeypatch.setattr(resources, "data_dir", lambda: data)
    with pytest.raises(resources.DataFileError) as info:
        read_files(data / "stacks" / "after_7345")
    message = str(info.value)
    assert "data/stacks/after_7345/Dockerfile.ascend.sglang_a3 is missing" in message and "git checkout" in message
    assert "\n" not in message


def test_a_script_that_is_not_utf8_is_named(tmp_path):
    # issue 43 item 8: a non-UTF-8 shell script was a UnicodeDecodeError naming no file
    (tmp_path / "install_npu.sh").write_bytes(b"pip install torch==2.1 # caf\xe9\n")
    with pytest.raises(ValueError, match=r"install_npu.sh is not UTF-8 text \(byte 28 is b'\\xe9'\).*save it as UTF-8"):
        read_files(tmp_path)


@pytest.mark.parametrize("value", [None, 7, "Dockerfile", float("nan")])
def test_pin_helpers_name_an_argument_of_the_wrong_type(value):
    # issue 43 item 8: these ended in a raw TypeError/AttributeError ("'str' object has no attribute 'repo'")
    from verlstudy.common.pins import image_env_settings, naming_problems, pins_table

    calls = [
        (naming_problems, r"argument pins must be a list, each item a Pin \(from parse_pins or pins_in_files\)"),
        (ref_findings, r"argument pins must be a list, each item a Pin"),
        (pins_table, r"argument pins must be a list, each item a Pin"),
        (lambda v: image_env_settings(v, "PATH"), "argument files must be a mapping of file name to text"),
    ]
    if not isinstance(value, str):
        calls.append((read_files, r"argument folder must be a folder's path \(str or Path\)"))
    for call, named in calls:
        with pytest.raises(TypeError, match=named) as info:
            call(value)
        assert "\n" not in str(info.value)
    with pytest.raises(TypeError, match=r"argument pins\[0\] must be a Pin"):
        naming_problems([value])


def test_pin_helpers_still_take_pins_from_a_generator():
    pins = parse_pins("pip install a==1\npip install a==2\n", "shell")
    assert ref_findings(p for p in pins) == ref_findings(pins)
    from verlstudy.common.pins import pins_table, ref_drift

    assert pins_table(iter(pins)) == pins_table(pins)
    assert ref_drift(iter(pins)) == ref_drift(pins)
