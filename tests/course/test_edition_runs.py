"""The Chinese edition runs (issue 45): built into a temporary folder, two lessons execute with VERLSTUDY_LANG=zh_CN,
every claim holds, and the checkers' verdicts are printed in Chinese (while their records stay English data).

Lesson 00 (the course and the hint ladder) and lesson 05 (the cheapest PR lesson, ~8 s) run; together with the
build about 20 s on two cores; `progress` then reads a learner working in the Chinese student edition of 05.
"""

from __future__ import annotations

import os

import nbformat
import pytest

from verlstudy.course import edition, edition_command, registry
from verlstudy.course.outcomes import count_claims, notebook_records

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """`verlstudy edition zh_CN 00 05 --run --out DIR`: the edition built, then each lesson run with VERLSTUDY_LANG."""
    folder = tmp_path_factory.mktemp("zh")
    lessons = [registry.get_lesson("00"), registry.get_lesson("05")]
    failed = edition_command.run_edition("zh_CN", folder / "out", lessons, timeout_s=120)
    assert "VERLSTUDY_LANG" not in os.environ or os.environ["VERLSTUDY_LANG"] != "zh_CN"  # restored after the run
    results = {}
    for lesson in lessons:
        nb = nbformat.read(folder / "out" / lesson.notebook.name, as_version=4)
        results[lesson.code] = ("failed" if lesson.stem in failed else "passed", lesson.stem, nb)
    return results


def _printed(nb) -> str:
    return "".join("".join(o.get("text", "")) for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


@pytest.mark.parametrize("code", ["00", "05"])
def test_the_lesson_runs_in_chinese_with_every_claim(executed, code):
    status, error, nb = executed[code]
    assert status == "passed", error
    reproduced, total = count_claims(nb)
    assert total > 5 and reproduced == total
    printed = _printed(nb)
    verdicts = notebook_records(nb, "exercise")
    assert verdicts and {v["verdict"] for v in verdicts} == {"correct"}  # the data stays English
    for v in verdicts:
        assert f"练习 {v['id']}：正确" in printed
    assert "[skip] 这里没有 CUDA 设备" in printed and "（预期 " in printed
    assert "exercise " + verdicts[0]["id"] + ": correct" not in printed
    markdown = [c.source for c in nb.cells if c.cell_type == "markdown"]
    assert sum("的" in text for text in markdown) > len(markdown) / 2  # the prose is Chinese


def test_lesson_00_shows_the_hint_ladder_and_its_claims_in_chinese(executed):
    printed = _printed(executed["00"][2])
    rungs = ("  该看哪里（第 ", "  一个问题（第 ", "  方法（第 ")  # the demonstration's tries, as a learner sees them
    for rung in rungs:
        assert rung in printed
    assert "[claim] 课程中的课数: " in printed and "[claim] lessons in the course" not in printed
    assert "where to look (try" not in printed


def test_the_claims_table_is_in_chinese(executed):
    printed = _printed(executed["05"][2]) + "".join(
        o.get("data", {}).get("text/plain", "")
        for c in executed["05"][2].cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") in ("display_data", "execute_result")
    )
    assert "| 论断 | 上游 | 本课程 | 已复现 |" in printed and "条论断已复现" in printed


def test_progress_reads_a_learner_working_in_the_chinese_student_edition(tmp_path):
    from verlstudy.course import progress

    lesson = registry.get_lesson("05")
    edition.build_edition("zh_CN", tmp_path / "class" / "mei", [lesson], student=True)
    rows = progress.collect([tmp_path / "class"], tmp_path / "build", workers=1)
    assert {r.exercise: r.verdict for r in rows} == {"5.1": "not attempted", "5.2": "not attempted"}
