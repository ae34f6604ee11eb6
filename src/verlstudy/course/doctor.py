"""`verlstudy doctor`: [OK]/[FAIL] for what the course needs, including a start of the kernel lessons run on."""

from __future__ import annotations

import atexit
import importlib.metadata
import json
import platform
import shutil
import sys
import threading
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from verlstudy.course import registry
from verlstudy.kit.colab import COLAB_MODULE
from verlstudy.kit.resources import checkout_root

# Outside a checkout (pip install) only the dev extra's nbval is worth naming: it checks stored outputs.
OPTIONAL_OUTSIDE_CHECKOUT = ("nbval",)
KERNEL_TIMEOUT_S = 60  # a cold start imports torch; a hang shows as a [FAIL] after this long, not forever
# what the kernel prints: the interpreter it runs and the torch it imports (the two a stale kernel gets wrong)
KERNEL_SNIPPET = (
    "import json, sys\n"
    "try:\n"
    "    import torch\n"
    "    torch_version = torch.__version__\n"
    "except Exception as e:\n"
    "    torch_version = f'cannot import torch: {type(e).__name__}: {e}'\n"
    "print(json.dumps({'python': sys.executable, 'torch': torch_version}))\n"
)


def install_kind(root: Path | None = None) -> str:
    """How this learner has the course: "checkout" (a clone: make works), "colab" (Google Colab), else "pip"."""
    root = checkout_root() if root is None else root
    if root is not None and (root / "Makefile").is_file():
        return "checkout"
    return "colab" if COLAB_MODULE in sys.modules else "pip"


def verl_install_hint(verl: str, kind: str) -> str:
    """The command that installs verl `verl` (read, never run: no dependencies) for this kind of install."""
    if kind == "checkout":
        return "`make setup` installs it (`make upstream` alone)"
    pip = "%pip" if kind == "colab" else "pip"
    return f"`{pip} install --no-deps --ignore-requires-python verl=={verl}` adds it"


def kernel_fix_hint(kind: str) -> str:
    """How to point the lessons' kernel at this interpreter again, for this kind of install."""
    if kind == "checkout":
        return "re-run `make setup`"
    return f"run `{sys.executable} -m ipykernel install --sys-prefix --name python3`"


def lab_hint(folder: Path) -> str:
    """The next command after `verlstudy init`: JupyterLab on the student edition, with the extra that brings it."""
    if shutil.which("jupyter-lab") is not None:
        return f"jupyter lab {folder}"
    return f'pip install "verlstudy[lab]" (JupyterLab), then jupyter lab {folder}'


