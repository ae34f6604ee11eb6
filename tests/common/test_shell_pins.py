"""common.shell_pins.pip_installs: the words before each install command and its arguments, read as the pin
reader reads them (lesson 08's checker names an install that does not start with pip from it)."""

from __future__ import annotations

import pytest

from verlstudy.common.pins import parse_pins
from verlstudy.common.shell_pins import pip_installs


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("pip install a==1 b==2", [([], ["a==1", "b==2"])]),
        ("pip3 install a==1", [([], ["a==1"])]),
        ("pip3.11 install a==1", [([], ["a==1"])]),
        ("python -m pip install a==1", [([], ["a==1"])]),
        ("python3.11 -m pip install -e ./x", [([], ["-e", "./x"])]),
        # uv's own form: `uv` is the install's head, not a word before it
        ("uv pip install a==1", [([], ["a==1"])]),
        # compound-command keywords are skipped, as the pin reader skips them
        ("if true; then pip install a==1; fi", [([], ["a==1"])]),
        ("for x in 1; do pip install a==1; done", [([], ["a==1"])]),
        # NAME=value words at the head set the command's environment
        ("PIP_NO_CACHE_DIR=1 A=2 pip install a==1", [([], ["a==1"])]),
        # anything else before pip is a word the command runs first
        ("sudo pip install a==1", [(["sudo"], ["a==1"])]),
        ("sudo -E python -m pip install a==1", [(["sudo", "-E"], ["a==1"])]),
        ("echo pip install a==1", [(["echo"], ["a==1"])]),
        ("sudo A=1 pip install a==1", [(["sudo", "A=1"], ["a==1"])]),
    ],
)
def test_pip_installs_gives_the_words_before_each_install_and_its_arguments(text, want):
    assert pip_installs(text) == want


def test_pip_installs_reads_every_command_on_every_line_in_order():
    text = (
        "git clone https://github.com/o/r && cd r\n"
        "pip install a==1 && python -m pip install b==2; uv pip install c==3 | tee log\n"
        "pip install \\\n  d==4  # a comment\n"
    )
    assert pip_installs(text) == [([], ["a==1"]), ([], ["b==2"]), ([], ["c==3"]), ([], ["d==4"])]


@pytest.mark.parametrize(
    "text",
    ["", "echo hello", "git clone https://github.com/o/r", "pip download a==1", "python -m pip list", "pip", "uv pip"],
)
def test_pip_installs_finds_none_where_nothing_is_installed(text):
    assert pip_installs(text) == []


@pytest.mark.parametrize(
    "line",
    [
        "pip install a==1",
        "uv pip install a==1",
        "then pip install a==1",
        "python -m pip install a==1",
        "X=1 pip install a==1",
        "sudo pip install a==1",
        "echo pip install a==1",
        "time pip install a==1",
    ],
)
def test_an_install_with_no_words_before_it_is_exactly_one_the_pin_reader_reads(line):
    ((before, _args),) = pip_installs(line)
    read = [(p.repo, p.ref) for p in parse_pins(line + "\n", "shell", "f")]
    assert (read == [("pypi:a", "1")]) == (before == [])


def _shell_calls():
    from verlstudy.common.shell_pins import (
        ShellState,
        expand_vars,
        logical_lines,
        run_shell,
        run_shell_line,
        shell_tokens,
    )

    def state():
        return ShellState(file="x.sh")

    return [
        (lambda v: logical_lines(v), r"argument text must be shell text \(a str\)"),
        (lambda v: shell_tokens(v), r"argument text must be shell text \(a str\)"),  # shlex would read stdin for None
        (lambda v: pip_installs(v), r"argument text must be shell text \(a str\)"),
        (lambda v: expand_vars(v, {}), r"argument token must be one shell word \(a str\)"),
        (lambda v: expand_vars("$X", v), "argument env must be a mapping of variable name to value"),
        (lambda v: run_shell(v, state()), r"argument text must be shell text \(a str\)"),
        (lambda v: run_shell("ls", v), r"argument state must be a ShellState"),
        (lambda v: run_shell_line(v, state(), 1), r"argument logical must be one logical shell line \(a str\)"),
        (lambda v: run_shell_line("ls", v, 1), r"argument state must be a ShellState"),
        (lambda v: run_shell_line("ls", state(), v), "argument line must be an integer"),
    ]


@pytest.mark.parametrize("value", [None, 7, [1], float("nan")])
def test_shell_helpers_name_an_argument_of_the_wrong_type(value):
    # issue 43 item 8: these ended in a raw AttributeError ('NoneType' object has no attribute 'splitlines')
    for call, named in _shell_calls():
        if value == 7 and "line must be an integer" in named:
            continue  # 7 is a good line number
        with pytest.raises(TypeError, match=named) as info:
            call(value)
        assert "\n" not in str(info.value)
