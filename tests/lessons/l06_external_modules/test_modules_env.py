"""modules_env: the variable's parser and hook, the toy packages and the subprocess runner."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from verlstudy.lessons.l06_external_modules.modules_env import (
    ADAPTOR,
    ENV_VAR,
    HOOK_PACKAGE,
    LIBRARY,
    TOY_SOURCES,
    Experiment,
    ExternalModuleError,
    hook_errors,
    import_external_modules,
    lesson_experiments,
    outcomes_table,
    parse_module_list,
    predict_patched,
    run_experiments,
    split_like_verl_091,
    write_toy_packages,
)


@pytest.fixture(scope="module")
def toy_folder(tmp_path_factory):
    return write_toy_packages(tmp_path_factory.mktemp("toys"))


# ---------------------------------------------------------------- the variable


@pytest.mark.parametrize(
    ("value", "names"),
    [
        ("", []),
        ("megatron_adaptor", ["megatron_adaptor"]),
        (" a , b ", ["a", "b"]),
        ("a,,b,", ["a", "b"]),
        ("pkg.sub,other", ["pkg.sub", "other"]),
        (" , ", []),
    ],
)
def test_parse_module_list_ignores_blanks_and_empty_entries(value, names):
    assert parse_module_list(value) == names


@pytest.mark.parametrize("bad", ["a b", "a-b", "1mod", "a..b", "a/b"])
def test_parse_module_list_names_a_bad_entry(bad):
    with pytest.raises(ValueError, match=f"entry {bad!r} is not a module name"):
        parse_module_list(f"ok,{bad}")


def test_parse_module_list_wants_a_string():
    with pytest.raises(TypeError, match=f"{ENV_VAR} value must be a string"):
        parse_module_list(None)  # type: ignore[arg-type]


def test_verl_091_split_keeps_blanks_and_empty_entries():
    assert split_like_verl_091("") == split_like_verl_091(None) == []
    assert split_like_verl_091("a, b") == ["a", " b"]
    assert split_like_verl_091("a,") == ["a", ""]
    with pytest.raises(TypeError):
        split_like_verl_091(3)  # type: ignore[arg-type]


def test_import_external_modules_imports_in_order_from_value_or_environ():
    assert import_external_modules("json, email.mime") == ["json", "email.mime"]
    assert "email.mime" in sys.modules
    assert import_external_modules(environ={ENV_VAR: "json"}) == ["json"]
    assert import_external_modules(environ={}) == []


def test_import_external_modules_names_a_missing_module():
    with pytest.raises(ExternalModuleError, match=f"{ENV_VAR} names module 'no_such_adaptor_xyz'"):
        import_external_modules("json,no_such_adaptor_xyz")
    assert issubclass(ExternalModuleError, ImportError)


# ---------------------------------------------------------------- toy packages and experiments


def test_write_toy_packages_needs_an_existing_folder(tmp_path):
    with pytest.raises(ValueError, match="existing directory"):
        write_toy_packages(tmp_path / "missing")
    write_toy_packages(tmp_path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.py")) == sorted(TOY_SOURCES)
    write_toy_packages(tmp_path, "X = 1\n")
    assert (tmp_path / "toyverl/__init__.py").read_text() == "X = 1\n"
    for bad in ("", "  ", 3):
        with pytest.raises(TypeError, match="toyverl_init must be"):
            write_toy_packages(tmp_path, bad)  # type: ignore[arg-type]


def test_the_course_hook_fails_where_verl_does_on_blanks_and_empty_entries(toy_folder):
    values = [f"{ADAPTOR}, toylib.ops", f"{ADAPTOR},", f"{ADAPTOR},toylib.ops", ""]
    assert hook_errors(values, toy_folder) == [
        "ModuleNotFoundError: No module named ' toylib'",
        "ValueError: Empty module name",
        "ok",
        "ok",
    ]


def test_hook_errors_rejects_bad_arguments(toy_folder, tmp_path):
    for bad in ("a,b", [], [3]):
        with pytest.raises(TypeError, match="values must be a non-empty list of strings"):
            hook_errors(bad, toy_folder)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout_s must be"):
        hook_errors(["a"], toy_folder, timeout_s=-1)
    with pytest.raises(ValueError, match="write_toy_packages"):
        hook_errors(["a"], tmp_path)


def test_lesson_experiments_show_patched_hazard_and_unpatched_worker(toy_folder):
    outcomes = run_experiments(lesson_experiments(), toy_folder)
    assert [(o.patched, o.worker_patched) for o in outcomes] == [
        (True, None),  # verl first: patched
        (False, None),  # library first: the model bound the original op before the patch
        (True, False),  # the worker inherits the variable but never imports verl
        (False, None),  # no default: nothing happens
        (True, True),  # explicit import at each entry point: patched everywhere
    ]
    assert not any(o.torch_imported for o in outcomes)  # children stay cheap
    assert [o.patched for o in outcomes] == [
        predict_patched(o.experiment.imports, o.experiment.env_value) for o in outcomes
    ]


@pytest.mark.parametrize(
    ("imports", "env"),
    [
        (("toylib.ops", HOOK_PACKAGE, LIBRARY), ADAPTOR),  # importing the op module first is harmless
        ((LIBRARY, ADAPTOR), None),  # an explicit patch after the library is as late as the hook
        ((HOOK_PACKAGE, LIBRARY), f"json,{ADAPTOR}"),  # the adaptor second in the list
        ((HOOK_PACKAGE, LIBRARY), "json"),  # the variable names something else
    ],
)
def test_the_prediction_rule_matches_real_processes(toy_folder, imports, env):
    [outcome] = run_experiments([Experiment("case", imports, env)], toy_folder)
    assert outcome.patched == predict_patched(imports, env)


def test_a_variable_in_the_parent_environment_does_not_leak_into_children(toy_folder, monkeypatch):
    monkeypatch.setenv(ENV_VAR, ADAPTOR)
    [outcome] = run_experiments([Experiment("unset", (HOOK_PACKAGE, LIBRARY), None)], toy_folder)
    assert not outcome.patched


def test_a_failing_child_reports_its_last_error_line(toy_folder):
    with pytest.raises(
        RuntimeError, match="experiment 'typo' failed: ModuleNotFoundError: No module named 'toylib_adaptr'"
    ):
        run_experiments([Experiment("typo", (HOOK_PACKAGE, LIBRARY), "toylib_adaptr")], toy_folder)


def test_a_hanging_child_is_stopped_within_the_timeout(tmp_path):
    write_toy_packages(tmp_path)
    (tmp_path / "slowmod.py").write_text("import time\ntime.sleep(60)\n")
    start = time.monotonic()
    with pytest.raises(TimeoutError, match=r"experiment 'slow' did not finish within 0\.5 s"):
        run_experiments([Experiment("slow", ("slowmod",), None)], tmp_path, timeout_s=0.5)
    assert time.monotonic() - start < 10


def test_a_hanging_child_is_stopped_where_there_are_no_process_groups(tmp_path, monkeypatch):
    write_toy_packages(tmp_path)
    (tmp_path / "slowmod.py").write_text("import time\ntime.sleep(60)\n")
    monkeypatch.delattr("os.killpg")  # as on Windows: the experiment's own process is stopped instead
    start = time.monotonic()
    with pytest.raises(TimeoutError, match=r"experiment 'slow' did not finish within 0\.3 s"):
        run_experiments([Experiment("slow", ("slowmod",), None)], tmp_path, timeout_s=0.3)
    assert time.monotonic() - start < 10


def _running(pid: int) -> bool:
    """True while `pid` is a live process (a zombie waiting to be reaped counts as stopped)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return "\nState:\tZ" not in status


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads process states from /proc (Linux)")
def test_a_hanging_worker_is_stopped_with_its_parent(tmp_path):
    write_toy_packages(tmp_path)
    pid_file = tmp_path / "worker.pid"
    (tmp_path / "slowworker.py").write_text(
        f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n"
    )
    with pytest.raises(TimeoutError, match="'slow worker' did not finish"):
        run_experiments([Experiment("slow worker", (LIBRARY,), None, ("slowworker",))], tmp_path, timeout_s=2.0)
    assert pid_file.exists(), "the worker never started: the machine is too slow for this test's 2 s"
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(pid), "the worker subprocess outlived the timed-out experiment"


