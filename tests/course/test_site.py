"""The site reads well and works offline: tables as tables, figure data one click away, a sidebar, two editions."""

import re
from html.parser import HTMLParser

import nbformat
import pytest

from verlstudy.course import registry, site, site_cells, site_page
from verlstudy.kit import records

LESSON0 = registry.get_lesson(0)


# ---------------------------------------------------------------- outputs rewritten for reading


def test_a_pipe_table_becomes_an_html_table_with_numbers_right_aligned():
    text = "before\n| name | MiB |\n| --- | ---: |\n| a<b | 1.5 |\nafter\n"
    got = re.sub(r">\s+<", "><", site_cells.text_to_html(text))  # nbconvert's Markdown filter writes the table
    assert got == (
        "<pre>before</pre>"
        '<table><thead><tr><th>name</th><th style="text-align:right">MiB</th></tr></thead>'
        '<tbody><tr><td>a&lt;b</td><td style="text-align:right">1.5</td></tr></tbody></table>'
        "<pre>after</pre>"
    )


def test_printed_cells_are_text_not_markdown():
    got = site_cells.text_to_html("| a | b |\n| --- | --- |\n| *x* `y` [l](u) | <i>&amp; \\ _z_ |\n")
    assert "<td>*x* `y` [l](u)</td>" in got and "<td>&lt;i&gt;&amp;amp; \\ _z_</td>" in got


def test_a_table_from_rows_takes_an_alignment_per_column_and_refuses_an_unknown_one():
    got = site_cells.table_html(["a", "b", "c"], [["1", "2\nlines", "3"]], ["center", "right"])
    assert '<td style="text-align:center">1</td>' in got and '<td style="text-align:right">2 lines</td>' in got
    assert "<td>3</td>" in got
    with pytest.raises(ValueError, match="alignment must be one of"):
        site_cells.table_html(["a"], [], ["middle"])


def test_a_table_printed_without_a_separator_line_is_still_a_table():
    got = site_cells.text_to_html("| repository | ref |\n| NVIDIA/Megatron-LM | core_v0.18.0 |\n")
    assert got.count("<tr>") == 2 and "<th>repository</th>" in got and "<td>core_v0.18.0</td>" in got


def test_text_without_a_table_is_left_alone_and_a_lone_pipe_line_is_no_table():
    assert site_cells.text_to_html("no table here\n") is None
    assert site_cells.text_to_html("| just one line |\n") is None
    with pytest.raises(TypeError, match="text must be a str"):
        site_cells.text_to_html(None)


def test_a_stray_pipe_inside_a_cell_keeps_its_text_in_the_last_column_and_a_short_row_is_padded():
    got = site_cells.text_to_html("| claim | ours |\n| --- | --- |\n| a | x | y |\n| b |\n")
    assert "<td>x | y</td>" in got and re.search(r"<td>b</td>\s*<td></td>", got)


def test_a_table_row_of_the_wrong_width_is_refused_by_name():
    with pytest.raises(ValueError, match="has 1 cells; the header has 2"):
        site_cells.table_html(["a", "b"], [["only"]])
    with pytest.raises(ValueError, match="at least one header cell"):
        site_cells.table_html([], [])


def test_the_numbers_printed_beside_a_figure_are_split_off():
    text = "measured 8 steps\nlive MiB per micro-batch:\n  fixed: 1, 1, 1\n  leaking: 1, 2, 3\n"
    assert site_cells.split_figure_data(text) == (
        "measured 8 steps\n",
        "live MiB per micro-batch:\n  fixed: 1, 1, 1\n  leaking: 1, 2, 3\n",
    )
    assert site_cells.split_figure_data("no dump here\n") is None
    assert site_cells.split_figure_data("  only indented\n") is None


def _figure_cell() -> nbformat.NotebookNode:
    dump = nbformat.v4.new_output("stream", text="note\nseries:\n  a: 1, 2\n")
    png = nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo="})
    return nbformat.v4.new_code_cell("plot()", outputs=[dump, png])


