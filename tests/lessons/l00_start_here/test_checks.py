"""Lesson 00's checkers: the reference passes; plausible wrong answers fail, each with a message naming the mistake."""

import random
import re

import numpy as np
import pytest
import torch

from conftest import Wrong, checker_tests
from verlstudy.kit.exercises import find_checker


def seeded_sample(seed, n):
    return torch.randn(n, generator=torch.Generator().manual_seed(seed))


def _global_seed(seed, n):
    torch.manual_seed(seed)
    return torch.randn(n)


_SHARED = torch.Generator().manual_seed(0)


def _shared_generator(seed, n):
    return torch.randn(n, generator=_SHARED)  # one generator for every call: the seed is never applied


def _forked(seed, n):
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return torch.randn(n)


def _normal_(seed, n):
    g = torch.Generator()
    g.manual_seed(seed)
    return torch.empty(n).normal_(generator=g)


FORMS = [
    r"0x[0-9a-fA-F]{6,}",
    r"\b\d+(?:\.\d+)?\s?(?:s|ms|us)\b",
    r"\b\d{4}-\d\d-\d\d(?:T\d\d:\d\d)?",
    r"/tmp/[\w./-]+",
    r"\bpid \d+",
    r"(?:127\.0\.0\.1|localhost):\d+",
]


def find_unstable(text):
    return [m.group(0) for f in FORMS for m in re.finditer(f, text)]


def _one_regex(text):
    return re.findall("|".join(f"(?:{f})" for f in FORMS), text)


def _by_position(text):
    found = [(m.start(), m.group(0)) for f in FORMS for m in re.finditer(f, text)]
    return tuple(frag for _, frag in sorted(found))


def _first_only(text):
    return [m.group(0) for f in FORMS if (m := re.search(f, text))]


def _every_number(text):
    return re.findall(r"\d+(?:\.\d+)?\s?\w*", text)


def _no_ms(text):
    forms = [f.replace("(?:s|ms|us)", "s") for f in FORMS]
    return [m.group(0) for f in forms for m in re.finditer(f, text)]


def _groups(text):
    return re.findall(r"(0x)[0-9a-f]{6,}|(\d+ ?m?s)\b", text)  # findall with groups returns tuples


def _example_only(text):
    return ["0x7f3a2b1c9d40"] if "0x7f3a2b1c9d40" in text else []


def _no_ports(text):
    return [m.group(0) for f in FORMS[:-1] for m in re.finditer(f, text)]


def _lowercase_hex(text):
    forms = [r"0x[0-9a-f]{6,}", *FORMS[1:]]
    return [m.group(0) for f in forms for m in re.finditer(f, text)]


_KEPT = {}


def _generator_kept(seed, n):
    if "g" not in _KEPT:
        _KEPT["g"] = torch.Generator().manual_seed(seed)  # made once, on the first call's seed
    return torch.randn(n, generator=_KEPT["g"])


def _hex_bounded(text):  # an upper bound on the digits cuts a 16-digit address
    forms = [r"0x[0-9a-fA-F]{6,12}", *FORMS[1:]]
    return [m.group(0) for f in forms for m in re.finditer(f, text)]


def _pid_digits(text):  # a group: the digits without the word "pid"
    return [m.group(0) for f in FORMS[:4] + FORMS[5:] for m in re.finditer(f, text)] + re.findall(r"\bpid (\d+)", text)


def _numpy_as_a_tensor(seed, n):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(n))


_CACHED = {}


def _reseeded_on_a_new_seed(seed, n):  # one generator, made again only when the seed changes
    if _CACHED.get("seed") != seed:
        _CACHED.update(seed=seed, generator=torch.Generator().manual_seed(seed))
    return torch.randn(n, generator=_CACHED["generator"])


def _with_context(text):
    return [m.group(0) for m in re.finditer(r"(?:took|at|on|to) \S+", text)]


