"""Code on screen: the course's functions and verl's own, from the installed releases."""

import pytest

from verlstudy.kit import show, upstream
from verlstudy.kit.properties import difference
from verlstudy.kit.show import CodeView, show_source, symbol_lines, upstream_diff, upstream_source

needs_verl = pytest.mark.skipif(
    not (upstream.verl_available() and upstream.verl_available("0.9.0")), reason="verl 0.9.1 and 0.9.0 not installed"
)

SOURCE = """import os

LIMIT = 3


class Engine:
    @staticmethod
    def step(x):
        y = x + 1
        store = {"model_output": y}
        return store


def helper():
    return LIMIT
"""


def test_show_source_names_the_function_and_its_file_without_line_numbers(capsys):
    assert show_source(difference) is None  # a cell ending in show_source(fn) shows the code once
    out = capsys.readouterr().out
    view = show.source_view(difference)
    assert out.splitlines()[0] == "# difference, from verlstudy/kit/properties.py"
    assert "def difference(" in view.text and "lines" not in view.title
    assert view._repr_markdown_().startswith("**difference, from verlstudy/kit/properties.py**\n\n````python\n")


@pytest.mark.parametrize("bad", [3, print, "difference"])
def test_show_source_refuses_what_has_no_python_source(bad):
    with pytest.raises(TypeError, match=r"show_source takes a function or a class|has no Python source"):
        show.source_view(bad)


def test_symbol_lines_finds_methods_with_decorators_assignments_and_a_window():
    assert symbol_lines(SOURCE, "Engine.step")[0] == 7
    assert symbol_lines(SOURCE, "LIMIT") == (3, ["LIMIT = 3"])
    start, lines = symbol_lines(SOURCE, "Engine.step", contains="model_output", context=1)
    assert (start, lines[1].strip()) == (9, 'store = {"model_output": y}')
    with pytest.raises(LookupError, match=r"no 'Engine\.run'"):
        symbol_lines(SOURCE, "Engine.run")
    with pytest.raises(LookupError, match="no line holding"):
        symbol_lines(SOURCE, "helper", contains="model_output")
    with pytest.raises(LookupError, match=r"'y' is on 2 lines of Engine\.step \(9, 10\): give a text on one line"):
        symbol_lines(SOURCE, "Engine.step", contains="y")  # `y = x + 1` and the store: which one was meant?


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda bad: symbol_lines(bad, "Engine.step"), "argument source must be Python source text"),
        (lambda bad: symbol_lines(SOURCE, bad if bad is not None else 3), "argument symbol must be a name like"),
        (lambda bad: symbol_lines(SOURCE, None, contains=bad if bad is not None else 3), "argument contains must be"),
        (lambda bad: symbol_lines(SOURCE, None, context=bad), "argument context must be an integer"),
    ],
)
@pytest.mark.parametrize("bad", [None, 7, [1], {"a": 1}, float("nan")])
def test_symbol_lines_names_an_argument_of_the_wrong_type(call, named, bad):
    # issue 43 item 8: these ended in a raw AttributeError ('NoneType' object has no attribute 'splitlines')
    if "context" in named and isinstance(bad, int):
        bad = "8"
    with pytest.raises(TypeError, match=named) as info:
        call(bad)
    assert "\n" not in str(info.value)


def test_an_ambiguous_search_text_is_named_with_the_file_not_shown_at_its_first_match():
    if not upstream.verl_available():
        pytest.skip("verl 0.9.1 not installed")
    with pytest.raises(upstream.UpstreamMoved, match=r"rollout_corr_helper\.py: .* is on 2 lines"):
        weights = "compute_rollout_correction_weights"
        show.upstream_view("trainer/ppo/rollout_corr_helper.py", weights, contains='rollout_is == "sequence"')


def test_without_verl_each_helper_prints_one_skip_line(monkeypatch, capsys):
    monkeypatch.setattr(upstream, "verl_available", lambda release=None: False)
    assert upstream_source("workers/engine/utils.py", "detach_tree") is None
    assert upstream_diff("workers/engine/utils.py", "detach_tree") is None
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and all(line.startswith("[skip]") for line in out)


