"""Loading single functions from the installed verl source, without importing verl itself.

verl's package imports need Ray, Megatron, transformers and more. The functions a lesson re-implements
are small and pure, so we parse the upstream file, take only the named top-level definitions (and
the same-file helpers they call), strip annotations (they name heavy types), and run them in a
namespace where the caller supplies the few collaborators (e.g. Megatron's `mpu`).
"""

from __future__ import annotations

import ast
import builtins
import dis
import functools
import importlib.metadata
import importlib.util
import os
import re
import sys
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from verlstudy.kit import i18n
from verlstudy.kit.params import check_instance, check_items, check_str


class UpstreamError(Exception):
    """Base class: something about the upstream source is not as this lesson expects."""


class VerlNotInstalled(UpstreamError, ImportError):
    """The optional `verl` package is absent."""


class UpstreamMoved(UpstreamError, LookupError):
    """A file or a function the lesson cites is no longer where it was."""


class MissingCollaborator(UpstreamError, NameError):
    """An upstream function needs a name the caller did not supply."""


RELEASES_ENV = "VERLSTUDY_VERL_RELEASES"
_RELEASE = re.compile(r"\d+\.\d+\.\d+")


class ReleaseNotFetched(UpstreamError, LookupError):
    """A second verl release a lesson compares with (e.g. 0.9.0) was not fetched by `make setup`."""


def releases_dir() -> Path:
    """Where `make setup` puts earlier verl releases: $VERLSTUDY_VERL_RELEASES, or <venv>/verl-releases."""
    return Path(os.environ.get(RELEASES_ENV) or Path(sys.prefix) / "verl-releases")


def _check_release(release: object) -> str:
    if not isinstance(release, str) or not _RELEASE.fullmatch(release):
        raise ValueError(f"release must be a verl version like '0.9.0', got {release!r}")
    return release


def verl_root(release: str | None = None) -> Path:
    """The folder of the installed `verl` package (found without importing it), or of an earlier release."""
    if release is not None:
        root = releases_dir() / _check_release(release) / "verl"
        if not (root / "__init__.py").is_file():
            raise ReleaseNotFetched(
                f"verl {release} is not in {releases_dir()}: `make setup` fetches it "
                f"(pip install --no-deps --target {releases_dir() / release} verl=={release})"
            )
        return root
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        raise VerlNotInstalled(
            "verl is not installed: `make setup` installs it, or `pip install --no-deps -r requirements-upstream.txt`"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def verl_version(release: str | None = None) -> str:
    """The installed verl's version, or `release` itself once that release is found on disk."""
    if release is not None:
        verl_root(release)
        return release
    try:  # the version of the tree actually read (a copy ahead on sys.path too), as verl's own __init__ reads it
        tree = verl_root() / "version" / "version"
        written = tree.read_text(encoding="utf-8").strip() if tree.is_file() else ""
        if written:
            return written
    except (OSError, UnicodeDecodeError, VerlNotInstalled):
        pass
    try:
        return importlib.metadata.version("verl")
    except importlib.metadata.PackageNotFoundError as e:
        raise VerlNotInstalled("verl is not installed (no package metadata)") from e


def upstream_file(relative: str, release: str | None = None) -> tuple[str, str]:
    """(source text, display name) of a file inside the verl package, e.g. 'workers/engine/utils.py'."""
    check_str("relative", relative, what="a path inside the verl package (a str, e.g. 'workers/engine/utils.py')")
    path = verl_root(release) / relative
    if not path.is_file():
        raise UpstreamMoved(f"verl {verl_version(release)} has no file verl/{relative}: it moved or was removed")
    return path.read_text(), f"verl/{relative}" if release is None else f"verl-{release}/{relative}"


def _top_level(tree: ast.Module) -> dict[str, ast.stmt]:
    """Name -> defining statement for top-level functions, classes and simple assignments."""
    found: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            found[node.target.id] = node
    return found


def _names_used(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _copy_tree(node: object) -> object:
    """A deep copy of an AST node (lists of nodes included); its values (names, constants) are immutable and shared.

    Several times faster than `copy.deepcopy`, which keeps a memo and reduces every node.
    """
    if isinstance(node, ast.AST):
        new = node.__class__.__new__(node.__class__)
        for name in (*node._fields, *node._attributes):
            if hasattr(node, name):
                setattr(new, name, _copy_tree(getattr(node, name)))
        return new
    if isinstance(node, list):
        return [_copy_tree(item) for item in node]
    return node


class _StripAnnotations(ast.NodeTransformer):
    """Annotations name heavy upstream types (PretrainedConfig, TensorDict); behaviour never needs them."""

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        self.generic_visit(node)
        node.returns = None
        for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.vararg, node.args.kwarg]:
            if arg is not None:
                arg.annotation = None
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.stmt:
        if node.value is None:
            return ast.Pass()
        return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)


