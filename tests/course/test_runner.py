"""The runner: parameters, notebook normalisation, change reports, claims counting, reports."""

import math
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
import pytest

from verlstudy.course import outcomes, parameters, registry, reports, runner, twins
from verlstudy.kit import records
from verlstudy.kit.resources import notebooks_dir


def _nb(*sources, tags=None):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    if tags:
        for i, t in tags.items():
            nb.cells[i].metadata["tags"] = t
    return nb


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("seed=3", ("seed", 3)),
        ("device=cpu", ("device", "cpu")),
        ("rtol=1e-3", ("rtol", 0.001)),
        ("flag=True", ("flag", True)),
        ("name = 'x y'", ("name", "x y")),
        ("sizes=[1, 2]", ("sizes", [1, 2])),
    ],
)
def test_parse_parameter_reads_python_literals_and_falls_back_to_strings(text, expected):
    assert parameters.parse_parameter(text) == expected


@pytest.mark.parametrize(("text", "message"), [("seed", "name=value"), ("1x=3", "not a valid Python name")])
def test_parse_parameter_rejects_malformed_text(text, message):
    with pytest.raises(ValueError, match=message):
        parameters.parse_parameter(text)


def test_notebook_parameters_reads_the_tagged_cell(tmp_path):
    path = tmp_path / "n.ipynb"
    nbformat.write(_nb("device = 'auto'\nseed: int = 0\nsizes = (1, 2)", "x = 1", tags={0: ["parameters"]}), path)
    assert parameters.notebook_parameters(path) == {"device": "auto", "seed": 0, "sizes": (1, 2)}
    nbformat.write(_nb("x = 1"), path)
    with pytest.raises(ValueError, match="exactly one cell tagged 'parameters', found 0"):
        parameters.notebook_parameters(path)


def test_unknown_parameter_names_the_lessons_parameters():
    with pytest.raises(ValueError, match="lesson 00 has no parameter 'sed'; its parameters are: device, n_draws, seed"):
        parameters.check_parameter_names(registry.get_lesson(0), {"sed": 1})


def test_normalise_drops_run_to_run_metadata_and_numbers_cell_ids():
    nb = _nb("x = 1", "y = 2", tags={1: ["injected-parameters"]})
    nb.metadata["papermill"] = {"duration": 1.0}
    nb.cells[0].metadata["execution"] = {"iopub.status.busy": "2026-12-02T00:00"}
    nb.cells[0].metadata["papermill"] = {"duration": 0.1}
    out = twins.normalise(nb)
    assert "papermill" not in out.metadata and out.metadata["kernelspec"]["name"] == "python3"
    assert [c.id for c in out.cells] == ["c00", "c01"]
    assert all(set(c.metadata) <= {"tags"} for c in out.cells)
    assert "tags" not in out.cells[1].metadata


def test_twin_text_round_trips_tags_without_a_version_header():
    nb = twins.normalise(_nb("seed = 0", "print(seed)", tags={0: ["parameters"]}))
    text = twins.twin_text(nb)
    assert text.startswith('# %% tags=["parameters"]')
    assert "jupytext_version" not in text


def test_changed_cells_names_cells_whose_text_output_differs():
    old = _nb("print(1)", "print(2)")
    new = _nb("print(1)", "print(2)", "print(3)")
    old.cells[1].outputs = [nbformat.v4.new_output("stream", text="2\n")]
    new.cells[1].outputs = [nbformat.v4.new_output("stream", text="3\n")]
    assert twins.changed_cells(old, new) == ["code cell 1 (print(2)): output changed", "code cell 2: added"]
    assert twins.changed_cells(None, new) == ["new notebook: 3 code cells"]


def _record_output(**record):
    return nbformat.v4.new_output("display_data", data={records.RECORD_MIME: records.encode(record)})


def test_count_claims_reads_the_claim_records_not_the_printed_table():
    nb = _nb("claim(...)", "claims_table()")
    claim = {"kind": "claim", "name": "a", "ours": "1", "expected": "1", "upstream": "-", "reproduced": True}
    nb.cells[0].outputs = [_record_output(**claim), _record_output(**{**claim, "name": "b"})]
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", text="| a | - | 1 | yes |\n\n9/9 claims reproduced\n")]
    assert outcomes.count_claims(nb) == (2, 2)
    assert outcomes.count_claims(_nb("x")) == (0, 0)
    assert [r["cell"] for r in outcomes.notebook_records(nb)] == [0, 0]


def test_exercise_verdicts_are_read_from_their_records():
    nb = _nb("check_exercise('1.1', f)")
    nb.cells[0].outputs = [_record_output(kind="exercise", id="1.1", verdict="not yet right", message="off by one")]
    assert outcomes.exercise_verdicts(nb)["1.1"]["verdict"] == "not yet right"


def test_a_corrupt_record_names_the_problem():
    nb = _nb("x")
    nb.cells[0].outputs = [nbformat.v4.new_output("display_data", data={records.RECORD_MIME: "{not json"})]
    with pytest.raises(ValueError, match="not valid JSON"):
        outcomes.notebook_records(nb)


