"""Loading single upstream functions from source text: what works, and every way it fails clearly."""

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
    monkeypatch.setattr(upstream, "verl_root", lambda: tmp_path)
    monkeypatch.setattr(upstream, "verl_version", lambda: "9.9")
    with pytest.raises(upstream.UpstreamMoved, match=r"verl 9\.9 has no file verl/workers/engine/utils\.py"):
        upstream.upstream_source("workers/engine/utils.py")