def version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def declared(root: Path | None = None) -> tuple[str, list[str]]:
    """(requires-python, requirements) the course declares: a checkout's pyproject.toml (its dev extra included,
    which `make test` needs), else the installed package's own metadata (its dependencies only)."""
    root = checkout_root() if root is None else root
    if root is not None and (root / "pyproject.toml").is_file():
        project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
        return project["requires-python"], [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    required = importlib.metadata.requires("verlstudy") or []
    python = importlib.metadata.metadata("verlstudy")["Requires-Python"] or ""
    return python, [r for r in required if "extra ==" not in r]


def requirement_check(requirement: str, found: str | None) -> tuple[bool, str] | None:
    """(ok, line) for one declared requirement and the version installed (None: not installed); None where its
    environment marker excludes this machine."""
    try:
        parsed = Requirement(requirement)
    except InvalidRequirement as e:
        raise ValueError(f"not a requirement: {requirement!r} ({e})") from None
    if parsed.marker is not None and not parsed.marker.evaluate():
        return None
    needs = str(parsed.specifier) or "any version"
    if found is None:
        return False, f"{parsed.name} not installed (needs {needs})"
    if not parsed.specifier.contains(found, prereleases=True):
        return False, f"{parsed.name} {found} is outside the range the course declares ({needs})"
    return True, f"{parsed.name} {found}"


def package_checks(root: Path | None = None) -> list[tuple[bool, str]]:
    """The Python and every declared package, each against its declared range (nbval optional outside a checkout)."""
    in_checkout = (checkout_root() if root is None else root) is not None
    python, requirements = declared(root)
    from packaging.specifiers import SpecifierSet

    here = platform.python_version()
    checks = [(here in SpecifierSet(python), f"Python {here} (the course declares {python})")]
    for requirement in requirements:
        name = Requirement(requirement).name
        found = version(name)
        if not in_checkout and name in OPTIONAL_OUTSIDE_CHECKOUT:
            continue
        line = requirement_check(requirement, found)
        if line is not None:
            checks.append(line)
    if not in_checkout:
        for name in OPTIONAL_OUTSIDE_CHECKOUT:
            found = version(name)
            checks.append((True, f'optional {name}: {found or "not installed"} (pip install "verlstudy[dev]" adds it)'))
    return checks


def verl_status(installed: str | None, verified: dict[str, str], kind: str = "checkout") -> str:
    """The doctor's verl line: installed or not, and whether it is the version the lessons were checked against."""
    if not installed:
        wanted = max(set(verified.values()), key=list(verified.values()).count) if verified else "the pinned version"
        return f"not installed (upstream cells skip; {verl_install_hint(wanted, kind)})"
    behind = sorted(code for code, v in verified.items() if v != installed)
    if not behind:
        return installed
    lessons = ", ".join(behind)
    return f"{installed}; lessons {lessons} were verified against another verl: run `verlstudy verify-upstream`"


def kernel_spec_line() -> tuple[bool, str]:
    """The spec the runner will start (sys.prefix only), not whatever `python3` the Jupyter path finds first."""
    from verlstudy.course.twins import KERNEL_NAME, course_kernel_manager_class

    try:
        spec = course_kernel_manager_class()(kernel_name=KERNEL_NAME).kernel_spec
    except ValueError as e:  # twins.BadKernelSpec: a corrupt kernel.json, named
        return False, f"kernel '{KERNEL_NAME}': {e}"
    argv = spec.argv if isinstance(spec.argv, list) else []
    if not argv or not isinstance(argv[0], str) or not argv[0].strip():
        where = getattr(spec, "resource_dir", "") or "its folder"
        return False, f"kernel '{KERNEL_NAME}': kernel.json in {where} has no command (argv is empty): reinstall it"
    python = Path(spec.argv[0]).resolve()
    same = python == Path(sys.executable).resolve() or spec.argv[0] in ("python", "python3", sys.executable)
    where = spec.argv[0] if same else f"{spec.argv[0]}, not this interpreter {sys.executable}"
    return same, f"kernel '{KERNEL_NAME}' for lessons runs {where}"


def judge_kernel_output(
    text: str, seconds: float, expected_python: str = sys.executable, kind: str = "checkout"
) -> tuple[bool, str]:
    """(ok, line) from what KERNEL_SNIPPET printed: the right interpreter and an importable torch."""
    lines = [line for line in text.strip().splitlines() if line.startswith("{")]
    try:
        seen = json.loads(lines[-1])
        python, torch_version = str(seen["python"]), str(seen["torch"])
    except (IndexError, ValueError, KeyError, TypeError):
        return False, f"kernel started but printed {text.strip()[:120]!r}, not the interpreter and torch version"
    if Path(python).resolve() != Path(expected_python).resolve():
        return False, f"kernel runs the wrong interpreter {python}, not {expected_python} ({kernel_fix_hint(kind)})"
    if torch_version.startswith("cannot import torch"):
        return False, f"kernel runs {python} but {torch_version}"
    return True, f"kernel started in {seconds:.1f} s: {python}, torch {torch_version}"


def start_kernel_check(timeout_s: float = KERNEL_TIMEOUT_S, manager_class: type | None = None) -> tuple[bool, str]:
    """Start the kernel lessons run on (the runner's own manager class), run KERNEL_SNIPPET, shut it down."""
    import nbformat
    from nbclient import NotebookClient

    from verlstudy.course.twins import KERNEL_ARGS, KERNEL_NAME, course_kernel_manager_class, quiet_kernel_env

    manager_class = manager_class or course_kernel_manager_class()
    try:  # the spec's interpreter, so a [FAIL] names which kernel it was
        name = f"kernel '{KERNEL_NAME}' ({manager_class(kernel_name=KERNEL_NAME).kernel_spec.argv[0]})"
    except Exception as e:
        return False, f"kernel '{KERNEL_NAME}' has no usable spec: {type(e).__name__}: {e}"
    quiet_kernel_env()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(KERNEL_SNIPPET)]
    client = NotebookClient(
        nb,
        timeout=int(timeout_s),
        startup_timeout=int(timeout_s),
        kernel_name=KERNEL_NAME,
        record_timing=False,
        shutdown_kernel="immediate",
        extra_arguments=KERNEL_ARGS,
        kernel_manager_class=manager_class,
    )
    start = time.perf_counter()
    failed: list[Exception] = []
    try:
        _in_a_thread(client.execute, failed)
    finally:
        # nbclient's exit hook would clean up a kernel that never started and print a traceback at exit
        atexit.unregister(client._cleanup_kernel)
    if failed:  # every way a start fails is one [FAIL] line with its reason
        return False, f"{name} did not run a cell: {kernel_failure(failed[0], timeout_s)}"
    text = "".join(o.get("text", "") for o in nb.cells[0].get("outputs", []) if o.get("output_type") == "stream")
    return judge_kernel_output(text, time.perf_counter() - start, kind=install_kind())


