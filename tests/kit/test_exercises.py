"""check_exercise("N.M", answer): checkers found by id, verdicts printed for the learner and recorded as data."""

import json

import pytest

from verlstudy.kit import exercises, records
from verlstudy.kit.exercises import ExerciseFailure, check_exercise, checker, exercise_results, find_checker


@checker("99.1")
def _square_checker(fn):
    if fn(2) != 4:
        raise ExerciseFailure("square(2) should be 4")
    return "all cases right"


def _stub(x):
    raise NotImplementedError("exercise 99.1")


@pytest.mark.parametrize(
    ("answer", "line", "verdict"),
    [
        (lambda x: x * x, "exercise 99.1: correct: all cases right", "correct"),
        (lambda x: x + 1, "exercise 99.1: not yet right: square(2) should be 4", "not yet right"),
        (_stub, "exercise 99.1: not attempted", "not attempted"),
        (
            lambda x: x / 0,
            "exercise 99.1: not yet right: your code raised ZeroDivisionError: division by zero (in <lambda>, line 29)",
            "not yet right",
        ),
    ],
)
def test_check_exercise_prints_one_verdict_line_and_records_it(capsys, answer, line, verdict):
    assert check_exercise("99.1", answer) is None  # a notebook cell shows no stray return value
    assert capsys.readouterr().out.strip() == line
    assert exercise_results()["99.1"] == verdict


def test_a_checker_is_found_by_its_lesson_number_in_that_lessons_checks_module():
    found = find_checker("0.1")
    assert found.__module__ == "verlstudy.lessons.l00_start_here.checks"
    assert exercises.lesson_checks_module(0) == "verlstudy.lessons.l00_start_here.checks"


@pytest.mark.parametrize(
    ("exercise_id", "error", "match"),
    [
        (9, TypeError, "like '1.2'"),
        ("2", TypeError, "like '1.2'"),
        ("0.9", ValueError, "lesson 0 has: 0.1, 0.2"),
        ("42.1", LookupError, "there is no lesson 42"),
    ],
)
def test_a_bad_or_unknown_exercise_id_names_what_exists(exercise_id, error, match):
    with pytest.raises(error, match=match):
        check_exercise(exercise_id, abs)


def test_a_second_checker_for_the_same_id_is_refused():
    with pytest.raises(ValueError, match="already has a checker"):

        @checker("99.1")
        def other(fn):
            return None


def test_registered_exercises_lists_a_lessons_ids_in_order():
    assert exercises.registered_exercises(0) == ["0.1", "0.2"]


def test_records_are_stable_json_and_round_trip_through_outputs():
    record = {"kind": "exercise", "id": "1.2", "verdict": "correct", "message": ""}
    text = records.encode(record)
    assert text == records.encode(dict(reversed(record.items())))  # key order never changes the bytes
    output = {"output_type": "display_data", "data": {records.RECORD_MIME: text}, "metadata": {}}
    assert list(records.records_in_outputs([output, {"output_type": "stream", "text": "x"}])) == [record]
    assert json.loads(text) == record


def test_a_record_of_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kind"):
        records.encode({"kind": "score"})


def test_outside_a_kernel_emit_prints_nothing(capsys):
    records.emit({"kind": "claim", "name": "x"})
    assert capsys.readouterr().out == ""


# ---------------------------------------------------------------- handing over the library's own code is not an answer


def _library_square(x):
    return x * x


_library_square.__module__ = "verlstudy.lessons.l99_demo.mechanism"  # as if the course defined it


@checker("99.2", library_answers=[_library_square])
def _square_checker_with_answer(fn):
    if fn(3) != 9:
        raise ExerciseFailure("square(3) should be 9")


def test_the_librarys_own_function_is_refused_with_its_name():
    with pytest.raises(ExerciseFailure, match=r"library's own _library_square .*write it"):
        find_checker("99.2")(_library_square)


def test_a_thin_wrapper_around_the_declared_answer_is_refused():
    def wrapper(x):
        return _library_square(x)

    with pytest.raises(ExerciseFailure, match="your wrapper calls the library's own _library_square"):
        find_checker("99.2")(wrapper)


def test_a_partial_or_a_function_of_verl_itself_is_refused():
    import functools

    from_verl = eval("lambda x: x * x", {"__name__": "upstream:verl/workers/engine/utils.py"})
    for answer in (functools.partial(_library_square), from_verl):
        with pytest.raises(ExerciseFailure, match="library's own"):
            find_checker("99.2")(answer)


