"""The property mechanism: a learner's function against the reference on named cases and generated inputs."""

import time

import numpy as np
import pytest
import torch
from hypothesis import strategies as st

from verlstudy.kit import check_conditions
from verlstudy.kit.exercises import ExerciseFailure
from verlstudy.kit.properties import Case, a_kind, compare_on_inputs, difference


def reference_sum_of_squares(xs):
    return sum(x * x for x in xs)


LISTS = st.tuples(st.lists(st.integers(-50, 50), max_size=8))


def verdict(answer, **options):
    options = {"inputs": LISTS, "name": "f", **options}
    try:
        return compare_on_inputs(answer, reference_sum_of_squares, **options)
    except ExerciseFailure as e:
        return f"wrong: {e}"


@pytest.mark.parametrize(
    "right",
    [lambda xs: sum(x**2 for x in xs), lambda xs: int(np.dot(xs, xs)) if xs else 0],
)
def test_right_answers_written_differently_pass_on_every_input(right):
    assert verdict(right) == "right on 60 generated inputs"


def test_a_mistake_that_shows_only_on_some_inputs_is_found_and_shrunk_to_the_smallest():
    out = verdict(lambda xs: sum(x * abs(x) for x in xs))  # wrong only for negative numbers
    assert out == "wrong: f([-1]) returned -1; expected 1 there"


def test_the_exercise_names_the_mistake_it_recognises():
    def mistakes(args, got, want):
        return "that is the plain sum" if got == sum(args[0]) else None

    out = verdict(lambda xs: sum(xs), mistakes=mistakes)
    assert out.endswith(": that is the plain sum")


def test_named_edge_cases_run_first_and_say_why_they_matter():
    out = verdict(lambda xs: xs[0] * xs[0] + reference_sum_of_squares(xs[1:]), edge_cases=[Case(([],), "empty list")])
    assert out.startswith("wrong: f([]) raised IndexError") and out.endswith("[empty list]")


def test_a_hard_coded_answer_to_the_notebooks_example_fails():
    assert verdict(lambda xs: 14).startswith("wrong: f([]) returned 14; expected 0")


def test_a_float_where_an_int_is_asked_fails_but_a_numpy_int_passes():
    assert "a float where an int is asked" in verdict(lambda xs: float(sum(x * x for x in xs)))
    assert verdict(lambda xs: np.int64(sum(x * x for x in xs))).startswith("right")


def test_changing_the_input_is_reported_as_a_mistake():
    def sorts_in_place(xs):
        xs.sort()
        return reference_sum_of_squares(xs)

    assert "changed its input" in verdict(sorts_in_place)


def test_an_endless_loop_is_reported_not_waited_for(monkeypatch):
    monkeypatch.setattr(check_conditions, "CALL_TIMEOUT_S", 0.2)

    def loops(xs):
        while True:
            time.sleep(0.01)

    assert "did not return within 0.2 s" in verdict(loops, edge_cases=[([1],)])


def test_a_generated_input_that_hangs_is_waited_for_once_not_once_per_shrink_step(monkeypatch):
    monkeypatch.setattr(check_conditions, "CALL_TIMEOUT_S", 0.2)
    hangs = []

    def loops_on_long_lists(xs):
        if len(xs) > 3:  # only generated inputs reach this: hypothesis would shrink it, re-running each step
            hangs.append(list(xs))
            while True:
                time.sleep(0.01)
        return reference_sum_of_squares(xs)

    message = verdict(loops_on_long_lists)
    assert "did not return within 0.2 s" in message
    assert len(hangs) == 1 and repr(hangs[0]) in message  # the hung input itself, reported unshrunk


def test_a_stub_propagates_as_not_attempted():
    def stub(xs):
        raise NotImplementedError("exercise 9.9")

    with pytest.raises(NotImplementedError):
        compare_on_inputs(stub, reference_sum_of_squares, inputs=LISTS)


def test_judge_states_a_property_beyond_equal_values():
    def judge(args, got, want):
        return "returned the same list object" if got is args[0] else None

    def reference(xs):
        return list(xs)

    assert compare_on_inputs(lambda xs: xs, reference, edge_cases=[([1, 2],)], judge=lambda a, g, w: None)
    with pytest.raises(ExerciseFailure, match="same list object"):
        compare_on_inputs(lambda xs: xs, reference, edge_cases=[([1, 2],)], judge=judge)