def test_a_failure_in_the_validation_cell_is_a_bad_parameter():
    nb = _nb("device = 'auto'", "device = 'tpu'", "check(device)", tags={0: ["parameters"], 1: ["injected-parameters"]})
    nb.cells[2].outputs = [
        nbformat.v4.new_output("error", ename="ValueError", evalue="device='tpu' is not allowed", traceback=[])
    ]
    assert runner._bad_parameter_message(nb) == "device='tpu' is not allowed"
    nb.cells[2].outputs[0]["ename"] = "RuntimeError"
    assert runner._bad_parameter_message(nb) is None


def _results():
    floor = runner.RunResult(None, "passed", 6.0)
    claims = [{"name": "leak per step", "ours": "3", "expected": "3", "reproduced": True, "cell": 4}]
    exercises = [
        {"id": "0.1", "verdict": "correct", "message": "", "cell": 9},
        {"id": "0.2", "verdict": "not yet right", "message": "off by one", "cell": 11},
        {"id": "0.3", "verdict": "not attempted", "message": "", "cell": 13},
    ]
    ok = runner.RunResult(registry.get_lesson(0), "passed", 6.5, 5, 5, claims=claims, exercises=exercises)
    bad = runner.RunResult(
        registry.get_lesson(1),
        "failed",
        13.0,
        error="ClaimError: claim 'x' does not hold",
        output=Path("build/executed/01.ipynb"),
        failed_cell=7,
    )
    return [ok, bad], floor


def test_the_learners_report_has_no_floor_budget_or_over_budget(monkeypatch):
    monkeypatch.delenv(reports.TIMING_ENV, raising=False)
    results, floor = _results()
    text = reports.report_markdown(results, floor, out=Path("build/executed"))
    assert "| 00_start_here | passed | 6.5 | 5/5 | 1/3 |" in text
    assert "budget" not in text.lower() and "floor" not in text.lower()
    assert "1 passed, 1 failed" in text and "(code cell 7)" in text and "`make lab`" in text


def test_the_timing_variable_turns_the_maintainers_columns_on(monkeypatch):
    results, floor = _results()
    monkeypatch.setenv(reports.TIMING_ENV, "1")
    assert "**over budget**" in reports.report_markdown(results, floor)
    assert "**over budget**" not in reports.report_markdown(results, floor, timing=False)
    monkeypatch.setenv(reports.TIMING_ENV, "0")
    assert "budget" not in reports.report_markdown(results, floor)


def test_report_has_a_row_per_lesson_with_seconds_beyond_the_floor():
    results, floor = _results()
    text = reports.report_markdown(results, floor, timing=True)
    budget = f"{registry.get_lesson(0).budget_s:g}"
    assert f"| 00_start_here | passed | 6.5 | +0.5 | {budget} | 5/5 | 1/3 |" in text
    assert "1 passed, 1 failed" in text and "- 01_memory_leak_attribution: ClaimError" in text
    assert "(code cell 7)" in text


def test_report_explains_floor_and_budget_and_flags_a_lesson_over_budget_without_failing_it():
    results, floor = _results()
    text = reports.report_markdown(results, floor, out=Path("build/executed"), timing=True)
    assert "**floor**" in text and "**budget**" in text
    assert "+7.0 **over budget**" in text and "Over budget (flagged, not failed): 01_memory_leak_attribution" in text
    assert "`make lab`" in text and "build/executed" in text


def test_an_interrupted_run_says_its_report_is_partial():
    results, floor = _results()
    assert reports.report_markdown(results, floor, interrupted=True).startswith("# Course run (interrupted: partial)")


def test_junit_has_a_suite_per_lesson_with_a_case_per_claim_and_exercise():
    results, floor = _results()
    root = ET.fromstring(reports.junit_xml(results, floor))
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["00_start_here", "01_memory_leak_attribution"]
    names = [c.get("name") for c in suites[0].findall("testcase")]
    assert names == ["execution", "claim: leak per step", "exercise 0.1", "exercise 0.2", "exercise 0.3"]
    wrong = suites[0].findall("testcase")[3].find("failure")
    assert "not yet right (code cell 11)" in wrong.get("message") and "off by one" in wrong.text
    assert suites[0].findall("testcase")[4].find("skipped") is not None
    assert root.get("tests") == "6" and root.get("failures") == "2" and root.get("skipped") == "1"


def test_a_failed_lesson_names_its_cell_and_executed_notebook_in_junit():
    results, floor = _results()
    run = ET.fromstring(reports.junit_xml(results, floor)).findall("testsuite")[1].find("testcase")
    failure = run.find("failure")
    assert "code cell 7" in failure.get("message") and "ClaimError" in failure.get("message")
    assert "build/executed/01.ipynb" in failure.text
    assert "over budget" in run.find("system-out").text


def test_results_file_round_trips(tmp_path):
    results, floor = _results()
    (tmp_path / "run.json").write_text(reports.results_json(results, floor))
    again, floor_again = reports.read_results(tmp_path / "run.json")
    assert again == results and floor_again == floor


