"""The lock: every package `make setup` installs is pinned with hashes, and it moves with pyproject.toml."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tools import lock as lock_tool

ROOT = Path(__file__).resolve().parents[2]

LOCK_TEXT = (ROOT / "requirements.lock").read_text()
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s\\]+)", re.MULTILINE)


def _pins(text: str = LOCK_TEXT) -> dict[str, str]:
    return {name.lower().replace("_", "-"): version for name, version in PIN.findall(text)}


def _recorded_torch_needs(inputs: list[str]) -> list[str]:
    return [r for r in inputs if r not in lock_tool.lock_inputs(torch_needs=[])]


def test_the_lock_was_compiled_from_todays_pyproject():
    digest, inputs = lock_tool.recorded(LOCK_TEXT)
    assert inputs == lock_tool.lock_inputs(torch_needs=_recorded_torch_needs(inputs)), (
        "pyproject.toml's requirements changed since requirements.lock was compiled: run `make lock`"
    )
    assert digest == lock_tool.inputs_digest(inputs), "the lock's header was edited by hand: run `make lock`"


def test_every_requirement_of_pyproject_is_pinned_within_its_range():
    pins = _pins()
    for line in lock_tool.lock_inputs(torch_needs=[]):
        requirement = Requirement(line)
        name = requirement.name.lower().replace("_", "-")
        assert name in pins, f"{name} is in pyproject.toml but not in requirements.lock: run `make lock`"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"requirements.lock pins {name}=={pins[name]}, outside pyproject.toml's {requirement}"
        )


def test_every_pin_carries_a_hash_and_torch_is_left_to_constraints():
    blocks = re.split(r"\n(?=[A-Za-z0-9])", LOCK_TEXT.split("\n", 1)[1])
    pinned = [b for b in blocks if PIN.match(b)]
    assert len(pinned) == len(PIN.findall(LOCK_TEXT)) > 20  # a universal lock may pin a name twice, per Python
    assert all("--hash=sha256:" in b for b in pinned)
    assert "torch" not in _pins() and not any(name.startswith("nvidia") for name in _pins())


def test_the_torch_build_installed_here_needs_nothing_the_lock_lacks():
    pins = _pins()
    for line in lock_tool.torch_requirements():
        requirement = Requirement(line)
        assert requirement.name.lower() in pins, f"torch needs {requirement.name}, which requirements.lock lacks"


def test_a_changed_pyproject_is_noticed(tmp_path):
    changed = (ROOT / "pyproject.toml").read_text().replace('"numpy>=1.26"', '"numpy>=9.0"')
    (tmp_path / "pyproject.toml").write_text(changed)
    _, inputs = lock_tool.recorded(LOCK_TEXT)
    now = lock_tool.lock_inputs(tmp_path / "pyproject.toml", torch_needs=_recorded_torch_needs(inputs))
    assert now != inputs and "numpy>=9.0" in now


def test_setup_installs_from_the_lock_with_hashes():
    makefile = (ROOT / "Makefile").read_text()
    assert "--require-hashes --no-deps -r requirements.lock" in makefile
    inputs = makefile.split("SETUP_INPUTS :=", 1)[1].split("\n", 1)[0]
    assert "requirements.lock" in inputs and "pyproject.toml" in inputs, "a new lock or pyproject reinstalls"


CUDA_TORCH_REQUIRES = [  # what a CUDA build of torch 2.13 lists: the CPU build's needs plus its GPU wheels
    "filelock",
    "typing-extensions>=4.10.0",
    "setuptools>=77.0.3",
    "sympy>=1.13.3",
    "networkx>=2.5.1",
    "jinja2",
    "fsspec>=0.8.5",
    'nvidia-cuda-nvrtc-cu12==12.8.93; platform_system == "Linux"',
    'nvidia-cudnn-cu12==9.10.2.21; platform_system == "Linux"',
    'nvidia-cusparselt-cu12==0.7.1; platform_system == "Linux"',
    'triton==3.5.0; platform_system == "Linux"',
    'optree>=0.13.0; extra == "optree"',
]


def test_a_cuda_torch_gives_the_same_lock_inputs_as_the_cpu_one():
    # the README's GPU path installs a CUDA torch first; its GPU wheels come with it, never from the lock
    _, inputs = lock_tool.recorded(LOCK_TEXT)
    cuda = lock_tool.torch_requirements(CUDA_TORCH_REQUIRES)
    assert cuda == sorted(CUDA_TORCH_REQUIRES[:7])
    assert lock_tool.lock_inputs(torch_needs=cuda) == inputs
    pins = _pins()
    assert all(Requirement(r).name.lower() in pins for r in cuda)
    assert lock_tool.torch_requirements(["triton"]) == []


def test_the_lock_is_universal_platform_packages_behind_markers():
    header = LOCK_TEXT.split("\n# input:", 1)[0]
    assert f"compiled by uv {lock_tool.UV_VERSION}" in header and "Universal" in header
    # macOS kernels need appnope, Windows consoles colorama; pip skips them on Linux (markers)
    for name, marker in (("appnope", "sys_platform == 'darwin'"), ("colorama", "sys_platform == 'win32'")):
        line = next(line for line in LOCK_TEXT.splitlines() if line.startswith(f"{name}=="))
        assert marker in line, line


def test_make_lock_installs_the_pinned_uv_and_the_tool_refuses_another(monkeypatch, capsys):
    dry = subprocess.run(["make", "-n", "lock"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "tools/lock.py --uv-version" in dry and 'pip install -q "uv==' in dry
    monkeypatch.setattr(lock_tool, "uv_version", lambda: "0.0.1")
    monkeypatch.setattr(sys, "argv", ["lock.py"])
    assert lock_tool.main() == 2
    assert capsys.readouterr().err == (
        f"make lock needs uv {lock_tool.UV_VERSION}, found 0.0.1: pip install uv=={lock_tool.UV_VERSION}\n"
    )


def test_the_lowest_versions_are_resolved_lowest_direct_for_this_python(monkeypatch, tmp_path):
    ran = []
    monkeypatch.setattr(lock_tool.subprocess, "run", lambda command, **_: ran.append(command))
    lock_tool.compile_lowest(tmp_path / "lowest" / "requirements.txt")
    (command,) = ran
    assert command[command.index("--resolution") + 1] == "lowest-direct"
    wanted = (tmp_path / "lowest" / "requirements.in").read_text().split()
    assert "torch>=2.4" not in wanted and "matplotlib>=3.8.1" in wanted and "nbval>=0.11" in wanted


def test_the_lowest_torch_needs_a_lower_bound(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\ndependencies = ["torch>=2.4,<3"]\n')
    assert lock_tool.lowest_torch(pyproject) == "2.4"
    pyproject.write_text('[project]\ndependencies = ["torch"]\n')
    with pytest.raises(ValueError, match="has no lower bound"):
        lock_tool.lowest_torch(pyproject)