def test_a_figure_comes_first_and_its_data_waits_in_a_closed_details():
    nb = nbformat.v4.new_notebook(cells=[_figure_cell()])
    outputs = site_cells.page_cells(nb, claims=[]).cells[0].outputs
    assert [o.output_type for o in outputs] == ["stream", "display_data", "display_data"]
    assert outputs[0].text == "note\n" and "image/png" in outputs[1].data
    assert outputs[2].data["text/html"].startswith('<details class="figure-data"><summary>figure data</summary>')


def test_the_claims_cell_is_rebuilt_from_the_records_not_from_the_printed_pipes():
    printed = "| claim | upstream | ours | reproduced |\n| --- | --- | --- | --- |\n| x | - | 3 | yes |\n2/2 claims\n"
    cell = nbformat.v4.new_code_cell("claims_table()", outputs=[nbformat.v4.new_output("stream", text=printed)])
    nb = nbformat.v4.new_notebook(cells=[cell])
    shown = site_cells.page_cells(nb, claims=[("bytes | per step", "-", "3", "yes")]).cells[0].outputs[0]
    assert "<td>bytes | per step</td>" in shown.data["text/html"]  # a pipe inside a claim stays in its cell
    assert "<pre>2/2 claims</pre>" in shown.data["text/html"]


# ---------------------------------------------------------------- the page around the cells


def _notebook(*cells: tuple[str, list[str]]) -> nbformat.NotebookNode:
    return nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(f"x{cid}", id=cid, metadata={"tags": tags}) for cid, tags in cells]
    )


def test_the_site_template_ships_beside_the_code_and_extends_nbconverts_basic():
    assert (site.TEMPLATE_DIR / "index.html.j2").is_file()
    assert "extends 'basic/index.html.j2'" in (site.TEMPLATE_DIR / "index.html.j2").read_text()
    assert '"base_template": "basic"' in (site.TEMPLATE_DIR / "conf.json").read_text()


def test_consecutive_cells_with_one_summary_share_one_closed_details():
    nb = _notebook(("a", []), ("b", ["solution"]), ("c", []), ("d", []))
    marked = site_page.collapse_cells(nb, {"b": "show solution: 1.1", "c": "show solution: 1.1", "d": "after <try>"})
    got = site.render_cells_html(marked)
    assert got.count("<details") == 2 and got.count("</details>") == 2
    assert got.index("xa") < got.index("<details") < got.index("xb") < got.index("xc") < got.index("</details>")
    assert '<details class="solution"><summary>after &lt;try&gt;</summary>' in got
    assert got.rstrip().endswith("</details>") and " open" not in got
    assert "<script" not in got and "<link" not in got  # the template adds nothing that loads
    assert site.render_cells_html(site_page.collapse_cells(marked, {})).count("<details") == 0  # marks are redone
    with pytest.raises(ValueError, match=r"no cell with id \['z'\]"):
        site_page.collapse_cells(nb, {"z": "x"})
    with pytest.raises(TypeError, match="nb must be the notebook to render"):
        site_page.collapse_cells("<div>", {})


def test_contents_lists_the_sections_in_order_without_markup():
    body = '<h2 id="1.-Symptom">1. <code>Symptom</code> &amp; more<a class="anchor-link" href="#1.-Symptom">¶</a></h2>'
    assert site_page.contents(body) == [site_page.PageLink("#1.-Symptom", "1. Symptom & more")]


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_a_page_links_index_and_neighbours_and_loads_nothing():
    lessons = [site_page.PageLink(f"{n}.html", f"lesson {n}") for n in range(3)]
    page = site_page.page_html("t", "<p>body</p>", lessons=lessons, current="1.html")
    parser = _Tags()
    parser.feed(page)
    hrefs = [attrs.get("href") for tag, attrs in parser.tags if tag == "a"]
    assert "index.html" in hrefs and "0.html" in hrefs and "2.html" in hrefs
    assert [attrs["rel"] for tag, attrs in parser.tags if tag == "a" and "rel" in attrs] == ["prev", "next"] * 2
    assert not [tag for tag, attrs in parser.tags if tag in ("script", "link")]
    first = site_page.page_html("t", "", lessons=lessons, current="0.html")
    assert 'rel="prev"' not in first and 'rel="next"' in first
    with pytest.raises(ValueError, match="is not one of the lessons"):
        site_page.page_html("t", "", lessons=lessons, current="9.html")


