"""The rest of the third careless-user round: refresh's dropped cells, a corrupt kernel.json, notebook or twin,
the kernels' IPython folder, papermill's parameter guesses, a bug in a validation cell, and verify-upstream's temp."""

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import nbformat
import pytest

from verlstudy.course import cli, doctor, parameters, registry, runner, twins
from verlstudy.kit import resources

# ---------------------------------------------------------------- refresh names what it would drop, either way


def _lesson(tmp_path, twin_cells, ipynb_cells):
    def notebook(cells):
        nb = nbformat.v4.new_notebook()
        nb.cells = [
            nbformat.v4.new_markdown_cell(s[3:]) if s.startswith("md:") else nbformat.v4.new_code_cell(s) for s in cells
        ]
        nb.metadata["kernelspec"] = dict(twins.KERNELSPEC)
        return nb

    lesson = SimpleNamespace(
        code="99", stem="99_lesson", notebook=tmp_path / "99_lesson.ipynb", twin=tmp_path / "py" / "99_lesson.py"
    )
    lesson.twin.parent.mkdir()
    nbformat.write(notebook(ipynb_cells), lesson.notebook)
    lesson.twin.write_text(twins.twin_text(notebook(twin_cells)))
    os.utime(lesson.notebook, (1, 1))  # the twin is the newer file
    return lesson


def test_a_newer_twin_that_rewrote_cells_drops_nothing_and_refresh_builds_it(tmp_path, monkeypatch):
    lesson = _lesson(tmp_path, ["md:# 99 · A lesson", "x = 2", "print(x)"], ["md:# 99 · A lesson", "x = 1", "print(x)"])
    assert twins.cells_refresh_would_drop(lesson) == []  # an edited cell is the twin's edit, not a lost cell
    monkeypatch.setattr(twins, "execute_in_place", lambda nb, cwd, **kw: nb)
    twins.refresh(lesson)
    assert [c.source for c in nbformat.read(lesson.notebook, as_version=4).cells][1] == "x = 2"


def test_a_newer_twin_names_cells_added_in_jupyter_beside_edits_and_force_drops_them(tmp_path, monkeypatch):
    lesson = _lesson(
        tmp_path,
        ["md:# 99 · A lesson", "x = 2", "print(x)"],
        ["md:# 99 · A lesson", "x = 1", "md:My own note", "y = x * 10  # mine", "print(x)"],
    )
    assert twins.cells_refresh_would_drop(lesson) == ["markdown cell 2: My own note", "code cell 3: y = x * 10  # mine"]
    with pytest.raises(twins.WouldDropCells) as e:
        twins.refresh(lesson)
    assert "99_lesson.py is newer, but 99_lesson.ipynb holds cells it lacks" in str(e.value)
    assert "`--force`" in str(e.value) and "markdown cell 2: My own note" in str(e.value)
    monkeypatch.setattr(twins, "execute_in_place", lambda nb, cwd, **kw: nb)
    twins.refresh(lesson, force=True)
    assert len(nbformat.read(lesson.notebook, as_version=4).cells) == 3


def test_a_corrupt_ipynb_or_twin_is_one_line_naming_it_and_force_rebuilds_the_ipynb(tmp_path, monkeypatch):
    lesson = _lesson(tmp_path, ["x = 1"], ["x = 1"])
    lesson.notebook.write_text('{"cells": [')
    with pytest.raises(ValueError) as e:
        twins.refresh(lesson)
    assert str(e.value).startswith(f"{lesson.notebook} is not a valid notebook") and "`--force`" in str(e.value)
    with pytest.raises(ValueError, match="is not a valid notebook"):
        twins.refresh(lesson, source="ipynb")
    monkeypatch.setattr(twins, "execute_in_place", lambda nb, cwd, **kw: nb)
    twins.refresh(lesson, force=True)  # rebuilt from its twin
    assert nbformat.read(lesson.notebook, as_version=4).cells[0].source == "x = 1"
    lesson.twin.write_bytes(b"# %%\nx = '\xff'\n")
    with pytest.raises(ValueError, match=r"99_lesson.py cannot be read as a py:percent twin \(.*\); restore it"):
        twins.refresh(lesson, force=True)


# ---------------------------------------------------------------- a corrupt kernel.json names its file