NETGUARD = """\
import socket


def _refuse(*args, **kwargs):
    raise OSError("network use in a verlstudy experiment")


socket.socket = _refuse
socket.create_connection = _refuse
"""


def test_the_lesson_experiments_need_no_network(tmp_path):
    write_toy_packages(tmp_path)
    (tmp_path / "netguard.py").write_text(NETGUARD)
    guarded = [
        Experiment(
            e.name,
            ("netguard", *e.imports),
            e.env_value,
            None if e.worker_imports is None else ("netguard", *e.worker_imports),
        )
        for e in lesson_experiments()
    ]
    outcomes = run_experiments(guarded, tmp_path)
    assert [(o.patched, o.worker_patched) for o in outcomes] == [
        (True, None), (False, None), (True, False), (False, None), (True, True),
    ]  # fmt: skip
    (tmp_path / "dialer.py").write_text("import socket\nsocket.create_connection(('127.0.0.1', 9))\n")
    with pytest.raises(RuntimeError, match="OSError: network use"):  # the guard does catch a network call
        run_experiments([Experiment("dials out", ("netguard", "dialer"), None)], tmp_path)


def test_runner_rejects_bad_arguments(toy_folder, tmp_path):
    exp = Experiment("x", (LIBRARY,), None)
    with pytest.raises(ValueError, match="timeout_s must be"):
        run_experiments([exp], toy_folder, timeout_s=0)
    with pytest.raises(TypeError, match="non-empty sequence of Experiment"):
        run_experiments([], toy_folder)
    with pytest.raises(ValueError, match="write_toy_packages"):
        run_experiments([exp], tmp_path)