# ---------------------------------------------------------------- the two editions


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "site"
    return out, site.build_site(out)


def test_one_command_writes_the_full_site_and_the_student_site(built):
    out, written = built
    names = {p.relative_to(out).as_posix() for p in written}
    for lesson in registry.LESSONS:
        assert {f"{lesson.stem}.html", f"student/{lesson.stem}.html"} <= names
    assert {"index.html", "student/index.html", "facilitator.html"} <= names
    assert "student/facilitator.html" not in names


def test_every_solution_waits_behind_show_solution_in_the_student_site_only(built):
    out, _ = built
    for lesson in registry.LESSONS:
        student_page = (out / "student" / f"{lesson.stem}.html").read_text()
        full_page = (out / f"{lesson.stem}.html").read_text()
        shown = re.findall(r"<summary>show solution: exercise (\d+\.\d+)</summary>", student_page)
        assert shown and all(s.startswith(f"{lesson.number}.") for s in shown), lesson.code
        assert "<summary>show solution" not in full_page and 'class="edition"' not in full_page


def test_after_you_try_text_follows_its_exercise_collapsed_in_the_student_site(built):
    out, _ = built
    page = (out / "student" / "01_memory_leak_attribution.html").read_text()
    waiting = re.findall(r"<summary>after you try: exercise (\d+\.\d+)</summary>", page)
    for exercise in waiting:
        assert page.index(f"<summary>after you try: exercise {exercise}") > page.index(
            f"<summary>show solution: exercise {exercise}"
        )


def test_the_index_has_the_day_plan_the_guide_and_every_claims_table(built):
    out, _ = built
    index = (out / "index.html").read_text()
    assert "<h2 id=day-plan>" in index and "09:00-09:15" in index and "Lunch" in index
    assert 'href="facilitator.html"' in index
    assert index.count('<h3 id="claims-') == len(registry.LESSONS)
    student_index = (out / "student" / "index.html").read_text()
    assert "facilitator.html" not in student_index and "09:00-09:15" in student_index
    guide = (out / "facilitator.html").read_text()
    assert "<table>" in guide and "verlstudy progress" in guide


def test_record_outputs_never_reach_a_page(built):
    out, _ = built
    for page in out.rglob("*.html"):
        assert records.RECORD_MIME not in page.read_text(), page.name


def test_a_corrupt_executed_notebook_is_named(tmp_path):
    executed = tmp_path / "executed"
    executed.mkdir()
    (executed / LESSON0.notebook.name).write_text("{not json")
    with pytest.raises(ValueError, match=f"{LESSON0.notebook.name} is not a readable notebook"):
        site.build_site(tmp_path / "out", executed, [LESSON0])
    assert not (tmp_path / "out").exists()


def test_an_unknown_edition_is_refused():
    nb = nbformat.read(LESSON0.notebook, as_version=4)
    with pytest.raises(ValueError, match="edition must be one of"):
        site.lesson_body(LESSON0, nb, "teacher")


def test_a_pr_number_at_the_start_of_a_line_stays_text_not_a_heading():
    cell = nbformat.v4.new_markdown_cell("See\n#6699's weakref test and # A real heading")
    nb = site_cells.page_cells(nbformat.v4.new_notebook(cells=[cell]), claims=[])
    body = site.render_cells_html(nb)
    assert "<h1" not in body and "#6699's weakref test" in body


def test_each_lesson_page_has_one_title_heading(built):
    out, _ = built
    for lesson in registry.LESSONS:
        page = (out / f"{lesson.stem}.html").read_text()
        assert page.count("<h1") == 1, f"{lesson.stem}: {re.findall(r'<h1[^>]*>[^<]{0,60}', page)}"


