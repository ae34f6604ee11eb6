"""Colab: each lesson's set-up cell installs the course there (its first lines), and does nothing anywhere else.

The set-up cell cannot import verlstudy before it is installed, so its first lines (`SETUP_LINES`, the exact text
every notebook's set-up cell starts with) are plain Python: on Colab, and only while the course is missing, they
install this notebook's release of the course without dependencies and then run this module, which installs the
rest without touching what Colab pinned. Colab's Jupyter stack (IPython 7.34, ipykernel 6.17, jupyter_client 7.4,
traitlets 5.7) and its torch stay as they are (googlecolab/colabtools#5580: upgrading them puts the runtime in a
crash loop): they are pinned, at the versions already installed, in a pip constraints file, and left out of what
is installed. verl is installed with --no-deps (its own metadata is narrower than Colab's Python), and the earlier
releases the lessons read are unpacked where `kit.upstream.releases_dir` looks, as `make setup` does.

`python -m verlstudy.kit.colab` runs `install_rest`; on any failure pip's own message stands and it exits 1, and the
set-up line's one line of advice follows.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from packaging.requirements import Requirement

from verlstudy import __version__
from verlstudy.kit.params import check_instance, check_items, check_path, check_str
from verlstudy.kit.upstream import releases_dir

REPOSITORY = "https://github.com/verlstudy/verlstudy"
COLAB_MODULE = "google.colab"  # imported by every Colab runtime before the first cell runs
# Kept equal to requirements-upstream.txt and the Makefile's VERL_RELEASES by a test
UPSTREAM_VERL = "0.9.1"
EARLIER_VERL_RELEASES = ("0.9.0",)
# What Colab pins and the course must not move: its Jupyter stack and its torch build
KEPT_AS_INSTALLED = ("ipython", "ipykernel", "jupyter-client", "traitlets", "torch")
ADVICE = "The course did not install: Runtime > Restart session, then run this cell again."


def release_source(version: str = __version__) -> str:
    """pip's requirement for the release a notebook belongs to: the repository at the tag `v<version>`."""
    if not isinstance(version, str) or not re.fullmatch(r"\d+\.\d+\.\d+\S*", version):
        raise ValueError(f"version must be a release such as '0.1.0', got {version!r}")
    return f"git+{REPOSITORY}@v{version}"


# The set-up cell's first lines; {{sys.executable}} stays a brace of the cell's own f-string
SETUP_TEMPLATE = (
    "import importlib.util, subprocess, sys\n"
    'if "{colab}" in sys.modules and not importlib.util.find_spec("verlstudy"):'
    "  # Colab only: this release of the course\n"
    '    subprocess.run(f"{{sys.executable}} -m pip install -q --no-deps {source}'
    " && {{sys.executable}} -m verlstudy.kit.colab || echo '{advice}'\", shell=True)\n"
)


def setup_lines(version: str = __version__) -> str:
    """The exact first lines of every lesson's set-up cell (plain Python: verlstudy is not importable yet on Colab)."""
    return SETUP_TEMPLATE.format(colab=COLAB_MODULE, source=release_source(version), advice=ADVICE)


SETUP_LINES = setup_lines()
# The name the README's earlier text and tests gave these lines, when they stood as a cell of their own
FIRST_CELL = SETUP_LINES.rstrip("\n")


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    """The distribution name a requirement string starts with (`jupyter_client>=8` -> `jupyter-client`)."""
    check_str("requirement", requirement, what="a requirement (a str such as 'torch>=2.9')")
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    if match is None:
        raise ValueError(f"not a requirement: {requirement!r}")
    return _normalized(match.group(1))


def rest_of_requirements(requires: Iterable[str]) -> list[str]:
    """The course's own requirements Colab still needs: no extras, nothing Colab pinned (`KEPT_AS_INSTALLED`)."""
    kept = {_normalized(n) for n in KEPT_AS_INSTALLED}
    requires = check_items("requires", requires, str, what="a requirement (a str)")
    return [r for r in requires if Requirement(r).marker is None and requirement_name(r) not in kept]


def pins(installed: Mapping[str, str]) -> list[str]:
    """Constraint lines `name==version` for every kept package that is installed (what pip must not move)."""
    check_instance("installed", installed, Mapping, what="a mapping of package name to version")
    found = {_normalized(k): v for k, v in installed.items()}
    return [f"{name}=={found[_normalized(name)]}" for name in KEPT_AS_INSTALLED if _normalized(name) in found]


def installed_versions(names: Iterable[str] = KEPT_AS_INSTALLED) -> dict[str, str]:
    """The installed version of each of `names` that is installed."""
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def install_commands(python: str, constraints: Path, requirements: Sequence[str], releases: Path) -> list[list[str]]:
    """The pip commands that finish the install: the course's requirements under the pins, verl, earlier verls."""
    check_str("python", python, what="the Python to install with (a path, as a str)")
    constraints, releases = check_path("constraints", constraints), check_path("releases", releases)
    requirements = check_items("requirements", requirements, str, what="a requirement (a str)")
    pip = [python, "-m", "pip", "install", "-q"]
    commands = [[*pip, "-c", str(constraints), *requirements]] if requirements else []
    commands.append([*pip, "--no-deps", "--ignore-requires-python", f"verl=={UPSTREAM_VERL}"])
    for version in EARLIER_VERL_RELEASES:
        target = releases / version
        commands.append([*pip, "--no-deps", "--ignore-requires-python", "--target", str(target), f"verl=={version}"])
    return commands


def install_rest(
    run: Callable[..., subprocess.CompletedProcess] = subprocess.run,
    requires: Sequence[str] | None = None,
    installed: Mapping[str, str] | None = None,
) -> int:
    """Install what the course needs beyond its own package, keeping Colab's pins; pip's exit status (0: done)."""
    requires = (importlib.metadata.requires("verlstudy") or []) if requires is None else requires
    installed = installed_versions() if installed is None else installed
    with tempfile.TemporaryDirectory() as folder:
        constraints = Path(folder) / "colab-pins.txt"
        constraints.write_text("".join(f"{line}\n" for line in pins(installed)))
        for command in install_commands(sys.executable, constraints, rest_of_requirements(requires), releases_dir()):
            status = run(command).returncode
            if status:
                return status
    return 0


if __name__ == "__main__":
    sys.exit(install_rest())
