"""`verlstudy doctor` starts the kernel lessons run on: a broken spec is a [FAIL] naming it, the real one [OK]."""

import json
import sys

import pytest

from verlstudy.course import doctor
from verlstudy.course.cli import main


def fake_kernel(tmp_path, monkeypatch, argv: list[str]) -> None:
    """A `python3` spec in a fake sys.prefix: the only folder the course's kernel manager looks in."""
    folder = tmp_path / "share" / "jupyter" / "kernels" / "python3"
    folder.mkdir(parents=True)
    (folder / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "fake", "language": "python"}))
    monkeypatch.setattr(sys, "prefix", str(tmp_path))


def test_a_spec_whose_interpreter_is_missing_is_a_fail_naming_it(tmp_path, monkeypatch):
    fake_kernel(tmp_path, monkeypatch, ["/nonexistent/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"])
    ok, line = doctor.start_kernel_check(timeout_s=10)
    assert not ok
    assert line.startswith("kernel 'python3' (/nonexistent/python) did not run a cell: its interpreter cannot be")


def test_a_kernel_that_dies_on_start_is_a_fail_saying_so(tmp_path, monkeypatch):
    fake_kernel(tmp_path, monkeypatch, [sys.executable, "-c", "import sys; sys.exit(3)", "-f", "{connection_file}"])
    ok, line = doctor.start_kernel_check(timeout_s=10)
    assert not ok and "the kernel died" in line, line


def test_a_kernel_that_never_answers_times_out_with_the_seconds(tmp_path, monkeypatch):
    fake_kernel(tmp_path, monkeypatch, [sys.executable, "-c", "import time; time.sleep(30)", "-f", "{connection_file}"])
    ok, line = doctor.start_kernel_check(timeout_s=2)
    assert not ok and line.endswith("timed out after 2 s"), line


def test_the_cli_prints_the_kernel_fail_and_exits_1_without_a_traceback(tmp_path, monkeypatch, capsys):
    fake_kernel(tmp_path, monkeypatch, ["/nonexistent/python", "-f", "{connection_file}"])
    assert main(["doctor"]) == 1
    captured = capsys.readouterr()
    assert "[FAIL] kernel 'python3' (/nonexistent/python) did not run a cell" in captured.out
    assert "Traceback" not in captured.out + captured.err


def test_the_kernels_answer_is_judged_interpreter_then_torch():
    good = json.dumps({"python": sys.executable, "torch": "2.5.0"})
    assert doctor.judge_kernel_output(good, 1.5) == (True, f"kernel started in 1.5 s: {sys.executable}, torch 2.5.0")
    wrong = json.dumps({"python": "/usr/bin/python3.9", "torch": "2.5.0"})
    ok, line = doctor.judge_kernel_output(wrong, 1.0, expected_python="/opt/course/bin/python")
    assert not ok and line.startswith(
        "kernel runs the wrong interpreter /usr/bin/python3.9, not /opt/course/bin/python"
    )
    no_torch = json.dumps({"python": sys.executable, "torch": "cannot import torch: ModuleNotFoundError: torch"})
    assert doctor.judge_kernel_output(no_torch, 1.0)[1].endswith("but cannot import torch: ModuleNotFoundError: torch")
    assert doctor.judge_kernel_output("hello", 1.0) == (
        False,
        "kernel started but printed 'hello', not the interpreter and torch version",
    )


def test_no_kernel_start_skips_the_start(monkeypatch, capsys):
    def started(*args, **kwargs):
        raise AssertionError("--no-kernel-start must not start a kernel")

    monkeypatch.setattr(doctor, "start_kernel_check", started)
    main(["doctor", "--no-kernel-start"])
    assert "[OK] kernel start skipped (--no-kernel-start)" in capsys.readouterr().out


def test_a_corrupt_verified_record_is_a_fail_naming_it(monkeypatch):
    from verlstudy.course import registry

    def corrupt() -> dict[str, str]:
        raise json.JSONDecodeError("Expecting value", "{", 0)

    monkeypatch.setattr(registry, "upstream_verified_versions", corrupt)
    lines = [line for ok, line in doctor.doctor_checks(start_kernel=False) if not ok]
    assert any("upstream_verified.json: not the JSON" in line for line in lines), lines


@pytest.mark.slow
def test_the_real_kernel_starts_on_this_interpreter_with_torch():
    ok, line = doctor.start_kernel_check()
    assert ok, line
    assert line.startswith("kernel started in ") and f": {sys.executable}, torch " in line


