"""benchmarks/beyond_floor.py: its counting, arithmetic and table, and one cheap row run for real (no timings)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from verlstudy.course import registry

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "beyond_floor.py"


def _load():
    spec = importlib.util.spec_from_file_location("bench_beyond_floor", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _load()


def _cell(source: str | list[str], tags: tuple[str, ...] = (), pngs: int = 0) -> dict:
    outputs = [{"output_type": "display_data", "data": {"image/png": "iVBO", "text/plain": "<Figure>"}}] * pngs
    return {"cell_type": "code", "source": source, "metadata": {"tags": list(tags)}, "outputs": outputs}


def test_counts_come_from_code_cells_and_stored_figures() -> None:
    notebooks = {code: {"cells": []} for code in ("00", "02", "03", "04")}
    notebooks["00"]["cells"] = [
        {"cell_type": "markdown", "source": "check_exercise( in prose is not a call", "metadata": {}},
        _cell(['check_exercise("0.1", f)\n', 'check_exercise("0.2", g)\n'], pngs=2),
        _cell('skip_unless("cuda")\ncheck_exercise("0.3", h)\nrun_local(w, 2)', tags=("gpu",), pngs=1),
        _cell("out = run_local(w, 2)\nlines = pipeline.failed_outcomes(w, 2)\nmy_run_local(w)"),
    ]
    notebooks["03"]["cells"] = [_cell("def scan():\n    a, b = scan_release('0.9.0'), scan_release()\nscan()")]
    counts = bench.course_counts(notebooks)
    assert counts["c"] == {"00": 2}  # the gpu-tagged cell's check does not run on CPU
    assert counts["d"] == {"00": 2}
    assert counts["e"] == {"00": 2}  # nor does its figure
    assert counts["f"] == {"03": 1}  # one cell reads both releases
    assert counts["a"] == {"02": 1, "03": 1, "04": 1} and counts["b"] == {"02": 1}
    assert counts["g"] == {"00": 2}  # three code cells (the gpu one runs: it prints its skip line) less the floor's one
    line = bench.occurrence_line(counts)
    assert line.startswith("occurs in the course: a jagged tensor 3x in 3 (02, 03, 04); b checkpoint 1x in 1 (02)")
    assert line.endswith("; g executed cell 2x in 1 (00)")
    with pytest.raises(ValueError, match=r"lessons the course does not have: \['02', '03', '04'\]"):
        bench.course_counts({"00": {"cells": []}})
    real = bench.course_counts({ls.code: json.loads(ls.notebook.read_text()) for ls in registry.LESSONS})
    assert set(real) == set("abcdefg") and all(set(v) <= {ls.code for ls in registry.LESSONS} for v in real.values())
    assert set(real["g"]) == {ls.code for ls in registry.LESSONS}  # every lesson has cells beyond its set-up cell


def test_executed_cells_are_every_code_cell_but_the_floors_one() -> None:
    parameters = {"cell_type": "code", "source": "seed = 0", "metadata": {"tags": ["parameters"]}, "outputs": []}
    notebook = {"cells": [parameters, _cell("start_lesson()"), {"cell_type": "markdown", "source": "# x"}]}
    notebook["cells"] += [_cell("run()", tags=("npu",)), {"cell_type": "raw", "source": "x = 1"}]
    assert bench.executed_cells(notebook) == 2  # parameters, set-up and npu cells; markdown and raw do not run
    assert bench.executed_cells({"cells": []}) == 0 and bench.executed_cells({"cells": [_cell("x")]}) == 0
    nb = bench.floor_notebook_with_cells(3)  # what row g runs: the floor's one cell, then three trivial ones
    assert [c.cell_type for c in nb.cells] == ["code"] * 4 and bench.executed_cells(nb) == 3
    assert nb.cells[3].source == "x2 = 2\nprint(x2)"


def test_total_counts_first_and_further_occurrences_and_the_table_keeps_its_shape() -> None:
    counts = {"a": {"02": 1, "03": 1}, "b": {"02": 1, "05": 1}, "c": {"00": 3}, "d": {}, "e": {"01": 1}, "f": {}}
    seconds = {"a": 0.3, "a+b": 0.35, "b": 0.7, "c": 0.1, "c+": 0.04, "e": 0.06, "e+": 0.05}
    # a twice; b after a in 02, alone in 05; one first check and two further ones; one figure
    assert bench.beyond_floor_total(counts, seconds) == pytest.approx(0.6 + 0.35 + 0.7 + 0.1 + 0.08 + 0.06)
    assert bench.beyond_floor_total(counts, {}) == 0.0
    # g: every executed cell pays it, none a first-time extra; counts without g leave it out, as seconds without g do
    with_g = {**counts, "g": {"00": 20, "01": 30}}
    assert bench.beyond_floor_total(with_g, {**seconds, "g": 0.004}) == pytest.approx(1.89 + 50 * 0.004)
    assert bench.beyond_floor_total(with_g, seconds) == pytest.approx(1.89)
    assert bench.per_cell([(1.0, 1.5), (1.2, 1.6), (9.0, 9.0)], [(1.6, 2.0), (1.4, 2.1)], 100) == pytest.approx(
        (0.003, 0.0045)
    )  # medians: 1.2 and 1.6 plain, 1.5 and 2.05 with 100 cells
    line = bench.reachable_line((3.0, 4.0), (2.0, 2.0), (1.0, 2.0), 10, "")
    assert line == (
        "reachable: 3.00 s cpu beyond floor x 10 lessons = 10.00 s: lowest ratio 1.30 cpu, 1.20 wall; "
        "without g 1.20 cpu, 1.10 wall"
    )
    assert bench.reachable_line((3.0, 4.0), None, (1.0, 2.0), 10, " (without rows g)").endswith("1.30 cpu, 1.20 wall")
    medians = {step: (0.1, 0.2) for step, _, _ in bench.STEPS if step not in ("f",)}
    table = bench.format_table((1.0, 2.0), medians, {"f": "verl 0.9.0 source not found"}).splitlines()
    assert table[0].split() == ["row", "what", "cpu", "s", "/floor", "wall", "s", "/floor"]
    assert table[1].startswith("floor ") and table[1].split()[-4:] == ["1.000", "1.00", "2.000", "1.00"]
    assert [line.split()[0] for line in table[2:]] == ["a", "a+b", "b", "c", "c+", "d", "d+", "e", "e+", "f"]
    assert table[2].split()[-4:] == ["0.100", "0.10", "0.200", "0.10"]
    assert table[-1] == "f     skipped: verl 0.9.0 source not found"
    table = bench.format_table((1.0, 2.0), {**medians, "g": (0.0041, 0.0044)}, {}).splitlines()
    assert table[-1].startswith("g     an executed cell") and table[-1].split()[-4:] == [
        "0.0041",
        "0.004",
        "0.0044",
        "0.002",
    ]
    last = bench.format_table((1.0, 2.0), medians, {"g": "--no-notebook-floor"}).splitlines()[-1]
    assert last == "g     skipped: --no-notebook-floor"


def run_script(*args: str) -> list[str]:
    """The benchmark run in a fresh process with `args`: its output lines (it must exit 0)."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def test_one_cheap_row_runs_in_a_fresh_process() -> None:
    lines = run_script("--repeat", "1", "--rows", "eg", "--no-notebook-floor")
    assert lines[0].startswith("1 fresh process(es) per row; medians; load average ")
    assert [line.split()[0] for line in lines[1:6]] == ["row", "floor", "e", "e+", "g"]
    assert lines[5].startswith("g     skipped: --no-notebook-floor")  # row g needs the papermill runs
    assert lines[6].startswith("occurs in the course: a jagged tensor ")
    assert lines[7].startswith("reachable (without rows a, b, c, d, f, g): ") and "without g" not in lines[7]
    assert len(lines) == 8


@pytest.mark.slow
def test_row_g_alone_times_the_floor_too_and_compares_with_the_floor_notebook() -> None:
    lines = run_script("--repeat", "1", "--rows", "g", "--cells", "2")
    assert lines[0].startswith("1 fresh process(es) per row, 1 papermill run(s) of the floor notebook")
    assert [line.split()[0] for line in lines[1:4]] == ["row", "floor", "g"]
    assert "nan" not in lines[2]  # the floor is timed even when no other row needs a fresh process
    assert lines[-1].startswith("against the floor notebook as course_time.py measures it (")
