"""Lesson 04's checkers: the references pass; plausible wrong answers fail, each with a message naming the mistake."""

import math

import pytest

from verlstudy.kit.exercises import check_exercise, exercise_results, find_checker


def alignment(tp, cp):
    return tp * cp * 2 if cp > 1 else tp


def reference_aligned_length(length, tp, cp):
    align = alignment(tp, cp)
    return length + (align - length % align) % align


def reference_zigzag_positions(seq_len, cp, rank):
    if cp == 1:
        return list(range(seq_len))
    chunk = seq_len // (2 * cp)
    return [p for c in (rank, 2 * cp - 1 - rank) for p in range(c * chunk, (c + 1) * chunk)]


def contiguous_positions(seq_len, cp, rank):
    part = seq_len // cp
    return list(range(rank * part, (rank + 1) * part))


def reference_minimal_align(tp, cp):
    return math.lcm(2 * cp, tp * cp) if cp > 1 else tp


def stub(*args):
    raise NotImplementedError("exercise")


# ---------------------------------------------------------------- 4.1 aligned_length


def test_4_1_accepts_the_smallest_aligned_length_at_least_l():
    assert "right" in find_checker("4.1")(reference_aligned_length)


def test_4_1_rejects_a_whole_extra_block_for_an_already_aligned_length(assert_wrong):
    def no_outer_modulo(length, tp, cp):
        return length + alignment(tp, cp) - length % alignment(tp, cp)

    assert_wrong("4.1", no_outer_modulo, mentions="already aligned length needs no padding")


def test_4_1_rejects_tp_times_cp_without_the_factor_two(assert_wrong):
    def tp_times_cp(length, tp, cp):
        return -(-length // (tp * cp)) * (tp * cp)

    assert_wrong("4.1", tp_times_cp, mentions="tp*cp*2")


def test_4_1_rejects_ignoring_cp(assert_wrong):
    assert_wrong("4.1", lambda length, tp, cp: -(-length // tp) * tp, mentions="you ignored cp")


def test_4_1_rejects_rounding_down(assert_wrong):
    def round_down(length, tp, cp):
        return length - length % alignment(tp, cp)

    assert_wrong("4.1", round_down, mentions="padding never removes tokens")


def test_4_1_rejects_a_float(assert_wrong):
    assert_wrong("4.1", lambda length, tp, cp: float(reference_aligned_length(length, tp, cp)), mentions="an int")


def test_4_1_refuses_a_wrapper_around_the_library_answer(assert_wrong):
    from verlstudy.lessons.l04_thd.thd import align_size, aligned_length

    assert_wrong("4.1", lambda length, tp, cp: aligned_length(length, tp, cp), mentions="library's own aligned_length")

    def rounds_up_to_align_size(length, tp, cp):
        return -(-length // align_size(tp, cp)) * align_size(tp, cp)

    assert_wrong("4.1", rounds_up_to_align_size, mentions="library's own align_size")


def test_4_1_a_stub_is_not_attempted(capsys):
    check_exercise("4.1", stub)
    assert exercise_results()["4.1"] == "not attempted"
    assert capsys.readouterr().out.strip() == "exercise 4.1: not attempted"


# ---------------------------------------------------------------- 4.2 zigzag positions


def test_4_2_accepts_chunks_r_and_2cp_minus_1_minus_r_in_order():
    assert "every rank does equal causal work" in find_checker("4.2")(reference_zigzag_positions)


def test_4_2_rejects_the_contiguous_split(assert_wrong):
    assert_wrong("4.2", contiguous_positions, mentions="that is the contiguous split")


def test_4_2_rejects_the_wrong_pair_of_chunks(assert_wrong):
    def shifted(seq_len, cp, rank):
        return reference_zigzag_positions(seq_len, cp, (rank + 1) % cp)

    assert_wrong("4.2", shifted, mentions="chunk r and chunk 2*cp-1-r")


def test_4_2_rejects_positions_out_of_sequence_order(assert_wrong):
    def high_chunk_first(seq_len, cp, rank):
        return sorted(reference_zigzag_positions(seq_len, cp, rank), reverse=True)

    assert_wrong("4.2", high_chunk_first, mentions="keep them in sequence order")


def test_4_2_rejects_something_that_is_not_a_list(assert_wrong):
    assert_wrong("4.2", lambda seq_len, cp, rank: 3, mentions="should return a list of positions")


def test_4_2_refuses_a_wrapper_around_the_library_answer(assert_wrong):
    import torch

    from verlstudy.lessons.l04_thd.thd import rank_positions, zigzag_split

    assert_wrong("4.2", lambda s, cp, r: rank_positions(s, cp, r), mentions="library's own rank_positions")
    assert_wrong("4.2", lambda s, cp, r: zigzag_split(torch.arange(s), cp, r), mentions="library's own zigzag_split")


# ---------------------------------------------------------------- 4.3 minimal alignment


def test_4_3_accepts_the_least_common_multiple_with_cp_and_tp_without():
    assert "right" in find_checker("4.3")(reference_minimal_align)


def test_4_3_rejects_upstreams_product(assert_wrong):
    assert_wrong("4.3", alignment, mentions="upstream's product tp*cp*2")


def test_4_3_rejects_tp_times_cp_alone(assert_wrong):
    assert_wrong("4.3", lambda tp, cp: tp * cp, mentions="2*cp whole chunks")


def test_4_3_rejects_lcm_without_the_cp_1_branch(assert_wrong):
    verdict = assert_wrong("4.3", lambda tp, cp: math.lcm(2 * cp, tp * cp), mentions="without context parallelism")
    assert "fn(tp=1, cp=1) gave 2; expected 1" in verdict


def test_4_3_refuses_a_wrapper_around_the_library_answer(assert_wrong):
    from verlstudy.lessons.l04_thd.thd import minimal_align_size

    assert_wrong("4.3", lambda tp, cp: minimal_align_size(tp, cp), mentions="library's own minimal_align_size")


# ---------------------------------------------------------------- no course function is an answer


@pytest.mark.parametrize("exercise_id", ["4.1", "4.2", "4.3"])
def test_no_course_function_passes(assert_mechanism_does_not_pass, exercise_id):
    assert assert_mechanism_does_not_pass(exercise_id, "verlstudy.lessons.l04_thd", answer=lambda fn: (fn,)) > 5
