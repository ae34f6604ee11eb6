"""Installed, not only cloned: a wheel built from this checkout runs the course from an empty folder.

The wheel is built from a copy of the sources (so the checkout gains no build/ or egg-info), installed
into a folder of its own without dependencies (the test's environment already has them), and put
first on PYTHONPATH, so the commands below cannot see the checkout at all.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _installed_env(site: Path, user_cache: Path) -> dict[str, str]:
    """The installed package first on the path, the user's cache folder in tmp, no cache folder inherited from here."""
    from verlstudy.course.twins import CACHE_ENV

    env = {k: v for k, v in os.environ.items() if k not in CACHE_ENV}
    return {**env, "PYTHONPATH": str(site), "XDG_CACHE_HOME": str(user_cache)}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    for name in ("src", "notebooks", "data", "docs"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"):
        shutil.copy(ROOT / name, source / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", str(source), "--no-deps", "--no-build-isolation", "-w", str(work / "dist")],
                   check=True, capture_output=True)  # fmt: skip
    (wheel,) = (work / "dist").glob("verlstudy-*.whl")
    site = work / "site"
    subprocess.run([*pip, "install", "--no-deps", "--no-index", "--target", str(site), str(wheel)], check=True)
    empty = work / "empty"
    empty.mkdir()
    env = _installed_env(site, work / "user-cache")

    def verlstudy(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "verlstudy", *args], cwd=empty, env=env, capture_output=True, text=True, check=check
        )

    return verlstudy, site, empty