def test_an_answer_that_uses_other_course_helpers_is_still_judged_on_its_result():
    helper_module = exercises  # a learner's answer may use kit or lesson helpers that are not the answer

    def own(x):
        helper_module.EXERCISE_ID.match("1.1")
        return x * x

    assert find_checker("99.2")(own) is None
    assert exercises.handed_over(own, [_library_square]) is None
    assert exercises.handed_over(42) is None


# ---------------------------------------------------------------- hints escalate


@checker(
    "99.4",
    method="square it: multiply x by itself",
    where="section 2, the square",
    question="what is 3 squared, and which operation on 3 gives it?",
    reveals=["x * x"],
)
def _square_with_method(fn):
    if fn(3) == 6:
        raise ExerciseFailure("square(3) is not 6: that is x + x", method="x + x doubles; you want x times x")
    if fn(3) != 9:
        raise ExerciseFailure("square(3) should be 9")
    return "right"


def _tries(capsys, answers):
    exercises.reset_exercises()
    printed = []
    for answer in answers:
        check_exercise("99.4", answer)
        printed.append(capsys.readouterr().out)
    return printed


def test_the_first_wrong_try_names_the_mistake_and_nothing_more(capsys):
    (first,) = _tries(capsys, [lambda x: x + 1])
    assert first.splitlines() == [
        "exercise 99.4: not yet right: square(3) should be 9",
        '  (try again; stuck? exercise_hint("99.4") shows where to look and the method)',
    ]


def test_the_second_wrong_try_adds_where_to_look_but_not_the_method(capsys):
    _, second = _tries(capsys, [lambda x: x + 1, lambda x: x - 1])
    assert "  where to look (try 2): section 2, the square" in second.splitlines()
    assert "multiply x by itself" not in second


def test_attempts_held_leaves_the_learners_own_tries_and_verdict_as_they_were(capsys):
    _tries(capsys, [lambda x: x + 1])  # the learner's one wrong try
    with exercises.attempts_held("99.4", verdict=True, from_first_try=True):
        check_exercise("99.4", lambda x: 0)
        assert "where to look (try" not in capsys.readouterr().out  # the held block counts from a first try
        for _ in range(2):
            check_exercise("99.4", lambda x: x * x)
    assert exercises.exercise_results()["99.4"] == "not yet right"
    check_exercise("99.4", lambda x: x - 1)  # the learner's second try: where to look, no method
    out = capsys.readouterr().out
    assert "where to look (try 2)" in out and "method (try" not in out
    check_exercise("99.4", lambda x: 0)  # the third: a question, still no method
    out = capsys.readouterr().out
    assert "a question (try 3)" in out and "method (try" not in out
    check_exercise("99.4", lambda x: 0)  # the fourth
    assert "method (try 4)" in capsys.readouterr().out
    with pytest.raises(TypeError, match="exercise id must be a string"), exercises.attempts_held(4.1):
        pass


def test_the_third_wrong_try_asks_a_question_and_the_method_follows_from_the_fourth_on(capsys):
    *_, third, fourth = _tries(capsys, [lambda x: x + 1, lambda x: x - 1, lambda x: 0, lambda x: 1])
    assert third.splitlines()[1:] == [
        "  where to look (try 3): section 2, the square",
        "  a question (try 3): what is 3 squared, and which operation on 3 gives it?",
        '  (try again; stuck? exercise_hint("99.4") shows where to look and the method)',
    ]
    assert fourth.splitlines()[1:] == [
        "  where to look (try 4): section 2, the square",
        "  a question (try 4): what is 3 squared, and which operation on 3 gives it?",
        "  method (try 4): square it: multiply x by itself",
    ]


def test_a_failure_can_carry_its_own_method_and_exercise_hint_shows_both_rungs_on_request(capsys):
    _tries(capsys, [lambda x: x + x])
    exercises.exercise_hint("99.4")
    assert capsys.readouterr().out.splitlines() == [
        "exercise 99.4, where to look: section 2, the square",
        "exercise 99.4, a question first: what is 3 squared, and which operation on 3 gives it?",
        "exercise 99.4, method: x + x doubles; you want x times x",
        '(the reference solution itself: show_solution("99.4"))',
    ]


def test_a_right_answer_after_wrong_ones_prints_only_the_verdict_and_reset_forgets_the_tries(capsys):
    printed = _tries(capsys, [lambda x: 0, lambda x: 0, lambda x: x * x])
    assert printed[-1] == "exercise 99.4: correct: right\n"
    exercises.reset_exercises()
    check_exercise("99.4", lambda x: 0)
    assert "where to look (try" not in capsys.readouterr().out