@pytest.fixture
def corrupt_kernel(tmp_path, monkeypatch):
    folder = tmp_path / "prefix" / "share" / "jupyter" / "kernels" / "python3"
    folder.mkdir(parents=True)
    (folder / "kernel.json").write_text('{"argv": ["python", ')
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "prefix"))
    return folder / "kernel.json"


def test_a_corrupt_kernel_json_is_one_line_naming_it_for_every_kernel_user(corrupt_kernel, tmp_path):
    with pytest.raises(twins.BadKernelSpec) as e:
        _ = twins.course_kernel_manager_class()(kernel_name="python3").kernel_spec
    line = str(e.value)
    assert line.startswith(f"{corrupt_kernel} is not a valid kernel spec (") and "\n" not in line
    assert "-m ipykernel install --sys-prefix --name python3" in line
    ok, said = doctor.kernel_spec_line()
    assert not ok and str(corrupt_kernel) in said
    ok, said = doctor.start_kernel_check(timeout_s=10)
    assert not ok and str(corrupt_kernel) in said and "\n" not in said
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1")]
    with pytest.raises(twins.BadKernelSpec):  # refresh's executor; the CLI turns a ValueError into one line
        twins.execute_in_place(nb, tmp_path)
    source = tmp_path / "a.ipynb"
    nbformat.write(nb, source)
    status, error, _ = runner.execute_with_papermill(source, tmp_path / "out" / "a.ipynb", {}, tmp_path)
    assert status == "failed" and str(corrupt_kernel) in error and "\n" not in error


# ---------------------------------------------------------------- doctor: a corrupt lesson notebook is a FAIL


def test_doctor_fails_a_corrupt_lesson_notebook_naming_it(tmp_path, monkeypatch, capsys):
    good, bad = tmp_path / "00_good.ipynb", tmp_path / "01_bad.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), good)
    bad.write_bytes(b"\xff\xfe not a notebook")
    lessons = [SimpleNamespace(code="00", notebook=good), SimpleNamespace(code="01", notebook=bad)]
    monkeypatch.setattr(registry, "LESSONS", lessons)
    checks = doctor.notebook_checks()
    assert len(checks) == 1 and checks[0][0] is False
    assert checks[0][1].startswith(f"lesson 01: {bad} is not a valid notebook")
    assert cli.main(["doctor", "--no-kernel-start"]) == 1
    out = capsys.readouterr().out
    assert f"[FAIL] lesson 01: {bad} is not a valid notebook" in out and "notebooks: 2/2 present" in out


# ---------------------------------------------------------------- kernels never write an IPython folder in the home


def test_every_kernel_environment_names_an_ipython_folder_under_the_cache(monkeypatch):
    assert os.environ["IPYTHONDIR"] == str(resources.cache_root() / "ipython")  # conftest: nbval's kernels inherit it
    monkeypatch.delenv("IPYTHONDIR")
    twins.quiet_kernel_env()  # what run, refresh, progress and doctor call before starting a kernel
    assert os.environ["IPYTHONDIR"] == str(resources.cache_root() / "ipython")
    assert (resources.cache_root() / "ipython").is_dir()


@pytest.mark.slow
def test_a_kernel_run_writes_nothing_in_the_home_folder(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # tests run as root: an empty home shows every write a read-only one refuses
    for key in twins.CACHE_ENV:
        monkeypatch.delenv(key, raising=False)
    source = tmp_path / "a.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import IPython, matplotlib.pyplot\nprint(IPython.paths.get_ipython_dir())")]
    nb.metadata["kernelspec"] = dict(twins.KERNELSPEC)
    nbformat.write(nb, source)
    status, error, _ = runner.execute_with_papermill(source, tmp_path / "out" / "a.ipynb", {}, tmp_path)
    assert (status, error) == ("passed", "")
    printed = nbformat.read(tmp_path / "out" / "a.ipynb", as_version=4).cells[0].outputs[0]["text"].strip()
    assert printed == str(resources.cache_root() / "ipython")
    assert sorted(p.relative_to(home) for p in home.rglob("*")) == []


# ---------------------------------------------------------------- parameters: papermill's guesses, a lesson's bug