def test_the_installed_package_is_the_wheels_not_the_checkouts(installed):
    _, site, empty = installed
    where = subprocess.run(
        [sys.executable, "-c", "import verlstudy.kit.resources as r; print(r.__file__); print(r.course_root())"],
        cwd=empty, env={**os.environ, "PYTHONPATH": str(site)}, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert Path(where[0]).is_relative_to(site) and Path(where[1]) == site / "verlstudy" / "_course"
    bundle = site / "verlstudy" / "_course"
    assert len(list((bundle / "notebooks").glob("*.ipynb"))) == 10 and (bundle / "data" / "stacks").is_dir()
    assert (bundle / "docs" / "facilitator.md").is_file()  # the site links the guide from an installed package too
    assert not (bundle / "notebooks" / "py").exists(), "the jupytext twins are for authors in a checkout"
    assert not list((site / "verlstudy").rglob("py.typed")), "no typing promise: the package is not type-checked"


def test_list_works_from_an_empty_folder(installed):
    verlstudy, _, _ = installed
    assert "10 lessons, 400 minutes in all" in verlstudy("list").stdout
    assert [entry["code"] for entry in json.loads(verlstudy("list", "--json").stdout)][:3] == ["00", "01", "02"]


def test_a_kernel_started_from_the_wheel_runs_lesson_code_on_its_bundled_data(installed, tmp_path):
    # not a whole lesson: `make test` executes each lesson twice at most (nbval, then the course run)
    _, site, empty = installed
    probe = tmp_path / "probe.ipynb"
    cells = [
        "from verlstudy.kit.resources import data_dir\nfrom verlstudy.lessons.l02_detach import trees",
        f"engines = sorted(p.name for p in (data_dir() / 'engines').glob('*'))\n"
        f"print(trees.__file__.startswith({str(site)!r}), engines[:1])",
    ]
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]), probe)
    code = (
        "import sys; from pathlib import Path; from verlstudy.course import runner; "
        f"print(runner.execute_with_papermill(Path({str(probe)!r}), Path({str(tmp_path / 'out.ipynb')!r}), "
        f"{{}}, Path({str(empty)!r}))[:2])"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=empty, env={**os.environ, "PYTHONPATH": str(site)},
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.stdout.strip() == "('passed', '')", done.stdout + done.stderr
    printed = nbformat.read(tmp_path / "out.ipynb", as_version=4).cells[1].outputs[0]["text"]
    assert printed.startswith("True ["), printed


def test_a_bad_parameter_is_refused_by_the_installed_lesson_before_a_kernel_starts(installed, tmp_path):
    verlstudy, _, _ = installed
    done = verlstudy("run", "00", "--out", str(tmp_path / "out"), "-p", "n_draws=0", check=False)
    assert done.returncode == 2 and "n_draws=0 is out of range" in done.stderr
    assert not (tmp_path / "out").exists()


def test_student_edition_and_a_learners_copy(installed, tmp_path):
    verlstudy, _, _ = installed
    verlstudy("student", "--out", str(tmp_path / "student"))
    assert len(list((tmp_path / "student").glob("*.ipynb"))) == 10
    mine = tmp_path / "mine"
    verlstudy("init", str(mine))
    assert len(list((mine / "notebooks").glob("*.ipynb"))) == 10 and len(list((mine / "student").glob("*.ipynb"))) == 10
    edited = mine / "student" / "04_thd_sequence_alignment.ipynb"
    edited.write_text(edited.read_text().replace("NotImplementedError", "NotImplementedError  # my attempt", 1))
    again = verlstudy("init", str(mine)).stdout
    assert "kept as you changed them" in again and "my attempt" in edited.read_text()


def test_doctor_is_clean_from_an_empty_folder_with_nbval_optional(installed):
    verlstudy, _, _ = installed
    done = verlstudy("doctor", "--no-kernel-start", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[FAIL]" not in done.stdout and "[OK] optional nbval: " in done.stdout
    assert "[OK] matplotlib " in done.stdout and "pytest" not in done.stdout  # the wheel's own ranges, no dev tools


def test_a_run_from_an_empty_folder_leaves_nothing_there_but_its_out_folder(installed, tmp_path):
    # lesson 00's notebook is swapped for a probe (matplotlib draws, so its font cache is written) in a copy of the
    # install: the CLI's whole path (caches, floor, report, Next lines) without a third execution of a lesson in
    # `make test`, so this probe is not logged as one
    _, site, _ = installed
    copy = tmp_path / "site"
    shutil.copytree(site, copy)
    code = "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])\nprint('probe')"
    lesson = copy / "verlstudy" / "_course" / "notebooks" / "00_start_here.ipynb"
    nb = nbformat.read(lesson, as_version=4)
    (parameters,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    nb.cells = [parameters, nbformat.v4.new_code_cell(code)]  # the lesson's parameters, then the probe
    nbformat.write(nb, lesson)
    empty = tmp_path / "empty"
    empty.mkdir()
    env = _installed_env(copy, tmp_path / "user-cache")
    env.pop("VERLSTUDY_EXECUTION_LOG", None)
    done = subprocess.run([sys.executable, "-m", "verlstudy", "run", "00", "--out", "X"],
                          cwd=empty, env=env, capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in empty.iterdir()) == ["X"]
    assert (empty / "X" / "00_start_here.ipynb").is_file() and (empty / "X" / "report.md").is_file()
    assert (tmp_path / "user-cache" / "verlstudy" / "cache" / "matplotlib").is_dir()
    after = done.stdout.split("Next:", 1)[1]
    assert "verlstudy init DIR" in after and "jupyter lab DIR/student" in after and "make " not in after


def test_refresh_refuses_to_rewrite_the_installed_notebooks_in_one_line(installed):
    verlstudy, site, empty = installed
    notebook = site / "verlstudy" / "_course" / "notebooks" / "00_start_here.ipynb"
    before = notebook.read_bytes()
    done = verlstudy("refresh", "00", check=False)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "use `verlstudy init DIR` for a copy of your own" in done.stderr
    assert notebook.read_bytes() == before and not any(empty.iterdir())


def test_the_chinese_edition_builds_and_checks_from_the_installed_package(installed, tmp_path):
    verlstudy, site, _ = installed
    checked = verlstudy("edition", "zh_CN", "--check")
    assert checked.returncode == 0 and "markdown cells translated from today's English" in checked.stdout
    done = verlstudy("edition", "zh_CN", "00", "--student", "--out", str(tmp_path / "zh"))
    assert "1 notebooks" in done.stdout and (tmp_path / "zh" / "00_start_here.ipynb").is_file()
    assert (site / "verlstudy" / "kit" / "locale" / "zh_CN.po").is_file()
    said = subprocess.run(
        [sys.executable, "-c", "from verlstudy.kit import i18n; print(i18n._('not yet right'))"],
        env={**os.environ, "PYTHONPATH": str(site), "VERLSTUDY_LANG": "zh_CN"}, capture_output=True, text=True,
        check=True,
    ).stdout  # fmt: skip
    assert said.strip() == "还不对"
