"""The lock: every package `make setup` installs is pinned with hashes, and it moves with pyproject.toml."""

import re
from pathlib import Path

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
    assert len(pinned) == len(_pins()) > 20
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
    assert "requirements.lock" in makefile.split("$(STAMP):", 1)[1].split("\n", 1)[0], "a new lock reinstalls"
