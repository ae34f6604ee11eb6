"""Lesson 06 and upstream verl: verl's own VERL_USE_EXTERNAL_MODULES hook, loaded from its source.

The hook is not a function: it is a few top-level statements of `verl/__init__.py`, which cannot be
imported without verl's dependencies. `hook_statements` finds them with `ast` (the statement that
reads the variable, and the statements after it that use what it assigned), and `upstream_hook`
runs them with upstream's own `verl/utils/import_utils.py::import_external_libs`, an `os` that
reads a given environment and an `importlib` the caller supplies (`RecordingImportlib` imports
nothing). `compare_hook` checks the course's reconstruction against them (`verlstudy verify-upstream`).
"""

from __future__ import annotations

import ast
import builtins
import random
import types
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from verlstudy.kit import upstream
from verlstudy.kit.params import check_callable, check_int, check_str, positive_int
from verlstudy.kit.upstream import Comparison, MissingCollaborator, UpstreamMoved, report_check
from verlstudy.lessons.l06_external_modules.modules_env import ENV_VAR, TOY_SOURCES, split_like_verl_091

PLUGINS_VAR = "VERL_USE_EXTERNAL_PLUGINS"
LIBS_FILE = "utils/import_utils.py"
UPSTREAM_NAME = "verl/__init__.py VERL_USE_EXTERNAL_MODULES + verl/utils/import_utils.py::import_external_libs"


@dataclass(frozen=True)
class HookStatements:
    """The top-level statements of a file that read one environment variable, and where they are."""

    variable: str
    file: str
    first_line: int
    last_line: int
    code: str  # the statements, unparsed by ast (upstream's logic, the course's formatting)

    def cite(self) -> str:
        return f"{self.file} lines {self.first_line}-{self.last_line}"


def _stores(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _loads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def hook_statements(source: str, variable: str, filename: str = "verl/__init__.py") -> HookStatements:
    """The statement of `source` that names `variable` (a string constant), plus the following top-level
    statements that read what it assigned. UpstreamMoved when no top-level statement names it."""
    if not isinstance(variable, str) or not variable.isidentifier():
        raise ValueError(f"variable must be an environment variable name like {ENV_VAR!r}, got {variable!r}")
    check_str("source", source, what="Python source text (a str)")
    check_str("filename", filename, what="a file name for parse errors (a str)")
    body = ast.parse(source, filename=filename).body
    starts = [
        i
        for i, node in enumerate(body)
        if any(isinstance(c, ast.Constant) and c.value == variable for c in ast.walk(node))
    ]
    if not starts:
        raise UpstreamMoved(f"{filename} no longer reads {variable} at top level: the hook moved or was removed")
    first = last = starts[0]
    names = _stores(body[first])
    while last + 1 < len(body) and names & _loads(body[last + 1]):  # the statements using what it read
        last += 1
        names |= _stores(body[last])
    chosen = body[first : last + 1]
    code = "\n".join(ast.unparse(node) for node in chosen) + "\n"
    return HookStatements(variable, filename, chosen[0].lineno, chosen[-1].end_lineno or chosen[-1].lineno, code)


def env_hook(variable: str = ENV_VAR, release: str | None = None) -> HookStatements:
    """The statements of the installed verl's `verl/__init__.py` that read `variable`."""
    source, filename = upstream.upstream_file("__init__.py", release)
    return hook_statements(source, variable, filename)


class RecordingImportlib:
    """A stand-in for `importlib` that imports nothing: it records each name and fails as importlib would.

    '' raises ValueError('Empty module name'); a name outside `available` raises ModuleNotFoundError
    (the messages are the course's; `modules_env.hook_errors` shows importlib's own in a subprocess).
    """

    def __init__(self, available: Collection[str] | None) -> None:
        if available is not None and (isinstance(available, str) or not all(isinstance(a, str) for a in available)):
            raise TypeError(f"available must be a collection of module names (or None: record only), got {available!r}")
        self.available = None if available is None else frozenset(available)
        self.calls: list[str] = []

    def import_module(self, name: str, package: str | None = None) -> types.ModuleType:
        self.calls.append(name)
        if self.available is None:  # record only: show every name the hook hands over
            return types.ModuleType("recorded")
        if name == "":
            raise ValueError("Empty module name")
        if name not in self.available:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return types.ModuleType(name)


def _environ_os(environ: Mapping[str, str]) -> types.SimpleNamespace:
    """An `os` whose getenv reads `environ`: the only part of `os` the hook statements use."""
    return types.SimpleNamespace(getenv=lambda key, default=None: environ.get(key, default))


def upstream_hook(importer: object, release: str | None = None) -> Callable[[Mapping[str, str]], None]:
    """verl's own hook as a function of an environment: its statements from `verl/__init__.py` calling its
    own `import_external_libs`, which imports through `importer` (e.g. a RecordingImportlib)."""
    libs = upstream.load_upstream(LIBS_FILE, ["import_external_libs"], {"importlib": importer}, release)
    hook = env_hook(ENV_VAR, release)
    tree = ast.parse(hook.code, filename=hook.file)
    needed = _loads(tree) - _stores(tree) - set(dir(builtins)) - {"os", "import_external_libs"}
    if needed:
        raise MissingCollaborator(f"{hook.cite()} now also needs {sorted(needed)}: the hook changed")
    code = compile(tree, hook.file, "exec")

    def run(environ: Mapping[str, str]) -> None:
        exec(code, {"os": _environ_os(environ), "import_external_libs": libs["import_external_libs"]})

    return run


def toyverl_init(release: str | None = None) -> str:
    """A `toyverl/__init__.py` made of upstream's own code: import_external_libs and the hook statements."""
    source, _ = upstream.upstream_file(LIBS_FILE, release)
    [fn] = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "import_external_libs"]
    hook = env_hook(ENV_VAR, release)
    head = f'"""toyverl: verl {upstream.verl_version(release)}\'s own hook, read from {hook.cite()}."""\n'
    return f"{head}import importlib\nimport os\n\n\n{ast.unparse(fn)}\n\n\n{hook.code}"


