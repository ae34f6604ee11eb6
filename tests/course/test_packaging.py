"""The install story: conda and pip list the same packages, CI runs exactly the README's test command."""

import re
import subprocess
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CONDA_NAMES = {"pytorch": "torch"}  # conda-forge package name -> PyPI name


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~ \[;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_lists_the_same_packages_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    pip_side = {_name(r) for r in project["dependencies"] + extras["dev"] + extras["lab"]}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda_side = set()
    for dep in env["dependencies"]:
        if isinstance(dep, str) and not dep.startswith(("python", "pip")):
            name = _name(dep)
            conda_side.add(CONDA_NAMES.get(name, name))
    assert conda_side == pip_side
    assert {"pip": ["-e .[dev]"]} in env["dependencies"]
    assert "conda-forge" in env["channels"] and "python=3.11" in env["dependencies"]


def test_versions_are_ranges_not_pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for requirement in project["dependencies"] + project["optional-dependencies"]["dev"]:
        assert "==" not in requirement, requirement


def test_setup_installs_the_pinned_cpu_torch_before_anything_can_pull_the_cuda_one(tmp_path):
    assert "torch==2.13.0" in (ROOT / "constraints.txt").read_text()
    dry_run = subprocess.run(
        ["make", "-n", "-B", "setup", f"VENV={tmp_path / 'venv'}"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    installs = [line for line in dry_run if "pip install" in line]
    torch_step, locked_step, project_step = installs[0], installs[1], installs[2]
    assert torch_step.endswith(" torch") and "-c constraints.txt" in torch_step and "--no-deps" in torch_step
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in torch_step
    assert "--require-hashes --no-deps -r requirements.lock" in locked_step, "everything else comes from the lock"
    assert project_step.endswith("--no-deps --no-build-isolation -e .")
    gpu = subprocess.run(
        ["make", "-n", "-B", "setup", f"VENV={tmp_path / 'venv'}", "CONSTRAINTS=", "TORCH_INDEX="],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "whl/cpu" not in gpu and "-c " not in gpu, "a GPU user can keep the torch they installed"


def _readme_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    return [line.split("#")[0].strip() for line in block.splitlines()[1:] if line.split("#")[0].strip()]


def test_readme_shows_two_commands_and_ci_runs_exactly_the_test_one():
    commands = _readme_commands()
    assert commands == ["make course", "make test"]
    ci = [line.strip() for line in (ROOT / ".ci/run").read_text().splitlines()]
    steps = [line for line in ci if line and not line.startswith(("#", "set ", "cd "))]
    assert steps == [commands[1]]


def test_readme_course_table_matches_the_registry():
    from verlstudy.course import registry

    readme = (ROOT / "README.md").read_text()
    for lesson in registry.LESSONS:
        prs = ", ".join(f"#{n}" for n in lesson.prs) or "-"
        row = f"| {lesson.code} | [{lesson.title}](notebooks/{lesson.stem}.ipynb) | {prs} | {lesson.minutes} |"
        assert row in readme, f"README course table is missing or stale for lesson {lesson.code}: {row}"


def test_the_ci_workflow_runs_the_tests_the_course_and_a_weekly_upstream_check():
    workflow = yaml.safe_load((ROOT / ".github/workflows/course.yml").read_text())
    triggers = workflow[True] if True in workflow else workflow["on"]  # YAML 1.1 reads `on` as True
    assert "push" in triggers and triggers["schedule"]
    steps = [step.get("run", "") for step in workflow["jobs"]["test"]["steps"]]
    assert "make test" in steps
    assert not any("verlstudy run" in s for s in steps), "make test runs the course once; CI must not run it again"
    newest = " ".join(step.get("run", "") for step in workflow["jobs"]["newest-verl"]["steps"])
    assert "--upgrade verl" in newest and "verify-upstream" in newest


def _cache_key(job: dict) -> str:
    return next(step["with"]["key"] for step in job["steps"] if "actions/cache" in step.get("uses", ""))


def test_the_ci_cache_is_keyed_on_the_exact_python_and_the_lock_and_the_weekly_job_has_its_own():
    jobs = yaml.safe_load((ROOT / ".github/workflows/course.yml").read_text())["jobs"]
    push, weekly = _cache_key(jobs["test"]), _cache_key(jobs["newest-verl"])
    for key in (push, weekly):
        assert "steps.python.outputs.python-version" in key and "requirements.lock" in key
    assert push.split("-")[0] != weekly.split("-")[0]


def test_make_lab_starts_as_root_and_takes_extra_arguments():
    dry = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    lab = next(line for line in dry.splitlines() if "jupyter lab" in line and "echo" not in line)
    import os

    assert ("--allow-root" in lab) == (os.geteuid() == 0)
    custom = subprocess.run(
        ["make", "-n", "lab", "LAB_ARGS=--port=9999"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert "jupyter lab --port=9999" in custom


def test_hypothesis_is_a_runtime_dependency_for_the_exercise_checkers():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "hypothesis" in {_name(r) for r in project["dependencies"]}
    assert "hypothesis" not in {_name(r) for r in project["optional-dependencies"]["dev"]}