def test_each_package_is_judged_against_its_declared_range():
    assert doctor.requirement_check("matplotlib>=3.8.1", "3.11.2") == (True, "matplotlib 3.11.2")
    assert doctor.requirement_check("matplotlib>=3.8.1", "3.8.0") == (
        False,
        "matplotlib 3.8.0 is outside the range the course declares (>=3.8.1)",
    )
    assert doctor.requirement_check("torch>=2.4", "2.13.0+cpu") == (True, "torch 2.13.0+cpu")  # local builds count
    assert doctor.requirement_check("nbval>=0.11", None) == (False, "nbval not installed (needs >=0.11)")
    assert doctor.requirement_check("appnope; sys_platform == 'nowhere'", None) is None
    with pytest.raises(ValueError, match="not a requirement: 'matplotlib >>= 3'"):
        doctor.requirement_check("matplotlib >>= 3", "3.0")


def test_in_a_checkout_the_dev_tools_are_required_and_installed_only_the_runtime(tmp_path, monkeypatch):
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    python, checkout = doctor.declared(root)
    assert python == ">=3.11" and "nbval>=0.11" in checkout and "matplotlib>=3.8.1" in checkout
    metadata = {"Requires-Python": ">=3.11,<3.13"}
    monkeypatch.setattr(doctor.importlib.metadata, "metadata", lambda name: metadata)
    monkeypatch.setattr(
        doctor.importlib.metadata, "requires", lambda name: ["numpy>=1.26", 'nbval>=0.11; extra == "dev"']
    )
    monkeypatch.setattr(doctor, "checkout_root", lambda: None)
    assert doctor.declared() == (">=3.11,<3.13", ["numpy>=1.26"])


def test_outside_a_checkout_a_missing_nbval_is_an_ok_line_not_a_fail(monkeypatch):
    monkeypatch.setattr(doctor, "checkout_root", lambda: None)
    monkeypatch.setattr(doctor, "declared", lambda root=None: (">=3.11", ["numpy>=1.26", "nbval>=0.11"]))
    real = doctor.version
    monkeypatch.setattr(doctor, "version", lambda name: None if name == "nbval" else real(name))
    checks = doctor.package_checks()
    assert all(ok for ok, _ in checks), checks
    assert checks[-1] == (True, 'optional nbval: not installed (pip install "verlstudy[dev]" adds it)')
    monkeypatch.setattr(doctor, "declared", lambda root=None: (">=9.0", ["numpy>=99"]))
    assert [ok for ok, _ in doctor.package_checks()][:2] == [False, False]


def test_the_checkouts_own_environment_passes_the_declared_ranges():
    failed = [line for ok, line in doctor.package_checks() if not ok]
    assert not failed, failed


def test_the_install_kind_is_a_checkout_colab_or_pip(tmp_path, monkeypatch):
    (tmp_path / "Makefile").write_text("")
    assert doctor.install_kind(tmp_path) == "checkout"
    monkeypatch.setattr(doctor, "checkout_root", lambda: None)
    monkeypatch.delitem(sys.modules, doctor.COLAB_MODULE, raising=False)
    assert doctor.install_kind() == "pip"
    monkeypatch.setitem(sys.modules, doctor.COLAB_MODULE, object())
    assert doctor.install_kind() == "colab"


def test_a_stale_kernel_is_fixed_the_way_this_install_can():
    wrong = json.dumps({"python": "/usr/bin/python3.9", "torch": "2.5.0"})
    assert doctor.judge_kernel_output(wrong, 1.0, "/x/python", kind="checkout")[1].endswith("(re-run `make setup`)")
    for kind in ("pip", "colab"):
        line = doctor.judge_kernel_output(wrong, 1.0, "/x/python", kind=kind)[1]
        assert "make" not in line and f"{sys.executable} -m ipykernel install --sys-prefix --name python3" in line


def test_inits_next_line_names_the_lab_extra_when_jupyterlab_is_missing(monkeypatch, tmp_path):
    monkeypatch.setattr(doctor.shutil, "which", lambda name: None)
    assert doctor.lab_hint(tmp_path) == f'pip install "verlstudy[lab]" (JupyterLab), then jupyter lab {tmp_path}'
    monkeypatch.setattr(doctor.shutil, "which", lambda name: "/usr/bin/jupyter-lab")
    assert doctor.lab_hint(tmp_path) == f"jupyter lab {tmp_path}"


def test_ctrl_c_while_the_kernel_starts_stops_the_doctor_in_one_line(tmp_path, monkeypatch, capsys):
    # M3: nbclient took SIGINT for itself in the main thread: a Ctrl-C read as "[FAIL] kernel ... AssertionError",
    # the checks went on, and SIGTERM was left at its default (a silent kill) afterwards
    import os
    import signal
    import threading

    fake_kernel(tmp_path, monkeypatch, [sys.executable, "-c", "import time; time.sleep(30)", "-f", "{connection_file}"])
    before = signal.getsignal(signal.SIGTERM)
    timer = threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        assert main(["doctor"]) == 130
    finally:
        timer.cancel()
    captured = capsys.readouterr()
    assert captured.err == "verlstudy doctor: stopped (Ctrl-C) before the checks finished; run it again\n"
    assert "[FAIL]" not in captured.out
    assert signal.getsignal(signal.SIGTERM) is before