def _in_a_thread(call: Callable[[], object], failed: list[Exception]) -> None:
    """Run `call` in a worker thread, its exception appended to `failed`; Ctrl-C stays the main thread's.

    nbclient in the main thread takes SIGINT and SIGTERM for itself: a Ctrl-C became "the kernel died" (an
    AssertionError), and it left SIGTERM at its default (a silent kill) afterwards. From a thread it cannot.
    """
    from verlstudy.course.stopping import kill_kernels

    def work() -> None:
        try:
            call()
        except Exception as e:
            failed.append(e)

    thread = threading.Thread(target=work, name="doctor-kernel", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.2)
    except KeyboardInterrupt:  # the stop is reported by the command; the kernel it started goes with it
        kill_kernels()
        thread.join(10)
        raise


def kernel_failure(error: Exception, timeout_s: float) -> str:
    """One line saying why the kernel could not run the snippet."""
    kind = type(error).__name__
    message = str(error).strip().splitlines()[0] if str(error).strip() else kind
    if kind == "DeadKernelError" or "died" in message:
        return f"the kernel died ({message[:160]})"
    if kind == "CellTimeoutError" or isinstance(error, TimeoutError) or "didn't respond" in message:
        return f"timed out after {timeout_s:g} s"
    if isinstance(error, FileNotFoundError):
        return f"its interpreter cannot be started ({message[:160]})"
    return f"{kind}: {message[:160]}"


def doctor_checks(*, start_kernel: bool = True) -> list[tuple[bool, str]]:
    """(ok, line) for each thing the course needs, and informational lines for optional things."""
    checks: list[tuple[bool, str]] = package_checks()
    checks.append(kernel_spec_line())
    if start_kernel:
        checks.append(start_kernel_check())
    else:
        checks.append((True, "kernel start skipped (--no-kernel-start)"))
    from verlstudy.kit import devices

    accelerators = devices.visible_accelerators()
    seen = ", ".join(accelerators) if accelerators else "none (CPU only; GPU cells skip)"
    checks.append((True, f"accelerators visible: {seen}"))
    try:
        verified = registry.upstream_verified_versions()
    except (OSError, ValueError, AttributeError, TypeError) as e:  # a corrupt record is named, not a traceback
        path = registry.data_dir() / "upstream_verified.json"
        checks.append((False, f"{path}: not the JSON `verify-upstream --record` writes ({e}); restore it with git"))
        verified = {}
    checks.append((True, "optional verl: " + verl_status(version("verl"), verified, install_kind())))
    missing = [lesson.code for lesson in registry.LESSONS if not lesson.notebook.exists()]
    checks.append((not missing, f"notebooks: {len(registry.LESSONS) - len(missing)}/{len(registry.LESSONS)} present"))
    checks += notebook_checks()
    return checks


def notebook_checks() -> list[tuple[bool, str]]:
    """A [FAIL] naming each lesson notebook that exists but cannot be read as a notebook (none: no line)."""
    from verlstudy.course.files import read_notebook

    failed = []
    for lesson in registry.LESSONS:
        if lesson.notebook.exists():
            try:
                read_notebook(lesson.notebook)
            except ValueError as e:  # not JSON, not UTF-8, not a notebook, unreadable: the file named
                failed.append((False, f"lesson {lesson.code}: {e}"))
    return failed