def test_the_verdict_is_the_same_on_every_run():
    wrong = lambda xs: sum(x * x for x in xs if x != 7)  # noqa: E731
    assert len({verdict(wrong) for _ in range(3)}) == 1


def test_an_input_is_described_only_when_the_answer_is_wrong_there():
    described: list[tuple] = []

    def show(args, kwargs):
        described.append(args)
        return f"f{args}"

    assert verdict(reference_sum_of_squares, edge_cases=[([1, 2],)], show=show).startswith("right")
    assert described == []  # a right answer never pays for describing its inputs
    assert verdict(lambda xs: 0, edge_cases=[([1, 2],)], show=show) == "wrong: f([1, 2],) returned 0; expected 5 there"
    assert described == [([1, 2],)]


def test_not_a_function_is_named():
    with pytest.raises(ExerciseFailure, match="should be a function, got int"):
        compare_on_inputs(3, reference_sum_of_squares, inputs=LISTS)


@pytest.mark.parametrize(
    ("got", "want", "phrase"),
    [
        (np.array([1, 2]), [1, 2], None),
        ((1, 2), [1, 2], None),
        (frozenset({1, 2}), {1, 2}, None),
        ([2, 1], {1, 2}, None),
        ([1, 1, 2], {1, 2}, "repeated items"),
        ({"a": 1, "b": 2}, {"a": 1}, "unexpected keys ['b']"),
        ({}, {"a": 1}, "missing keys ['a']"),
        (2.0, 2, "a float where an int is asked"),
        (True, 1, "a bool where an int is asked"),
        (1, True, "an int where a bool"),
        (0.1 + 0.2, 0.3, None),
        ("a", "b", "'a' where 'b'"),
        (torch.ones(2, dtype=torch.float64), torch.ones(2), "dtype torch.float64"),
        (torch.ones(3), torch.ones(2), "shape (3,)"),
        ([[1, 2], [3]], [[1, 2], [4]], "at position 1: at position 0"),
    ],
)
def test_difference_accepts_other_reasonable_containers_and_names_what_differs(got, want, phrase):
    found = difference(got, want)
    assert found is None if phrase is None else phrase in found


def test_strict_types_asks_for_the_container_the_exercise_names():
    assert difference((1, 2), [1, 2], strict_types=True) == "a tuple where a list is asked"


def test_a_module_handed_over_is_compared_by_its_tensors_and_may_be_declared_changeable():
    def reference(model, scale):
        return model.weight.sum().item() * scale

    def reads(model, scale):
        return model.weight.sum().item() * scale

    def writes(model, scale):
        with torch.no_grad():
            model.weight.zero_()
        return 0.0

    model = torch.nn.Linear(2, 2)
    assert compare_on_inputs(reads, reference, edge_cases=[(model, 2.0)]).startswith("right on 1")
    with pytest.raises(ExerciseFailure, match="changed its input"):
        compare_on_inputs(writes, reference, edge_cases=[(model, 2.0)], judge=None)
    loads = lambda model, scale: reference(model, scale)  # noqa: E731
    assert compare_on_inputs(loads, reference, edge_cases=[(model, 2.0)], may_change=[0])


class Config:
    def __init__(self, hidden):
        self.hidden, self.children = hidden, [{"hidden": hidden * 2}]


def test_a_plain_object_handed_over_is_compared_by_its_attributes():
    def reference(config):
        return config.hidden

    def mutates(config):
        config.children[0]["hidden"] = 0
        return config.hidden

    assert compare_on_inputs(lambda c: c.hidden, reference, edge_cases=[(Config(4),)]).startswith("right")
    with pytest.raises(ExerciseFailure, match="changed its input"):
        compare_on_inputs(mutates, reference, edge_cases=[(Config(4),)])


def test_the_why_in_brackets_is_left_out_where_the_two_values_already_say_it():
    def reference(n):
        return [n] if n >= 0 else "raises ValueError"

    with pytest.raises(ExerciseFailure) as wrong:
        compare_on_inputs(lambda n: [n], reference, edge_cases=[(-1,)])
    assert str(wrong.value) == "f(-1) returned [-1]; expected 'raises ValueError' there".replace("f(", "fn(")
    with pytest.raises(ExerciseFailure, match=r"\(a float where an int is asked\)"):
        compare_on_inputs(lambda n: float(n), lambda n: n, edge_cases=[(2,)])