def test_a_results_file_that_is_not_one_says_so(tmp_path):
    (tmp_path / "run.json").write_text("not json")
    with pytest.raises(ValueError, match="not a results file"):
        reports.read_results(tmp_path / "run.json")


def test_run_lessons_rejects_bad_workers():
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        runner.run_lessons([], notebooks_dir(), workers=0)


@pytest.mark.slow
def test_execute_in_place_runs_a_fresh_kernel_and_keeps_counts():
    nb = _nb("x = 6 * 7", "print(x)")
    twins.execute_in_place(nb, notebooks_dir())
    assert [c.execution_count for c in nb.cells] == [1, 2]
    assert nb.cells[1].outputs[0]["text"] == "42\n"
    assert all("execution" not in c.metadata for c in nb.cells)


def test_split_prints_are_merged_so_refreshes_do_not_flap():
    nb = _nb("print(1); print(2)")
    nb.cells[0].outputs = [
        nbformat.v4.new_output("stream", text="1"),
        nbformat.v4.new_output("stream", text="\n2\n"),
        nbformat.v4.new_output("stream", name="stderr", text="w\n"),
    ]
    out = twins.normalise(nb).cells[0].outputs
    assert [(o["name"], o["text"]) for o in out] == [("stdout", "1\n2\n"), ("stderr", "w\n")]


def test_mime_order_does_not_count_as_a_change():
    old, new = _nb("fig"), _nb("fig")
    old.cells[0].outputs = [nbformat.v4.new_output("display_data", data={"image/png": "AA", "text/plain": "<Figure>"})]
    new.cells[0].outputs = [nbformat.v4.new_output("display_data", data={"text/plain": "<Figure>", "image/png": "AA"})]
    assert twins.changed_cells(old, new) == []


@pytest.mark.slow
def test_papermill_runs_leave_the_process_folder_alone(tmp_path, monkeypatch):
    """Lessons run in threads: a chdir in one run would send another run's relative paths astray."""
    import os

    kernel_dir = tmp_path / "kernel_here"
    kernel_dir.mkdir()
    nbformat.write(_nb("import os", "print(os.getcwd())"), tmp_path / "in.ipynb")
    monkeypatch.chdir(tmp_path)

    real_chdir = os.chdir

    def only_to_where_we_are(path):  # papermill's file handler re-enters the current folder; that is harmless
        if runner.Path(path).resolve() != tmp_path.resolve():
            raise AssertionError(f"the process folder was changed to {path}")
        real_chdir(path)

    monkeypatch.setattr(os, "chdir", only_to_where_we_are)
    status, error, _ = runner.execute_with_papermill(
        runner.Path("in.ipynb"), runner.Path("out/run.ipynb"), {}, kernel_dir, timeout_s=60
    )
    assert (status, error) == ("passed", "")
    out = nbformat.read(tmp_path / "out" / "run.ipynb", as_version=4)
    assert out.cells[1].outputs[0]["text"] == f"{kernel_dir}\n", "the kernel runs in the folder it was given"


@pytest.mark.parametrize("raw", ["nan", "inf", "-inf", "NaN"])
def test_nan_and_inf_on_the_command_line_reach_the_validators_as_numbers(raw):
    _, value = parameters.parse_parameter(f"lr={raw}")
    assert isinstance(value, float) and not math.isfinite(value)


def test_the_longest_budgets_start_first_and_results_come_back_in_course_order(monkeypatch, tmp_path):
    import dataclasses

    budgets = {0: 1.0, 1: 3.0, 2: 2.0, 3: 3.0}  # two ties: course order between them
    lessons = [dataclasses.replace(registry.LESSONS[n], budget_s=b) for n, b in budgets.items()]
    started = []

    def fake_run_one(lesson, out_dir, parameters=None, **kwargs):
        started.append("floor" if lesson is None else lesson.number)
        return runner.RunResult(lesson, "passed", 1.0)

    monkeypatch.setattr(runner, "run_one", fake_run_one)
    results, floor = runner.run_lessons(lessons, tmp_path, workers=1)
    assert started == ["floor", 1, 3, 2, 0]
    assert [r.lesson.number for r in results] == [0, 1, 2, 3] and floor is not None


def test_a_lesson_a_stop_left_unrun_is_counted_apart_from_the_failed(monkeypatch):
    monkeypatch.delenv(reports.TIMING_ENV, raising=False)
    results, floor = _results()
    stops = ((2, "not run"), (3, "interrupted"))
    unrun = [runner.RunResult(registry.get_lesson(n), status, 0.0) for n, status in stops]
    text = reports.report_markdown([*results, *unrun], floor)
    assert "1 passed, 1 failed, 2 not run" in text
    assert "1 passed, 1 failed\n" in reports.report_markdown(results, floor)  # nothing unrun: no third count


def test_run_pool_imports_papermill_before_any_worker_starts():
    # two workers importing papermill at once met a partly initialised jupyter_client in CI (a circular import)
    probe = (
        "import sys\n"
        "from verlstudy.course import runner\n"
        "assert 'papermill' not in sys.modules\n"
        "print(runner.run_pool([1, 2], lambda job: 'jupyter_client.manager' in sys.modules, workers=2))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[True, True]"
