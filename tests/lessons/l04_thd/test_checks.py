"""Lesson 04's checkers: the references pass; plausible wrong answers fail, each with a message naming the mistake."""

import math
import time

import pytest
import torch

from conftest import Wrong, checker_tests, verdict_of
from verlstudy.kit.exercises import check_exercise, exercise_results, find_checker


def alignment(tp, cp):
    return tp * cp * 2 if cp > 1 else tp


def up_to(n, multiple):
    return -(-n // multiple) * multiple


def reference_packed_length(lengths, tp, cp):
    return sum(up_to(n, alignment(tp, cp)) for n in lengths)


def reference_split_guard(split_fn, seq_len, cp):
    rows = torch.arange(seq_len)
    chunk = seq_len // (2 * cp) if cp > 1 else seq_len
    for rank in range(cp):
        pieces = (rank, 2 * cp - 1 - rank) if cp > 1 else (0,)
        want = [p for c in pieces for p in range(c * chunk, (c + 1) * chunk)]
        got = split_fn(rows, cp, rank).tolist()
        assert got == want, f"rank {rank} holds {got}, zigzag gives {want}"


def batch(lengths):
    start, seqs = 1, []
    for n in lengths:
        seqs.append(torch.arange(start, start + n))
        start += n
    return torch.nested.nested_tensor(seqs, layout=torch.jagged)


def reference_padding_guard(pad_fn, cases=(([7, 4, 9], 2, 1), ([7, 4, 9], 2, 2), ([5, 13], 4, 2), ([3], 3, 3))):
    for lengths, tp, cp in cases:
        ids = batch(lengths)
        padded, mask = pad_fn(ids, 0, tp, cp)
        length = padded.shape[1]
        assert length >= max(lengths) and length % alignment(tp, cp) == 0, f"S={length} at tp={tp}, cp={cp}"
        assert mask.sum(dim=1).tolist() == lengths, "the mask must mark exactly the real tokens"
        assert torch.equal(padded[mask], ids.values()), "real tokens must stay where they were"


def stub(*args):
    raise NotImplementedError("exercise")


# ---------------------------------------------------------------- 4.1 the packed THD length


def packed_with_ceil(lengths, tp, cp):  # right: ceiling division, alignment by an if
    align = max(tp, 2 * tp * cp * (cp > 1))
    return sum(-(-n // align) * align for n in lengths)


def packed_with_loop(lengths, tp, cp):  # right: count up token by token
    align = tp * cp * 2 if cp > 1 else tp
    total = 0
    for n in lengths:
        while n % align:
            n += 1
        total += n
    return total


def rectangle(lengths, tp, cp):
    return len(lengths) * up_to(max(lengths), alignment(tp, cp))


def per_rank(lengths, tp, cp):
    return reference_packed_length(lengths, tp, cp) // cp


def rounds_down(lengths, tp, cp):
    return sum(n - n % alignment(tp, cp) for n in lengths)


def as_float(lengths, tp, cp):
    return float(reference_packed_length(lengths, tp, cp))


def hard_coded(lengths, tp, cp):  # the notebook's worked case only
    return 24 if cp > 1 else 22


def first_only(lengths, tp, cp):
    return up_to(lengths[0], alignment(tp, cp))


def ignores_tp(lengths, tp, cp):
    return sum(up_to(n, 2 * cp if cp > 1 else 1) for n in lengths)


def factor_two_always(lengths, tp, cp):  # the zigzag's factor even without CP
    return sum(up_to(n, 2 * tp * cp) for n in lengths)


def extra_block(lengths, tp, cp):  # an aligned length still gets one more block
    return sum((n // alignment(tp, cp) + 1) * alignment(tp, cp) for n in lengths)


def swapped(lengths, tp, cp):
    return reference_packed_length(lengths, cp, tp)


def first_padded_rest_raw(lengths, tp, cp):
    return up_to(lengths[0], alignment(tp, cp)) + sum(lengths[1:])


def sorts_input(lengths, tp, cp):
    lengths.sort()
    return reference_packed_length(lengths, tp, cp)


def least_alignment(lengths, tp, cp):  # section 3's lcm(2*cp, tp*cp), not the product verl pads to
    align = math.lcm(2 * cp, tp * cp) if cp > 1 else tp
    return sum(up_to(n, align) for n in lengths)


# ---------------------------------------------------------------- 4.2 a guard for the CP split


def split_guard_by_chunks(split_fn, seq_len, cp):  # right: compares chunk tensors, not lists
    rows = torch.arange(seq_len)
    chunks = rows.chunk(2 * cp) if cp > 1 else (rows,)
    for rank in range(cp):
        want = torch.cat([chunks[rank], chunks[2 * cp - 1 - rank]]) if cp > 1 else rows
        got = split_fn(rows, cp, rank)
        assert torch.equal(got, want), f"rank {rank}: {got.tolist()} != {want.tolist()}"


def never_fails(split_fn, seq_len, cp):
    return None


def coverage_only(split_fn, seq_len, cp):
    held = torch.cat([split_fn(torch.arange(seq_len), cp, r) for r in range(cp)])
    assert sorted(held.tolist()) == list(range(seq_len)), "a row is missing or held twice"


def sets_only(split_fn, seq_len, cp):
    chunk = seq_len // (2 * cp) if cp > 1 else seq_len
    for r in range(cp):
        pieces = (r, 2 * cp - 1 - r) if cp > 1 else (0,)
        want = {p for c in pieces for p in range(c * chunk, (c + 1) * chunk)}
        assert set(split_fn(torch.arange(seq_len), cp, r).tolist()) == want, f"rank {r} holds other rows"


def rank_zero_only(split_fn, seq_len, cp):
    reference_split_guard(lambda rows, c, r: split_fn(rows, c, 0) if r == 0 else _zig(rows, c, r), seq_len, cp)


def skips_last_rank(split_fn, seq_len, cp):
    reference_split_guard(lambda rows, c, r: split_fn(rows, c, r) if r < c - 1 else _zig(rows, c, r), seq_len, cp)


def ends_only(split_fn, seq_len, cp):  # checks the first and the last rank
    reference_split_guard(lambda rows, c, r: split_fn(rows, c, r) if r in (0, c - 1) else _zig(rows, c, r), seq_len, cp)


def always_fails(split_fn, seq_len, cp):
    raise AssertionError("nope")


def crashes(split_fn, seq_len, cp):
    return split_fn(list(range(seq_len)), cp, 0).shape  # a list has no .chunk


def chunk_starts_only(split_fn, seq_len, cp):  # right chunks by their first row: order inside unchecked
    chunk = seq_len // (2 * cp) if cp > 1 else seq_len
    for r in range(cp):
        got = split_fn(torch.arange(seq_len), cp, r)
        pieces = (r, 2 * cp - 1 - r) if cp > 1 else (0,)
        assert sorted(got.tolist())[::chunk] == [c * chunk for c in sorted(pieces)], f"rank {r}: other chunks"


def bare_assert(split_fn, seq_len, cp):  # the right comparison, but no message to say which rank holds what
    try:
        reference_split_guard(split_fn, seq_len, cp)
    except AssertionError:
        raise AssertionError from None


def fixed_rows(split_fn, seq_len, cp):  # seq_len ignored: always 16 rows
    reference_split_guard(split_fn, 16, cp)


def skips_cp_one(split_fn, seq_len, cp):
    if cp > 1:
        reference_split_guard(split_fn, seq_len, cp)


def own_length(split_fn, seq_len, cp):  # seq_len ignored: always 4*cp rows, where every split it knows is right
    reference_split_guard(split_fn, 4 * cp, cp)


def returns_false(split_fn, seq_len, cp):  # the right comparison, but a bad split only makes it return False
    try:
        reference_split_guard(split_fn, seq_len, cp)
    except AssertionError:
        return False
    return True


def prints_problem(split_fn, seq_len, cp):  # the right comparison, but a bad split is only printed
    try:
        reference_split_guard(split_fn, seq_len, cp)
    except AssertionError as e:
        print(f"split problem: {e}")


def _zig(rows, cp, rank):
    if cp == 1:
        return rows
    chunks = rows.chunk(2 * cp)
    return torch.cat([chunks[rank], chunks[2 * cp - 1 - rank]])


# ---------------------------------------------------------------- 4.3 the guard test for the padding


def padding_guard_loop(pad_fn):  # right, written differently: per row, token by token
    for lengths, tp, cp in (([2, 9], 2, 1), ([10, 3, 1], 2, 2), ([7], 3, 2), ([5, 6], 3, 1)):
        ids = batch(lengths)
        padded, mask = pad_fn(ids, 0, tp, cp)
        width = padded.shape[1]
        assert width >= max(lengths), "a real token was cut off"
        assert width % (2 * tp * cp if cp > 1 else tp) == 0, f"{width} does not split over tp={tp}, cp={cp}"
        for row, seq in enumerate(ids.unbind()):
            assert mask[row].tolist() == [i < len(seq) for i in range(width)], f"row {row}: the mask is off"
            assert padded[row, : len(seq)].tolist() == seq.tolist(), f"row {row}: tokens moved"


def no_cp(pad_fn):
    reference_padding_guard(pad_fn, cases=(([7, 4, 9], 2, 1), ([5], 4, 1)))


def sp_only(pad_fn):
    for tp, cp in ((2, 1), (2, 2), (4, 2)):
        padded, _ = pad_fn(batch([7, 4, 9]), 0, tp, cp)
        assert padded.shape[1] % alignment(tp, cp) == 0


def aligned_inputs_only(pad_fn):
    reference_padding_guard(pad_fn, cases=(([3, 8], 2, 2), ([4], 2, 1)))


def exact_length(pad_fn):  # too strict: only 0.9.1's exact length is accepted, at TP=2 without CP
    padded, _ = pad_fn(batch([7, 4, 9]), 0, 2, 1)
    assert padded.shape[1] == 10


def one_sequence_only(pad_fn):
    reference_padding_guard(pad_fn, cases=(([9], 2, 1), ([7], 2, 2), ([5], 3, 3)))


def mask_counts_only(pad_fn):  # alignment and mask counts, never where the tokens are
    for lengths, tp, cp in (([7, 4, 9], 2, 1), ([7, 4, 9], 2, 2), ([5, 13], 3, 2)):
        padded, mask = pad_fn(batch(lengths), 0, tp, cp)
        assert padded.shape[1] >= max(lengths) and padded.shape[1] % alignment(tp, cp) == 0
        assert mask.sum(dim=1).tolist() == lengths


def first_row_tokens_only(pad_fn):  # token placement checked on row 0 only
    for lengths, tp, cp in (([7, 4, 9], 2, 1), ([7, 4, 9], 2, 2), ([5, 13], 3, 2)):
        ids = batch(lengths)
        padded, mask = pad_fn(ids, 0, tp, cp)
        assert padded.shape[1] >= max(lengths) and padded.shape[1] % alignment(tp, cp) == 0, "not aligned"
        assert mask.sum(dim=1).tolist() == lengths, "mask rows miscounted"
        assert torch.equal(padded[0][mask[0]], ids[0]), "row 0's tokens moved"


def even_tp_only(pad_fn):
    reference_padding_guard(pad_fn, cases=(([7, 4, 9], 2, 1), ([7, 4, 9], 2, 2), ([5, 13], 4, 2)))


def never_passes_none(pad_fn):
    return None


def pad_guard_returns_false(pad_fn):  # the right checks, but a bad padding is only printed, then False returned
    try:
        reference_padding_guard(pad_fn)
    except AssertionError as e:
        print("padding problem:", e)
        return False
    return None


def pad_guard_prints(pad_fn):  # the right checks, but a bad padding is only printed
    try:
        reference_padding_guard(pad_fn)
    except AssertionError as e:
        print("padding problem:", e)


def chatty_no_cp(pad_fn):  # prints on every call, right or wrong: its mistake is the missing CP case, not the print
    print("checking a padding")
    reference_padding_guard(pad_fn, cases=(([7, 4, 9], 2, 1), ([5], 4, 1)))


def chatty_padding_guard(pad_fn):  # right: the reference's checks, with a progress line per case
    for case in (([7, 4, 9], 2, 1), ([7, 4, 9], 2, 2), ([5, 13], 4, 2), ([3], 3, 3)):
        print("checking", case)
        reference_padding_guard(pad_fn, cases=(case,))


WRONG = {
    "4.1": [
        Wrong(rectangle, mentions="[B, L] rectangle", why="the VLM rectangle"),
        Wrong(
            lambda lengths, tp, cp: up_to(sum(lengths), alignment(tp, cp)),
            mentions="one block",
            why="aligned the total",
        ),
        Wrong(lambda lengths, tp, cp: sum(lengths), mentions="no padding at all", why="no padding"),
        Wrong(
            lambda lengths, tp, cp: sum(up_to(n, tp * cp) for n in lengths),
            mentions="factor 2",
            why="tp*cp without the zigzag factor",
        ),
        Wrong(lambda lengths, tp, cp: sum(up_to(n, tp) for n in lengths), mentions="ignores cp", why="cp ignored"),
        Wrong(ignores_tp, mentions=("ignores tp", "no padding"), why="tp ignored"),
        Wrong(per_rank, mentions="one CP rank's share", why="one rank's share"),
        Wrong(rounds_down, mentions="expected", why="rounds down"),
        Wrong(as_float, mentions="an int", why="a float where an int is asked"),
        Wrong(hard_coded, mentions="expected", why="hard-coded to the worked case"),
        Wrong(first_only, mentions="first sequence", why="first sequence only"),
        Wrong(sorts_input, mentions="changed its input", why="input mutated"),
        Wrong(factor_two_always, mentions="when cp == 1", why="the zigzag factor kept without CP"),
        Wrong(extra_block, mentions="already aligned stays", why="an aligned length gets one more block"),
        Wrong(lambda lengths, tp, cp: 32, mentions="worked case's answer", why="the worked case hard-coded"),
        Wrong(swapped, mentions="swapped tp and cp", why="tp and cp swapped"),
        Wrong(first_padded_rest_raw, mentions="counted as they are", why="first sequence padded only"),
        Wrong(least_alignment, mentions="least alignment", why="section 3's least alignment, not verl's product"),
    ],
    "4.2": [
        Wrong(never_fails, mentions="let", why="never fails"),
        Wrong(coverage_only, mentions="every row once", why="checks coverage only"),
        Wrong(sets_only, mentions="not as a set", why="ignores order within a rank"),
        Wrong(rank_zero_only, mentions="but the last", why="checks rank 0 only"),
        Wrong(skips_last_rank, mentions="but the last", why="skips the last rank"),
        Wrong(ends_only, mentions="looked at the first and last ranks only", why="checks the end ranks only"),
        Wrong(always_fails, mentions="rejected the zigzag split", why="rejects the correct split"),
        Wrong(crashes, mentions="a guard fails with AssertionError", why="crashes instead of asserting"),
        Wrong(chunk_starts_only, mentions="not as a set", why="alignment but not row placement"),
        Wrong(bare_assert, mentions="bare AssertionError", why="an assertion without a message"),
        Wrong(fixed_rows, mentions="seq_len=", why="seq_len ignored: the split's own error"),
        Wrong(skips_cp_one, mentions="when cp == 1", why="nothing checked when cp == 1"),
        Wrong(own_length, mentions="rows, not the 4 it was given", why="seq_len ignored: rows of its own"),
        Wrong(returns_false, mentions="returned False instead of raising", why="returns False instead of raising"),
        Wrong(prints_problem, mentions="printed 'split problem", why="prints instead of raising"),
    ],
    "4.3": [
        Wrong(never_passes_none, mentions="never called pad_fn", why="never fails"),
        Wrong(no_cp, mentions="ignores cp", why="tested without cp"),
        Wrong(sp_only, mentions="none of them has an odd tp", why="checks only the scatter"),
        Wrong(
            aligned_inputs_only, mentions="a longest sequence off the alignment", why="longest length already aligned"
        ),
        Wrong(exact_length, mentions="rejected", why="too strict: one exact length"),
        Wrong(one_sequence_only, mentions="none of them has several sequences", why="one-sequence batches only"),
        Wrong(mask_counts_only, mentions="where its real tokens are is wrong", why="alignment but not token placement"),
        Wrong(even_tp_only, mentions="odd tp", why="never an odd tp"),
        Wrong(first_row_tokens_only, mentions="later rows", why="token placement checked on the first row only"),
        Wrong(pad_guard_returns_false, mentions="returned False instead of raising", why="prints, returns False"),
        Wrong(pad_guard_prints, mentions="printed 'padding problem", why="prints instead of raising"),
        Wrong(chatty_no_cp, mentions="ignores cp", why="a print on every call is not named as the mistake"),
    ],
}

RIGHT = {
    "4.1": [packed_with_ceil, packed_with_loop],
    "4.2": [split_guard_by_chunks, reference_split_guard],
    "4.3": [padding_guard_loop, reference_padding_guard, chatty_padding_guard],
}

test_wrong_answers_fail_naming_the_mistake, test_right_answers_written_differently_pass = checker_tests(WRONG, RIGHT)


def test_4_1_no_first_try_prints_the_worked_case_or_its_answer():
    """The notebook asks the learner to work [7, 5, 9] at TP=2, CP=2 by hand (32): no first wrong try shows it."""
    for wrong in WRONG["4.1"]:
        verdict = verdict_of("4.1", *wrong.answer)
        assert "[7, 5, 9]" not in verdict and "expected 32 there" not in verdict, verdict


def sets_and_skips_cp_one(split_fn, seq_len, cp):  # two mistakes; the order one lets the first wrong split through
    if cp > 1:
        sets_only(split_fn, seq_len, cp)


def test_4_2_a_call_that_could_not_catch_the_split_is_not_blamed(assert_wrong):
    """Skipping cp == 1 is not why a split wrong only for cp > 1 got through: the message names no call."""
    verdict = assert_wrong("4.2", sets_and_skips_cp_one, mentions="not as a set")
    assert "never called" not in verdict and "it was given" not in verdict, verdict


def test_4_3_a_guard_that_prints_on_every_call_is_not_told_it_printed(assert_wrong):
    verdict = assert_wrong("4.3", chatty_no_cp, mentions="ignores cp")
    assert "printed" not in verdict and "instead of raising" not in verdict, verdict


@pytest.mark.parametrize("exercise_id", ["4.1", "4.2", "4.3"])
def test_a_stub_is_not_attempted(capsys, exercise_id):
    check_exercise(exercise_id, stub)
    assert exercise_results()[exercise_id] == "not attempted"
    assert capsys.readouterr().out.strip() == f"exercise {exercise_id}: not attempted"


@pytest.mark.parametrize(
    ("exercise_id", "answer"),
    [("4.1", reference_packed_length), ("4.2", reference_split_guard), ("4.3", reference_padding_guard)],
)
def test_each_checker_call_takes_under_a_second(exercise_id, answer):
    find_checker(exercise_id)(answer)  # warm: the first jagged tensor, hypothesis's imports
    start = time.process_time()  # CPU, not wall: a loaded machine slows the clock, not the checker's work
    find_checker(exercise_id)(answer)
    assert time.process_time() - start < 1.0


def test_the_library_answers_are_refused(assert_wrong):
    from verlstudy.lessons.l04_thd.thd import aligned_length, packed_thd_length, pad_nested, zigzag_split

    assert_wrong("4.1", lambda lengths, tp, cp: packed_thd_length(lengths, tp, cp), mentions="packed_thd_length")
    assert_wrong(
        "4.1", lambda lengths, tp, cp: sum(aligned_length(n, tp, cp) for n in lengths), mentions="aligned_length"
    )

    def split_oracle(split_fn, seq_len, cp):
        rows = torch.arange(seq_len)
        assert all(torch.equal(split_fn(rows, cp, r), zigzag_split(rows, cp, r)) for r in range(cp))

    assert_wrong("4.2", split_oracle, mentions="library's own zigzag_split")

    def pad_oracle(pad_fn):
        ids = batch([7, 4, 9])
        assert torch.equal(pad_fn(ids, 0, 2, 2)[0], pad_nested(ids, 0, 2, 2)[0])

    assert_wrong("4.3", pad_oracle, mentions="library's own pad_nested")


# ---------------------------------------------------------------- no course function is an answer


@pytest.mark.parametrize("exercise_id", ["4.1", "4.2", "4.3"])
def test_no_course_function_passes(assert_mechanism_does_not_pass, exercise_id):
    assert assert_mechanism_does_not_pass(exercise_id, "verlstudy.lessons.l04_thd", answer=lambda fn: (fn,)) > 5


# ---------------------------------------------------------------- what a guard did wrong, named from check_guard's data


def returns_a_verdict(pad_fn):  # returns False where it should raise
    ids = batch([7, 4, 9])
    padded, _ = pad_fn(ids, 0, 2, 2)
    return padded.shape[1] % 8 == 0


def split_verdict(split_fn, seq_len, cp):  # returns False where it should raise
    try:
        reference_split_guard(split_fn, seq_len, cp)
    except AssertionError:
        return False
    return None


def test_4_3_the_guards_mistake_is_named_on_the_implementation_check_guard_let_through():
    from verlstudy.lessons.l04_thd.guard_cases import BAD_PADS, GOOD_PADS, WatchedGuard

    run = WatchedGuard(returns_a_verdict, good=GOOD_PADS, impl_name="pad_fn")
    wrong, right = BAD_PADS[0][0], GOOD_PADS[0][0]
    run(wrong)
    run(right)  # called after the wrong one: what was let through is told, not read off the last call
    assert run.why_let_through(wrong, [(wrong,)]).startswith("on guard(pad_fn) your guard returned False instead")
    assert run.why_let_through(wrong, []) is None  # on no call it passed: nothing to name


@pytest.mark.parametrize(("exercise_id", "guard"), [("4.2", split_verdict), ("4.3", returns_a_verdict)])
def test_a_reworded_let_through_message_still_names_the_guards_mistake(monkeypatch, exercise_id, guard):
    from verlstudy.kit.guards import GuardLetThrough
    from verlstudy.lessons.l04_thd import checks

    real = checks.check_guard

    def reworded(*args, **kwargs):
        try:
            return real(*args, **kwargs)
        except GuardLetThrough as e:
            raise GuardLetThrough(f"{e.what} got past your guard", impl=e.impl, what=e.what, passed=e.passed) from None

    monkeypatch.setattr(checks, "check_guard", reworded)
    verdict = verdict_of(exercise_id, guard)
    assert " got past your guard: on guard(" in verdict and "returned False instead of raising" in verdict, verdict


@pytest.mark.parametrize("exercise_id", ["4.2", "4.3"])
def test_an_answer_that_is_not_a_function_is_named(exercise_id):
    assert verdict_of(exercise_id, 3) == "not yet right: the answer should be a function, got int"
