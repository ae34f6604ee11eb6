"""`make lock`: compile requirements.lock, every package `make setup` installs except torch, with hashes.

torch is left out on purpose: its CPU build comes from PyTorch's CPU index (or a wheel on disk) and a GPU
user keeps their own, so it stays pinned in constraints.txt; its own requirements are locked here.
The lock's first lines carry a digest of the requirements it was compiled from, so a test can tell when
pyproject.toml changed and the lock did not.

The lock is universal (`uv pip compile --universal`): one file for Linux, macOS and Windows and every supported
Python, platform-only packages (appnope on macOS, colorama on Windows) behind environment markers that pip
skips elsewhere. uv is pinned (UV_VERSION; `make lock` installs that version) so the same inputs give the same lock.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
DIGEST_PREFIX = "# inputs-sha256: "
LEFT_OUT = ("torch",)  # installed separately (see the Makefile); its requirements are locked below
UV_VERSION = "0.13.9"
# What only a CUDA build of torch requires: installed with that build by its own index, never by the lock, so a GPU
# box (the README's `make test CONSTRAINTS= TORCH_INDEX=`) computes the same inputs as the CPU build.
CUDA_ONLY_PREFIXES = ("nvidia-", "triton", "cuda-", "cusparselt")


def _name(requirement: str) -> str:
    for stop in "<>=!~[; ":
        requirement = requirement.split(stop, 1)[0]
    return requirement.strip().lower().replace("_", "-")


def torch_requirements(required: list[str] | None = None) -> list[str]:
    """What every torch build needs (the installed torch's requirements unless given): no extras, no CUDA wheels."""
    if required is None:
        required = importlib.metadata.requires("torch") or []
    return sorted(r for r in required if "extra ==" not in r and not _name(r).startswith(CUDA_ONLY_PREFIXES))


def uv_version() -> str:
    """The installed uv's version ("" when uv is not installed)."""
    done = subprocess.run([sys.executable, "-m", "uv", "--version"], capture_output=True, text=True, check=False)
    return done.stdout.split()[1] if done.returncode == 0 and done.stdout.startswith("uv ") else ""


def lock_inputs(pyproject: Path = ROOT / "pyproject.toml", torch_needs: list[str] | None = None) -> list[str]:
    """The requirements the lock is compiled from: the project's and its dev extra's, torch's own needs."""
    project = tomllib.loads(pyproject.read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    kept = [r for r in wanted if _name(r) not in LEFT_OUT]
    return [*kept, *(torch_requirements() if torch_needs is None else torch_needs)]


def inputs_digest(inputs: list[str]) -> str:
    return hashlib.sha256("\n".join(inputs).encode()).hexdigest()


def recorded(lock_text: str) -> tuple[str, list[str]]:
    """(digest, inputs) recorded in a lock's header."""
    digest, inputs = "", []
    for line in lock_text.splitlines():
        if line.startswith(DIGEST_PREFIX):
            digest = line.removeprefix(DIGEST_PREFIX).strip()
        elif line.startswith("# input: "):
            inputs.append(line.removeprefix("# input: ").strip())
    return digest, inputs


def lowest_torch(pyproject: Path = ROOT / "pyproject.toml") -> str:
    """The lowest torch pyproject.toml allows (`make lowest` installs it from the CPU index, with its own needs)."""
    (torch,) = [r for r in tomllib.loads(pyproject.read_text())["project"]["dependencies"] if _name(r) == "torch"]
    lowest = torch.split(">=", 1)[1].split(",", 1)[0].strip() if ">=" in torch else ""
    if not lowest:
        raise ValueError(f"pyproject.toml's {torch!r} has no lower bound (>=): the lowest-versions job needs one")
    return lowest


def compile_lowest(out: Path) -> None:
    """The lowest version of every direct requirement (and the dev extra) for this Python, torch left out."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    out.parent.mkdir(parents=True, exist_ok=True)
    source = out.with_suffix(".in")
    source.write_text("\n".join(r for r in wanted if _name(r) not in LEFT_OUT) + "\n")
    command = [sys.executable, "-m", "uv", "pip", "compile", str(source), "-o", str(out), "--resolution"]
    command += ["lowest-direct", "--python-version", platform.python_version(), "--quiet", "--no-header"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def main() -> int:
    if sys.argv[1:] == ["--uv-version"]:  # the Makefile installs this version before it runs the lock
        print(UV_VERSION)
        return 0
    if sys.argv[1:] == ["--lowest-torch"]:
        print(lowest_torch())
        return 0
    found = uv_version()
    if found != UV_VERSION:
        print(
            f"make lock needs uv {UV_VERSION}, found {found or 'none'}: pip install uv=={UV_VERSION}",
            file=sys.stderr,
        )
        return 2
    if sys.argv[1:2] == ["--lowest"] and len(sys.argv) == 3:
        compile_lowest(Path(sys.argv[2]))
        return 0
    python = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    lowest = python.split(">=", 1)[1].split(",", 1)[0]  # --universal resolves for this Python and every newer one
    inputs = lock_inputs()
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "requirements.in"
        source.write_text("\n".join(inputs) + "\n")
        compiled = Path(tmp) / "requirements.lock"
        if LOCK.exists():  # keep today's pins unless an input moved (uv reads the old file as preferences)
            compiled.write_text(LOCK.read_text())
        command = [sys.executable, "-m", "uv", "pip", "compile", str(source), "-o", str(compiled)]
        command += ["--universal", "--python-version", lowest, "--generate-hashes", "--no-header", "--no-annotate"]
        command += ["--no-emit-package", "torch", *sys.argv[1:]]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)  # uv echoes the lock
        header = [
            "# Every package `make setup` installs but torch (constraints.txt) and verl (requirements-upstream.txt).",
            f"# Universal (every platform, Python {python}), compiled by uv {UV_VERSION}.",
            "# Generated by `make lock` (tools/lock.py) from pyproject.toml; do not edit by hand.",
            DIGEST_PREFIX + inputs_digest(inputs),
            *(f"# input: {r}" for r in inputs),
        ]
        LOCK.write_text("\n".join(header) + "\n" + compiled.read_text())
    print(f"wrote {LOCK.relative_to(ROOT)} ({len(inputs)} inputs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
