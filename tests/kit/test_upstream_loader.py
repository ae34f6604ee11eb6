"""Loading single upstream functions from source text: what works, and every way it fails clearly."""

import ast

import pytest
import torch

from verlstudy.kit import upstream

SOURCE = '''
import torch
from megatron.core import mpu
from transformers import PretrainedConfig

LIMIT = 3


def _helper(x):
    return min(x, LIMIT)


def clamp_to_tp(x: PretrainedConfig) -> "int":
    """Uses a same-file helper and a collaborator the caller supplies."""
    return _helper(x) * mpu.get_tensor_model_parallel_world_size()


def uses_torch(n: int = 2):
    return torch.zeros(n)


def calls_unknown():
    return not_defined_anywhere(1)


class Thing:
    pass
'''


class FakeMpu:
    @staticmethod
    def get_tensor_model_parallel_world_size():
        return 2


def test_loads_a_function_with_its_same_file_helpers_and_supplied_collaborators():
    fns = upstream.load_from_source(SOURCE, ["clamp_to_tp"], {"mpu": FakeMpu})
    assert fns["clamp_to_tp"](10) == 6  # min(10, LIMIT=3) * tp 2
    assert fns["clamp_to_tp"](1) == 2


def test_annotations_naming_heavy_types_are_not_needed():
    fns = upstream.load_from_source(SOURCE, ["uses_torch"], {"torch": torch})
    assert fns["uses_torch"]().shape == (2,)


def test_a_second_load_reuses_the_code_but_runs_it_in_a_fresh_namespace():
    class OtherMpu:
        @staticmethod
        def get_tensor_model_parallel_world_size():
            return 4

    first = upstream.load_from_source(SOURCE, ["clamp_to_tp"], {"mpu": FakeMpu})["clamp_to_tp"]
    second = upstream.load_from_source(SOURCE, ["clamp_to_tp"], {"mpu": OtherMpu})["clamp_to_tp"]
    assert second.__code__ is first.__code__  # compiled once
    assert second.__globals__ is not first.__globals__  # each load has its own collaborators
    assert (first(10), second(10)) == (6, 12)
    first.__globals__["LIMIT"] = 1  # what one load's namespace holds does not leak into the next
    assert upstream.load_from_source(SOURCE, ["clamp_to_tp"], {"mpu": FakeMpu})["clamp_to_tp"](10) == 6


def test_a_source_is_parsed_once_for_every_set_of_names_and_its_tree_left_as_parsed():
    source = SOURCE + "\n\ndef parsed_once_marker() -> int:\n    return 1\n"  # a source no other test loads
    upstream.load_from_source(source, ["uses_torch"], {"torch": torch})
    upstream.load_from_source(source, ["parsed_once_marker"])
    before = upstream._parsed.cache_info()
    assert upstream.load_from_source(source, ["clamp_to_tp"], {"mpu": FakeMpu})["clamp_to_tp"](10) == 6
    after = upstream._parsed.cache_info()
    assert (after.hits - before.hits, after.misses - before.misses) == (1, 0)
    tree = upstream._parsed(source, "<upstream>")
    clamp = next(n for n in tree.body if getattr(n, "name", None) == "clamp_to_tp")
    assert clamp.returns is not None and clamp.args.args[0].annotation is not None  # stripped only in copies


def test_a_copied_tree_is_the_same_tree_sharing_no_node():
    tree = ast.parse(SOURCE)
    copied = upstream._copy_tree(tree)
    assert ast.dump(copied, include_attributes=True) == ast.dump(tree, include_attributes=True)
    originals = {id(n) for n in ast.walk(tree)}
    assert not any(id(n) in originals for n in ast.walk(copied))
    compile(copied, "<copy>", "exec")  # locations came along


def test_a_missing_collaborator_is_named_on_every_load():
    for _ in range(2):  # a failed load is not remembered as a success
        with pytest.raises(upstream.MissingCollaborator, match=r"clamp_to_tp needs 'mpu'"):
            upstream.load_from_source(SOURCE, ["clamp_to_tp"])


def test_a_missing_collaborator_is_named():
    with pytest.raises(upstream.MissingCollaborator, match=r"clamp_to_tp needs 'mpu'"):
        upstream.load_from_source(SOURCE, ["clamp_to_tp"])
    with pytest.raises(upstream.MissingCollaborator, match=r"'not_defined_anywhere'"):
        upstream.load_from_source(SOURCE, ["calls_unknown"])


def test_a_moved_function_is_named():
    with pytest.raises(upstream.UpstreamMoved, match="defines no top-level detach_tree"):
        upstream.load_from_source(SOURCE, ["detach_tree"], filename="verl/workers/engine/utils.py")


