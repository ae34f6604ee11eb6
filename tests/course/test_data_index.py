"""data/README.md indexes every fixture folder, and every fixture is read by a lesson or a helper."""

import re

import pytest

from verlstudy.course import registry

DATA = registry.project_root() / "data"
INDEX = (DATA / "README.md").read_text()
LISTED = re.findall(r"^\| `([^`]+)` \| (\w+) \|", INDEX, flags=re.MULTILINE)
ENTRIES = sorted(p for p in DATA.iterdir() if p.name != "README.md" and not p.name.startswith("."))


def _readers() -> str:
    root = registry.project_root()
    sources = [*(root / "src").rglob("*.py"), *(root / "notebooks" / "py").glob("*.py")]
    return "\n".join(p.read_text() for p in sources)


def test_the_index_lists_exactly_what_is_in_data():
    names = {name.rstrip("/") for name, _ in LISTED}
    assert names == {p.name for p in ENTRIES}


def test_each_row_names_a_lesson_that_exists():
    codes = {lesson.code for lesson in registry.LESSONS}
    for name, lesson in LISTED:
        assert lesson == "all" or lesson in codes, f"{name}: lesson {lesson!r} is not in the registry"


@pytest.mark.parametrize("folder", [p for p in ENTRIES if p.is_dir()], ids=lambda p: p.name)
def test_every_folder_documents_its_files(folder):
    readme = folder / "README.md"
    assert readme.exists(), f"data/{folder.name} needs a README saying what each fixture models"
    text = readme.read_text()
    top_level = [p for p in folder.iterdir() if p.name != "README.md" and not p.name.startswith((".", "__pycache__"))]
    for path in top_level:
        assert path.name in text, f"data/{folder.name}/README.md does not mention {path.name}"


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda p: p.name)
def test_every_fixture_is_read_by_a_lesson_or_a_helper(entry):
    assert entry.name in _readers(), f"nothing in src/ or notebooks/ reads data/{entry.name}"


def test_data_files_lists_every_file_under_data():
    listed = [line for line in (DATA / "FILES").read_text().splitlines() if line and not line.startswith("#")]
    present = sorted(
        p.relative_to(DATA).as_posix()
        for p in DATA.rglob("*")
        if p.is_file() and p.name != "FILES" and "__pycache__" not in p.parts and not p.name.startswith(".")
    )
    assert listed == present, "regenerate data/FILES: cd data && find . -type f | sort (without FILES, caches)"