def test_after_a_right_answer_the_ladder_starts_again(capsys):
    # a learner's review: variants tried after solving it were shown "(try 5)" and the whole method
    _tries(capsys, [lambda x: 0, lambda x: 0, lambda x: 0, lambda x: x * x])
    check_exercise("99.4", lambda x: x + x)
    out = capsys.readouterr().out
    assert "where to look (try" not in out and "method (try" not in out, out  # only the mistake, as a first try


def test_the_record_holds_the_nudge_never_the_method(capsys):
    _tries(capsys, [lambda x: 0, lambda x: 0, lambda x: 0])
    check_exercise("99.4", lambda x: 0)
    out = capsys.readouterr().out
    assert "method (try 4)" in out
    assert exercises.exercise_results()["99.4"] == "not yet right"
    assert exercises._VERDICTS["99.4"]["message"] == "square(3) should be 9"


def test_show_solution_prints_the_full_editions_solution_cell_and_says_what_it_is(capsys):
    exercises.show_solution("4.1")
    out = capsys.readouterr().out
    assert out.startswith("Reference solution of exercise 4.1 (from the course's full edition)")
    assert "def my_packed_length" in out


@pytest.mark.parametrize("mistyped", ["4.99", "12.1", "x", 3])
@pytest.mark.parametrize("ask", ["show_solution", "exercise_hint"])
def test_a_mistyped_exercise_id_gets_one_line_naming_what_exists_not_a_traceback(capsys, ask, mistyped):
    getattr(exercises, ask)(mistyped)
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith(f"{ask}({mistyped!r}): "), out
    if mistyped == "4.99":
        assert "lesson 4 has: 4.1, 4.2, 4.3" in out
    if mistyped == "12.1":
        assert "there is no lesson 12; the course's lessons are 00, 01" in out


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"method": 3}, "method must be a string"),
        ({"where": ["section 1"]}, "where must be a string"),
        ({"reveals": "x"}, "list of strings"),
        ({"reveals": [""]}, "non-empty"),
    ],
)
def test_a_checker_declaration_with_a_bad_method_or_reveals_is_refused(kwargs, error):
    with pytest.raises(TypeError, match=error):
        checker("99.3", **kwargs)


@pytest.mark.parametrize("lesson", range(10))
def test_every_course_exercise_has_a_method_for_the_learner_who_is_stuck(lesson):
    missing = [i for i in exercises.registered_exercises(lesson) if not exercises.exercise_method(i)]
    assert missing == [], f"exercises {missing} have no method=... in their @checker"


@pytest.mark.parametrize("lesson", range(10))
def test_every_course_exercise_says_where_to_look(lesson):
    missing = [i for i in exercises.registered_exercises(lesson) if not exercises.exercise_where(i)]
    assert missing == [], f"exercises {missing} have no where=... in their @checker"


def test_a_check_puts_the_hint_and_solution_helpers_where_the_learners_cells_run():
    namespace = {"__name__": "__main__", "check_exercise": check_exercise}
    exec("check_exercise('99.4', lambda x: x * x)", namespace)  # a notebook cell that imported only the checker
    assert namespace["exercise_hint"] is exercises.exercise_hint
    assert namespace["show_solution"] is exercises.show_solution
    own = {"__name__": "__main__", "check_exercise": check_exercise, "show_solution": print}
    exec("check_exercise('99.4', lambda x: x * x)", own)
    assert own["show_solution"] is print  # a name the learner bound is theirs
    module_globals = {"__name__": "some_module", "check_exercise": check_exercise}
    exec("check_exercise('99.4', lambda x: x * x)", module_globals)
    assert "exercise_hint" not in module_globals  # only a notebook's or console's namespace


def test_a_check_without_the_answer_is_a_slip_in_the_call_not_a_wrong_try(capsys):
    # tester case X3: check_exercise("0.1") blamed the learner's code and logged a wrong try
    check_exercise("0.1")
    assert "takes your answer as: seeded_sample; nothing was checked or recorded" in capsys.readouterr().out
    assert "0.1" not in exercise_results()


def test_an_answer_that_exits_gets_a_verdict(capsys):
    # tester case X12: SystemExit escaped check_exercise, with no verdict and no record
    import sys

    check_exercise("0.1", lambda seed, n: sys.exit(3))
    assert "your code called exit(3)" in capsys.readouterr().out
    assert exercise_results()["0.1"] == "not yet right"


def test_an_id_with_a_blank_around_it_is_named_so():
    with pytest.raises(ValueError, match=r"has a blank around it: write '0\.1'"):
        check_exercise("0.1 ", lambda seed, n: None)
