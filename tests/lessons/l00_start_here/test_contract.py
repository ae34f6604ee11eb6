"""Lesson 00's checkers test a contract: new wrong answers of other classes fail, right ones written otherwise pass.

0.1's classes: a global generator seeded or drawn from with its state put back (fork_rng, a saved state, the
default generator by name), Python's or numpy's global stream moved, a result kept or refilled between calls,
a result that requires grad, seeds folded into a smaller range, draws made one by one or in float64. 0.2's: a
form too loose (short hex, a unit that is the start of a word) or too tight (no decimals, one host, a fixed
number of port digits), fragments named twice, punctuation kept, whitespace tokens, the first match only.
"""

from __future__ import annotations

import random
import re
import time
from collections import Counter

import numpy as np
import pytest
import torch

from conftest import Wrong, checker_tests, verdict_of
from verlstudy.kit.exercises import check_exercise, exercise_hint, exercise_results

# ---------------------------------------------------------------- 0.1


def _own(seed):
    return torch.Generator().manual_seed(seed)


def restore_around_manual_seed(seed, n):
    state = torch.get_rng_state()
    torch.manual_seed(seed)
    x = torch.randn(n)
    torch.set_rng_state(state)
    return x


def fork_no_devices(seed, n):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return torch.randn(n)


def default_generator_swapped(seed, n):
    saved = torch.default_generator.get_state()
    torch.default_generator.set_state(_own(seed).get_state())
    x = torch.randn(n)
    torch.default_generator.set_state(saved)
    return x


def default_generator_by_name(seed, n):
    saved = torch.default_generator.get_state()
    torch.default_generator.manual_seed(seed)
    x = torch.randn(n, generator=torch.default_generator)
    torch.default_generator.set_state(saved)
    return x


def cuda_seeded_too(seed, n):
    torch.cuda.manual_seed_all(seed)  # "so GPU cells agree as well"
    return torch.randn(n, generator=_own(seed))


def numpy_seeded_too(seed, n):
    np.random.seed(seed % 2**32)
    return torch.randn(n, generator=_own(seed))


def python_seeded_too(seed, n):
    random.seed(seed)
    return torch.randn(n, generator=_own(seed))


_CACHE = {}


def cached_per_call(seed, n):
    if (seed, n) not in _CACHE:
        _CACHE[(seed, n)] = torch.randn(n, generator=_own(seed))
    return _CACHE[(seed, n)]


_BUFFER = torch.empty(8192)


def one_buffer_refilled(seed, n):
    out = _BUFFER[:n]
    torch.randn(n, generator=_own(seed), out=out)
    return out


def requires_grad(seed, n):
    return torch.randn(n, generator=_own(seed), requires_grad=True)


def seed_folded_to_31_bits(seed, n):
    return torch.randn(n, generator=_own(seed % 2**31))


def one_by_one(seed, n):
    g = _own(seed)
    return torch.cat([torch.randn(1, generator=g) for _ in range(n)])


def drawn_in_float64(seed, n):
    return torch.randn(n, generator=_own(seed), dtype=torch.float64).float()


def reseeded_after(seed, n):
    x = torch.randn(n, generator=_own(seed))
    torch.manual_seed(torch.initial_seed())  # "put the global seed back"
    return x


_MODULE_GENERATOR = torch.Generator()


def module_generator_reseeded(seed, n):
    _MODULE_GENERATOR.manual_seed(seed)
    return torch.randn(n, generator=_MODULE_GENERATOR)


def normal_with_sizes(seed, n):
    return torch.normal(mean=0.0, std=1.0, size=(n,), generator=_own(seed))


def row_of_a_matrix(seed, n):
    return torch.randn(1, n, generator=_own(seed), dtype=torch.float32, device="cpu")[0]


# ---------------------------------------------------------------- 0.2

FORMS = {
    "address": r"0x[0-9a-fA-F]{6,}",
    "duration": r"\b\d+(?:\.\d+)?\s?(?:s|ms|us)\b",
    "date": r"\b\d{4}-\d\d-\d\d(?:T\d\d:\d\d)?",
    "path": r"/tmp/[\w./-]+",
    "pid": r"\bpid \d+",
    "port": r"(?:127\.0\.0\.1|localhost):\d+",
}


def _with(**changed):
    forms = {**FORMS, **changed}

    def find(text):
        return [m.group(0) for form in forms.values() for m in re.finditer(form, text)]

    return find


def twice_over(text):
    once = _with()(text)
    return once + re.findall("|".join(f"(?:{f})" for f in FORMS.values()), text)


def punctuation_kept(text):
    return [m.group(0) for form in FORMS.values() for m in re.finditer(r"[(\[=]?" + form + r"[)\],;.]?", text)]


def whitespace_tokens(text):
    found = []
    for token in text.split():
        if any(re.fullmatch(form, token) for form in FORMS.values()):
            found.append(token)
    return found


