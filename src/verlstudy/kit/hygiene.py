"""What makes a notebook's output change from run to run: the patterns nbval would trip over.

This is the one list: `tests/nbval_sanitize.cfg` (nbval's replacements) is written from it by
`nbval_sanitize_config()`, and a test keeps the file equal to what that returns.
"""

from __future__ import annotations

import re

from verlstudy.kit.params import check_str

# Each pattern is something that differs between two honest runs of the same notebook.
UNSTABLE_PATTERNS: dict[str, re.Pattern[str]] = {
    "memory address": re.compile(r"0x[0-9a-fA-F]{6,}"),
    "timing": re.compile(r"\b\d+(?:\.\d+)?\s?(?:s|ms|us|µs|it/s)\b"),
    "date or time": re.compile(r"\b\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d)?)?"),
    "temporary path": re.compile(r"/tmp/[\w./-]+|/var/folders/[\w./-]+"),
    "process id": re.compile(r"(?i)\bpid[ =:]\s?\d+"),
    "local port": re.compile(r"(?:127\.0\.0\.1|localhost):\d{2,5}"),
}


# Stored outputs may hold these (a gloo rank's port, an object's address); nbval replaces them before it compares.
# The others (timings, dates, temporary paths) must not reach a checked output at all.
SANITIZED_BY_NBVAL = ("memory address", "process id", "local port")


def nbval_sanitize_config() -> str:
    """The text of tests/nbval_sanitize.cfg: one section per pattern nbval replaces, taken from UNSTABLE_PATTERNS."""
    sections = [
        f"[{kind}]\nregex: {UNSTABLE_PATTERNS[kind].pattern}\nreplace: <{kind}>\n" for kind in SANITIZED_BY_NBVAL
    ]
    header = "# Written from verlstudy.kit.hygiene (nbval_sanitize_config); edit the patterns there, not here.\n"
    return header + "\n".join(sections)


def unstable_fragments(text: str) -> list[tuple[str, str]]:
    """(kind, fragment) for every piece of `text` that would make nbval fail on the next run."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    found: list[tuple[int, str, str]] = []
    for kind, pattern in UNSTABLE_PATTERNS.items():
        found += [(m.start(), kind, m.group(0)) for m in pattern.finditer(text)]
    return [(kind, fragment) for _, kind, fragment in sorted(found)]


def sanitize(text: str) -> str:
    """`text` with every unstable fragment replaced by `<kind>`, e.g. `took <timing>`."""
    check_str("text", text)
    for kind, pattern in UNSTABLE_PATTERNS.items():
        text = pattern.sub(f"<{kind}>", text)
    return text