def step_summary(n):
    """A checker's summary of a run: what the learner's step did, part by part (the reference is right on n)."""
    return {"returns": "a pair", "calls": 1, "loss": round(n / 3, 3)}


def first_part_that_differs(got, want):
    key = next(k for k in want if difference(got[k], want[k], rtol=1e-3) is not None)
    return f"a step whose {key} is {got[key]!r}", repr(want[key])


def test_a_summary_is_shown_as_describe_writes_it_without_the_bracketed_why():
    def calls_twice(n):
        return {**step_summary(n), "calls": "twice"}

    shown = []

    def describe(got, want):
        shown.append(got)
        return first_part_that_differs(got, want)

    options = {"edge_cases": [Case((2,), "two")], "rtol": 1e-3, "describe": describe, "name": "step"}
    assert compare_on_inputs(lambda n: step_summary(n + 1e-4), step_summary, **options).startswith("right")
    assert shown == []  # a right result is never described
    with pytest.raises(ExerciseFailure) as wrong:
        compare_on_inputs(calls_twice, step_summary, mistakes=lambda a, g, w: "call it once", **options)
    assert str(wrong.value) == "step(2) returned a step whose calls is 'twice'; expected 1 there: call it once [two]"
    with pytest.raises(ExerciseFailure) as without:  # the default shows both reprs and why they differ
        compare_on_inputs(calls_twice, step_summary, edge_cases=[Case((2,), "two")])
    assert "there (at key 'calls': a str where an int is asked) [two]" in str(without.value)


def test_a_described_value_is_clipped_like_a_repr():
    long = lambda got, want: ("x" * 300, "y")  # noqa: E731
    with pytest.raises(ExerciseFailure) as wrong:
        compare_on_inputs(lambda n: n + 1, lambda n: n, edge_cases=[(1,)], describe=long)
    assert str(wrong.value) == f"fn(1) returned {'x' * 155} ...); expected y there"


def test_a_check_of_plain_python_does_not_import_torch():
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from hypothesis import strategies as st\n"
        "from verlstudy.kit.properties import compare_on_inputs\n"
        "compare_on_inputs(sorted, lambda xs: sorted(xs), inputs=st.tuples(st.lists(st.integers())))\n"
        "print('torch' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"  # importing torch would cost a learner's first check seconds


def test_a_check_runs_on_one_thread_and_gives_the_learner_their_setting_back():
    seen = []

    def reference(n):
        seen.append(torch.get_num_threads())
        return n

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        compare_on_inputs(lambda n: n, reference, edge_cases=[(1,)])
        assert seen == [1] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_generated_inputs_run_with_the_heap_set_aside_and_give_it_back(monkeypatch):
    import gc
    import weakref

    monkeypatch.setattr(check_conditions, "_heap_was_set_aside", False)  # as in a fresh kernel
    gc.unfreeze()  # and a heap nothing froze yet (an earlier test in this worker may have run a lesson's set-up)

    class Node:
        pass

    cycle = Node()
    cycle.me = cycle  # garbage only a collection frees
    gone = weakref.ref(cycle)
    frozen_inside = []

    def reference(xs):
        frozen_inside.append(gc.get_freeze_count())
        return sum(x * x for x in xs)

    del cycle
    compare_on_inputs(reference_sum_of_squares, reference, inputs=LISTS, max_examples=3)
    assert frozen_inside and all(n > 0 for n in frozen_inside)  # the heap was set aside while hypothesis ran
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert gone() is None  # set aside, not leaked: the collector gets it back afterwards


def test_a_heap_the_learner_froze_stays_frozen():
    import gc

    gc.freeze()
    try:
        before = gc.get_freeze_count()
        with check_conditions.heap_set_aside():
            assert gc.get_freeze_count() == before
        assert gc.get_freeze_count() == before
    finally:
        gc.unfreeze()