def test_papermills_parameter_guesses_never_reach_the_user(tmp_path, caplog):
    import logging

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("lr = 1.0  # step size, >= 1"), nbformat.v4.new_code_cell("print(lr)")]
    nb.cells[0].metadata["tags"], nb.cells[1].metadata["tags"] = ["parameters"], []
    nb.metadata["kernelspec"] = dict(twins.KERNELSPEC)
    assert parameters.parameters_of(nb) == {"lr": 1.0}  # Python's parser reads what papermill's line parser cannot
    runner.papermill_quiet()
    with caplog.at_level(logging.WARNING, logger="papermill"):
        from papermill.translators import PythonTranslator

        assert PythonTranslator.inspect(nb.cells[0]) == []  # papermill's own parser of the cell gives up on it
        logging.getLogger("papermill").warning("Passed unknown parameter: lr")  # what papermill.execute then says
        logging.getLogger("papermill").warning("Input notebook has no parameters")  # other warnings still pass
    said = [r.getMessage() for r in caplog.records]
    assert said == ["Input notebook has no parameters"], said


@pytest.mark.slow
def test_a_run_overriding_a_parameter_papermill_cannot_parse_prints_no_guess(tmp_path, capfd):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("lr = 1.0  # step size, >= 1"), nbformat.v4.new_code_cell("print(lr)")]
    nb.cells[0].metadata["tags"] = ["parameters"]
    nb.metadata["kernelspec"] = dict(twins.KERNELSPEC)
    source = tmp_path / "p.ipynb"
    nbformat.write(nb, source)
    status, error, _ = runner.execute_with_papermill(source, tmp_path / "out" / "p.ipynb", {"lr": 2.0}, tmp_path)
    assert (status, error) == ("passed", "")
    assert nbformat.read(tmp_path / "out" / "p.ipynb", as_version=4).cells[2].outputs[0]["text"] == "2.0\n"
    err = capfd.readouterr().err
    assert "Unable to parse line" not in err and "Passed unknown parameter" not in err


@pytest.mark.parametrize(
    ("message", "names_one"),
    [
        ("parameter n_tokens=0 is out of range; allowed: 8 <= n_tokens <= 1024", True),
        ("parameter pp_layer_counts[i] must be an integer, got str 'a'", True),
        ("device='tpu' is not allowed; choose one of 'auto', 'cpu'", True),
        ("math domain error", False),
        ("argument topk=0 must be a positive integer", False),
        ("parameter nope=1 is out of range", False),
        ("", False),
    ],
)
def test_only_an_error_naming_a_parameter_is_a_bad_parameter(message, names_one):
    assert parameters.names_a_parameter(message, ["n_tokens", "pp_layer_counts", "device"]) is names_one


def test_an_executed_validation_cells_own_bug_is_a_failure_not_a_bad_parameter():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("n = 3"), nbformat.v4.new_code_cell("check(n)")]
    nb.cells[0].metadata["tags"] = ["parameters"]
    error = nbformat.v4.new_output("error", ename="ValueError", evalue="parameter n=0 is out of range", traceback=[])
    nb.cells[1].outputs = [error]
    assert runner._bad_parameter_message(nb) == "parameter n=0 is out of range"
    error["evalue"] = "not enough values to unpack (expected 3, got 2)"
    assert runner._bad_parameter_message(nb) is None


def _validation_lesson(tmp_path, validation):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("n = 3\nseed = 0"), nbformat.v4.new_code_cell(validation)]
    nb.cells[0].metadata["tags"] = ["parameters"]
    nb.metadata["kernelspec"] = dict(twins.KERNELSPEC)
    path = tmp_path / "99_lesson.ipynb"
    nbformat.write(nb, path)
    return SimpleNamespace(code="99", stem="99_lesson", title="A lesson", notebook=path)