WRONG = {
    "0.1": [
        Wrong(_global_seed, "global RNG", "seeds the global RNG"),
        Wrong(lambda seed, n: torch.randn(n), "global stream", "no seed at all"),
        Wrong(lambda seed, n: seeded_sample(0, n), "seed parameter is not used", "a constant seed"),
        Wrong(lambda seed, n: seeded_sample(seed, 5), "is the parameter n", "n ignored (the example's 5)"),
        Wrong(lambda seed, n: torch.rand(n, generator=torch.Generator().manual_seed(seed)), "uniform", "uniform draws"),
        Wrong(lambda seed, n: np.random.default_rng(seed).standard_normal(n), "numpy", "numpy's RNG"),
        Wrong(lambda seed, n: [random.Random(seed).gauss(0, 1) for _ in range(n)], "Python's random", "Python's RNG"),
        Wrong(
            lambda seed, n: torch.randn(n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64),
            "float32",
            "another dtype",
        ),
        Wrong(lambda seed, n: seeded_sample(seed + 1, n), "which seed", "seed off by one"),
        Wrong(_shared_generator, "different numbers", "one generator shared by every call"),
        Wrong(_generator_kept, "kept from an earlier call", "a generator made on the first call, kept for later"),
        Wrong(_numpy_as_a_tensor, "numpy's draws", "numpy's RNG, wrapped with torch.from_numpy"),
        Wrong(_reseeded_on_a_new_seed, "the same seed gave different numbers", "reseeded only on a new seed"),
        Wrong(_forked, "seeds one of torch's global generators", "the global generator seeded inside fork_rng"),
    ],
    "0.2": [
        Wrong(_every_number, "stable text", "flags every number"),
        Wrong(lambda t: [], "missed", "finds nothing"),
        Wrong(lambda t: "", "list", "a string"),
        Wrong(_first_only, "first match", "first match only"),
        Wrong(_no_ms, "missed", "only whole seconds"),
        Wrong(_groups, "whole match", "regex groups returned"),
        Wrong(_example_only, "missed", "the notebook's example only"),
        Wrong(_no_ports, "missed", "ports forgotten"),
        Wrong(_with_context, ("not exactly", "holds more than"), "the word before included"),
        Wrong(lambda t: set(find_unstable(t)) or None, "list", "None for stable text"),
        Wrong(_lowercase_hex, "uppercase", "addresses in lowercase hex only"),
        Wrong(_hex_bounded, "only part of the changing fragment '0x00007f3a2b1c9d40'", "at most 12 hex digits"),
        Wrong(_pid_digits, "'4242' is only part of the changing fragment 'pid 4242'", "the pid's digits only"),
    ],
}

RIGHT = {
    "0.1": [
        _normal_,
        lambda seed, n: torch.normal(0.0, 1.0, (n,), generator=torch.Generator().manual_seed(seed)),
    ],
    "0.2": [_one_regex, _by_position, lambda t: set(find_unstable(t))],
}

test_wrong_answers_fail_naming_the_mistake, test_right_answers_written_differently_pass = checker_tests(WRONG, RIGHT)


def test_0_1_accepts_a_private_generator():
    assert "named cases" in find_checker("0.1")(seeded_sample)


def test_0_2_refuses_a_wrapper_around_the_kits_own_detector(assert_wrong):
    from verlstudy.kit.hygiene import unstable_fragments

    assert_wrong("0.2", lambda t: [f for _, f in unstable_fragments(t)], mentions="library's own unstable_fragments")


@pytest.mark.parametrize(
    ("exercise_id", "answer"),
    [("0.1", lambda fn: (fn,)), ("0.2", lambda fn: (fn,))],
)
def test_no_course_function_passes(assert_mechanism_does_not_pass, exercise_id, answer):
    assert assert_mechanism_does_not_pass(exercise_id, "verlstudy.lessons.l00_start_here", answer=answer) > 5


def test_0_2_a_pids_digits_are_not_called_stable_text(assert_wrong):
    verdict = assert_wrong("0.2", _pid_digits, mentions="only part of")
    assert "stable text" not in verdict, verdict


def test_0_1_numpys_draws_in_a_tensor_are_not_called_a_dtype_mistake(assert_wrong):
    verdict = assert_wrong("0.1", _numpy_as_a_tensor, mentions="numpy")
    assert "float32 is asked" not in verdict, verdict


def test_an_answer_keeping_only_the_first_fragment_of_a_line_is_told_so(assert_wrong):
    # a learner's review: re.search instead of a search for every match was told it "missed a date with a time"
    import re

    kinds = r"0x[0-9a-fA-F]{6,16}|\d+(?:\.\d+)? ?(?:ms|us|s)\b|\d{4}-\d\d-\d\d(?:T\d\d:\d\d)?|/tmp/\S+|pid \d+"
    kinds += r"|(?:127\.0\.0\.1|localhost):\d+"

    def first_only(line):
        match = re.search(kinds, line)
        return [match.group()] if match else []

    assert_wrong("0.2", first_only, mentions="is only the first fragment of a line kept?")
