"""The Colab lines of every set-up cell: install this release on Colab only, keep Colab's pins; elsewhere nothing."""

import contextlib
import importlib.util
import io
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import verlstudy
from verlstudy.kit import colab

ROOT = Path(__file__).resolve().parents[2]
# Colab's default runtime (googlecolab/backend-info, 2026-08-19)
COLAB_STACK = {
    "ipython": "7.34.0",
    "ipykernel": "6.17.1",
    "jupyter_client": "7.4.9",
    "traitlets": "5.7.1",
    "torch": "2.11.0+cpu",
}


def _run_setup_lines(monkeypatch, *, on_colab: bool, installed: bool) -> tuple[list, str]:
    """Execute SETUP_LINES's exact source with the shell and the import system faked; (shell calls, printed)."""
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda command, **kw: calls.append((command, kw)))
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: (object() if installed else None) if name == "verlstudy" else real_find_spec(name, *a),
    )
    if on_colab:
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        exec(compile(colab.SETUP_LINES, "<set-up cell>", "exec"), {})
    return calls, printed.getvalue()


def test_off_colab_the_lines_run_nothing_and_print_nothing(monkeypatch):
    assert _run_setup_lines(monkeypatch, on_colab=False, installed=False) == ([], "")
    assert _run_setup_lines(monkeypatch, on_colab=False, installed=True) == ([], "")


def test_on_colab_they_install_this_release_without_dependencies_then_the_rest_once(monkeypatch):
    calls, printed = _run_setup_lines(monkeypatch, on_colab=True, installed=False)
    assert printed == "" and len(calls) == 1
    command, options = calls[0]
    assert options == {"shell": True}
    install, rest, advice = re.fullmatch(r"(.*) && (.*) \|\| echo '(.*)'", command).groups()
    assert install == f"{sys.executable} -m pip install -q --no-deps {colab.release_source()}"
    assert rest == f"{sys.executable} -m verlstudy.kit.colab"
    assert advice == colab.ADVICE and advice.count(".") == 1, "one line says what to do"
    assert _run_setup_lines(monkeypatch, on_colab=True, installed=True) == ([], ""), "a second run reinstalls"


def test_the_release_is_the_notebooks_own_tag():
    assert colab.release_source() == f"git+https://github.com/verlstudy/verlstudy@v{verlstudy.__version__}"
    assert f"@v{verlstudy.__version__} " in colab.SETUP_LINES
    assert colab.release_source("1.2.3rc1").endswith("@v1.2.3rc1")
    for bad in ("main", "", "v0.1.0", None):
        with pytest.raises(ValueError, match="version must be a release"):
            colab.release_source(bad)  # type: ignore[arg-type]


def test_the_jupyter_stack_and_torch_are_pinned_where_they_are_and_never_installed():
    pinned = colab.pins(COLAB_STACK)
    assert pinned == [
        "ipython==7.34.0",
        "ipykernel==6.17.1",
        "jupyter-client==7.4.9",
        "traitlets==5.7.1",
        "torch==2.11.0+cpu",
    ]
    assert colab.pins({"torch": "2.13.0"}) == ["torch==2.13.0"], "only what is installed is pinned"
    requires = ["torch>=2.4", "ipython>=8.18", "jupyter_client>=8.6", "Traitlets>=5", "ipykernel>=6.29", "numpy>=1.26"]
    requires += ['pytest>=8.0; extra == "dev"', "nbconvert>=7.16.5"]
    assert colab.rest_of_requirements(requires) == ["numpy>=1.26", "nbconvert>=7.16.5"]


def test_the_commands_install_the_rest_under_the_pins_then_verl_without_dependencies(tmp_path):
    commands = colab.install_commands("py", tmp_path / "pins.txt", ["numpy>=1.26"], tmp_path / "releases")
    pip = ["py", "-m", "pip", "install", "-q"]
    assert commands[0] == [*pip, "-c", str(tmp_path / "pins.txt"), "numpy>=1.26"]
    assert commands[1] == [*pip, "--no-deps", "--ignore-requires-python", f"verl=={colab.UPSTREAM_VERL}"]
    targets = [c[c.index("--target") + 1] for c in commands[2:]]
    assert targets == [str(tmp_path / "releases" / v) for v in colab.EARLIER_VERL_RELEASES]
    assert all("--no-deps" in c for c in commands[1:])
    assert colab.install_commands("py", tmp_path / "p", [], tmp_path)[0][-1] == f"verl=={colab.UPSTREAM_VERL}"


def test_install_rest_writes_the_pins_and_stops_at_the_first_failure():
    seen = []

    def run(command, status=0):
        constraints = Path(command[command.index("-c") + 1]) if "-c" in command else None
        seen.append((command, constraints.read_text() if constraints else None))
        return subprocess.CompletedProcess(command, 1 if "verl==0.9.1" in command else status)

    status = colab.install_rest(run, requires=["numpy>=1.26", "ipython>=8.18"], installed=COLAB_STACK)
    assert status == 1 and len(seen) == 2, "the earlier release is not fetched after verl failed"
    assert seen[0][0][-1] == "numpy>=1.26" and "ipython" not in " ".join(seen[0][0][6:])
    assert seen[0][1].splitlines() == colab.pins(COLAB_STACK)
    seen.clear()
    assert colab.install_rest(lambda c: subprocess.CompletedProcess(c, 0), requires=[], installed={}) == 0


def test_verl_versions_agree_with_the_checkouts_install():
    upstream = (ROOT / "requirements-upstream.txt").read_text()
    assert re.search(rf"^verl=={re.escape(colab.UPSTREAM_VERL)}$", upstream, flags=re.M)
    releases = re.search(r"^VERL_RELEASES \?= (.*)$", (ROOT / "Makefile").read_text(), flags=re.M).group(1).split()
    assert tuple(releases) == colab.EARLIER_VERL_RELEASES


def test_a_requirement_is_named_as_pip_names_it():
    assert colab.requirement_name("jupyter_client>=8.6") == "jupyter-client"
    assert colab.requirement_name("PyYAML") == "pyyaml"
    with pytest.raises(ValueError, match="not a requirement"):
        colab.requirement_name(">=1")


def test_the_colab_runtime_job_pins_what_the_course_keeps_and_runs_the_issues_lessons():
    # tools/colab_runtime.sh (CI: .github/workflows/colab.yml) rebuilds Colab's runtime from colab_versions.txt
    root = ROOT
    lines = (root / "tools" / "colab_versions.txt").read_text().splitlines()
    pinned = {colab.requirement_name(line) for line in lines if line and not line.startswith("#")}
    assert pinned == set(colab.KEPT_AS_INSTALLED)
    assert all("==" in line for line in lines if line and not line.startswith("#"))
    script = (root / "tools" / "colab_runtime.sh").read_text()
    assert "python -m verlstudy.kit.colab" in script and "run 00 01 03 04" in script
    assert "tools/colab_runtime.sh" in (root / ".github" / "workflows" / "colab.yml").read_text()
