"""Structure of every notebook: what nbval cannot see for itself (unexecuted cells pass silently)."""

import ast
import inspect
import re

import nbformat
import pytest

from verlstudy.course import parameters, registry, runner, twins
from verlstudy.kit.exercises import find_checker, handed_over, registered_exercises
from verlstudy.kit.hygiene import unstable_fragments

LESSONS = registry.LESSONS
EXERCISE_TAG = re.compile(r"^exercise-(\d+)\.(\d+)$")


def _read(lesson):
    return nbformat.read(lesson.notebook, as_version=4)


def _code(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def _tags(cell):
    return cell.metadata.get("tags", [])


def test_registry_and_notebooks_folder_agree():
    on_disk = {p.stem for p in (registry.project_root() / "notebooks").glob("*.ipynb")}
    assert on_disk == {lesson.stem for lesson in LESSONS}
    twins = {p.stem for p in (registry.project_root() / "notebooks" / "py").glob("*.py")}
    assert twins == on_disk


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.code)
class TestNotebook:
    def test_title_cell_names_the_lesson_its_prs_and_verified_version(self, lesson):
        first = _read(lesson).cells[0]
        assert first.cell_type == "markdown"
        assert first.source.startswith(f"# {lesson.code} · "), "title must read '# NN · Title'"
        for link in lesson.pr_links:
            assert link in first.source, f"title cell must link {link}"
        assert f"Facts checked against verl {lesson.upstream_verified}" in first.source

    def test_one_parameters_cell_and_the_next_cell_validates_every_parameter(self, lesson):
        nb = _read(lesson)
        code = _code(nb)
        tagged = [i for i, c in enumerate(code) if "parameters" in _tags(c)]
        assert len(tagged) == 1, "exactly one cell tagged 'parameters'"
        params = parameters.notebook_parameters(lesson.notebook)
        assert "device" in params and "seed" in params
        validating = code[tagged[0] + 1].source
        names = {n.id for n in ast.walk(ast.parse(validating)) if isinstance(n, ast.Name)}
        assert set(params) <= names, f"the cell after 'parameters' must validate {sorted(set(params) - names)}"

    def test_every_code_cell_ran_in_order_in_one_fresh_kernel(self, lesson):
        counts = [c.execution_count for c in _code(_read(lesson))]
        assert None not in counts, "some cells were never executed: run `verlstudy refresh NN`"
        assert counts == list(range(1, len(counts) + 1)), "execution counts must be 1..n: refresh in a fresh kernel"

    def test_no_papermill_metadata_and_a_python3_kernelspec(self, lesson):
        nb = _read(lesson)
        assert "papermill" not in nb.metadata
        assert all("papermill" not in c.metadata and "execution" not in c.metadata for c in nb.cells)
        assert nb.metadata["kernelspec"]["name"] == "python3"

    def test_the_jupytext_twin_is_in_sync(self, lesson):
        assert lesson.twin.read_text() == twins.twin_text(_read(lesson)), (
            "notebook and twin differ: edit the twin and run `verlstudy refresh NN`"
        )

    def test_checked_outputs_are_stable_and_quiet(self, lesson):
        for i, cell in enumerate(_code(_read(lesson))):
            ignored = "nbval-ignore-output" in _tags(cell)
            for out in cell.outputs:
                assert out.output_type != "error", f"code cell {i} stored an error"
                assert out.get("name") != "stderr", f"code cell {i} wrote to stderr (a warning?): {out.get('text')!r}"
                if ignored:
                    continue
                text = out.get("text", "") + str(out.get("data", {}).get("text/plain", ""))
                assert not unstable_fragments(text), f"code cell {i} prints {unstable_fragments(text)}"

    def test_last_cell_prints_the_claims_table_all_reproduced(self, lesson):
        nb = _read(lesson)
        assert _code(nb)[-1].source.strip() == "claims_table()"
        reproduced, total = runner.count_claims(nb)
        assert total >= 3 and reproduced == total

    def test_at_least_two_exercises_each_with_a_passing_checker(self, lesson):
        code = _code(_read(lesson))
        ids = []
        for i, cell in enumerate(code):
            if "solution" not in _tags(cell):
                continue
            matches = [m for t in _tags(cell) if (m := EXERCISE_TAG.match(t))]
            assert len(matches) == 1, f"solution cell {i} needs one tag 'exercise-{lesson.number}.M'"
            assert int(matches[0].group(1)) == lesson.number
            tree = ast.parse(cell.source)
            assert tree.body and all(isinstance(n, ast.FunctionDef | ast.Import | ast.ImportFrom) for n in tree.body), (
                f"solution cell {i} may only define functions (the student edition stubs their bodies)"
            )
            exercise_id = f"{matches[0].group(1)}.{matches[0].group(2)}"
            checker = code[i + 1]
            assert f'check_exercise("{exercise_id}"' in checker.source
            printed = "".join(o.get("text", "") for o in checker.outputs)
            assert printed.startswith(f"exercise {exercise_id}: correct"), printed
            ids.append(exercise_id)
        assert len(ids) >= 2 and len(set(ids)) == len(ids)

    def test_accelerator_cells_skip_politely(self, lesson):
        for cell in _code(_read(lesson)):
            if {"gpu", "npu"} & set(_tags(cell)):
                assert cell.source.lstrip().startswith("if skip_unless(")

    def test_has_one_optional_upstream_comparison_cell(self, lesson):
        code = _code(_read(lesson))
        cells = [c for c in code if "upstream_check(" in c.source]
        assert len(cells) == 1, "one cell runs the lesson's own upstream_check"
        assert f"from {lesson.module}.upstream import upstream_check" in cells[0].source
        assert "nbval-ignore-output" in _tags(cells[0]), "its output names the installed verl version"


