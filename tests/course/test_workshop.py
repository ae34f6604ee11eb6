"""Workshop editions: the student edition (stubs, no leaked solutions, still runs) and the site."""

import ast
import re
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from verlstudy.course import live_answers, registry, runner, site, student
from verlstudy.course.cli import main

VERDICT_LINE = re.compile(r"^exercise \d+\.\d+: ")

LESSON0 = registry.get_lesson(0)
SOLUTION = '''import math


def circle_area(r: float) -> float:
    """The area of a circle of radius r."""
    squared = r * r
    return math.pi * squared
'''


def _lesson_nb(
    solution_source=SOLUTION,
    tags=("solution", "exercise-0.1"),
    checker='check_exercise("0.1", f)',
    checker_tags=("checker", "exercise-0.1"),
):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# 00 · t"),
        nbformat.v4.new_code_cell(solution_source, metadata={"tags": list(tags)}),
        nbformat.v4.new_code_cell(
            checker,
            metadata={"tags": list(checker_tags)},
            outputs=[nbformat.v4.new_output("stream", text="exercise 0.1: correct\n")],
        ),
    ]
    return nb


def test_stub_keeps_signature_and_docstring_and_raises_with_the_exercise_id():
    stub = student.stub_source(SOLUTION, "0.1")
    assert 'def circle_area(r: float) -> float:\n    """The area of a circle of radius r."""\n' in stub
    assert 'raise NotImplementedError("exercise 0.1")' in stub
    assert "squared" not in stub and "import math" in stub
    namespace: dict = {}
    exec(compile(stub, "<stub>", "exec"), namespace)
    with pytest.raises(NotImplementedError, match=r"exercise 0\.1"):
        namespace["circle_area"](1.0)


def test_stub_of_a_function_without_docstring():
    assert student.stub_source("def f(x):\n    return x\n", "3.2") == (
        'def f(x):\n    raise NotImplementedError("exercise 3.2")\n'
    )


def test_student_notebook_clears_solution_and_checker_outputs_only():
    nb = _lesson_nb()
    edition = student.student_notebook(nb, LESSON0)
    assert edition.cells[1].metadata["tags"] == ["exercise", "exercise-0.1"]
    assert edition.cells[2].outputs == [] and edition.cells[2].execution_count is None
    assert nb.cells[2].outputs, "the input notebook must not be changed"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tags": ("solution",)}, "exactly one tag 'exercise-N.M'"),
        ({"tags": ("solution", "exercise-3.1")}, "belongs to lesson 3, not 00"),
        ({"solution_source": "x = 1\n"}, "may only define functions"),
        ({"solution_source": "def f(:\n"}, "does not parse"),
        ({"checker_tags": ()}, "needs a checker cell right after it"),
        ({"checker_tags": ("checker", "exercise-0.2")}, "tagged 'checker' and 'exercise-0.1'"),
    ],
)
def test_malformed_solution_cells_are_named_clearly(kwargs, message):
    with pytest.raises(student.MalformedExercise, match=message):
        student.student_notebook(_lesson_nb(**kwargs), LESSON0)


def test_a_malformed_notebook_leaves_nothing_half_written(tmp_path, monkeypatch):
    good, bad = registry.LESSONS[0], registry.LESSONS[1]
    real_read = nbformat.read

    def read(path, as_version):
        if Path(path) == bad.notebook:
            return _lesson_nb(tags=("solution",))
        return real_read(path, as_version=as_version)

    monkeypatch.setattr(student.nbformat, "read", read)
    with pytest.raises(student.MalformedExercise):
        student.write_student_edition(tmp_path / "out", [good, bad])
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == []


def test_output_folder_that_is_a_file_is_refused(tmp_path, capsys):
    target = tmp_path / "taken"
    target.write_text("x")
    assert main(["student", "--out", str(target)]) == 2
    assert "exists and is a file" in capsys.readouterr().err
    assert main(["site", "--out", str(target)]) == 2
    assert main(["student", "99", "--out", str(tmp_path / "s")]) == 2


def test_a_learners_edited_notebook_is_never_overwritten_silently(tmp_path, capsys):
    out = tmp_path / "student"
    assert main(["student", "00", "--out", str(out)]) == 0
    assert main(["student", "00", "--out", str(out)]) == 0, "an untouched edition may be rewritten"
    mine = out / LESSON0.notebook.name
    mine.write_text(mine.read_text().replace("NotImplementedError", "NotImplementedError  # my try", 1))
    capsys.readouterr()
    assert main(["student", "00", "--out", str(out)]) == 2
    assert f"({LESSON0.notebook.name}): a learner's work?" in capsys.readouterr().err
    assert "# my try" in mine.read_text(), "nothing was written"
    assert main(["student", "00", "--out", str(out), "--force"]) == 0
    assert "# my try" not in mine.read_text()