@pytest.mark.parametrize("path", ["workers/engine/utils", "", None])
def test_a_bad_path_is_named(path):
    with pytest.raises(ValueError, match=r"path must be a \.py file inside the verl package"):
        show._relative(path)


@needs_verl
def test_upstream_source_names_version_file_symbol_and_lines(capsys):
    assert upstream_source("verl/workers/engine/utils.py", "detach_tree") is None
    assert capsys.readouterr().out.startswith("# verl ")
    view = show.upstream_view("verl/workers/engine/utils.py", "detach_tree")
    assert view.title.startswith(
        f"verl {upstream.verl_version()} · verl/workers/engine/utils.py · detach_tree · lines "
    )
    assert view.lines()[0] == "def detach_tree(obj):"
    old = show.upstream_view("workers/engine/utils.py", "postprocess_batch_func", release="0.9.0")
    assert old.title.startswith("verl 0.9.0 · ")


@needs_verl
def test_upstream_diff_shows_an_added_function_and_a_changed_store_line(capsys):
    added = show.diff_view("workers/engine/utils.py", "detach_tree", "0.9.0")
    assert "(not in verl 0.9.0: added)" in added.title and added.language == "diff"
    store = show.diff_view(
        "workers/engine/megatron/transformer_impl.py", None, "0.9.0", contains='output["model_output"]'
    )
    changed = [line for line in store.lines() if line.startswith(("+", "-")) and "model_output" in line]
    assert any(line.startswith("+") and "detach_tree" in line for line in changed)
    assert any(line.startswith("-") and "detach_tree" not in line for line in changed)


@needs_verl
def test_an_unchanged_symbol_says_so_and_a_moved_one_raises(capsys):
    same = show.diff_view("workers/engine/utils.py", "postprocess_batch_func", "0.9.0")
    assert same.title.endswith("(unchanged)") or same.language == "diff"
    with pytest.raises(upstream.UpstreamMoved, match="no 'no_such_function'"):
        show.upstream_view("workers/engine/utils.py", "no_such_function")


def test_a_code_view_prints_as_its_title_and_text():
    assert repr(CodeView("t", "x = 1\n")) == "# t\nx = 1"


def _leaky(store, y):
    store["model_output"] = y
    return store


def _fixed(store, y):
    store["model_output"] = y.detach()
    return store


def test_show_change_displays_the_fix_as_a_unified_diff_of_two_course_functions(capsys):
    assert show.show_change(_leaky, _fixed) is None
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "# _leaky -> _fixed, from test_show.py"  # outside the package: the file name only
    assert '-    store["model_output"] = y' in out and '+    store["model_output"] = y.detach()' in out
    assert "--- _leaky" in out and "+++ _fixed" in out
    view = show.change_view(_leaky, _fixed, title="the fix")
    assert view.language == "diff" and view.title == "the fix"
    assert view._repr_markdown_().startswith("**the fix**\n\n````diff\n")
    # the unchanged last line is context, not a change
    assert "     return store" in view.lines()


def test_show_change_refuses_two_identical_sources_and_bad_arguments():
    with pytest.raises(ValueError, match="same source: there is no change to show"):
        show.change_view(_leaky, _leaky)
    with pytest.raises(TypeError, match=r"show_change's after must be a function or a class"):
        show.change_view(_leaky, "def f(): pass")
    with pytest.raises(ValueError, match="context must be a non-negative int"):
        show.change_view(_leaky, _fixed, context=-1)
    with pytest.raises(TypeError, match="title must be a str"):
        show.change_view(_leaky, _fixed, title=3)


def test_show_change_context_zero_shows_only_the_changed_lines():
    lines = show.change_view(_leaky, _fixed, context=0).lines()
    changed = [ln for ln in lines[2:] if not ln.startswith("@@")]
    assert all(ln[0] in "+-" for ln in changed)


@pytest.mark.parametrize("bad", [None, "a" * 50])
def test_show_change_names_its_own_arguments(bad):
    # tester cases LH11, LH12: the message named show_source, not the function called
    with pytest.raises(TypeError, match="show_change's before must be a function or a class"):
        show.change_view(bad, bad)
