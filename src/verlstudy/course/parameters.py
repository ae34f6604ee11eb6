"""A lesson's notebook parameters: read from its `parameters` cell, parsed from `-p name=value`, and checked
(names and values) before any kernel starts, so a bad one is one line for the user, not a failed run."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import nbformat

from verlstudy.course.files import read_notebook
from verlstudy.course.registry import Lesson


def notebook_parameters(path: Path) -> dict[str, object]:
    """Names and default values assigned in the notebook's cell tagged `parameters`."""
    return parameters_of(read_notebook(path), Path(path).name)


def parameters_of(nb: nbformat.NotebookNode, name: str = "the notebook") -> dict[str, object]:
    """Names and default values in a notebook's `parameters` cell, read with Python's own parser (papermill's
    line parser gives up on a comment holding '=', which is why its warnings are silenced in `papermill_quiet`)."""
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    if len(cells) != 1:
        raise ValueError(f"{name} must have exactly one cell tagged 'parameters', found {len(cells)}")
    params: dict[str, object] = {}
    for node in ast.parse(cells[0].source).body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    try:
                        params[target.id] = ast.literal_eval(node.value) if node.value is not None else None
                    except ValueError:
                        params[target.id] = None
    return params


def parse_parameter(text: str) -> tuple[str, object]:
    """Parse `name=value` from the command line; the value as a Python literal where it is one."""
    if "=" not in text:
        raise ValueError(f"parameter {text!r} must look like name=value (e.g. seed=1 or device=cpu)")
    name, raw = (part.strip() for part in text.split("=", 1))
    if not name.isidentifier():
        raise ValueError(f"parameter name {name!r} is not a valid Python name")
    try:
        value: object = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        # nan/inf are numbers to the validators (which refuse them by name), anything else stays a string
        value = float(raw) if raw.lower().lstrip("+-") in ("nan", "inf", "infinity") else raw
    return name, value


def check_parameter_names(lesson: Lesson, params: Mapping[str, object]) -> None:
    """Reject parameter names the lesson does not declare, listing the ones it does."""
    known = notebook_parameters(lesson.notebook)
    for name in params:
        if name not in known:
            raise ValueError(
                f"lesson {lesson.code} has no parameter {name!r}; its parameters are: {', '.join(sorted(known))}"
            )


def validate_parameters(lesson: Lesson, params: Mapping[str, object]) -> None:
    """Run the lesson's parameter cell, the overrides and its validation cell here, before any kernel starts.

    Every lesson validates its parameters in the cell after the `parameters` cell (kit.params); running
    those two cells in this process reports a bad value at once. Raises ValueError/TypeError with the
    lesson's own message.
    """
    import contextlib
    import io

    nb = read_notebook(lesson.notebook)
    code = [c for c in nb.cells if c.cell_type == "code"]
    index = next(i for i, c in enumerate(code) if "parameters" in c.metadata.get("tags", []))
    namespace: dict[str, object] = {"__name__": f"verlstudy_validate_{lesson.code}"}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(code[index].source, f"{lesson.stem}:parameters", "exec"), namespace)
            namespace.update(params)
            exec(compile(code[index + 1].source, f"{lesson.stem}:validation", "exec"), namespace)
    except (ValueError, TypeError) as e:
        if names_a_parameter(str(e), parameters_of(nb)):
            raise
        raise ValidationCellFailed(lesson, e) from e
    except Exception as e:  # an import or a name error in the lesson's own cells: not the user's parameter
        raise ValidationCellFailed(lesson, e) from e


class ValidationCellFailed(RuntimeError):
    """The parameter or validation cell raised an error that names no parameter: a bug in the lesson, not bad input."""

    def __init__(self, lesson: Lesson, error: BaseException) -> None:
        first = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
        super().__init__(
            f"lesson {lesson.code}'s validation cell failed on its own, not on a parameter "
            f"(a bug in the lesson): {type(error).__name__}: {first}"
        )


def names_a_parameter(message: str, names: Iterable[str]) -> bool:
    """True when an error names one of the notebook's parameters first, the way kit.params and kit.devices do
    (`parameter n_tokens=0 is out of range`, `parameter pp_layer_counts[i] ...`, `device='tpu' is not allowed`)."""
    import re

    found = re.match(r"\s*(?:parameter\s+)?([A-Za-z_]\w*)", message)
    return found is not None and found.group(1) in set(names)
