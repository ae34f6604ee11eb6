"""External modules loaded by an environment variable, and why that acts only in some processes.

Lesson 06 (verl #7827, #7886). verl 0.9.1's `verl/__init__.py` reads `VERL_USE_EXTERNAL_MODULES`
at import time, splits it on commas and imports each module (`verl/utils/import_utils.py::
import_external_libs`); Ascend set it to `megatron_adaptor`, which patches Megatron. Such a patch
acts only in a process that imports verl, and only if verl comes before the library it patches.

This module writes a throwaway package trio to a folder (a library `toylib`, a patch module
`toylib_adaptor` and a verl-like `toyverl` whose `__init__` runs the hook) and runs short scripts in
fresh Python subprocesses (`python -I -S`, no torch, no network, bounded time) to see which processes
end up patched. `toyverl/__init__.py` is either upstream's own hook, extracted from the installed verl
(`upstream.toyverl_init`), or the course's reconstruction of it below, which behaves the same.
"""

from __future__ import annotations

import importlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from verlstudy.kit.params import check_instance, check_items, check_path, got
from verlstudy.kit.tables import Table

ENV_VAR = "VERL_USE_EXTERNAL_MODULES"
LIBRARY = "toylib.model"  # the module whose behaviour the patch is meant to change
ADAPTOR = "toylib_adaptor"
HOOK_PACKAGE = "toyverl"
_MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


class ExternalModuleError(ImportError):
    """A module named in the environment variable could not be imported."""


def parse_module_list(value: str) -> list[str]:
    """Module names from a comma-separated value: blanks around names and empty entries are ignored.

    Each name must be a dotted Python identifier ('megatron_adaptor', 'pkg.sub'); anything else is a
    ValueError naming the entry, so a typo fails at parse time rather than as a confusing import error.
    """
    if not isinstance(value, str):
        raise TypeError(f"{ENV_VAR} value must be a string, got {type(value).__name__} {value!r}")
    names = [part.strip() for part in value.split(",")]
    names = [n for n in names if n]
    for n in names:
        if not _MODULE_NAME.fullmatch(n):
            raise ValueError(f"{ENV_VAR} entry {n!r} is not a module name (expected dotted identifiers, e.g. 'a.b')")
    return names


def split_like_verl_091(value: str | None) -> list[str]:
    """The course's reconstruction of what verl 0.9.1 imports: `value.split(",")` when non-empty, no stripping.

    `None` (variable unset) and '' import nothing. 'a, b' gives ' b' (an import of a name with a
    leading space fails) and 'a,' gives '' (importlib raises 'Empty module name'). `upstream.py`
    checks this against upstream's own hook on generated values.
    """
    if value is None:
        return []
    if not isinstance(value, str):
        raise TypeError(f"value must be a string or None, got {type(value).__name__}")
    return value.split(",") if value else []


def import_external_modules(value: str | None = None, *, environ: Mapping[str, str] | None = None) -> list[str]:
    """Import every module named in `value` (default: the `VERL_USE_EXTERNAL_MODULES` variable).

    Returns the names imported, in order. A module that cannot be imported raises
    ExternalModuleError naming it and the variable it came from.
    """
    if environ is not None:
        check_instance("environ", environ, Mapping, what="a mapping like os.environ, or None")
    if value is None:
        env = os.environ if environ is None else environ
        value = env.get(ENV_VAR, "")
    names = parse_module_list(value)
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as e:
            raise ExternalModuleError(f"{ENV_VAR} names module {name!r}, which cannot be imported: {e}") from e
    return names


# ---------------------------------------------------------------- the throwaway packages

TOY_SOURCES: dict[str, str] = {
    "toylib/__init__.py": '"""Stands in for megatron.core: a library with an attention op and a model."""\n',
    "toylib/ops.py": 'def attention() -> str:\n    return "vanilla"\n',
    # The model binds `attention` when it is imported, as library modules do with `from x import y`.
    "toylib/model.py": "from toylib.ops import attention\n\n\ndef forward() -> str:\n    return attention()\n",
    "toylib_adaptor.py": (
        '"""Stands in for megatron_adaptor: replaces toylib.ops.attention with a device kernel."""\n'
        "import toylib.ops\n\n\ndef npu_attention() -> str:\n"
        '    return "patched"\n\n\ntoylib.ops.attention = npu_attention\n'
    ),
    # The course's reconstruction of verl's hook (split on commas, no stripping), in stdlib only so a
    # child starts in ~0.1 s; the notebook replaces it with upstream's own code (upstream.toyverl_init).
    "toyverl/__init__.py": (
        '"""Stands in for verl: the course\'s reconstruction of the hook in verl/__init__.py."""\n'
        "import importlib\nimport os\n\n"
        f'_value = os.getenv("{ENV_VAR}", "")\n'
        "if _value:\n"
        '    for _name in _value.split(","):\n'
        "        importlib.import_module(_name)\n"
    ),
}


