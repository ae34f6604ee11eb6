"""Lesson 00's arc reader: headings, stage labels, order, the claims-table ending, and bad input."""

import json

import pytest

from verlstudy.kit.resources import notebooks_dir
from verlstudy.lessons.l00_start_here.arc import (
    ARC,
    arc_table,
    course_arcs,
    ends_with_claims_table,
    lesson_arc,
    read_cells,
    section_headings,
    stage_of,
)


def md(text):
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def code(text):
    return {"cell_type": "code", "metadata": {}, "source": text, "outputs": []}


FULL = [
    md("# 99 · A title\n## Symptom: it breaks"),
    md("## Reproduce: the workaround's fix"),  # "fix" after the colon describes, it does not label
    md("## Root cause and fix: both at once"),
    md("### a sub-section is not a section\n## Guard: a test"),
    md("## Exercises"),
    md("## Checked against upstream verl"),
    md("## Takeaways"),
    code("claims_table()"),
]


def test_section_headings_are_level_two_only_and_strip_the_marker():
    assert section_headings([md("# t\n## One\n### sub\n## Two"), code("## not markdown")]) == ["One", "Two"]
    assert section_headings([{"cell_type": "markdown", "source": ["## A\n", "text"]}]) == ["A"]


def test_stage_of_reads_the_label_before_the_colon():
    assert stage_of("Reproduce: the recipe's fix") == ["reproduce"]
    assert stage_of("3. Root cause and fix: derive every size") == ["cause", "fix"]
    assert stage_of("The fix: detach what is stored") == ["fix"]
    assert stage_of("Prefix handling") == []  # whole words only
    assert stage_of("Checked against upstream verl") == ["upstream"]


def test_a_full_lesson_names_every_stage_in_order():
    arc = lesson_arc("99", FULL)
    assert arc.missing == [] and arc.in_order
    assert arc.stages["cause"] == arc.stages["fix"] == 2 and arc.stages["claims table"] == len(arc.headings)


def test_stages_out_of_order_and_missing_are_reported():
    arc = lesson_arc("98", [md("## Fix: first"), md("## Root cause"), md("## Exercises"), code("x = 1")])
    assert not arc.in_order
    assert arc.missing == ["symptom", "reproduce", "guard", "upstream", "takeaways", "claims table"]


def test_claims_table_must_be_the_last_code_cell():
    assert ends_with_claims_table([code("claims_table()")])
    assert not ends_with_claims_table([code("claims_table()"), code("print(1)")])
    assert not ends_with_claims_table([md("claims_table()")])


def test_arc_table_has_a_row_per_lesson_and_a_column_per_stage():
    table = arc_table([lesson_arc("99", FULL), lesson_arc("98", [md("## Fix"), md("## Symptom")])])
    lines = table.text().splitlines()  # a display object (kit.tables): Markdown in JupyterLab, these lines for nbval
    assert lines[0].count("|") == len(ARC) + 3 and len(lines) == 4
    assert table.header == ("lesson", *ARC, "in order")
    assert lines[2].endswith("| yes |") and lines[3].endswith("| NO |")


def test_course_arcs_reads_every_lesson_notebook_of_the_course():
    arcs = course_arcs(notebooks_dir())
    assert [a.code for a in arcs] == [f"{n:02d}" for n in range(len(arcs))] and len(arcs) >= 10
    assert all(a.stages["exercises"] is not None and a.stages["claims table"] is not None for a in arcs)


def test_read_cells_and_course_arcs_refuse_what_is_not_a_notebook(tmp_path):
    with pytest.raises(ValueError, match="path must be an existing"):
        read_cells(tmp_path / "missing.ipynb")
    bad = tmp_path / "00_x.ipynb"
    bad.write_text(json.dumps({"cells": "no"}))
    with pytest.raises(ValueError, match="no list of cells"):
        read_cells(bad)
    with pytest.raises(ValueError, match="notebooks must be a folder"):
        course_arcs(tmp_path / "nowhere")
    with pytest.raises(TypeError, match="cells must be a list"):
        section_headings("## a string")
    with pytest.raises(TypeError, match="heading must be a string"):
        stage_of(3)


@pytest.mark.parametrize("value", [None, 7, [1], float("nan")])
def test_arc_helpers_name_an_argument_of_the_wrong_type(value):
    # issue 43 item 8: these ended in pathlib's raw error, or "'int' object has no attribute 'get'"
    from verlstudy.lessons.l00_start_here import arc

    calls = [
        (arc.read_cells, r"argument path must be a \.ipynb notebook's path \(str or Path\)"),
        (arc.course_arcs, r"argument notebooks must be a folder of lesson notebooks \(str or Path\)"),
        (arc.lesson_minutes, r"argument notebooks must be a folder of lesson notebooks \(str or Path\)"),
        (arc.arc_table, r"argument arcs(\[0\])? must be (a list, each item )?a LessonArc"),
        (lambda v: arc.lesson_arc(v, []), r"argument code must be a lesson code like '03'"),
        (lambda v: arc.ends_with_claims_table([v]), r"argument cells\[0\] must be a notebook cell \(a dict\)"),
        (lambda v: arc.section_headings([v]), r"argument cells\[0\] must be a notebook cell \(a dict\)"),
        (lambda v: arc.lesson_arc("03", [v]), r"argument cells\[0\] must be a notebook cell \(a dict\)"),
    ]
    if not isinstance(value, list):
        calls.append((arc.ends_with_claims_table, r"argument cells must be a list of notebook cells"))
    for call, named in calls:
        with pytest.raises(TypeError, match=named) as info:
            call(value)
        assert "\n" not in str(info.value)
