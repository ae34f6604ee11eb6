"""A checkout and an installed package each get what fits them: where caches go, the run's "Next:" lines, refresh.

The installed case is simulated here (kit.resources.checkout_root -> None);
tests/course/test_installed_wheel.py runs the real wheel from an empty folder.
"""

import re
import sys
import tomllib
from pathlib import Path

import nbformat
import pytest
import yaml

from verlstudy.course import cli, registry, reports, twins
from verlstudy.kit import colab, resources

ROOT = Path(__file__).resolve().parents[2]
BLOB = "https://github.com/verlstudy/verlstudy/blob/main/"


@pytest.fixture
def installed(monkeypatch, tmp_path):
    """An installed package (no checkout) whose user cache folder is tmp_path/xdg, run from tmp_path/empty."""
    monkeypatch.setattr(resources, "checkout_root", lambda: None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    return tmp_path


def test_in_a_checkout_the_build_and_cache_folders_are_its_build_folder():
    root = resources.checkout_root()
    if root is None:
        pytest.skip("an installed package has no checkout")
    assert resources.build_root() == root / "build" and resources.cache_root() == root / "build" / "cache"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG_CACHE_HOME is Linux's")
def test_installed_the_build_and_cache_folders_are_the_users_cache_folder_never_the_current_one(installed):
    assert resources.build_root() == installed / "xdg" / "verlstudy"
    assert resources.cache_root() == installed / "xdg" / "verlstudy" / "cache"
    assert not resources.build_root().is_relative_to(Path.cwd())


def test_platformdirs_is_declared_everywhere_the_dependencies_are_listed():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "platformdirs>=4.0" in project["dependencies"]
    for env in ("environment.yml", "binder/environment.yml"):
        assert "platformdirs>=4.0" in yaml.safe_load((ROOT / env).read_text())["dependencies"], env
    lock = (ROOT / "requirements.lock").read_text()
    assert "# input: platformdirs>=4.0" in lock
    pin = re.search(r"^platformdirs==\S+ \\\n(    --hash=sha256:\w+ \\?\n)+", lock, re.MULTILINE)
    assert pin, "platformdirs is pinned with hashes (the lock installs with --require-hashes --no-deps)"


def test_the_next_lines_fit_a_checkout():
    lines = "\n".join(reports.next_steps(checkout=True))
    assert "`make lab`" in lines and "student edition" in lines and "full edition" in lines


def test_the_next_lines_fit_an_install_and_name_no_make_target(installed):
    text = reports.report_markdown([], None, out=Path("run"))
    nxt = text.split("Next:", 1)[1]
    assert "verlstudy init DIR" in nxt and "jupyter lab DIR/student" in nxt and "full edition" in nxt
    assert "make " not in nxt
    assert reports.next_steps() == reports.next_steps(checkout=False)


def test_refresh_on_an_installed_package_is_refused_in_one_line_naming_init(installed, monkeypatch, capsys):
    monkeypatch.setattr(twins, "refresh", lambda *a, **k: pytest.fail("an installed package is never rewritten"))
    assert cli.main(["refresh", "00"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "use `verlstudy init DIR` for a copy of your own" in err, err


# ---------------------------------------------------------------- the README, read on an index page too


def test_the_readme_has_no_relative_links():
    readme = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)\s]+)\)", readme) + re.findall(r"(?:href|src)=\"([^\"]+)\"", readme)
    targets += re.findall(r"^\[[^\]]+\]:\s*(\S+)", readme, re.MULTILINE)  # reference-style definitions
    relative = [t for t in targets if not re.match(r"(https?://|mailto:|#)", t)]
    assert targets and not relative, f"relative links break on an index page (PyPI): {relative}"
    for target in (t for t in targets if t.startswith(BLOB)):
        assert (ROOT / target.removeprefix(BLOB).split("#")[0]).exists(), f"{target} names no file of the checkout"


def test_the_readme_packaging_section_names_lowest_the_lock_binder_and_the_colab_cell():
    section = (ROOT / "README.md").read_text().split("## Packaging\n", 1)[1].split("\n## ", 1)[0]
    for phrase in ("make lowest", "requirements.lock", "--require-hashes --no-deps", "binder/environment.yml"):
        assert phrase in section, phrase
    assert "binder/postBuild" in section and "verlstudy.kit.colab.FIRST_CELL" in section
    assert f"```python\n{colab.FIRST_CELL}\n```" in section, "the README shows the Colab cell exactly"
    assert "3.13" in section and "verl 0.9.1" in section


def test_no_py_typed_is_shipped_since_no_type_check_passes():
    # PEP 561: py.typed promises importers checked annotations; mypy is not run on this package, so none is shipped
    assert not list((ROOT / "src").rglob("py.typed"))
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert not any("py.typed" in pattern for patterns in package_data.values() for pattern in patterns)


# ---------------------------------------------------------------- nbconvert's own stream coalescing (issue 33 item 9)


def test_streams_are_coalesced_by_nbconvert_without_touching_the_given_outputs(monkeypatch):
    from nbconvert.preprocessors import CoalesceStreamsPreprocessor

    calls = []
    real = CoalesceStreamsPreprocessor.preprocess_cell
    monkeypatch.setattr(CoalesceStreamsPreprocessor, "preprocess_cell", lambda *a: calls.append(1) or real(*a))
    out = nbformat.v4.new_output("stream", text="a\n")
    given = [
        out,
        {"output_type": "stream", "name": "stdout", "text": "50%\r100%\n"},
        nbformat.v4.new_output("stream", name="stderr", text="w\n"),
    ]
    merged = twins.coalesce_streams(given)
    assert [(o.name, o.text) for o in merged] == [("stdout", "a\n100%\n"), ("stderr", "w\n")]
    assert out.text == "a\n" and len(given) == 3, "the caller's outputs are left as they were"
    assert calls == [1], "nbconvert's own preprocessor does the merging"


def test_the_stored_notebooks_are_already_coalesced_so_nothing_stored_changes():
    for lesson in registry.LESSONS:
        nb = nbformat.read(lesson.notebook, as_version=4)
        for cell in (c for c in nb.cells if c.cell_type == "code"):
            assert twins.coalesce_streams(list(cell.outputs)) == list(cell.outputs), f"{lesson.stem}: {cell.id}"
