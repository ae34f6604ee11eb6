"""Data files the lessons read: a non-UTF-8 file or a CSV without its header is one line naming the file."""

import pytest

from verlstudy.kit.resources import DataFileError, data_dir, read_data_csv, read_data_text
from verlstudy.lessons.l07_grpo_recipe.parallel import load_recipe


def test_utf8_text_is_read_and_anything_else_names_the_file(tmp_path):
    good = tmp_path / "good.txt"
    good.write_text("déjà vu\n", encoding="utf-8")
    assert read_data_text(good) == "déjà vu\n"
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("déjà vu\n".encode("latin-1"))
    with pytest.raises(DataFileError) as e:
        read_data_text(bad)
    assert str(e.value).startswith(f"{bad} is not UTF-8 text (byte 1 is b'\\xe9')") and "\n" not in str(e.value)
    with pytest.raises(DataFileError, match=r"missing\.txt does not exist; restore it"):
        read_data_text(tmp_path / "missing.txt")
    with pytest.raises(DataFileError, match="cannot be read"):
        read_data_text(tmp_path)  # a folder
    assert issubclass(DataFileError, ValueError)


def test_a_csv_is_read_as_rows_under_its_header(tmp_path):
    path = tmp_path / "refs.csv"
    path.write_text('repo,ref\nverl,"v0.9,1"\n\nmegatron,main\n', encoding="utf-8")
    assert read_data_csv(path, ["repo", "ref"]) == [
        {"repo": "verl", "ref": "v0.9,1"},
        {"repo": "megatron", "ref": "main"},
    ]
    shipped = data_dir() / "checkpoint" / "glm5_2_recipe_refs.csv"
    assert len(read_data_csv(shipped, ["repo", "ref", "kind", "commit"])) >= 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("verl,v0.9.1\nmegatron,main\n", "the first row must be the header naming repo, ref; it lacks repo, ref"),
        ("", "it lacks repo, ref (found an empty file)"),
        ("repo,ref\nverl,v0.9.1,extra\n", "line 2 has 3 fields, the header has 2"),
        ("repo,ref\nverl\n", "line 2 has 1 fields, the header has 2"),
    ],
)
def test_a_csv_without_its_header_or_with_a_ragged_row_names_the_file(tmp_path, text, message):
    path = tmp_path / "refs.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataFileError) as e:
        read_data_csv(path, ["repo", "ref"])
    assert str(e.value).startswith(f"{path}: ") and message in str(e.value) and "\n" not in str(e.value)


def test_a_csv_that_is_not_utf8_names_the_file(tmp_path):
    path = tmp_path / "refs.csv"
    path.write_bytes(b"repo,ref\nverl,\xff\n")
    with pytest.raises(DataFileError, match=r"refs\.csv is not UTF-8 text"):
        read_data_csv(path, ["repo"])


def test_lesson_07s_recipe_reader_names_a_non_utf8_recipe(tmp_path):
    path = tmp_path / "recipe.yaml"
    path.write_bytes("# r\u00e9sum\u00e9\nlayout: {}\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"recipe\.yaml is not UTF-8 text"):
        load_recipe(path)
