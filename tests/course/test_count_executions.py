"""The execution count `make test` ends with: nbval's notebooks plus the runs the course's code logged."""

from pathlib import Path

from tools import count_executions as count
from verlstudy.course import twins

ROOT = Path(__file__).resolve().parents[2]

JUNIT = """<testsuites><testsuite>
<testcase classname="notebooks.00_start_here.ipynb" name="Cell 0"/>
<testcase classname="notebooks.00_start_here.ipynb" name="Cell 1"/>
<testcase classname="notebooks.02_detach_placement_trap.ipynb" name="Cell 0"/>
<testcase classname="tests.kit.test_claims" name="test_x"/>
</testsuite></testsuites>"""


def _files(tmp_path, log_lines):
    (tmp_path / "junit.xml").write_text(JUNIT)
    (tmp_path / "runs.log").write_text("".join(f"{line}\n" for line in log_lines))
    return [str(tmp_path / "runs.log"), str(tmp_path / "junit.xml")]


def test_nbval_counts_once_per_notebook_and_logged_runs_add(tmp_path, capsys):
    assert count.main(_files(tmp_path, ["00_start_here", "floor_input", "notebook"])) == 0
    out = capsys.readouterr().out
    assert "| 00_start_here | 1 | 1 | 2 |" in out and "| 02_detach_placement_trap | 1 | 0 | 1 |" in out
    assert "floor" not in out


def test_a_third_execution_fails_and_names_the_notebook(tmp_path, capsys):
    assert count.main(_files(tmp_path, ["00_start_here", "00_start_here"])) == 1
    assert "executed more than 2 times: 00_start_here" in capsys.readouterr().err


def test_the_runner_logs_each_execution_where_the_variable_points(tmp_path, monkeypatch):
    monkeypatch.setenv(twins.EXECUTION_LOG_ENV, str(tmp_path / "runs.log"))
    twins.log_execution("03_router_replay_scoping")
    twins.log_execution("03_router_replay_scoping")
    assert count.logged_runs(tmp_path / "runs.log")["03_router_replay_scoping"] == 2


def test_make_test_counts_its_executions_last():
    recipe = (ROOT / "Makefile").read_text().split("\ntest: setup\n", 1)[1].split("\n\n", 1)[0]
    assert "VERLSTUDY_EXECUTION_LOG" in recipe and recipe.rstrip().splitlines()[-1].strip().endswith(
        "tools/count_executions.py build/executions.log build/junit-tests.xml"
    )