def test_experiment_validates_its_fields():
    with pytest.raises(ValueError, match="tuple of module names"):
        Experiment("x", "toylib.model", None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="worker_imports"):
        Experiment("x", (LIBRARY,), None, ("not a module",))
    with pytest.raises(TypeError, match="non-empty string"):
        Experiment("", (LIBRARY,), None)
    with pytest.raises(TypeError, match="env_value"):
        Experiment("x", (LIBRARY,), 3)  # type: ignore[arg-type]


def test_outcomes_table_has_one_row_per_process(toy_folder):
    outcomes = run_experiments(lesson_experiments()[2:4], toy_folder)
    table = outcomes_table(outcomes)
    assert table.header == ("process", "variable", "import order", "patched", "worker patched")
    assert table.rows[1] == ("no default (after #7886)", "unset", "toyverl -> toylib.model", "no", "-")
    lines = table.text().splitlines()
    assert lines[2] == (
        f"| image default, worker never imports verl | {ENV_VAR}={ADAPTOR} | toyverl -> toylib.model | yes | no |"
    )
    assert lines[3] == "| no default (after #7886) | unset | toyverl -> toylib.model | no | - |"


@pytest.mark.parametrize("value", [None, 7, [1], float("nan")])
def test_lesson_06_helpers_name_an_argument_of_the_wrong_type(value, tmp_path):
    # issue 43 item 8: these ended in a raw TypeError ('int' object is not iterable / os.PathLike expected)
    from verlstudy.lessons.l06_external_modules.modules_env import (
        hook_errors,
        outcomes_table,
        run_experiments,
        write_toy_packages,
    )

    calls = [
        (lambda v: outcomes_table(v), r"argument outcomes(\[0\])? must be (a list, each item )?an Outcome"),
        (lambda v: write_toy_packages(v), r"argument folder must be an existing folder's path"),
        (lambda v: run_experiments(lesson_experiments(), v), r"argument folder must be the toy packages' folder"),
        (lambda v: hook_errors(["json"], v), r"argument folder must be the toy packages' folder"),
    ]
    if not isinstance(value, list):
        calls.append((lambda v: run_experiments(v, tmp_path), r"argument experiments must be a list, each item"))
        calls.append((lambda v: hook_errors(v, tmp_path), r"argument values must be a non-empty list of strings"))
    for call, named in calls:
        with pytest.raises(TypeError, match=named) as info:
            call(value)
        assert "\n" not in str(info.value)


@pytest.mark.parametrize("value", [7, "A=1", ["A"]])
def test_import_external_modules_names_an_environ_of_the_wrong_type(value):
    # issue 43 item 8: environ=7 ended in "'int' object has no attribute 'get'"
    from verlstudy.lessons.l06_external_modules.modules_env import import_external_modules

    with pytest.raises(TypeError, match=r"argument environ must be a mapping like os\.environ, or None"):
        import_external_modules(environ=value)