def _bound_names(tree: ast.AST) -> set[str]:
    """Every name a piece of code binds anywhere: assignments, defs, imports, loop/with/except targets."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.code)
def test_accelerator_cells_only_use_names_defined_before_them(lesson):
    """GPU/NPU cells never run on a CPU, so a typo in one would only surface on a learner's GPU."""
    import builtins

    defined = set(dir(builtins))
    for i, cell in enumerate(_code(_read(lesson))):
        tree = ast.parse(cell.source)
        if {"gpu", "npu"} & set(_tags(cell)):
            used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            undefined = used - defined - _bound_names(tree)
            assert not undefined, f"accelerator cell {i} uses {sorted(undefined)}, defined nowhere before it"
        defined |= _bound_names(tree)


NOTEBOOK_IMPORT = re.compile(r"^\s*(?:from|import)\s+(verlstudy[\w.]*)", re.M)


@pytest.mark.parametrize("lesson", registry.LESSONS, ids=lambda lesson: lesson.code)
def test_a_lesson_notebook_imports_kit_common_and_its_own_lesson_and_no_checks(lesson):
    allowed = ("verlstudy.kit", "verlstudy.common", lesson.module)
    modules = {m for cell in _code(_read(lesson)) for m in NOTEBOOK_IMPORT.findall(cell.source)}
    imported = {m for m in modules if not m.startswith(allowed) or m.endswith(".checks")}
    assert not imported, f"{lesson.notebook.name} imports {sorted(imported)}"


def test_no_mechanism_module_imports_a_checks_module():
    root = registry.notebooks_dir().parent / "src" / "verlstudy"
    if not root.is_dir():
        pytest.skip("runs from a checkout")
    for path in root.rglob("*.py"):
        if path.name == "checks.py":
            continue
        assert ".checks" not in "".join(NOTEBOOK_IMPORT.findall(path.read_text())), f"{path} imports a checks module"


def _imported_callables(lesson) -> dict[str, object]:
    """Every function and class a lesson notebook's `verlstudy` imports make reachable, modules opened one level."""
    namespace: dict[str, object] = {}
    for cell in _code(_read(lesson)):
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.ImportFrom | ast.Import):
                names = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                if all((n or "").startswith("verlstudy") for n in names):
                    exec(compile(ast.Module([node], []), lesson.notebook.name, "exec"), namespace)
    found = {}
    for name, value in namespace.items():
        members = vars(value).items() if inspect.ismodule(value) else [(name, value)]
        for member_name, member in members:
            defined_here = str(getattr(member, "__module__", "")).startswith("verlstudy")
            if callable(member) and defined_here and not member_name.startswith("_"):
                found[f"{name}.{member_name}" if inspect.ismodule(value) else name] = member
    return found


@pytest.mark.parametrize("lesson", registry.LESSONS, ids=lambda lesson: lesson.code)
def test_nothing_a_notebook_imports_can_be_handed_in_as_an_answer(lesson):
    reachable = _imported_callables(lesson)
    assert "check_exercise" in reachable  # the notebook's one way to its checkers
    passable = [name for name, fn in reachable.items() if handed_over(fn) is None]
    assert not passable, f"{lesson.notebook.name} imports {passable}, which a checker would judge as the learner's own"
    for exercise_id in registered_exercises(lesson.number):
        assert hasattr(find_checker(exercise_id), "__wrapped__"), f"{exercise_id} is not registered with @checker"