def toy_hook_source() -> tuple[str, str]:
    """(source of toyverl/__init__.py, where it comes from): upstream's own hook when verl's source is
    installed, else the course's reconstruction in modules_env.TOY_SOURCES (which compare_hook checks)."""
    if upstream.verl_available():
        return toyverl_init(), f"verl {upstream.verl_version()}'s own code"
    return TOY_SOURCES["toyverl/__init__.py"], "the course's reconstruction (verl is not installed)"


def upstream_imports(value: str | None, release: str | None = None) -> list[str]:
    """The names upstream's hook hands to importlib for a value of the variable (None: unset); imports nothing."""
    if value is not None:
        check_str("value", value, what="the variable's value (a str) or None (unset)")
    importer = RecordingImportlib(None)
    upstream_hook(importer, release)({} if value is None else {ENV_VAR: value})
    return importer.calls


AVAILABLE = ("toylib_adaptor", "toylib.ops", "json", "pkg.sub")
_NAMES = (*AVAILABLE, "missing_mod")
_SEPARATORS = (",", ",", ", ", " ,", ",,")


def _random_environ(rng: random.Random) -> dict[str, str]:
    if rng.random() < 0.1:
        return {}  # the variable unset
    if rng.random() < 0.1:
        return {ENV_VAR: rng.choice(["", " ", ","])}
    parts = [rng.choice(_NAMES) for _ in range(rng.randint(1, 4))]
    value = "".join(p + rng.choice(_SEPARATORS) for p in parts[:-1]) + parts[-1]
    if rng.random() < 0.2:
        value += rng.choice([",", " "])  # a trailing comma or blank
    if rng.random() < 0.2:
        value = " " + value
    return {ENV_VAR: value}


class _Switch:
    """An importer that forwards to the case's RecordingImportlib, so upstream's code is loaded once."""

    target: RecordingImportlib | None = None

    def import_module(self, name: str, package: str | None = None) -> types.ModuleType:
        assert self.target is not None
        return self.target.import_module(name, package)


def _outcome(run: Callable[[RecordingImportlib], None]) -> tuple[list[str], str]:
    importer = RecordingImportlib(AVAILABLE)
    try:
        run(importer)
    except (ImportError, ValueError) as e:
        return importer.calls, type(e).__name__
    return importer.calls, ""


def compare_hook(cases: int = 300, seed: int = 0, ours: Callable[[str | None], list[str]] | None = None) -> Comparison:
    """The course's reconstruction (import each name of split_like_verl_091(value), in order) against
    upstream's hook and import_external_libs: the same imports, the same failing entry, on generated values."""
    cases = positive_int("cases", cases)
    seed = check_int("seed", seed, minimum=0, kind="argument")
    if ours is not None:
        check_callable("ours", ours, what="a function (the code under comparison) or None")
    ours = ours or split_like_verl_091
    version = upstream.verl_version()
    switch = _Switch()
    theirs_hook = upstream_hook(switch)

    def run_theirs(importer: RecordingImportlib, environ: dict[str, str]) -> None:
        switch.target = importer
        theirs_hook(environ)

    rng = random.Random(seed)
    for i in range(cases):
        environ = _random_environ(rng)

        def run_ours(importer: RecordingImportlib, environ: dict[str, str] = environ) -> None:
            for name in ours(environ.get(ENV_VAR)):
                importer.import_module(name)

        mine = _outcome(run_ours)
        theirs = _outcome(lambda importer, environ=environ: run_theirs(importer, environ))
        if mine != theirs:
            value = environ.get(ENV_VAR, "(unset)")
            detail = f"case {i}: {ENV_VAR}={value!r}: upstream imports {theirs}, the course's reconstruction {mine}"
            return Comparison("06", UPSTREAM_NAME, version, i + 1, "differ", detail)
    detail = "same names imported in order, and the same first failing entry (blank or empty names included)"
    return Comparison("06", UPSTREAM_NAME, version, cases, "agree", detail)


COMPARISONS = (compare_hook,)


def upstream_check(cases: int = 50) -> None:
    """The lesson's upstream cell: one line for the comparison, a skip line without verl; raises if upstream differs."""
    cases = positive_int("cases", cases)
    report_check("06", [lambda: compare_hook(cases)])