@pytest.mark.parametrize(
    "validation",
    [
        "import math\nmath.sqrt(-n)",  # ValueError naming no parameter
        "a, b, c = (n, seed)",  # ValueError from the lesson's own unpacking
        "check_n(n)",  # NameError
    ],
)
def test_a_bug_in_a_validation_cell_is_named_as_the_lessons_with_exit_1(tmp_path, monkeypatch, capsys, validation):
    lesson = _validation_lesson(tmp_path, validation)
    with pytest.raises(parameters.ValidationCellFailed, match="lesson 99's validation cell failed on its own"):
        parameters.validate_parameters(lesson, {"n": 4})
    monkeypatch.setattr(registry, "select_lessons", lambda codes: [lesson])
    monkeypatch.setattr(runner, "run_lessons", lambda *a, **k: pytest.fail("no kernel may start"))
    assert cli.main(["run", "99", "-p", "n=4", "--out", str(tmp_path / "o"), "--no-floor"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("verlstudy run: lesson 99's validation cell failed on its own, not on a parameter")
    assert "bad parameter" not in err and len(err.splitlines()) == 1


def test_a_bad_value_is_still_a_bad_parameter_with_exit_2(tmp_path, monkeypatch, capsys):
    check = "from verlstudy.kit.params import check_int\ncheck_int('n', n, minimum=1, maximum=9)"
    lesson = _validation_lesson(tmp_path, check)
    monkeypatch.setattr(registry, "select_lessons", lambda codes: [lesson])
    monkeypatch.setattr(runner, "run_lessons", lambda *a, **k: pytest.fail("no kernel may start"))
    assert cli.main(["run", "99", "-p", "n=0", "--out", str(tmp_path / "o"), "--no-floor"]) == 2
    assert capsys.readouterr().err.strip() == (
        "verlstudy run: bad parameter for lesson 99: parameter n=0 is out of range; allowed: 1 <= n <= 9"
    )
    assert cli.main(["run", "99", "-p", "nope=1", "--out", str(tmp_path / "o"), "--no-floor"]) == 2
    assert capsys.readouterr().err.strip() == (
        "verlstudy run: lesson 99 has no parameter 'nope'; its parameters are: n, seed"
    )


# ---------------------------------------------------------------- verify-upstream leaves the temp folder empty


def _without_cache_env(tmp: os.PathLike) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in twins.CACHE_ENV}
    env["TMPDIR"] = str(tmp)
    return env


@pytest.mark.slow
def test_what_made_torchinductor_root_is_torch_dynamo_imported_by_a_jagged_tensor(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    code = "import torch; torch.nested.nested_tensor([torch.ones(2), torch.ones(3)], layout=torch.jagged)"
    subprocess.run([sys.executable, "-c", code], env=_without_cache_env(tmp), check=True)
    assert [p.name.startswith("torchinductor_") for p in tmp.iterdir()] == [True]  # the cause, without the env


@pytest.mark.slow
def test_verify_upstream_leaves_nothing_in_a_fresh_temp_folder(tmp_path):
    from verlstudy.kit import upstream

    try:
        upstream.verl_version()
    except ImportError:  # pragma: no cover - make setup installs verl
        pytest.skip("verl is not installed (make setup installs it)")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    command = [sys.executable, "-m", "verlstudy", "verify-upstream", "--cases", "2"]
    done = subprocess.run(command, env=_without_cache_env(tmp), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "| 04 |" in done.stdout  # lesson 04's jagged tensors ran
    assert sorted(p.name for p in tmp.iterdir()) == []


def test_cache_env_names_folders_only_under_the_cache_root():
    assert set(twins.CACHE_ENV) >= {"TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "MPLCONFIGDIR", "IPYTHONDIR"}
    assert all("/" not in folder for folder in twins.CACHE_ENV.values())
    assert json.dumps(twins.CACHE_ENV)  # plain strings


@pytest.mark.slow
@pytest.mark.parametrize(("number", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_verify_upstream_stops_on_a_signal_with_one_line_even_with_sigint_inherited_ignored(number, code):
    import signal

    from verlstudy.kit import upstream

    try:
        upstream.verl_version()
    except ImportError:  # pragma: no cover - make setup installs verl
        pytest.skip("verl is not installed (make setup installs it)")
    command = [sys.executable, "-m", "verlstudy", "verify-upstream", "--cases", "100000"]
    proc = subprocess.Popen(  # started as `cmd &` from a script starts it: SIGINT ignored
        command, stderr=subprocess.PIPE, text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)
    )
    try:
        seen = []  # an event: it is comparing a lesson (after the line naming the verl tree it reads, and 00)
        while len(seen) < 5 and not (seen and seen[-1].startswith("verify-upstream: lesson 01")):
            seen.append(proc.stderr.readline())
        assert seen[-1].startswith("verify-upstream: lesson 01"), seen
        proc.send_signal(getattr(signal, number))
        rest = proc.stderr.read()
        assert proc.wait() == code
    finally:
        proc.kill()
    assert rest.strip().splitlines()[-1] == (
        "verlstudy verify-upstream: interrupted; nothing compared is reported or recorded"
    )
    assert "Traceback" not in rest