def test_a_syntax_error_says_which_file_and_line():
    with pytest.raises(upstream.UpstreamError, match=r"broken.py does not parse \(line 1"):
        upstream.load_from_source("def f(:\n", ["f"], filename="broken.py")


def test_names_must_be_a_list_of_strings():
    with pytest.raises(TypeError, match="non-empty list"):
        upstream.load_from_source(SOURCE, [])


def test_absent_verl_gives_an_install_hint(monkeypatch):
    monkeypatch.setattr(upstream.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(upstream.VerlNotInstalled, match=r"requirements-upstream\.txt"):
        upstream.verl_root()


def test_a_moved_file_is_named(monkeypatch, tmp_path):
    monkeypatch.setattr(upstream, "verl_root", lambda release=None: tmp_path)
    monkeypatch.setattr(upstream, "verl_version", lambda release=None: "9.9")
    with pytest.raises(upstream.UpstreamMoved, match=r"verl 9\.9 has no file verl/workers/engine/utils\.py"):
        upstream.upstream_file("workers/engine/utils.py")


# ---------------------------------------------------------------- earlier releases fetched by `make setup`


def _fake_release(tmp_path, version: str, source: str = "def answer():\n    return 42\n"):
    root = tmp_path / version / "verl"
    (root / "utils").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "utils" / "thing.py").write_text(source)
    return root


def test_an_earlier_release_is_read_from_the_releases_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(upstream.RELEASES_ENV, str(tmp_path))
    _fake_release(tmp_path, "0.9.0")
    loaded = upstream.load_upstream("utils/thing.py", ["answer"], release="0.9.0")
    assert loaded["answer"]() == 42
    assert upstream.verl_version("0.9.0") == "0.9.0"
    assert upstream.upstream_file("utils/thing.py", "0.9.0")[1] == "verl-0.9.0/utils/thing.py"


def test_a_release_that_was_not_fetched_says_how_to_fetch_it(tmp_path, monkeypatch):
    monkeypatch.setenv(upstream.RELEASES_ENV, str(tmp_path))
    with pytest.raises(upstream.ReleaseNotFetched, match="make setup"):
        upstream.load_upstream("utils/thing.py", ["answer"], release="0.8.0")
    assert not upstream.verl_available("0.8.0")


@pytest.mark.parametrize("bad", ["0.9", "latest", "", 9])
def test_a_release_must_be_a_version_number(bad):
    with pytest.raises(ValueError, match="release must be a verl version"):
        upstream.verl_root(bad)


def test_an_upstream_cell_runs_its_body_when_every_source_is_there(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(upstream.RELEASES_ENV, str(tmp_path))
    _fake_release(tmp_path, "0.9.0")
    monkeypatch.setattr(upstream, "verl_available", lambda release=None: release in (None, "0.9.0"))
    ran = []
    assert upstream.upstream_cell(lambda: ran.append(1), releases=["0.9.0"]) is None  # no stray `True` in a cell
    assert ran == [1]


def test_an_upstream_cell_prints_one_skip_line_naming_the_missing_release(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(upstream.RELEASES_ENV, str(tmp_path))
    ran = []
    if upstream.verl_available():
        upstream.upstream_cell(lambda: ran.append(1), releases=["0.8.0"])
        assert capsys.readouterr().out.strip() == upstream.skip_line("0.8.0")
    monkeypatch.setattr(upstream, "verl_available", lambda release=None: False)
    upstream.upstream_cell(lambda: ran.append(1))
    assert capsys.readouterr().out.strip() == upstream.SKIP_LINE
    assert ran == []


def test_an_upstream_cell_body_must_be_callable():
    with pytest.raises(TypeError, match="function taking no arguments"):
        upstream.upstream_cell("detach_tree")  # type: ignore[arg-type]


def test_the_skip_line_of_a_release_says_how_to_fetch_that_release():
    # `make setup` alone fetches 0.9.0 only: the advice names the release asked for (tester case LH17)
    assert "`make setup VERL_RELEASES=7.7.7`" in upstream.skip_line("7.7.7")


def test_the_version_is_the_version_of_the_tree_read(tmp_path, monkeypatch):
    # a verl copy ahead of the installed one on sys.path was labelled with the installed version (tester case U7)
    (tmp_path / "verl" / "version").mkdir(parents=True)
    (tmp_path / "verl" / "version" / "version").write_text("9.9.9\n")
    monkeypatch.setattr(upstream, "verl_root", lambda release=None: tmp_path / "verl")
    assert upstream.verl_version() == "9.9.9"
