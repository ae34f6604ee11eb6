"""The install story: conda and pip list the same packages, CI runs exactly the README's test command."""

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[2]
# conda-forge package name -> PyPI name (conda-forge spells jupyter_client with "_"; _name makes it "-");
# matplotlib-base is matplotlib without the Qt GUI conda's "matplotlib" adds
CONDA_NAMES = {"pytorch": "torch", "matplotlib-base": "matplotlib"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~ \[;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _conda_specs(path: Path) -> dict[str, str]:
    """PyPI name -> version range of every conda package an environment file lists (python and pip left out)."""
    specs = {}
    for dep in yaml.safe_load(path.read_text())["dependencies"]:
        if isinstance(dep, str) and not dep.startswith(("python", "pip")):
            name = _name(dep)
            specs[CONDA_NAMES.get(name, name)] = dep[len(name) :].strip()
    return specs


def test_environment_yml_lists_the_same_packages_and_lowest_versions_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    pip_side = {
        _name(r): r.split(";")[0][len(_name(r)) :].strip()
        for r in project["dependencies"] + extras["dev"] + extras["lab"]
    }
    assert _conda_specs(ROOT / "environment.yml") == pip_side
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert {"pip": ["-e .[dev]"]} in env["dependencies"]
    assert "conda-forge" in env["channels"] and "python=3.11" in env["dependencies"]


def test_conda_takes_headless_matplotlib_and_the_dev_environment_gets_verl_without_its_dependencies():
    for path in (ROOT / "environment.yml", ROOT / "binder" / "environment.yml"):
        names = [_name(d) for d in yaml.safe_load(path.read_text())["dependencies"] if isinstance(d, str)]
        assert "matplotlib-base" in names and "matplotlib" not in names, path
    assert "make upstream VENV=$CONDA_PREFIX" in (ROOT / "environment.yml").read_text()
    # --no-print-directory: under `make test` this make is a sub-make, which prints "Entering directory" first
    dry = subprocess.run(["make", "--no-print-directory", "-n", "upstream", "VENV=/opt/env"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.splitlines()  # fmt: skip
    verl = "/opt/env/bin/python -m pip install -q --no-deps --ignore-requires-python -r requirements-upstream.txt"
    assert dry[0] == verl
    assert "--target /opt/env/verl-releases/$v" in dry[1] and "--no-deps --ignore-requires-python" in dry[1]


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
    gpu_installs = [line for line in gpu.splitlines() if "pip install" in line]
    assert "whl/cpu" not in gpu and not any("-c " in line for line in gpu_installs), "a GPU user keeps their torch"


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
        link = f"https://github.com/verlstudy/verlstudy/blob/main/notebooks/{lesson.stem}.ipynb"
        row = f"| {lesson.code} | [{lesson.title}]({link}) | {prs} | {lesson.minutes} |"
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


# Imported only where present (an Ascend box's torch_npu), never required.
OPTIONAL_IMPORTS = {"torch_npu"}
# Declared though never imported by name: what the course runs rather than imports.
RUN_NOT_IMPORTED = {"ipykernel": "the lessons' kernel", "hypothesis": "the exercise checkers' generated cases"}


def _third_party_imports(folders: list[Path], leave_out: Path | None = None) -> dict[str, Path]:
    import ast

    found: dict[str, Path] = {}
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            if leave_out is not None and path.is_relative_to(leave_out):
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top != "verlstudy":
                        found.setdefault(top, path)
    return found


def test_every_package_the_course_imports_is_declared_and_every_declared_one_is_used():
    import importlib.metadata

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_name(r) for r in project["dependencies"]}
    hub_extra = {_name(r) for r in project["optional-dependencies"]["hub"]}
    distributions = importlib.metadata.packages_distributions()
    imported = {}
    hub = ROOT / "src" / "verlstudy" / "hub"
    # the hub package alone may use the `hub` extra (make hub-env installs it); the course and lessons may not
    for module, path in _third_party_imports([hub]).items():
        # jupyterhub lives in build/hub/venv, not in the course's venv: its module is named as its distribution
        (distribution,) = {_name(d) for d in distributions.get(module, [module])}
        assert distribution in declared | hub_extra, f"{path.relative_to(ROOT)} imports {module}, undeclared"
    for module, path in _third_party_imports([ROOT / "src", ROOT / "notebooks" / "py"], leave_out=hub).items():
        if module in OPTIONAL_IMPORTS:
            continue
        (distribution,) = {_name(d) for d in distributions[module]}
        imported[distribution] = path
        assert distribution in declared, f"{path.relative_to(ROOT)} imports {module} ({distribution}), undeclared"
    unused = declared - set(imported) - set(RUN_NOT_IMPORTED)
    assert not unused, f"declared in pyproject.toml but never imported or run: {sorted(unused)}"
    assert "tqdm" not in declared


def test_the_lowest_allowed_versions_are_the_ones_known_to_work():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lowest = {_name(r): r for r in project["dependencies"]}
    assert lowest["matplotlib"] == "matplotlib>=3.8.1", "3.8.0 rejects lesson 05's colour '#1f5aa6'"
    assert lowest["nbconvert"] == "nbconvert>=7.16.5", "7.16.0-7.16.4 crash on headings with mistune 3.4"


def test_every_package_in_the_tree_is_listed_and_every_listed_one_exists():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    code = {
        ".".join(p.parent.relative_to(ROOT / "src").parts) for p in (ROOT / "src" / "verlstudy").rglob("__init__.py")
    }
    data = {
        ".".join(("verlstudy._course.data", *d.relative_to(ROOT / "data").parts))
        for d in (ROOT / "data").rglob("*")
        if d.is_dir() and "__pycache__" not in d.parts
    }
    bundled = {"verlstudy._course.notebooks", "verlstudy._course.data", "verlstudy._course.docs"}
    templates = {  # nbconvert templates (a conf.json each): folders of files, no code
        ".".join(p.parent.relative_to(ROOT / "src").parts) for p in (ROOT / "src" / "verlstudy").rglob("conf.json")
    }
    assert templates == {"verlstudy.course.site_template"}
    catalogs = (
        {"verlstudy.kit.locale", "verlstudy.kit.locale.zh_CN"}
        | {  # gettext catalogs (issue 45): folders of .po files, no code
            ".".join(("verlstudy._course.notebooks", *d.relative_to(ROOT / "notebooks").parts))
            for d in (ROOT / "notebooks" / "locale").rglob("*")
            if d.is_dir()
        }
        | {"verlstudy._course.notebooks.locale"}
    )
    assert listed == code | data | bundled | templates | catalogs


def test_the_supported_pythons_are_the_ci_matrix():
    from packaging.specifiers import SpecifierSet

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    stated = {c.rsplit(" :: ", 1)[1] for c in project["classifiers"] if re.fullmatch(r".*Python :: 3\.\d+", c)}
    jobs = yaml.safe_load((ROOT / ".github/workflows/course.yml").read_text())["jobs"]
    matrix = {str(v) for v in jobs["test"]["strategy"]["matrix"]["python"]}
    assert stated == matrix == {"3.11", "3.12", "3.13"}
    allowed = SpecifierSet(project["requires-python"])
    assert all(v in allowed for v in stated) and "3.10" not in allowed
    lowest = project["requires-python"].split(">=", 1)[1].split(",", 1)[0].strip()
    assert re.search(r"^MIN_PYTHON := (.+)$", (ROOT / "Makefile").read_text(), re.M).group(1) == lowest


def test_setup_refuses_a_too_old_python_in_one_line_before_it_installs_anything(tmp_path):
    old = tmp_path / "python3"  # a Python that reports 3.10, whatever runs the test
    pretend = "import sys; sys.version_info = (3, 10, 9); sys.version = '3.10.9'; exec(sys.argv[2])"
    old.write_text(f'#!/bin/sh\nexec {sys.executable} -c "{pretend}" "$@"\n')
    old.chmod(0o755)
    done = subprocess.run(["make", "setup", f"PYTHON={old}", f"VENV={tmp_path / 'venv'}"], cwd=ROOT,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode != 0 and not (tmp_path / "venv").exists()
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("setup:")]
    assert "needs Python 3.11 or newer" in line and "PYTHON=" in line


def test_the_systems_the_classifiers_name_are_the_ones_ci_runs():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    systems = {c for c in project["classifiers"] if c.startswith("Operating System ::")}
    assert systems == {"Operating System :: POSIX :: Linux", "Operating System :: MacOS"}
    matrix = yaml.safe_load((ROOT / ".github/workflows/course.yml").read_text())["jobs"]["test"]["strategy"]["matrix"]
    runners = {*matrix["os"], *(row["os"] for row in matrix.get("include", []))}
    assert {r.split("-")[0] for r in runners} == {"ubuntu", "macos"}


def _build(tmp_path: Path) -> tuple[Path, Path, str]:
    """sdist and wheel built from a copy of the checkout's package files, and what the build printed."""
    source = tmp_path / "source"
    for name in ("src", "notebooks", "data", "docs", "tests", "tools"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"):
        shutil.copy(ROOT / name, source / name)
    out = tmp_path / "dist"
    code = (
        "import sys; from setuptools import build_meta as b; "
        f"print(b.build_sdist({str(out)!r})); print(b.build_wheel({str(out)!r}))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # else a 'skipping' warning
    done = subprocess.run(
        [sys.executable, "-W", "always", "-c", code], cwd=source, env=env, capture_output=True, text=True, check=True
    )
    (sdist,), (wheel,) = out.glob("*.tar.gz"), out.glob("*.whl")
    return sdist, wheel, done.stdout + done.stderr


def test_the_build_is_clean_ships_the_license_and_no_twins_and_the_sdist_leaves_the_tests_out(tmp_path):
    sdist, wheel, printed = _build(tmp_path)
    warnings = [line for line in printed.splitlines() if "warn" in line.lower() or "deprecat" in line.lower()]
    assert not warnings, "\n".join(warnings)
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not [n for n in names if "/notebooks/py/" in n], "the jupytext twins are for authors, not the wheel"
    assert len([n for n in names if n.startswith("verlstudy/_course/notebooks/") and n.endswith(".ipynb")]) == 10
    shipped_catalogs = [n for n in names if n.startswith("verlstudy/_course/notebooks/locale/zh_CN/")]
    assert len(shipped_catalogs) == 11 and "verlstudy/kit/locale/zh_CN.po" in names  # ten lessons, the terms
    assert {"verlstudy/course/site_template/index.html.j2", "verlstudy/course/site_template/conf.json"} <= set(names)
    assert len([n for n in names if n.startswith("verlstudy/_course/data/")]) == len(
        [p for p in (ROOT / "data").rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    )
    assert "License-Expression: Apache-2.0" in metadata and "Requires-Dist: tqdm" not in metadata
    assert "Project-URL: Source, https://github.com/verlstudy/verlstudy" in metadata
    with tarfile.open(sdist) as archive:
        files = [m.name.split("/", 1)[1] for m in archive.getmembers() if m.isfile()]
    assert "LICENSE" in files and not [f for f in files if f.startswith(("tests/", "tools/", "notebooks/py/"))]
    # the sdist alone builds the same wheel
    unpacked = tmp_path / "unpacked"
    with tarfile.open(sdist) as archive:
        archive.extractall(unpacked, filter="data")
    (root,) = unpacked.iterdir()
    done = subprocess.run(
        [sys.executable, "-c", f"from setuptools import build_meta as b; print(b.build_wheel({str(tmp_path)!r}))"],
        cwd=root, capture_output=True, text=True, check=True,
    )  # fmt: skip
    with zipfile.ZipFile(tmp_path / done.stdout.strip().splitlines()[-1]) as again:
        assert sorted(again.namelist()) == sorted(names)


def test_a_restored_venv_skips_setup_until_what_it_installs_from_changes(tmp_path):
    for name in ("Makefile", "pyproject.toml", "constraints.txt", "requirements.lock", "requirements-upstream.txt"):
        shutil.copy(ROOT / name, tmp_path / name)

    def setup_steps() -> list[str]:
        dry = subprocess.run(
            ["make", "-n", "setup", "VENV=v"], cwd=tmp_path, capture_output=True, text=True, check=True
        )
        return [line for line in dry.stdout.splitlines() if "pip install" in line or line.startswith("touch ")]

    steps = setup_steps()
    (stamp,) = [line.split()[1] for line in steps if line.startswith("touch ")]
    (tmp_path / "v").mkdir()
    (tmp_path / stamp).touch()
    os.utime(tmp_path / stamp, (0, 0))  # restored from a cache: older than every checked-out file
    assert setup_steps() == [], "a restored .venv whose inputs did not change reinstalls"
    lock = tmp_path / "requirements.lock"
    lock.write_text(lock.read_text() + "# changed\n")
    assert len(setup_steps()) > 3, "a changed lock must reinstall"


def _workflow() -> dict:
    return yaml.safe_load((ROOT / ".github/workflows/course.yml").read_text())


def test_the_workflow_reads_only_pins_actions_by_commit_drops_credentials_and_cancels_stale_runs():
    workflow = _workflow()
    assert workflow["permissions"] == {"contents": "read"}
    assert workflow["concurrency"]["cancel-in-progress"] is True and "github.ref" in workflow["concurrency"]["group"]
    steps = [step for job in workflow["jobs"].values() for step in job["steps"]]
    uses = [step["uses"] for step in steps if "uses" in step]
    assert uses and all(re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", u) for u in uses), uses
    checkouts = [step for step in steps if step.get("uses", "").startswith("actions/checkout@")]
    assert len(checkouts) == len(workflow["jobs"])
    assert all(step["with"]["persist-credentials"] is False for step in checkouts)


def test_ci_runs_ruff_at_the_locked_version():
    runs = " ".join(step.get("run", "") for step in _workflow()["jobs"]["lint"]["steps"])
    assert "ruff check src tests benchmarks tools" in runs and "ruff format --check src tests benchmarks tools" in runs
    assert "requirements.lock" in runs and re.search(r"^ruff==", (ROOT / "requirements.lock").read_text(), re.M)


def test_the_lowest_versions_job_installs_the_declared_minimums_and_runs_nbval_and_the_site():
    job = _workflow()["jobs"]["lowest-versions"]
    assert "make lowest" in [step.get("run") for step in job["steps"]]
    dry = subprocess.run(["make", "-n", "lowest"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "tools/lock.py --lowest build/lowest/requirements.txt" in dry and "--lowest-torch" in dry
    assert "--nbval" in dry and " notebooks" in dry and "verlstudy site --from build/lowest/executed" in dry
    lowest = subprocess.run([sys.executable, "tools/lock.py", "--lowest-torch"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.strip()  # fmt: skip
    assert lowest == "2.9.1", "the lowest torch every lesson was measured on (pyproject.toml says which fail below)"


def test_a_plain_jupytext_sync_writes_the_twin_the_twin_check_expects(tmp_path):
    from verlstudy.course import registry, twins

    lesson = registry.LESSONS[0]
    (tmp_path / "notebooks" / "py").mkdir(parents=True)
    shutil.copy(ROOT / "jupytext.toml", tmp_path / "jupytext.toml")
    shutil.copy(lesson.notebook, tmp_path / "notebooks" / lesson.notebook.name)
    jupytext = Path(sys.executable).parent / "jupytext"
    subprocess.run([str(jupytext), "--sync", f"notebooks/{lesson.notebook.name}"], cwd=tmp_path, check=True,
                   capture_output=True)  # fmt: skip
    written = (tmp_path / "notebooks" / "py" / f"{lesson.stem}.py").read_text()
    assert written == twins.twin_text(nbformat.read(lesson.notebook, as_version=4))
    assert not written.startswith("# ---"), "jupytext wrote its header"


def test_pre_commit_syncs_the_twins_and_runs_ruff_as_make_lint_does_with_the_published_hooks_at_the_locked_versions():
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    repos = {repo["repo"]: repo for repo in config["repos"]}
    lock = (ROOT / "requirements.lock").read_text()
    for url, package in (("https://github.com/mwouts/jupytext", "jupytext"),
                         ("https://github.com/astral-sh/ruff-pre-commit", "ruff")):  # fmt: skip
        locked = re.search(rf"^{package}==([^ ]+) ", lock, re.M).group(1)
        assert repos[url]["rev"] == f"v{locked}", f"{url} is not at the locked {package} {locked}"
    hooks = {hook["id"]: hook for repo in config["repos"] for hook in repo["hooks"]}
    local = [hook["id"] for repo in config["repos"] for hook in repo["hooks"] if repo["repo"] == "local"]
    assert not local, "a hook run from the checkout's .venv fails in a fresh clone and on pre-commit.ci"
    assert hooks["jupytext"]["args"] == ["--sync"]
    assert re.search(hooks["jupytext"]["files"], "notebooks/py/04_thd_sequence_alignment.py")
    assert re.search(hooks["jupytext"]["files"], "notebooks/04_thd_sequence_alignment.ipynb")
    assert "args" not in hooks["ruff-check"] and hooks["ruff-format"]["args"] == ["--check"]
    makefile = (ROOT / "Makefile").read_text()
    assert "ruff check src tests benchmarks tools" in makefile and re.search(hooks["ruff-check"]["files"], "tools/x.py")


def test_binder_has_the_runtime_packages_and_lab_and_no_dev_tools():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = [*project["dependencies"], *project["optional-dependencies"]["lab"]]
    assert _conda_specs(ROOT / "binder" / "environment.yml") == {
        _name(r): r.split(";")[0][len(_name(r)) :].strip() for r in runtime
    }
    env = yaml.safe_load((ROOT / "binder" / "environment.yml").read_text())
    assert "conda-forge" in env["channels"] and "python=3.11" in env["dependencies"]


def test_binder_post_build_installs_the_course_and_the_verl_releases_the_lessons_read():
    post = ROOT / "binder" / "postBuild"
    assert os.access(post, os.X_OK) and post.read_text().startswith("#!/bin/bash\n")
    text = post.read_text()
    assert "set -euo pipefail" in text and "pip install --no-deps --no-cache-dir .\n" in text
    assert "-r requirements-upstream.txt" in text
    releases = re.search(r"^VERL_RELEASES \?= (.+)$", (ROOT / "Makefile").read_text(), re.M).group(1).split()
    assert re.search(r"for v in (.+); do", text).group(1).split() == releases
    assert "/verl-releases/$v" in text and "sys.prefix" in text  # where kit.upstream looks (<venv>/verl-releases)
    assert text.count("--no-deps --ignore-requires-python") == 2  # verl, then each earlier release
    assert text.rstrip().endswith("verlstudy student --out student"), "the Binder badge opens student/"
    subprocess.run(["bash", "-n", str(post)], check=True)


def test_verlstudy_version_prints_the_installed_version():
    import importlib.metadata

    import verlstudy

    done = subprocess.run([sys.executable, "-m", "verlstudy", "--version"], capture_output=True, text=True, check=True)
    assert done.stdout == f"verlstudy {importlib.metadata.version('verlstudy')}\n"
    assert importlib.metadata.version("verlstudy") == verlstudy.__version__


def test_the_version_has_one_source_and_a_changelog_entry():
    import verlstudy

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "verlstudy.__version__"}
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## \[?{re.escape(verlstudy.__version__)}\]? ", changelog, re.M), "no entry for this version"
    assert "v<version>" in changelog, "the changelog states the tag convention"


def _locked_pins(path: Path) -> dict[str, str]:
    text = path.read_text()
    return {m[0].lower(): m[1] for m in re.findall(r"^([A-Za-z0-9][\w.-]*)==([^ ;\\]+)", text, re.M)}


def test_make_lab_installs_jupyterlab_from_its_own_lock_at_the_main_locks_pins():
    dry = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    installs = [line for line in dry.splitlines() if "pip install" in line and "make setup" not in line]
    assert installs[-1].endswith("pip install -q --require-hashes --no-deps -r requirements-lab.lock")
    lab, main = _locked_pins(ROOT / "requirements-lab.lock"), _locked_pins(ROOT / "requirements.lock")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert all(_name(r) in lab for r in project["optional-dependencies"]["lab"])
    assert {name: pin for name, pin in lab.items() if name in main} == {n: main[n] for n in lab if n in main}
    assert "lab-lock" in subprocess.run(["make", "-n", "lock"], cwd=ROOT, capture_output=True, text=True,
                                        check=True).stdout  # fmt: skip
