"""upstream: verl's own detach_tree as the toy's fix, and verl's entropy formula, beside the course's."""

from __future__ import annotations

import pytest
import torch

from verlstudy.kit import upstream as kit_upstream
from verlstudy.lessons.l01_memory_leak import pipeline as pl
from verlstudy.lessons.l01_memory_leak import upstream as up

CFG = pl.PipelineConfig(seq_len=16, hidden=8, vocab=12)
needs_verl = pytest.mark.skipif(not kit_upstream.verl_available(), reason="verl is not installed (make setup)")


@needs_verl
def test_upstream_detach_tree_as_the_fix_agrees_with_the_courses() -> None:
    both = up.compare_fix_with_upstream(CFG, 3)
    assert both.agree and both.course_slope == both.upstream_slope == 2 * CFG.seq_len * CFG.itemsize


@needs_verl
def test_upstream_detach_tree_is_verls_function() -> None:
    theirs = up.upstream_detach_tree()
    leaf = torch.ones(2, requires_grad=True)
    plain = torch.ones(2)
    out = theirs({"a": [leaf * 2, plain]})
    assert not out["a"][0].requires_grad and out["a"][1] is plain
    assert theirs.__code__.co_filename.endswith("verl/workers/engine/utils.py")


@pytest.mark.parametrize(
    ("theirs", "what"),
    [
        (lambda tree: tree, "keeps the graph"),  # stores the output as is: the leak
        (lambda tree: {k: v for k, v in tree.items() if k != "model_output"}, "drops the output"),
        (lambda tree: {"model_output": {k: v.detach() * 0 for k, v in tree["model_output"].items()}}, "zeroes"),
    ],
)
def test_a_wrong_detach_is_reported_as_disagreeing(theirs, what: str) -> None:
    both = up.compare_fix_with_upstream(CFG, 3, theirs=theirs)
    assert not both.agree, what


@needs_verl
def test_upstream_entropy_matches_the_toys_bit_for_bit() -> None:
    same, values = up.compare_entropy_with_upstream(CFG)
    assert same and values.shape == (CFG.seq_len,)
    logits = up.toy_logits(CFG)
    assert logits.shape == (CFG.seq_len, CFG.vocab) and not logits.requires_grad


@needs_verl
def test_upstream_check_reports_the_lesson_as_not_comparable(capsys) -> None:
    up.upstream_check()
    out = capsys.readouterr().out
    assert out.startswith("[upstream] verl ") and "not comparable" in out and "detach_tree" in out