def _global_loads(code: types.CodeType) -> set[str]:
    names = {ins.argval for ins in dis.get_instructions(code) if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_loads(const)
    return names


def load_from_source(
    source: str, names: Iterable[str], provided: Mapping[str, object] | None = None, filename: str = "<upstream>"
) -> dict[str, Callable[..., object]]:
    """Compile the named top-level functions of `source` (plus the same-file definitions they use).

    `provided` supplies every other global they read (modules like `torch`, or stand-ins like a
    fake `mpu`). Raises UpstreamMoved if a name is not defined at top level, MissingCollaborator
    naming the first global that is neither defined in the file, supplied, nor a builtin. Every call
    runs the code in a fresh namespace; the compiled code is reused for the same source, names and
    supplied names (a lesson loads the same function at several parallel sizes).
    """
    check_str("source", source, what="Python source text (a str)")
    names = check_items("names", names, str, what="a function name (a str)")
    if not names:
        raise TypeError("names must be a non-empty list of function names, got an empty one")
    provided = dict(provided or {})
    code = _compile_named(source, filename, tuple(names), frozenset(provided))
    namespace: dict[str, object] = {"__name__": f"upstream:{filename}", **provided}
    exec(code, namespace)
    return {name: namespace[name] for name in names}  # type: ignore[misc]


@functools.lru_cache(maxsize=8)
def _parsed(source: str, filename: str) -> ast.Module:
    # One parse per upstream file: a lesson loads several sets of functions from the same file.
    try:
        return ast.parse(source, filename=filename)
    except SyntaxError as e:
        raise UpstreamError(
            f"{filename} does not parse (line {e.lineno}: {e.msg}); is this verl version supported?"
        ) from e


@functools.lru_cache(maxsize=32)
def _compile_named(source: str, filename: str, names: tuple[str, ...], provided: frozenset[str]) -> types.CodeType:
    """The code defining `names` and the same-file definitions they use; the checks of `load_from_source`."""
    tree = _parsed(source, filename)
    defined = _top_level(tree)
    missing = [n for n in names if n not in defined]
    if missing:
        raise UpstreamMoved(f"{filename} defines no top-level {', '.join(missing)}: it moved or was renamed")
    wanted: list[str] = []
    queue = list(names)
    while queue:  # same-file helpers the named functions use, transitively
        name = queue.pop()
        if name in wanted or name in provided:
            continue
        wanted.append(name)
        queue += sorted(_names_used(defined[name]) & defined.keys())
    chosen_ids = {id(defined[n]) for n in wanted}
    # copies: the parsed tree is shared by every load from this source, and stripping edits nodes in place
    chosen = [_StripAnnotations().visit(_copy_tree(node)) for node in tree.body if id(node) in chosen_ids]
    available = {"__name__"} | provided | set(dir(builtins)) | set(wanted)
    module = ast.fix_missing_locations(ast.Module(body=chosen, type_ignores=[]))
    code = compile(module, filename, "exec")
    if not _global_loads(code) - available:
        return code  # every global is supplied: no statement needs to be compiled alone to be named
    for node in chosen:
        single = ast.Module(body=[node], type_ignores=[])
        absent = sorted(_global_loads(compile(single, filename, "exec")) - available)
        if absent:
            label = getattr(node, "name", None) or ast.unparse(node).split("=")[0].strip()
            raise MissingCollaborator(
                f"{filename}::{label} needs {', '.join(repr(a) for a in absent)}, which the caller did not supply"
            )
    return code


def load_upstream(
    relative: str,
    names: Iterable[str],
    provided: Mapping[str, object] | None = None,
    release: str | None = None,
) -> dict[str, Callable[..., object]]:
    """Load named functions from the installed verl, e.g. load_upstream('workers/engine/utils.py', ['detach_tree']).

    `release='0.9.0'` reads the earlier release `make setup` fetched instead (see `releases_dir`).
    """
    source, filename = upstream_file(relative, release)
    return load_from_source(source, names, provided, filename)


# ---------------------------------------------------------------- comparisons, as every lesson reports them


@dataclass(frozen=True)
class Comparison:
    """One lesson helper checked against upstream's own function on generated cases."""

    lesson: str
    upstream: str
    version: str
    cases: int
    status: str  # "agree" | "differ" | "not comparable"
    detail: str = ""
    how: str = ""  # for a row that is not comparable: how the lesson's facts were checked instead


@dataclass(frozen=True)
class NotComparable:
    """Why a lesson has no single upstream function to call (it needs a cluster, configs, or is a file)."""

    lesson: str
    upstream: str
    why: str
    how: str = "facts read from the verl source (no single upstream function to compare)"  # the verified record's

    def row(self, version: str) -> Comparison:
        return Comparison(self.lesson, self.upstream, version, 0, "not comparable", self.why, how=self.how)


SKIP_LINE = "[skip] verl is not installed: the comparison with upstream runs in `make test` (verify-upstream)"


def verl_available(release: str | None = None) -> bool:
    """True when the verl package's source can be read (installed, with or without its dependencies)."""
    try:
        verl_root(release)
    except (VerlNotInstalled, ReleaseNotFetched):
        return False
    return True


def skip_line(release: str | None = None) -> str:
    """The one line an upstream cell prints when the verl source it needs is absent."""
    if release is None:
        return i18n._(SKIP_LINE)
    return i18n.pick(
        "[skip] verl {release} was not fetched: `make setup VERL_RELEASES={release}` puts it in "
        "<venv>/verl-releases/{release}",
        release=release,
    )


def upstream_cell(body: Callable[[], object], *, releases: Sequence[str] = ()) -> None:
    """Run a lesson-body cell that calls upstream's own code, or print one skip line when its source is absent.

    `releases` names earlier verl releases the cell also reads (e.g. ['0.9.0']). Returns None, so a cell ending
    in this call prints nothing beyond what the body prints (a returned flag would show as a stray `True`).
    """
    if not callable(body):
        raise TypeError(f"body must be a function taking no arguments, got {type(body).__name__}")
    for release in [None, *releases]:
        if not verl_available(release):
            print(skip_line(release))
            return
    body()


# the line an upstream cell prints, by the comparison's status (kit.i18n translates the words, never the names)
UPSTREAM_LINES = {
    "agree": "[upstream] verl {version}: {upstream}: agree on {cases} cases",
    "differ": "[upstream] verl {version}: {upstream}: differ on {cases} cases",
    "not comparable": "[upstream] verl {version}: {upstream}: not comparable ({why})",
}


def report_check(lesson: str, runs: Sequence[Callable[[], Comparison]]) -> None:
    """A lesson's upstream cell: run each comparison and print one line each, or one skip line without verl.

    Raises AssertionError when upstream differs, so a notebook run against a newer verl stops at the
    lesson whose facts moved.
    """
    runs = check_items("runs", runs, Callable, what="a function returning a Comparison")  # type: ignore[arg-type]
    if not verl_available():
        print(skip_line())
        return
    for run in runs:
        row = run()
        template = UPSTREAM_LINES.get(row.status, "[upstream] verl {version}: {upstream}: {status} on {cases} cases")
        print(i18n.pick(template, version=row.version, upstream=row.upstream, cases=row.cases, why=row.detail,
                        status=row.status))  # fmt: skip
        if row.status != "agree":
            raise AssertionError(f"lesson {lesson}: upstream differs: {row.detail}")


def report_not_comparable(entry: NotComparable) -> None:
    """A lesson's upstream cell where there is nothing to call: one line saying why."""
    check_instance("entry", entry, NotComparable, what="a NotComparable (what upstream has, and why not)")
    if not verl_available():
        print(skip_line())
        return
    print(i18n.pick(UPSTREAM_LINES["not comparable"], version=verl_version(), upstream=entry.upstream, why=entry.why))
