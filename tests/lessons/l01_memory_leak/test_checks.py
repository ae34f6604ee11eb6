"""Lesson 01's checkers: the references pass; plausible wrong answers fail, each with a message naming the mistake."""

import pytest

from verlstudy.kit.exercises import check_exercise, exercise_method, exercise_results, exercise_reveals, find_checker
from verlstudy.lessons.l01_memory_leak import pipeline as pl


def predict_leak(seq_len, hidden, itemsize):
    # The receive buffer, its gradient, and the stored per-token output.
    return 2 * seq_len * hidden * itemsize + seq_len * itemsize


def find_growth_site(tracker, run_micro_batch):
    run_micro_batch()  # one-off allocations (parameter gradients) happen in the first micro-batch
    mark = tracker.mark()
    run_micro_batch()
    return tracker.top_sites(1, since=mark)[0].function


def stub(*args):
    raise NotImplementedError("exercise")


def test_a_stub_is_not_attempted(capsys):
    check_exercise("1.1", stub)
    check_exercise("1.2", stub)
    assert capsys.readouterr().out == "exercise 1.1: not attempted\nexercise 1.2: not attempted\n"
    assert exercise_results()["1.1"] == exercise_results()["1.2"] == "not attempted"


# ---------------------------------------------------------------- 1.1 predict the leak


def test_1_1_accepts_buffer_gradient_and_stored_output(capsys):
    check_exercise("1.1", predict_leak)
    assert capsys.readouterr().out == "exercise 1.1: correct: matches the measured slope in 3 configurations\n"


@pytest.mark.parametrize(
    ("wrong", "mistake"),
    [
        (lambda s, h, i: s * h * i, "receive buffer alone"),
        (lambda s, h, i: 2 * s * h * i, "what the store itself is meant to keep"),
        (lambda s, h, i: s * h * i + s * i, "backward left something more on the buffer"),
        (lambda s, h, i: 2 * s * h * i + s, "counts elements, not bytes"),
        (lambda s, h, i: 2 * s * h * 4 + s * 4, "itemsize you are given"),
        (lambda s, h, i: 2 * s * h * i + s * i + 4 * s * h * i, "saved activations"),
        (lambda s, h, i: s * h * i + 2 * s * i, "bytes short"),
        (lambda s, h, i: "1088 bytes", "return a number of bytes"),
    ],
    ids=[
        "buffer-only",
        "no-stored-output",
        "no-gradient",
        "output-in-elements",
        "fixed-itemsize",
        "saved-activations",
        "short",
        "a-string",
    ],
)
def test_1_1_rejects_a_wrong_count(assert_wrong, wrong, mistake):
    verdict = assert_wrong("1.1", wrong, mentions=mistake)
    assert "2 * S * H" not in verdict and "itemsize +" not in verdict  # the nudge never states the formula


def test_1_1_has_a_method_with_the_formula_and_declares_what_reveals_it():
    assert "2 * S * H * itemsize + S * itemsize" in exercise_method("1.1")
    assert "16640" in exercise_reveals("1.1")


def test_1_1_refuses_a_wrapper_around_the_library_answer(assert_wrong):
    dtypes = {4: "float32", 2: "bfloat16"}

    def from_the_library(s, h, i):
        return sum(pl.predicted_leak_bytes(pl.PipelineConfig(seq_len=s, hidden=h, dtype=dtypes[i])).values())

    assert_wrong("1.1", from_the_library, mentions="library's own predicted_leak_bytes")


def test_1_1_refuses_measuring_instead_of_predicting(assert_wrong):
    from verlstudy.lessons.l01_memory_leak.measure import measure_slope

    def measured(s, h, i):
        return measure_slope(pl.PipelineConfig(seq_len=s, hidden=h, dtype={4: "float32", 2: "bfloat16"}[i]), 3)[0]

    assert_wrong("1.1", measured, mentions="library's own measure_slope")


# ---------------------------------------------------------------- 1.2 find the growth site


def test_1_2_accepts_the_largest_site_after_a_mark():
    assert find_checker("1.2")(find_growth_site) == "named the growing site in all 3 scenarios"
    assert pl._ACTIVATION_LOG == [] and pl._SCORE_CACHE == []


def test_1_2_rejects_counting_the_first_micro_batchs_one_off_allocations(assert_wrong):
    def no_mark(tracker, run_micro_batch):
        run_micro_batch()
        return tracker.top_sites(1)[0].function  # includes the one-off parameter gradients

    assert_wrong("1.2", no_mark, mentions="one-off allocations")


def test_1_2_rejects_the_smallest_site(assert_wrong):
    def smallest(tracker, run_micro_batch):
        run_micro_batch()
        mark = tracker.mark()
        run_micro_batch()
        return tracker.top_sites(5, since=mark)[-1].function

    assert_wrong("1.2", smallest, mentions="not the site whose live bytes grow the most")


def test_1_2_rejects_the_sites_label(assert_wrong):
    def label(tracker, run_micro_batch):
        run_micro_batch()
        mark = tracker.mark()
        run_micro_batch()
        return tracker.top_sites(1, since=mark)[0].label()

    assert_wrong("1.2", label, mentions="function's name only")


def test_1_2_rejects_a_site_object(assert_wrong):
    def site(tracker, run_micro_batch):
        run_micro_batch()
        mark = tracker.mark()
        run_micro_batch()
        return tracker.top_sites(1, since=mark)[0]

    assert_wrong("1.2", site, mentions="as a string")


def test_1_2_rejects_the_answer_of_the_unfixed_pipeline(assert_wrong):
    assert_wrong("1.2", lambda tracker, run_micro_batch: "create_tensor_recv_prev", mentions="unfixed pipeline")


def test_1_2_a_first_wrong_try_names_the_one_off_mistake_and_only_the_method_says_how(assert_wrong):
    def no_mark(tracker, run_micro_batch):
        run_micro_batch()
        return tracker.top_sites(1)[0].function

    verdict = assert_wrong("1.2", no_mark, mentions="not growth")
    assert "tracker.mark()" not in verdict and "top_sites" not in verdict
    assert "tracker.mark()" in exercise_method("1.2")


# ---------------------------------------------------------------- no course function is an answer


@pytest.mark.parametrize("exercise_id", ["1.1", "1.2"])
def test_no_course_function_passes(assert_mechanism_does_not_pass, exercise_id):
    assert assert_mechanism_does_not_pass(exercise_id, "verlstudy.lessons.l01_memory_leak", answer=lambda fn: (fn,)) > 5