def first_of_each(text):
    return [m.group(0) for form in FORMS.values() if (m := re.search(form, text))]


def lowercased_first(text):
    return _with()(text.lower())


def right_by_alternation(text):
    pattern = re.compile("|".join(f"(?:{f})" for f in FORMS.values()))
    return {m.group(0) for m in pattern.finditer(text)}


def right_loose_path(text):
    forms = [f for k, f in FORMS.items() if k != "path"] + [r"/tmp/\S+"]
    return tuple(m.group(0) for f in forms for m in re.finditer(f, text))


def right_lookarounds(text):
    forms = [
        r"(?i:0x[0-9a-f]{6,})",
        r"(?<![\w.])\d+(?:\.\d+)? ?(?:ms|us|s)(?![\w])",
        r"(?<!\d)\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2})?",
        r"/tmp/[^\s]+",
        r"\bpid\s\d+",
        r"(?:127\.0\.0\.1|localhost):[0-9]+",
    ]
    found = []
    for form in forms:
        found.extend(re.findall(form, text))
    return list(dict.fromkeys(found))


def right_strip_tokens(text):  # each fragment read by position, then its kind checked whole
    spans = []
    for form in FORMS.values():
        spans += [(m.start(), m.group(0)) for m in re.finditer(form, text)]
    return [fragment for _, fragment in sorted(spans)]


WRONG = {
    "0.2": [
        Wrong(_with(address=r"0x[0-9a-fA-F]+"), "fewer than 6 hex digits", why="short hex taken for an address"),
        Wrong(_with(duration=r"\d+(?:\.\d+)?\s?(?:s|ms|us)"), "stable count", why="a unit that starts a word"),
        Wrong(_with(duration=r"\b\d+\s?(?:s|ms|us)\b"), "only part of", why="durations without decimals"),
        Wrong(_with(duration=r"\b\d+(?:\.\d+)?\s?(?:s|ms)\b"), "microseconds", why="no us"),
        Wrong(_with(duration=r"\b\d+(?:\.\d+)?(?:s|ms|us)\b"), ("space before the unit", "part"), why="no space"),
        Wrong(_with(port=r"127\.0\.0\.1:\d+"), "local port on localhost", why="one host only"),
        Wrong(_with(port=r"(?:127\.0\.0\.1|localhost):\d{4,5}"), "missed", why="ports of 4 or 5 digits only"),
        Wrong(_with(path=r"/tmp/\w+"), "only part of", why="a path cut at its first slash or dot"),
        Wrong(_with(date=r"\b\d{4}-\d\d-\d\dT\d\d:\d\d"), ("a date", "missed"), why="dates with a time only"),
        Wrong(twice_over, "more times than it occurs", why="two passes, every fragment named twice"),
        Wrong(punctuation_kept, "more than the changing fragment", why="the punctuation around kept"),
        Wrong(whitespace_tokens, "missed", why="whitespace-separated tokens matched whole"),
        Wrong(first_of_each, "first match", why="re.search, one per kind"),
        Wrong(lowercased_first, "exactly as it stands", why="the line lowercased before matching"),
    ],
    "0.1": [
        Wrong(restore_around_manual_seed, "seeds one of torch's global generators", why="state put back"),
        Wrong(fork_no_devices, "seeds one of torch's global generators", why="fork_rng(devices=[])"),
        Wrong(default_generator_swapped, "draws from the global stream", why="global state swapped in and out"),
        Wrong(default_generator_by_name, "draws from the global stream", why="the default generator by name"),
        Wrong(cuda_seeded_too, "seeds one of torch's global generators", why="CUDA's generators seeded"),
        Wrong(numpy_seeded_too, "numpy's global", why="numpy's global stream seeded"),
        Wrong(python_seeded_too, "Python's random", why="Python's global stream seeded"),
        Wrong(cached_per_call, "kept from an earlier call", why="one tensor per (seed, n), handed out again"),
        Wrong(one_buffer_refilled, "one buffer filled again", why="one buffer refilled by each call"),
        Wrong(requires_grad, "requires grad", why="a sample that requires grad"),
        Wrong(seed_folded_to_31_bits, "which seed", why="seeds above 2**31 folded"),
        Wrong(one_by_one, "which seed, which generator", why="n draws of one value each"),
        Wrong(drawn_in_float64, "which seed, which generator", why="float64 draws rounded to float32"),
        Wrong(reseeded_after, ("moved the global RNG", "seeds one of"), why="the global seed set again"),
    ],
}
RIGHT = {
    "0.1": [module_generator_reseeded, normal_with_sizes, row_of_a_matrix],
    "0.2": [right_by_alternation, right_loose_path, right_lookarounds, right_strip_tokens],
}
test_new_wrong_answers_fail, test_new_right_answers_pass = checker_tests(WRONG, RIGHT)


