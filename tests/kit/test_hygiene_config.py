"""One list of unstable-output patterns: nbval's sanitize file is written from kit.hygiene."""

import configparser
import re
from pathlib import Path

from verlstudy.kit import hygiene

ROOT = Path(__file__).resolve().parents[2]


def test_the_nbval_sanitize_file_is_written_from_the_hygiene_patterns():
    assert (ROOT / "tests" / "nbval_sanitize.cfg").read_text() == hygiene.nbval_sanitize_config(), (
        "tests/nbval_sanitize.cfg differs from kit.hygiene: write it with nbval_sanitize_config()"
    )


def test_nbval_reads_each_section_as_the_same_pattern_and_replaces_what_hygiene_finds():
    parser = configparser.ConfigParser()
    parser.read_string(hygiene.nbval_sanitize_config())
    assert parser.sections() == list(hygiene.SANITIZED_BY_NBVAL)
    line = "tensor at 0x7f3a2b1c0d10 on rank pid=4242 via 127.0.0.1:29500"
    for kind in parser.sections():
        regex, replace = parser[kind]["regex"], parser[kind]["replace"]
        assert regex == hygiene.UNSTABLE_PATTERNS[kind].pattern
        line = re.sub(regex, replace, line)
    assert line == "tensor at <memory address> on rank <process id> via <local port>"
    assert not [kind for kind, _ in hygiene.unstable_fragments(line)]
    assert hygiene.unstable_fragments("PID: 12")  # case-insensitive, in the pattern itself (nbval passes no flags)
