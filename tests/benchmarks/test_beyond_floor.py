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
    line = bench.occurrence_line(counts)
    assert line.startswith("occurs in the course: a jagged tensor 3x in 3 (02, 03, 04); b checkpoint 1x in 1 (02)")
    with pytest.raises(ValueError, match=r"lessons the course does not have: \['02', '03', '04'\]"):
        bench.course_counts({"00": {"cells": []}})
    real = bench.course_counts({ls.code: json.loads(ls.notebook.read_text()) for ls in registry.LESSONS})
    assert set(real) == set("abcdef") and all(set(v) <= {ls.code for ls in registry.LESSONS} for v in real.values())


def test_total_counts_first_and_further_occurrences_and_the_table_keeps_its_shape() -> None:
    counts = {"a": {"02": 1, "03": 1}, "b": {"02": 1, "05": 1}, "c": {"00": 3}, "d": {}, "e": {"01": 1}, "f": {}}
    seconds = {"a": 0.3, "a+b": 0.35, "b": 0.7, "c": 0.1, "c+": 0.04, "e": 0.06, "e+": 0.05}
    # a twice; b after a in 02, alone in 05; one first check and two further ones; one figure
    assert bench.beyond_floor_total(counts, seconds) == pytest.approx(0.6 + 0.35 + 0.7 + 0.1 + 0.08 + 0.06)
    assert bench.beyond_floor_total(counts, {}) == 0.0
    medians = {step: (0.1, 0.2) for step, _, _ in bench.STEPS if step not in ("f",)}
    table = bench.format_table((1.0, 2.0), medians, {"f": "verl 0.9.0 source not found"}).splitlines()
    assert table[0].split() == ["row", "what", "cpu", "s", "/floor", "wall", "s", "/floor"]
    assert table[1].startswith("floor ") and table[1].split()[-4:] == ["1.000", "1.00", "2.000", "1.00"]
    assert [line.split()[0] for line in table[2:]] == ["a", "a+b", "b", "c", "c+", "d", "d+", "e", "e+", "f"]
    assert table[2].split()[-4:] == ["0.100", "0.10", "0.200", "0.10"]
    assert table[-1] == "f     skipped: verl 0.9.0 source not found"


def test_one_cheap_row_runs_in_a_fresh_process() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--repeat", "1", "--rows", "e", "--no-notebook-floor"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("1 fresh process(es) per row; medians; load average ")
    assert [line.split()[0] for line in lines[1:5]] == ["row", "floor", "e", "e+"]
    assert lines[5].startswith("occurs in the course: a jagged tensor ")
    assert lines[6].startswith("reachable (without rows a, b, c, d, f): ") and "lowest ratio " in lines[6]
    assert len(lines) == 7
