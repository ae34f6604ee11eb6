"""real_files.pin_lines and the #7345 fixture: the real lines a comparison rests on, and the drift #7492 reverted."""

from __future__ import annotations

import pytest

from verlstudy.common.pins import pins_in_files, read_files, ref_drift
from verlstudy.common.refs import Pin
from verlstudy.kit.resources import data_dir
from verlstudy.lessons.l08_dependency_stack.real_files import component_drift, pin_lines, split_drift

FILES = {"a.sh": "set -e\npip install torch==2.1.0\n", "b.yml": "x: 1\n"}


def test_pin_lines_quotes_each_pins_line_as_written():
    pins = pins_in_files({"a.sh": FILES["a.sh"]})
    assert pin_lines(FILES, pins) == ["a.sh:2: pip install torch==2.1.0"]


def test_pin_lines_shows_the_line_of_a_continued_command_that_holds_the_ref():
    files = {
        "Dockerfile": "FROM x\nRUN git clone --branch v1 https://github.com/a/b.git && \\\n    git clone --branch v2 https://github.com/c/d.git\n"
    }
    pins = pins_in_files(files)
    assert [p.line for p in pins] == [2, 2]  # the parser reports the command's first line
    assert pin_lines(files, pins) == [
        "Dockerfile:2: RUN git clone --branch v1 https://github.com/a/b.git && \\",
        "Dockerfile:3: git clone --branch v2 https://github.com/c/d.git",
    ]


def test_pin_lines_tells_two_repositories_at_one_ref_apart():
    files = {
        "Dockerfile": "RUN git clone https://gitcode.com/Ascend/MindSpeed.git && \\\n"
        "    cd MindSpeed && git checkout core_r0.16.0 && cd .. && \\\n"
        "    git clone --branch core_r0.16.0 https://github.com/NVIDIA/Megatron-LM.git\n"
    }
    lines = pin_lines(files, pins_in_files(files))
    assert sorted(lines) == [
        "Dockerfile:2: cd MindSpeed && git checkout core_r0.16.0 && cd .. && \\",
        "Dockerfile:3: git clone --branch core_r0.16.0 https://github.com/NVIDIA/Megatron-LM.git",
    ]


def test_pin_lines_refuses_pins_from_other_files():
    with pytest.raises(ValueError, match=r"b\.yml:5"):
        pin_lines(FILES, [Pin("pypi:torch", "2.1.0", "pip", "b.yml", 5)])
    with pytest.raises(TypeError, match="mapping"):
        pin_lines([], [])
    with pytest.raises(TypeError, match="Pin objects"):
        pin_lines(FILES, ["a.sh:2"])


def test_the_7345_workflow_asks_for_core_r0_18_0_where_its_image_has_core_r0_16_0():
    files = read_files(data_dir() / "stacks" / "after_7345")
    pins = pins_in_files(files)
    real, variants = split_drift(component_drift(pins))
    assert sorted(d.repo for d in real) == ["ascend/mindspeed", "nvidia/megatron-lm"] and variants == []
    assert all(set(d.refs) == {"core_r0.16.0", "core_r0.18.0"} for d in real)
    assert all(line.split(":")[0] in files for line in pin_lines(files, pins))


def test_grouping_by_package_finds_the_transformers_pair_that_grouping_by_repository_misses():
    pins = pins_in_files(read_files(data_dir() / "stacks" / "before_upgrade"))
    by_repo = {d.repo for d in split_drift(ref_drift(pins))[0]}
    by_package = {d.repo for d in split_drift(component_drift(pins))[0]}
    assert by_repo == set() and by_package == {"transformers (huggingface/transformers, pypi:transformers)"}
