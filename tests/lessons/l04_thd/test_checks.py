"""Lesson 04's checkers: the references pass; plausible wrong answers fail, each with a message naming the mistake."""

import pytest
import torch

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


def test_4_1_accepts_each_sequence_aligned_then_summed():
    assert "right" in find_checker("4.1")(reference_packed_length)


def test_4_1_rejects_the_vlm_rectangle(assert_wrong):
    def rectangle(lengths, tp, cp):
        return len(lengths) * up_to(max(lengths), alignment(tp, cp))

    assert_wrong("4.1", rectangle, mentions="[B, L] rectangle of the VLM input_ids")


def test_4_1_rejects_aligning_the_total(assert_wrong):
    assert_wrong(
        "4.1",
        lambda lengths, tp, cp: up_to(sum(lengths), alignment(tp, cp)),
        mentions="aligned the sum of the lengths as one block",
    )


def test_4_1_rejects_no_padding(assert_wrong):
    assert_wrong("4.1", lambda lengths, tp, cp: sum(lengths), mentions="no padding at all")


def test_4_1_rejects_tp_times_cp_without_the_factor_two(assert_wrong):
    assert_wrong(
        "4.1", lambda lengths, tp, cp: sum(up_to(n, tp * cp) for n in lengths), mentions="misses the zigzag's factor 2"
    )


def test_4_1_rejects_ignoring_cp(assert_wrong):
    assert_wrong(
        "4.1", lambda lengths, tp, cp: sum(up_to(n, tp) for n in lengths), mentions="your alignment ignores cp"
    )


def test_4_1_rejects_one_cp_ranks_share(assert_wrong):
    def per_rank(lengths, tp, cp):
        return reference_packed_length(lengths, tp, cp) // cp

    assert_wrong("4.1", per_rank, mentions="one CP rank's share")


def test_4_1_rejects_rounding_down_with_the_case_but_not_the_formula(assert_wrong):
    def rounds_down(lengths, tp, cp):
        return sum(n - n % alignment(tp, cp) for n in lengths)

    verdict = assert_wrong("4.1", rounds_down, mentions="expected 24")
    assert "tp*cp*2" not in verdict  # a mistake it does not recognise gets the case, not the alignment


def test_4_1_rejects_a_float(assert_wrong):
    assert_wrong("4.1", lambda lengths, tp, cp: float(reference_packed_length(lengths, tp, cp)), mentions="an int")


def test_4_1_refuses_a_wrapper_around_the_library_answer(assert_wrong):
    from verlstudy.lessons.l04_thd.thd import packed_thd_length

    assert_wrong("4.1", lambda lengths, tp, cp: packed_thd_length(lengths, tp, cp), mentions="packed_thd_length")


@pytest.mark.parametrize("exercise_id", ["4.1", "4.2", "4.3"])
def test_a_stub_is_not_attempted(capsys, exercise_id):
    check_exercise(exercise_id, stub)
    assert exercise_results()[exercise_id] == "not attempted"
    assert capsys.readouterr().out.strip() == f"exercise {exercise_id}: not attempted"


# ---------------------------------------------------------------- 4.2 a guard for the CP split


def test_4_2_accepts_a_guard_that_compares_each_rank_with_the_zigzag_pairing():
    assert "catches all 4 buggy splits" in find_checker("4.2")(reference_split_guard)


def test_4_2_rejects_a_guard_that_never_fails(assert_wrong):
    assert_wrong("4.2", lambda split_fn, seq_len, cp: None, mentions="the contiguous split")


def test_4_2_rejects_a_guard_that_only_checks_every_row_is_held_once(assert_wrong):
    def coverage_only(split_fn, seq_len, cp):
        held = torch.cat([split_fn(torch.arange(seq_len), cp, r) for r in range(cp)])
        assert sorted(held.tolist()) == list(range(seq_len))

    assert_wrong("4.2", coverage_only, mentions="every row once, but unbalanced")