def write_toy_packages(folder: str | Path, toyverl_init: str | None = None) -> Path:
    """Write toylib, toylib_adaptor and toyverl into `folder` (which must exist); return the folder.

    `toyverl_init` replaces the course's `toyverl/__init__.py` (e.g. with upstream's own hook).
    """
    root = check_path("folder", folder, what="an existing folder's path (str or Path)")
    if not root.is_dir():
        raise ValueError(f"folder {str(root)!r} must be an existing directory (e.g. a tempfile.TemporaryDirectory)")
    if toyverl_init is not None and (not isinstance(toyverl_init, str) or not toyverl_init.strip()):
        raise TypeError("toyverl_init must be the non-empty source text of toyverl/__init__.py, or None")
    sources = dict(TOY_SOURCES)
    if toyverl_init is not None:
        sources["toyverl/__init__.py"] = toyverl_init
    for rel, text in sources.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


# ---------------------------------------------------------------- the experiments


@dataclass(frozen=True)
class Experiment:
    """One process: what it imports, in order, with the variable set or not, and maybe a worker child."""

    name: str
    imports: tuple[str, ...]
    env_value: str | None  # VERL_USE_EXTERNAL_MODULES for the process; None = unset
    worker_imports: tuple[str, ...] | None = None  # a child process it launches (inherits its environment)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"Experiment name must be a non-empty string, got {self.name!r}")
        for label, mods in (("imports", self.imports), ("worker_imports", self.worker_imports or ())):
            if isinstance(mods, str) or not all(isinstance(m, str) and _MODULE_NAME.fullmatch(m) for m in mods):
                raise ValueError(f"Experiment {self.name!r}: {label} must be a tuple of module names, got {mods!r}")
        if self.env_value is not None and not isinstance(self.env_value, str):
            raise TypeError(f"Experiment {self.name!r}: env_value must be a string or None")


@dataclass(frozen=True)
class Outcome:
    experiment: Experiment
    backend: str  # what toylib.model.forward() returned in the process
    worker_backend: str | None
    torch_imported: bool  # children must stay cheap: they never import torch

    @property
    def patched(self) -> bool:
        return self.backend == "patched"

    @property
    def worker_patched(self) -> bool | None:
        return None if self.worker_backend is None else self.worker_backend == "patched"


def _script(root: str, imports: Sequence[str], worker: Sequence[str] | None, timeout_s: float) -> str:
    lines = [
        "import importlib, sys",
        f"sys.path[:0] = [{root!r}]",
        f"for name in {list(imports)!r}:",
        "    importlib.import_module(name)",
        f"from {LIBRARY} import forward",
        "report = [forward(), str('torch' in sys.modules)]",
    ]
    if worker is not None:
        code = _script(root, worker, None, timeout_s)
        lines += [
            "import os, subprocess",
            # The worker inherits this process's environment, variable included, like a vLLM worker.
            f"out = subprocess.run([sys.executable, '-I', '-S', '-c', {code!r}], env=dict(os.environ),",
            f"                     capture_output=True, text=True, timeout={timeout_s!r}, check=True)",
            "report += out.stdout.split()",
        ]
    lines.append("print(' '.join(report))")
    return "\n".join(lines) + "\n"


def _child_env(env_value: str | None) -> dict[str, str]:
    # A minimal environment: a variable set in the notebook's own shell must not leak into the experiment.
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1"}
    if env_value is not None:
        env[ENV_VAR] = env_value
    return env


