"""Lesson 01's checkers: the references pass; plausible wrong answers fail, each with a message naming the mistake."""

import pytest

from conftest import Wrong, checker_tests
from verlstudy.kit.exercises import check_exercise, exercise_method, exercise_results, exercise_reveals, find_checker
from verlstudy.lessons.l01_memory_leak import checks as l01_checks
from verlstudy.lessons.l01_memory_leak import pipeline as pl


def predict_leak(seq_len, hidden, itemsize):
    # The receive buffer, its gradient, and the stored per-token output.
    return 2 * seq_len * hidden * itemsize + seq_len * itemsize


def find_growth_site(tracker, run_micro_batch):
    run_micro_batch()  # one-off allocations (parameter gradients) happen in the first micro-batch
    mark = tracker.mark()
    run_micro_batch()
    return tracker.top_sites(1, since=mark)[0].function


def _rounded_to_allocator_blocks(s, h, i):  # the CUDA caching allocator's 512-byte rounding
    def block(n):
        return -(-n // 512) * 512

    return 2 * block(s * h * i) + block(s * i)


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
    out = capsys.readouterr().out
    assert out.startswith("exercise 1.1: correct: right on 5 named cases and ") and "generated inputs" in out


@pytest.mark.parametrize(
    "config",
    [
        pl.PipelineConfig(seq_len=16, hidden=8, vocab=16),
        pl.PipelineConfig(seq_len=24, hidden=40, vocab=16, dtype="bfloat16"),
        pl.PipelineConfig(seq_len=8, hidden=64, vocab=16, layers_per_stage=3),
        pl.PipelineConfig(seq_len=5, hidden=3, vocab=16, dtype="bfloat16", layers_per_stage=2),
    ],
)
def test_1_1_reference_is_what_the_tracker_measures(config):
    from verlstudy.lessons.l01_memory_leak.checks import _reference_leak
    from verlstudy.lessons.l01_memory_leak.measure import measure_slope

    assert measure_slope(config, 3)[0] == _reference_leak(config.seq_len, config.hidden, config.itemsize)


def test_1_1_the_nudge_never_states_the_formula_and_the_method_is_words(assert_wrong):
    verdict = assert_wrong("1.1", lambda s, h, i: s * h * i, mentions="receive buffer alone")
    assert "2 * S * H" not in verdict and "itemsize +" not in verdict
    assert "*" not in exercise_method("1.1") and "16640" in exercise_reveals("1.1")


@pytest.mark.parametrize(
    "answer",
    [
        lambda s, h, i: 2 * (s + 1) * h * i + (s + 1) * i,  # one token too many
        _rounded_to_allocator_blocks,
        lambda s, h, i: 2 * s * h * i + s * i + 7,  # no mistake recognised: only the numbers
    ],
)
def test_1_1_an_over_count_is_blamed_on_saved_activations_only_when_it_is_one(assert_wrong, answer):
    verdict = assert_wrong("1.1", answer, mentions="expected 1088 there")
    assert "saved activations" not in verdict, verdict


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
    assert find_checker("1.2")(find_growth_site).startswith("right on 7 named cases and ")
    assert pl._ACTIVATION_LOG == [] and pl._SCORE_CACHE == []
    assert l01_checks._STEP_COUNTERS == [] and l01_checks._SNAPSHOTS == [] and l01_checks._TABLES == []


def test_1_2_a_first_wrong_try_names_the_one_off_mistake_and_only_the_method_says_how(assert_wrong):
    def no_mark(tracker, run_micro_batch):
        run_micro_batch()
        return tracker.top_sites(1)[0].function

    verdict = assert_wrong("1.2", no_mark, mentions="not growth")
    assert "tracker.mark()" not in verdict and "top_sites" not in verdict
    assert "marker" in exercise_method("1.2")


# ---------------------------------------------------------------- the tables: wrong answers named, right ones pass


def _after_one(tracker, run_micro_batch, pick):
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    return pick(tracker.top_sites(5, since=mark))


def _mark_first(tracker, run_micro_batch):
    mark = tracker.mark()
    run_micro_batch()
    run_micro_batch()
    return tracker.top_sites(1, since=mark)[0].function


def _nothing_after_the_mark(tracker, run_micro_batch):
    run_micro_batch()
    mark = tracker.mark()
    return tracker.top_sites(1, since=mark)[0].function


def _right_by_live(tracker, run_micro_batch):
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    totals = {}
    for alloc in tracker.live(since=mark):
        totals[alloc.frames[0].function] = totals.get(alloc.frames[0].function, 0) + alloc.nbytes
    return max(totals, key=totals.get)


def _right_two_marks(tracker, run_micro_batch):
    for _ in range(2):
        run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    best = tracker.top_sites(3, since=mark)
    return str(best[0].function)


def _largest_single_allocation(tracker, run_micro_batch):  # the biggest tensor's site, not the most bytes per site
    run_micro_batch()
    mark = tracker.mark()
    run_micro_batch()
    return max(tracker.live(since=mark), key=lambda a: a.nbytes).site.function


WRONG = {
    "1.1": [
        Wrong(lambda s, h, i: s * h * i, mentions="receive buffer alone", why="buffer only"),
        Wrong(lambda s, h, i: 2 * s * h * i, mentions="what the store itself is meant to keep", why="no output"),
        Wrong(lambda s, h, i: s * h * i + s * i, mentions="backward left something more", why="no gradient"),
        Wrong(lambda s, h, i: 2 * s * h * i + s, mentions="counts elements, not bytes", why="output in elements"),
        Wrong(lambda s, h, i: 2 * s * h * 4 + s * 4, mentions="itemsize you are given", why="itemsize ignored"),
        Wrong(lambda s, h, i: 2 * s * h * 2 + s * 2, mentions="itemsize of 2 only", why="bfloat16 hard-wired"),
        Wrong(lambda s, h, i: 3 * s * h * i + s * i, mentions="saved activations", why="activations counted"),
        Wrong(lambda s, h, i: s * h * i + 2 * s * i, mentions="one tensor of the buffer's size", why="short"),
        Wrong(lambda s, h, i: 16640, mentions="notebook's own sizes", why="hard-coded example"),
        Wrong(lambda s, h, i: 2 * s * h * i + h * i, mentions="one value per token", why="output per hidden unit"),
        Wrong(lambda s, h, i: f"{2 * s * h * i + s * i} bytes", mentions="number of bytes", why="a string"),
        Wrong(lambda s, h, i: 2 * s * h * i + s * 4, mentions="fixed 4 bytes per value", why="output float32 assumed"),
        Wrong(lambda s, h, i: 8 * (2 * s * h * i + s * i), mentions="in bits", why="bits instead of bytes"),
        Wrong(
            lambda s, h, i: 2 * (s + 1) * h * i + (s + 1) * i,
            mentions="one token too many",
            why="S + 1 tokens (the micro-batch's token ids)",
        ),
        Wrong(lambda s, h, i: 4 * s * h * i + s * i, mentions="4 tensors of the buffer's size", why="two more"),
        Wrong(_rounded_to_allocator_blocks, mentions="512-byte block", why="allocator rounding"),
    ],
    "1.2": [
        Wrong(
            lambda tracker, run: (run(), tracker.top_sites(1)[0].function)[1],
            mentions="one-off allocations",
            why="no mark: the first micro-batch's one-offs count",
        ),
        Wrong(_mark_first, mentions="one-off", why="mark before the first micro-batch"),
        Wrong(lambda t, r: _after_one(t, r, lambda s: s[-1].function), mentions="grows the most", why="smallest site"),
        Wrong(lambda t, r: _after_one(t, r, lambda s: s[0].label()), mentions="name only", why="label, not name"),
        Wrong(lambda t, r: _after_one(t, r, lambda s: s[0]), mentions="as a string", why="a Site object"),
        Wrong(lambda t, r: "create_tensor_recv_prev", mentions="unfixed pipeline", why="the unfixed answer"),
        Wrong(lambda t, r: "cache_scores", mentions="fixed name", why="hard-coded first scenario"),
        Wrong(lambda t, r: "record_activation_stats", mentions="fixed name", why="hard-coded planted site"),
        Wrong(_nothing_after_the_mark, mentions="raised IndexError", why="nothing run after the mark"),
        Wrong(
            lambda t, r: _after_one(t, r, lambda s: max(s, key=lambda site: site.count).function),
            mentions="most allocations",
            why="largest by count, not bytes",
        ),
        Wrong(lambda t, r: _after_one(t, r, lambda s: s[0].file), mentions="file name", why="file, not function"),
        Wrong(_largest_single_allocation, mentions="single largest tensor", why="largest single allocation"),
    ],
}

RIGHT = {
    "1.1": [
        lambda seq_len, hidden, itemsize: seq_len * itemsize * (2 * hidden + 1),
        lambda s, h, i: int(sum([s * h * i, s * h * i, s * i])),
        lambda s, h, i: 2.0 * s * h * i + s * i,  # a whole float: the lesson does not teach the type
    ],
    "1.2": [_right_by_live, _right_two_marks],
}

test_wrong_answers_fail_naming_the_mistake, test_right_answers_written_differently_pass = checker_tests(WRONG, RIGHT)


# ---------------------------------------------------------------- no course function is an answer


@pytest.mark.parametrize("exercise_id", ["1.1", "1.2"])
def test_no_course_function_passes(assert_mechanism_does_not_pass, exercise_id):
    assert assert_mechanism_does_not_pass(exercise_id, "verlstudy.lessons.l01_memory_leak", answer=lambda fn: (fn,)) > 5


def test_1_2_a_returned_object_is_named_by_its_kind_with_its_article(assert_wrong):
    verdict = assert_wrong("1.2", lambda tracker, run_micro_batch: 3, mentions="as a string")
    assert "returned 'an int'; expected 'cache_scores' there" in verdict, verdict


# each spec: the leak planted in the pipeline, and how many tensors the site beside it keeps per micro-batch
PIPELINES = {
    "score_cache": ("score_cache", 0),
    "activation_log": ("activation_log", 0),
    None: (None, 0),
    "score_cache+counters": ("score_cache", 3),
    "activation_log+snapshot": ("activation_log", 1),
    "score_cache+table": ("score_cache", 0),
    "activation_log+table": ("activation_log", 0),
}


@pytest.mark.parametrize("planted", list(PIPELINES))
def test_1_2_each_pipeline_is_built_once_with_its_leak_and_the_site_beside_it(monkeypatch, planted):
    built = []
    real = l01_checks.MicroBatchRunner

    def counted(config, leak):
        built.append(leak)
        return real(config, leak)

    def kept_beside(tracker, run_micro_batch):
        run_micro_batch()
        return str(len(l01_checks._STEP_COUNTERS) + len(l01_checks._SNAPSHOTS))

    monkeypatch.setattr(l01_checks, "MicroBatchRunner", counted)
    leak, beside = PIPELINES[planted]
    assert l01_checks._GrowthRun(kept_beside)((planted, 8, 4, 16, 1)) == str(beside)
    assert built == [leak]