def test_4_2_rejects_a_guard_that_ignores_the_order_within_a_rank(assert_wrong):
    def sets_only(split_fn, seq_len, cp):
        chunk = seq_len // (2 * cp) if cp > 1 else seq_len
        for r in range(cp):
            pieces = (r, 2 * cp - 1 - r) if cp > 1 else (0,)
            want = {p for c in pieces for p in range(c * chunk, (c + 1) * chunk)}
            assert set(split_fn(torch.arange(seq_len), cp, r).tolist()) == want

    assert_wrong("4.2", sets_only, mentions="right chunks in the wrong order")


def test_4_2_rejects_a_guard_that_rejects_the_correct_split(assert_wrong):
    def always(split_fn, seq_len, cp):
        raise AssertionError("nope")

    assert_wrong("4.2", always, mentions="rejected the correct zigzag split")


def test_4_2_rejects_a_guard_that_crashes_instead_of_asserting(assert_wrong):
    def crashes(split_fn, seq_len, cp):
        return split_fn(list(range(seq_len)), cp, 0).shape  # a list has no .chunk

    assert_wrong("4.2", crashes, mentions="a guard fails with AssertionError")


def test_4_2_refuses_a_guard_built_on_the_library_split(assert_wrong):
    from verlstudy.lessons.l04_thd.thd import zigzag_split

    def oracle(split_fn, seq_len, cp):
        rows = torch.arange(seq_len)
        assert all(torch.equal(split_fn(rows, cp, r), zigzag_split(rows, cp, r)) for r in range(cp))

    assert_wrong("4.2", oracle, mentions="library's own zigzag_split")


# ---------------------------------------------------------------- 4.3 the guard test for the padding


def test_4_3_accepts_a_guard_that_checks_alignment_mask_and_tokens_with_cp():
    assert "catches all 5 buggy ones" in find_checker("4.3")(reference_padding_guard)


def test_4_3_rejects_a_guard_that_never_fails(assert_wrong):
    assert_wrong("4.3", lambda pad_fn: None, mentions="pre-#7702 padding")


def test_4_3_rejects_a_guard_tested_without_cp(assert_wrong):
    def no_cp(pad_fn):
        reference_padding_guard(pad_fn, cases=(([7, 4, 9], 2, 1), ([5], 4, 1)))

    assert_wrong("4.3", no_cp, mentions="ignores cp")


def test_4_3_rejects_a_guard_that_checks_only_the_scatter(assert_wrong):
    def sp_only(pad_fn):
        for tp, cp in ((2, 1), (2, 2), (4, 2)):
            padded, _ = pad_fn(batch([7, 4, 9]), 0, tp, cp)
            assert padded.shape[1] % alignment(tp, cp) == 0

    assert_wrong("4.3", sp_only, mentions="mask marks the padded positions")


def test_4_3_rejects_a_guard_whose_longest_length_is_already_aligned(assert_wrong):
    def aligned_inputs_only(pad_fn):
        reference_padding_guard(pad_fn, cases=(([3, 8], 2, 2), ([4], 2, 1)))

    assert_wrong("4.3", aligned_inputs_only, mentions="pre-#7702 padding")


def test_4_3_rejects_a_guard_that_rejects_the_correct_padding(assert_wrong):
    def exact_tp(pad_fn):
        padded, _ = pad_fn(batch([7, 4, 9]), 0, 2, 2)
        assert padded.shape[1] % 2 == 0 and padded.shape[1] == 10  # forgets that CP changes the alignment

    assert_wrong("4.3", exact_tp, mentions="rejected a correct padding")


def test_4_3_refuses_a_guard_built_on_the_library_padding(assert_wrong):
    from verlstudy.lessons.l04_thd.thd import pad_nested

    def oracle(pad_fn):
        ids = batch([7, 4, 9])
        assert torch.equal(pad_fn(ids, 0, 2, 2)[0], pad_nested(ids, 0, 2, 2)[0])

    assert_wrong("4.3", oracle, mentions="library's own pad_nested")


# ---------------------------------------------------------------- no course function is an answer


@pytest.mark.parametrize("exercise_id", ["4.1", "4.2", "4.3"])
def test_no_course_function_passes(assert_mechanism_does_not_pass, exercise_id):
    assert assert_mechanism_does_not_pass(exercise_id, "verlstudy.lessons.l04_thd", answer=lambda fn: (fn,)) > 5
