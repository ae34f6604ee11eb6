"""Lesson 04's parameters, validated in one place (the notebook's set-up cell calls `check_parameters`)."""

from __future__ import annotations

from verlstudy.kit.params import check_int


def check_parameters(tp: object, cp: object, hidden: object, vocab_size: object) -> dict[str, int]:
    """The lesson's parameters, checked; a bad value raises ValueError/TypeError naming it and what is allowed.

    The device and the seed are not among them: the set-up cell picks the device before this and passes the seed
    to `kit.lesson_start.start_lesson` after it, as every lesson does.
    """
    return {
        "tp": check_int("tp", tp, minimum=1, maximum=8),
        "cp": check_int("cp", cp, minimum=1, maximum=4),
        "hidden": check_int("hidden", hidden, minimum=1, maximum=1024),
        "vocab_size": check_int("vocab_size", vocab_size, minimum=2, maximum=100_000),
    }