def _solution_lines(lesson):
    """Statement lines of every solution body (what must not leak into the student edition)."""
    lines = set()
    for cell in nbformat.read(lesson.notebook, as_version=4).cells:
        if "solution" in cell.metadata.get("tags", []):
            for fn in ast.parse(cell.source).body:
                if isinstance(fn, ast.FunctionDef):
                    start = 1 if ast.get_docstring(fn) is not None else 0
                    for stmt in fn.body[start:]:
                        lines.add(ast.get_source_segment(cell.source, stmt))
    return {line for line in lines if line and len(line) > 12}


@pytest.mark.slow
def test_student_edition_runs_reports_every_exercise_not_attempted_and_prints_no_answer_live(tmp_path):
    written = student.write_student_edition(tmp_path / "student")
    assert len(written) == len(registry.LESSONS)
    for lesson in registry.LESSONS:
        text = (tmp_path / "student" / lesson.notebook.name).read_text()
        leaked = [line for line in _solution_lines(lesson) if line in text]
        assert not leaked, f"{lesson.code}: solution text leaked: {leaked[:2]}"
    notebooks = registry.project_root() / "notebooks"  # the student edition runs from there, like the full one
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(
            pool.map(lambda p: runner.execute_with_papermill(p, tmp_path / "executed" / p.name, {}, notebooks), written)
        )
    for path, (status, error, _) in zip(written, results, strict=True):
        assert status == "passed", f"{path.name}: {error}"
        nb = nbformat.read(tmp_path / "executed" / path.name, as_version=4)
        verdicts = [
            o.get("text", "") for c in nb.cells for o in c.get("outputs", []) if "exercise " in o.get("text", "")
        ]
        # verdict lines only: "exercise 0.2 method: ..." is lesson 00 showing exercise_hint, not a verdict
        verdict_lines = [line for text in verdicts for line in text.splitlines() if VERDICT_LINE.match(line)]
        assert verdict_lines and all(line.endswith(": not attempted") for line in verdict_lines), verdict_lines
    # the give-away check on what a live kernel printed (upstream-source cells store nothing, so only a run shows
    # them): no answer text of an exercise before its checker has run, the checker's run on the stub included
    leaks = []
    for lesson, path in zip(registry.LESSONS, written, strict=True):
        executed = nbformat.read(tmp_path / "executed" / path.name, as_version=4)
        full = nbformat.read(lesson.notebook, as_version=4)
        leaks += [f"{lesson.code}: {leak}" for leak in live_answers.live_leaks(executed, full)]
    assert leaks == []


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs, self.imgs = [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "a" and attrs.get("href"):
            self.hrefs.append(attrs["href"])
        if tag == "img":
            self.imgs.append(attrs.get("src", ""))


def test_site_links_resolve_pages_exist_and_figures_are_embedded(tmp_path):
    out = tmp_path / "site"
    site.build_site(out)
    index = (out / "index.html").read_text()
    for lesson in registry.LESSONS:
        assert (out / f"{lesson.stem}.html").exists()
        assert lesson.title.replace("&", "&amp;") in index and f'id="claims-{lesson.code}"' in index
    for page in out.glob("*.html"):
        parser = _Links()
        parser.feed(page.read_text())
        for href in parser.hrefs:
            if href.startswith(("http://", "https://", "#", "mailto:")):
                continue
            target, _, anchor = href.partition("#")
            assert (out / target).exists(), f"{page.name}: broken link {href}"
            if anchor and target.endswith(".html"):  # a glossary link: the heading's id is on that page
                assert f'id="{anchor}"' in (out / target).read_text(), f"{page.name}: no #{anchor} in {target}"
        assert all(src.startswith("data:image/") for src in parser.imgs), f"{page.name}: figure not embedded"
    figures = sum(page.read_text().count("data:image/png") for page in out.glob("*.html"))
    assert figures >= len(registry.LESSONS)
    assert index.count("<td>yes</td>") >= 3 * len(registry.LESSONS)


def test_site_pages_leave_out_the_record_outputs_but_keep_what_readers_see():
    from verlstudy.course.site import without_records
    from verlstudy.kit import records

    record = nbformat.v4.new_output("display_data", data={records.RECORD_MIME: records.encode({"kind": "claim"})})
    text = nbformat.v4.new_output("stream", text="claim: 8 == 8\n")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("claim()", outputs=[text, record])])
    page = without_records(nb)
    assert page.cells[0].outputs == [text] and len(nb.cells[0].outputs) == 2  # the executed notebook is untouched