@pytest.mark.parametrize("taken", ["00_start_here.ipynb", "notes.md", "data"])
def test_a_folder_holding_what_the_site_did_not_write_is_refused_and_left_alone(tmp_path, taken):
    out = tmp_path / "out"
    out.mkdir()
    (out / taken).mkdir() if "." not in taken else (out / taken).write_text("mine")
    with pytest.raises(ValueError, match=rf"holds files a site build did not write \({re.escape(taken)}\)"):
        site.build_site(out, lessons=[LESSON0])
    assert [p.name for p in out.iterdir()] == [taken]


def test_the_cli_refuses_the_courses_notebooks_folder_as_site_output(capsys):
    from verlstudy.course.cli import main

    assert main(["site", "00", "--out", str(registry.notebooks_dir())]) == 2
    assert "holds files a site build did not write" in capsys.readouterr().err


def test_a_site_folder_can_be_built_again(tmp_path):
    first = site.build_site(tmp_path / "site", lessons=[LESSON0])
    assert site.build_site(tmp_path / "site", lessons=[LESSON0]) == first  # its own pages and student/ are not foreign


def test_prints_split_by_a_record_read_as_one_block_and_other_outputs_stay_apart():
    out, err = nbformat.v4.new_output("stream", text="a\n"), nbformat.v4.new_output("stream", name="stderr", text="w\n")
    merged = site_cells.coalesce_streams([out, nbformat.v4.new_output("stream", text="b\n"), err, out])
    assert [(o.name, o.text) for o in merged] == [("stdout", "a\nb\n"), ("stderr", "w\n"), ("stdout", "a\n")]


def test_a_link_to_another_lessons_notebook_points_at_its_page():
    from verlstudy.course import registry
    from verlstudy.course.site import notebook_links_to_pages

    body = '<a href="00_start_here.ipynb#1F1B">1F1B</a> <a href="./01_memory_leak_attribution.ipynb">01</a>'
    body += ' <a href="99_mine.ipynb">mine</a>'
    out = notebook_links_to_pages(body, registry.LESSONS)
    assert 'href="00_start_here.html#1F1B"' in out and 'href="01_memory_leak_attribution.html"' in out
    assert 'href="99_mine.ipynb"' in out  # not a lesson: left alone


def test_a_table_displayed_as_markdown_is_rendered_from_its_markdown_and_code_views_are_left_alone():
    from verlstudy.kit.tables import Table

    t = Table.of(["repository", "ref"], [["a | b", "v1"]], notes=["1 drift"])
    table = nbformat.v4.new_output("display_data", data={"text/markdown": t.markdown(), "text/plain": t.text()})
    code = nbformat.v4.new_output("display_data", data={"text/markdown": "**f**\n\n````python\n| x |\n| y |\n````\n"})
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("show_table(t)", outputs=[table, code])])
    shown = site_cells.page_cells(nb, claims=[]).cells[0].outputs
    assert "<td>a | b</td>" in shown[0].data["text/html"] and "<pre>1 drift</pre>" in shown[0].data["text/html"]
    assert shown[1] == code


def test_the_claims_cell_displayed_as_markdown_is_rebuilt_from_the_records():
    from verlstudy.kit.tables import Table

    t = Table.of(["claim", "upstream", "ours", "reproduced"], [["x", "-", "3", "yes"]], notes=["1/1 claims reproduced"])
    out = nbformat.v4.new_output("display_data", data={"text/markdown": t.markdown(), "text/plain": t.text()})
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("claims_table()", outputs=[out])])
    shown = site_cells.page_cells(nb, claims=[("bytes | per step", "-", "3", "yes")]).cells[0].outputs[0]
    assert '<div class="claims">' in shown.data["text/html"] and "<td>bytes | per step</td>" in shown.data["text/html"]
    assert "<pre>1/1 claims reproduced</pre>" in shown.data["text/html"]