def test_generated_inputs_do_not_depend_on_what_else_is_imported(tmp_path, monkeypatch):
    import importlib
    import sys

    def inputs_drawn():
        seen = []

        def reference(n):
            seen.append(n)
            return n

        compare_on_inputs(reference, reference, inputs=st.tuples(st.integers()), max_examples=60)
        return seen

    before = inputs_drawn()
    # a learner's own module with constants (hypothesis ignores a module of over 1024): it would mix them in
    source = "".join(f"def f{i}(x):\n    return x == {7919 * i + 1013}\n" for i in range(500))
    (tmp_path / "learner_constants.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("learner_constants")
    try:
        assert inputs_drawn() == before
    finally:
        sys.modules.pop("learner_constants", None)


def test_the_fixed_pool_gives_hypothesis_its_own_back():
    from hypothesis.internal.conjecture import providers

    original = providers._get_local_constants
    with check_conditions.fixed_constant_pool():
        assert len(providers._get_local_constants()) == 0
    assert providers._get_local_constants is original


@pytest.fixture
def hypothesis_home_kept():
    """Whatever hypothesis's storage folder was before a test, it is again afterwards."""
    from hypothesis import configuration

    before = getattr(configuration, "__hypothesis_home_directory", None)
    yield configuration
    configuration.set_hypothesis_home_dir(before)


def test_a_check_writes_nothing_into_the_working_folder(tmp_path, monkeypatch, hypothesis_home_kept):
    from hypothesis.internal import charmap

    work = tmp_path / "learner"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.delenv("HYPOTHESIS_STORAGE_DIRECTORY", raising=False)
    # as in a kernel started in the learner's folder: hypothesis, imported by the first check, defaults to it
    monkeypatch.setattr(hypothesis_home_kept, "__hypothesis_home_directory_default", work / ".hypothesis")
    monkeypatch.setattr(hypothesis_home_kept, "__hypothesis_home_directory", None)
    monkeypatch.setattr(check_conditions, "cache_root", lambda: tmp_path / "cache")
    monkeypatch.setattr(charmap, "_charmap", None)  # as in a fresh kernel: the Unicode table is read or written
    monkeypatch.setattr(charmap, "category_index_cache", {frozenset(): ()})  # and no query answered from memory
    monkeypatch.setattr(charmap, "limited_category_index_cache", {})  # (an earlier test may have asked the same)
    before = getattr(hypothesis_home_kept, "__hypothesis_home_directory", None)
    compare_on_inputs(str.upper, lambda s: s.upper(), inputs=st.tuples(st.text(max_size=4)), max_examples=5)
    # the Unicode table itself, asked for as a first check asks (an earlier test in this process may have left
    # hypothesis answering from tables it already built, so the check above need not have read it)
    with check_conditions.storage_in_course_cache():
        charmap.charmap()
    assert list(work.iterdir()) == []
    assert (tmp_path / "cache" / "hypothesis" / "unicode_data").is_dir()
    assert getattr(hypothesis_home_kept, "__hypothesis_home_directory", None) == before


def test_a_storage_folder_the_learner_chose_is_kept(tmp_path, monkeypatch, hypothesis_home_kept):
    monkeypatch.setattr(check_conditions, "cache_root", lambda: tmp_path / "cache")
    hypothesis_home_kept.set_hypothesis_home_dir(tmp_path / "mine")
    with check_conditions.storage_in_course_cache():
        assert hypothesis_home_kept.storage_directory().path == tmp_path / "mine"
    monkeypatch.setenv("HYPOTHESIS_STORAGE_DIRECTORY", str(tmp_path / "by_env"))
    hypothesis_home_kept.set_hypothesis_home_dir(None)
    with check_conditions.storage_in_course_cache():
        assert hypothesis_home_kept.storage_directory().path == tmp_path / "by_env"


def test_a_message_names_a_kind_with_its_article_and_an_outcome_value_as_it_describes_itself():
    class Raised:
        described_as = "a raised KeyError"

    assert difference(Raised(), 3) == "a raised KeyError where an int is asked"
    assert difference(3, ["x"]) == "an int where a list is asked"
    assert difference([1], {"a": 1}).startswith("a list where a mapping")


@pytest.mark.parametrize(
    ("value", "read"),
    [(3, "an int"), ([], "a list"), (object(), "an object"), (None, "a NoneType"), (torch.ones(1), "a Tensor")],
)
def test_a_kind_reads_with_its_article(value, read):
    assert a_kind(value) == read


def test_a_kind_of_a_value_that_describes_itself_is_its_description():
    class Raised:
        described_as = "a raised KeyError"

    class NotAText:
        described_as = 3  # only a text describes a value

    assert a_kind(Raised()) == "a raised KeyError"
    assert a_kind(NotAText()) == "a NotAText"