def _run_children(
    scripts: Sequence[tuple[str, str, str | None]], root: Path, timeout_s: float
) -> list[tuple[int, str, str]]:
    """Run (name, code, variable value) scripts in fresh `python -I -S` children, all at once, one deadline.

    Returns (returncode, stdout, stderr) per script; TimeoutError names the first still running.
    """
    procs = []
    for _name, code, env_value in scripts:
        cmd = [sys.executable, "-I", "-S", "-c", code]
        procs.append(subprocess.Popen(cmd, env=_child_env(env_value), cwd=root, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      start_new_session=True))  # fmt: skip
    deadline = time.monotonic() + timeout_s
    results = []
    try:
        for (name, _code, _env), proc in zip(scripts, procs, strict=True):
            try:
                out, err = proc.communicate(timeout=max(deadline - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired as e:
                raise TimeoutError(f"experiment {name!r} did not finish within {timeout_s} s") from e
            results.append((proc.returncode, out, err))
    finally:
        for proc in procs:  # never leave a child (or its worker) behind, whatever went wrong above
            if proc.poll() is None:
                _kill_group(proc)
    return results


def _check_timeout(timeout_s: object) -> float:
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or not 0 < timeout_s <= 120:
        raise ValueError(f"timeout_s must be a number in (0, 120] seconds, got {timeout_s!r}")
    return float(timeout_s)


def _toy_root(folder: str | Path) -> Path:
    root = check_path("folder", folder, what="the toy packages' folder (str or Path), from write_toy_packages")
    if not (root / "toylib").is_dir():
        raise ValueError("folder does not hold the toy packages: call write_toy_packages(folder) first")
    return root


def _last_error(err: str) -> str:
    return (err.strip().splitlines() or ["(no error output)"])[-1]


def run_experiments(experiments: Sequence[Experiment], folder: str | Path, timeout_s: float = 10.0) -> list[Outcome]:
    """Run each experiment in a fresh `python -I -S` subprocess (all at once) and report what it saw.

    `folder` holds the toy packages (see write_toy_packages). The processes start together and share
    one deadline, `timeout_s` after the start: one still running then raises TimeoutError naming its
    experiment, and a child that fails raises RuntimeError with its last error line. Each process
    leads its own process group, so a worker it launched is stopped with it (no orphans left behind).
    """
    timeout_s = _check_timeout(timeout_s)
    if isinstance(experiments, str) or not isinstance(experiments, Sequence):
        raise TypeError(f"argument experiments must be a list, each item an Experiment, got {got(experiments)}")
    if not experiments or not all(isinstance(e, Experiment) for e in experiments):
        raise TypeError("experiments must be a non-empty sequence of Experiment")
    root = _toy_root(folder)
    scripts = [(e.name, _script(str(root), e.imports, e.worker_imports, timeout_s), e.env_value) for e in experiments]
    outcomes = []
    for exp, (code, out, err) in zip(experiments, _run_children(scripts, root, timeout_s), strict=True):
        if code != 0:
            raise RuntimeError(f"experiment {exp.name!r} failed: {_last_error(err)}")
        words = out.split()  # "backend torch_imported [worker_backend worker_torch_imported]"
        worker = words[2] if len(words) == 4 else None
        outcomes.append(Outcome(exp, words[0], worker, "True" in words[1::2]))
    return outcomes


def hook_errors(values: Sequence[str], folder: str | Path, timeout_s: float = 10.0) -> list[str]:
    """For each value of the variable, `import toyverl` in a fresh child: 'ok', or the child's last error line.

    The children see only the toy packages and the standard library, so a value naming `json` or a
    toy module is the most any of them imports.
    """
    timeout_s = _check_timeout(timeout_s)
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise TypeError(f"argument values must be a non-empty list of strings, got {got(values)}")
    if not values or not all(isinstance(v, str) for v in values):
        raise TypeError(f"values must be a non-empty list of strings, got {values!r}")
    root = _toy_root(folder)
    code = f"import sys\nsys.path[:0] = [{str(root)!r}]\nimport {HOOK_PACKAGE}\n"
    results = _run_children([(f"import toyverl with {v!r}", code, v) for v in values], root, timeout_s)
    return ["ok" if rc == 0 else _last_error(err) for rc, _out, err in results]


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """Stop a still-running experiment and every process in its group (the worker it started)."""
    killpg = getattr(os, "killpg", None)
    try:
        if killpg is None:  # Windows: no process groups to signal; the child alone is stopped
            proc.kill()
        else:
            killpg(proc.pid, signal.SIGKILL)  # the child leads its own group: start_new_session=True
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.communicate()


def lesson_experiments(adaptor: str = ADAPTOR) -> tuple[Experiment, ...]:
    """The lesson's processes: the image default (#7827) in three situations, no default (#7886), and
    an explicit import of the adaptor at each entry point."""
    return (
        Experiment("image default, verl imported first", (HOOK_PACKAGE, LIBRARY), adaptor),
        Experiment("image default, library imported first", (LIBRARY, HOOK_PACKAGE), adaptor),
        Experiment("image default, worker never imports verl", (HOOK_PACKAGE, LIBRARY), adaptor, (LIBRARY,)),
        Experiment("no default (after #7886)", (HOOK_PACKAGE, LIBRARY), None),
        Experiment("explicit import at every entry point", (adaptor, LIBRARY), None, (adaptor, LIBRARY)),
    )


def predict_patched(imports: Sequence[str], env_value: str | None) -> bool:
    """The rule the experiments show: the library is patched iff the adaptor is imported before the
    library's model module, either directly or through the verl-like hook reading the variable.

    The variable is split as verl splits it (no stripping): ' toylib_adaptor' does not name the adaptor.
    """
    names = split_like_verl_091(env_value)
    for name in imports:
        if name == ADAPTOR or (name == HOOK_PACKAGE and ADAPTOR in names):
            return True
        if name == LIBRARY:
            return False
    return False  # the script imports the library last; nothing patched it before


def outcomes_table(outcomes: Sequence[Outcome]) -> Table:
    """The experiments as a table (show it with `kit.tables.show_table`): process, variable, import order, patched,
    worker patched."""
    outcomes = check_items("outcomes", outcomes, Outcome, what="an Outcome (from run_experiments)")
    rows = []
    for o in outcomes:
        e = o.experiment
        env = "unset" if e.env_value is None else f"{ENV_VAR}={e.env_value}"
        worker = "-" if o.worker_patched is None else ("yes" if o.worker_patched else "no")
        rows.append([e.name, env, " -> ".join(e.imports), "yes" if o.patched else "no", worker])
    return Table.of(["process", "variable", "import order", "patched", "worker patched"], rows)
