"""upstream: verl's own hook found with ast, run with upstream's import_external_libs, compared with the course's."""

from __future__ import annotations

import pytest

from verlstudy.kit import upstream as kit_upstream
from verlstudy.kit.upstream import MissingCollaborator, UpstreamMoved
from verlstudy.lessons.l06_external_modules import upstream as l06
from verlstudy.lessons.l06_external_modules.modules_env import (
    ADAPTOR,
    ENV_VAR,
    TOY_SOURCES,
    hook_errors,
    lesson_experiments,
    parse_module_list,
    run_experiments,
    write_toy_packages,
)

needs_verl = pytest.mark.skipif(not kit_upstream.verl_available(), reason="verl is not installed (make setup)")

SOURCE = """import os
X = 1
value = os.getenv("SOME_VAR", "")
if value:
    parts = value.split(",")
    use(parts)
for p in parts:
    print(p)
Y = 2
"""


def test_hook_statements_takes_the_reading_statement_and_those_using_it():
    hook = l06.hook_statements(SOURCE, "SOME_VAR", "f.py")
    assert (hook.first_line, hook.last_line) == (3, 8)  # `parts`, assigned inside the if, is used by the for
    assert hook.code.startswith("value = os.getenv('SOME_VAR', '')") and "Y = 2" not in hook.code
    assert hook.cite() == "f.py lines 3-8"


def test_hook_statements_says_when_the_variable_is_gone_or_malformed():
    with pytest.raises(UpstreamMoved, match="no longer reads OTHER_VAR"):
        l06.hook_statements(SOURCE, "OTHER_VAR")
    for bad in ("", "a b", 3):
        with pytest.raises(ValueError, match="environment variable name"):
            l06.hook_statements(SOURCE, bad)  # type: ignore[arg-type]


def test_recording_importlib_imports_nothing_and_fails_as_importlib_does():
    rec = l06.RecordingImportlib(["json"])
    assert rec.import_module("json").__name__ == "json"
    with pytest.raises(ValueError, match="Empty module name"):
        rec.import_module("")
    with pytest.raises(ModuleNotFoundError, match="' json'"):
        rec.import_module(" json")
    assert rec.calls == ["json", "", " json"]
    everything = l06.RecordingImportlib(None)
    everything.import_module("")
    assert everything.calls == [""]
    with pytest.raises(TypeError, match="collection of module names"):
        l06.RecordingImportlib("json")


@needs_verl
def test_the_installed_hooks_are_where_the_lesson_cites_them():
    assert l06.env_hook().cite() == "verl/__init__.py lines 49-52"
    plugins = l06.env_hook(l06.PLUGINS_VAR)
    assert plugins.cite() == "verl/__init__.py lines 60-76"
    assert "group='verl.plugins'" in plugins.code


@needs_verl
def test_upstream_hands_blanks_and_empty_entries_to_importlib():
    assert l06.upstream_imports(None) == l06.upstream_imports("") == []
    assert l06.upstream_imports("megatron_adaptor, json,") == ["megatron_adaptor", " json", ""]


@needs_verl
def test_a_hook_needing_a_new_name_is_reported(monkeypatch):
    changed = l06.HookStatements(ENV_VAR, "verl/__init__.py", 1, 2, "if os.getenv('X'):\n    sys.exit(1)\n")
    monkeypatch.setattr(l06, "env_hook", lambda variable=ENV_VAR, release=None: changed)
    with pytest.raises(MissingCollaborator, match="'sys'"):
        l06.upstream_hook(l06.RecordingImportlib(None))


@needs_verl
def test_the_course_reconstruction_agrees_with_upstream_on_300_cases():
    row = l06.compare_hook(cases=300)
    assert (row.lesson, row.status, row.cases) == ("06", "agree", 300)
    assert (l06.compare_hook,) == l06.COMPARISONS


@needs_verl
def test_a_stripping_parser_planted_as_the_course_hook_is_caught():
    row = l06.compare_hook(cases=300, ours=parse_module_list)
    assert row.status == "differ" and row.detail.startswith("case ") and ENV_VAR in row.detail

    def keeps_trailing_only(value):  # strips blanks but keeps empty entries: still not verl
        return [p.strip() for p in value.split(",")] if value else []

    row = l06.compare_hook(cases=300, ours=keeps_trailing_only)
    assert row.status == "differ" and "upstream imports" in row.detail


@needs_verl
def test_upstreams_own_hook_in_toyverl_gives_the_lessons_outcomes(tmp_path):
    source, origin = l06.toy_hook_source()
    assert origin == f"verl {kit_upstream.verl_version()}'s own code" and "def import_external_libs" in source
    root = write_toy_packages(tmp_path, source)
    outcomes = run_experiments(lesson_experiments(), root)
    assert [(o.patched, o.worker_patched) for o in outcomes] == [
        (True, None),
        (False, None),
        (True, False),
        (False, None),
        (True, True),
    ]
    assert hook_errors([f"{ADAPTOR}, toylib.ops", f"{ADAPTOR},"], root) == [
        "ModuleNotFoundError: No module named ' toylib'",
        "ValueError: Empty module name",
    ]


def test_without_verl_toyverl_is_the_course_reconstruction(monkeypatch, capsys):
    monkeypatch.setattr(kit_upstream, "verl_available", lambda release=None: False)
    source, origin = l06.toy_hook_source()
    assert source == TOY_SOURCES["toyverl/__init__.py"] and "course's reconstruction" in origin


@needs_verl
def test_the_lesson_cell_prints_one_line(capsys):
    l06.upstream_check(cases=20)
    assert capsys.readouterr().out.strip().endswith("import_external_libs: agree on 20 cases")


@pytest.mark.parametrize("value", [7, ["a"], {"a": 1}, float("nan")])
def test_upstream_imports_names_a_value_of_the_wrong_type(value):
    # issue 43 item 8: upstream_imports(7) ended in a raw AttributeError inside verl's hook ('int' ... 'split')
    with pytest.raises(TypeError, match=r"argument value must be the variable's value \(a str\) or None \(unset\)"):
        l06.upstream_imports(value)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"cases": None}, r"argument cases must be a positive integer, got NoneType None"),
        ({"cases": "3"}, r"argument cases must be a positive integer"),
        ({"seed": [1]}, r"argument seed must be an integer, got list"),
        ({"ours": 7}, r"argument ours must be a function \(the code under comparison\) or None, got int 7"),
    ],
)
def test_compare_hook_names_an_argument_of_the_wrong_type(args, named):
    # issue 43 item 8: cases=None ended in "'NoneType' object cannot be interpreted as an integer"
    with pytest.raises(TypeError, match=named):
        l06.compare_hook(**args)
    with pytest.raises(TypeError, match=r"argument cases must be a positive integer"):
        l06.upstream_check(None)


@pytest.mark.parametrize("value", [None, 7, [1]])
def test_hook_statements_names_a_source_of_the_wrong_type(value):
    # issue 43 item 8: hook_statements(None, ...) ended in "compile() arg 1 must be a string, bytes or AST object"
    with pytest.raises(TypeError, match=r"argument source must be Python source text \(a str\)"):
        l06.hook_statements(value, "VERL_USE_EXTERNAL_MODULES")
    with pytest.raises(TypeError, match=r"argument filename must be a file name for parse errors \(a str\)"):
        l06.hook_statements("x = 1", "VERL_USE_EXTERNAL_MODULES", value)