def test_0_1_a_wrong_answer_leaves_every_global_stream_as_it_was() -> None:
    cpu, py, npy = torch.get_rng_state(), random.getstate(), np.random.get_state()[1].copy()
    seed_before = torch.initial_seed()
    for answer in (numpy_seeded_too, python_seeded_too, lambda seed, n: (torch.manual_seed(seed), torch.randn(n))[1]):
        assert verdict_of("0.1", answer) != "correct"
    assert torch.equal(cpu, torch.get_rng_state()) and torch.initial_seed() == seed_before
    assert random.getstate() == py and np.array_equal(np.random.get_state()[1], npy)


def test_0_1_the_seeding_functions_are_put_back_after_a_check() -> None:
    originals = (torch.manual_seed, torch.random.manual_seed, torch.cuda.manual_seed_all, torch.seed)
    verdict_of("0.1", restore_around_manual_seed)
    assert (torch.manual_seed, torch.random.manual_seed, torch.cuda.manual_seed_all, torch.seed) == originals


def test_0_1_the_generated_inputs_reach_the_whole_seed_range_and_both_sampling_paths() -> None:
    from hypothesis import given, settings

    from verlstudy.lessons.l00_start_here.checks import _sample_inputs

    seen = {"high seed": 0, "short": 0, "long": 0}

    @settings(max_examples=30, derandomize=True, database=None)
    @given(_sample_inputs())
    def record(args) -> None:
        seed, n = args
        seen["high seed"] += seed >= 2**31
        seen["short"] += n < 16
        seen["long"] += n >= 16

    record()
    assert min(seen.values()) >= 3, seen


def test_0_2_the_lines_a_check_reads_hold_every_form_look_alikes_punctuation_and_repeats() -> None:
    from hypothesis import given, settings

    from verlstudy.lessons.l00_start_here.checks import UNSTABLE_CASES, _reference_unstable
    from verlstudy.lessons.l00_start_here.unstable_judging import kind_of, line_inputs

    seen: Counter = Counter()

    @settings(max_examples=80, derandomize=True, database=None)
    @given(line_inputs())
    def record(args) -> None:
        (text,) = args
        found = _reference_unstable(text)
        kinds = Counter(kind_of(f) for f in found)
        seen.update(f"two {k}s" for k, count in kinds.items() if count >= 2)
        seen["repeat"] += len(found) != len(set(found))
        seen["look-alike"] += bool(re.search(r"0x[0-9a-f]{1,5}\b|\d (?:steps|users|msgs|samples|shards)", text))
        for fragment in found:
            at = text.find(fragment)
            seen["punctuated"] += at > 0 and text[at - 1] in "([="
            if fragment.startswith("0x"):
                seen["uppercase hex"] += any(c in "ABCDEF" for c in fragment)
                seen["more than 12 hex digits"] += len(fragment) > 14
            elif kind_of(fragment) == "duration":
                seen[re.search(r"(ms|us|s)$", fragment).group(1)] += 1
                seen["decimals"] += "." in fragment
                seen["unit without a space"] += " " not in fragment
            elif kind_of(fragment) == "date":
                seen["with a time" if "T" in fragment else "date alone"] += 1
            elif kind_of(fragment) == "local port":
                seen[fragment.split(":")[0]] += 1
        # every reading the exercise allows agrees on every line drawn: the lines hold no ambiguous spot
        assert sorted(right_lookarounds(text)) == sorted(set(found))
        assert sorted(right_loose_path(text)) == found

    record()
    for case in UNSTABLE_CASES:  # the named lines are read first: together they hold every form
        record.hypothesis.inner_test(case.args)
    wanted = [f"two {k}s" for k in ("memory address", "duration", "date", "temporary path", "process id", "local port")]
    wanted += ["repeat", "look-alike", "punctuated", "uppercase hex", "more than 12 hex digits", "s", "ms", "us"]
    wanted += ["decimals", "unit without a space", "with a time", "date alone", "127.0.0.1", "localhost"]
    assert all(seen[w] >= 2 for w in wanted), {w: seen[w] for w in wanted if seen[w] < 2}


@pytest.mark.parametrize("exercise_id", ["0.1", "0.2"])
def test_no_rung_before_the_solution_reads_the_code(exercise_id, capsys) -> None:
    exercise_hint(exercise_id)
    hints = capsys.readouterr().out
    assert "a question first" in hints
    for code in ("torch.Generator", "generator=", "manual_seed(", "[0-9", "\\d", "finditer"):
        assert code not in hints, (exercise_id, code)


def test_each_check_is_quick() -> None:
    for exercise_id, answer in (("0.1", normal_with_sizes), ("0.2", right_by_alternation)):
        start = time.process_time()
        check_exercise(exercise_id, answer)
        assert exercise_results()[exercise_id] == "correct"
        assert time.process_time() - start < 1.0  # CPU, not wall: a loaded machine does not fail it
