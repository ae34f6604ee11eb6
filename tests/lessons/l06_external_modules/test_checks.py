"""Lesson 06's checkers: the references pass; plausible wrong answers fail, each with a message naming the mistake."""

import re
from collections.abc import Sequence

import pytest

from conftest import Wrong, checker_tests
from verlstudy.kit.exercises import ExerciseFailure, check_exercise, exercise_results
from verlstudy.lessons.l06_external_modules import checks
from verlstudy.lessons.l06_external_modules.checks import check_parse_modules, check_predict_patched
from verlstudy.lessons.l06_external_modules.modules_env import (
    ADAPTOR,
    HOOK_PACKAGE,
    LIBRARY,
    Experiment,
    parse_module_list,
    predict_patched,
    run_experiments,
    split_like_verl_091,
    write_toy_packages,
)
from verlstudy.lessons.l06_external_modules.upstream import toy_hook_source


def own_parse(value):
    return [part.strip() for part in value.split(",") if part.strip()]


def own_predict(imports, env_value):
    named = (env_value or "").split(",")
    for module in imports:
        if module == ADAPTOR or (module == HOOK_PACKAGE and ADAPTOR in named):
            return True
        if module == LIBRARY:
            return False
    return False


def _stub(*_args):
    raise NotImplementedError("exercise")


def verdict(exercise_id, checker, *args):
    check_exercise(exercise_id, *args)
    return exercise_results()[exercise_id]


def test_parse_modules_checker():
    assert verdict("6.1", check_parse_modules, own_parse) == "correct"
    assert verdict("6.1", check_parse_modules, lambda v: tuple(own_parse(v))) == "correct"
    with pytest.raises(ExerciseFailure, match="keep the blanks"):
        check_parse_modules(lambda v: [p for p in v.split(",") if p])
    with pytest.raises(ExerciseFailure, match="holds empty names"):
        check_parse_modules(lambda v: [p.strip() for p in v.split(",")] if v else [])
    with pytest.raises(ExerciseFailure, match="names no modules"):
        check_parse_modules(split_like_verl_091_but_empty_gives_blank)
    with pytest.raises(ExerciseFailure, match="return a list"):
        check_parse_modules(lambda v: v)
    assert verdict("6.1", check_parse_modules, _stub) == "not attempted"


def split_like_verl_091_but_empty_gives_blank(value: str) -> list[str]:
    return [p.strip() for p in value.split(",")]


def verl_split_when_set(value):
    return value.split(",") if value else []


def parse_only_first(value):  # first match only
    return [value.split(",")[0].strip()] if value.strip(", \t") else []


def parse_hard_coded(value):  # the images' own value, whatever the input
    return ["megatron_adaptor"] if value else []


def parse_regex(value):
    import re

    return [name for name in (m.strip(" \t") for m in re.findall(r"[^,]+", value)) if name]


def parse_with_loop(value):
    names = []
    for piece in value.split(","):
        piece = piece.strip(" \t")
        if piece != "":
            names.append(piece)
    return tuple(names)


def predict_order_ignored(imports, env):  # the variable alone decides
    return ADAPTOR in imports or (HOOK_PACKAGE in imports and ADAPTOR in (env or "").split(","))


def predict_exact_value(imports, env):  # the variable as one module name, not a list
    return own_predict(imports, env) if env in (None, ADAPTOR) else False


def predict_ops_too_late(imports, env):  # thinks importing toylib.ops first also comes too late
    return not imports[0].startswith("toylib.") and own_predict(imports, env)


def predict_substring(imports, env):  # any toylib name in the variable counts as the adaptor
    for module in imports:
        if module == ADAPTOR or (module == HOOK_PACKAGE and "toylib" in (env or "")):
            return True
        if module == LIBRARY:
            return False
    return False


def predict_hook_alone(imports, env):  # importing verl alone is thought to patch
    return own_predict([ADAPTOR if m == HOOK_PACKAGE else m for m in imports], None)


def predict_first_only(imports, env):  # looks at the first import only
    return imports[0] == ADAPTOR or (imports[0] == HOOK_PACKAGE and ADAPTOR in (env or "").split(","))


def predict_pops(imports, env):  # consumes the list it was given
    while imports:
        module = imports.pop(0)
        if module == ADAPTOR or (module == HOOK_PACKAGE and ADAPTOR in (env or "").split(",")):
            return True
        if module == LIBRARY:
            return False
    return False


def predict_env_without_hook(imports, env):  # the variable counted although nothing imports toyverl
    if ADAPTOR in (env or "").split(","):
        return LIBRARY not in imports or imports[0] != LIBRARY
    return own_predict(imports, env)


def predict_by_index(imports, env):
    named = ADAPTOR in (env or "").split(",")
    firsts = [i for i, m in enumerate(imports) if m == ADAPTOR or (m == HOOK_PACKAGE and named)]
    return bool(firsts) and (LIBRARY not in imports or firsts[0] < imports.index(LIBRARY))


def predict_as_set(imports, env):
    seen = set()
    for module in imports:
        if module == LIBRARY:
            break
        seen.add(module)
    return ADAPTOR in seen or (HOOK_PACKAGE in seen and ADAPTOR in set((env or "").split(",")))


def parse_squeezing_blanks(value):  # the adversary's 6.1 W7: "megatron adaptor" becomes "megatronadaptor"
    return [p for p in re.sub(r"\s", "", value).split(",") if p]


def parse_lower_cased(value):  # the tester's 6.1 "normalises" the names: module names are case-sensitive
    return [p.strip().lower() for p in value.split(",") if p.strip()]


def predict_adaptor_in_value(imports, env):  # the tester's 6.2: the adaptor's name found anywhere in the value
    for module in imports:
        if module == ADAPTOR or (module == HOOK_PACKAGE and env is not None and ADAPTOR in env):
            return True
        if module == LIBRARY:
            return False
    return False


def predict_variable_alone(imports, env):  # the tester's 6.2: the variable patches, whether or not toyverl comes
    return ADAPTOR in (env or "").split(",") or own_predict(imports, env)


def predict_library_needed(imports, env):  # the tester's 6.2: never patched when toylib.model is never imported
    return LIBRARY in imports and own_predict(imports, env)


def parse_splitting_on_blanks(value):  # the adversary's 6.1 W10: "megatron adaptor" becomes two names
    return re.split(r"[,\s]+", value.strip(", \t")) if value.strip(", \t") else []


WRONG = {
    "6.1": [
        Wrong(lambda value: [p for p in value.split(",") if p], "keep the blanks", why="no strip"),
        Wrong(lambda value: [p.lstrip() for p in value.split(",") if p.strip()], "keep the blanks", why="left only"),
        Wrong(verl_split_when_set, "verl 0.9.1's own split", why="verl's split"),
        Wrong(lambda value: value.replace(" ", "").split(","), "names no modules", why="no empty check"),
        Wrong(lambda value: [p.strip() for p in value.split(",")] if value else [], "empty names", why="keeps empties"),
        Wrong(lambda value: value.split(), "between the commas", why="splits on blanks"),
        Wrong(parse_only_first, "between the commas", why="first entry only"),
        Wrong(parse_hard_coded, "between the commas", why="hard-coded to the images' value"),
        Wrong(lambda value: ",".join(p.strip() for p in value.split(",") if p.strip()), "return a list", why="str"),
        Wrong(parse_squeezing_blanks, "only a comma separates", why="every blank removed, inside a name too"),
        Wrong(parse_splitting_on_blanks, "only a comma separates", why="blanks split names as commas do"),
        Wrong(lambda value: list(dict.fromkeys(own_parse(value))), "written twice", why="repeated names dropped"),
        Wrong(parse_lower_cased, "case of the letters", why="names lower-cased"),
        Wrong(lambda value: [p.strip().upper() for p in value.split(",") if p.strip()], "case", why="upper-cased"),
    ],
    "6.2": [
        Wrong(predict_order_ignored, "ignores the order", why="import order ignored"),
        Wrong(predict_exact_value, "comma-separated list", why="the variable read as one name"),
        Wrong(predict_ops_too_late, "stops at toylib.ops", why="toylib.ops thought to bind"),
        Wrong(predict_substring, "does not name toylib_adaptor", why="substring of the variable"),
        Wrong(predict_hook_alone, "does not name toylib_adaptor", why="the variable ignored"),
        Wrong(predict_first_only, "yet you said unpatched", why="first import only"),
        Wrong(predict_pops, "changed its input", why="input mutated"),
        Wrong(lambda imports, env: int(own_predict(imports, env)), "bool", why="an int where a bool is asked"),
        Wrong(lambda imports, env: env == ADAPTOR and imports[0] == HOOK_PACKAGE, "yet you said", why="example-shaped"),
        Wrong(predict_env_without_hook, "nothing here imports toyverl", why="the variable counted without the hook"),
        Wrong(predict_variable_alone, "without toyverl", why="the variable patches whatever the imports"),
        Wrong(predict_library_needed, "never imports toylib.model", why="unpatched when the library is not imported"),
    ],
}
RIGHT = {
    "6.1": [parse_with_loop, parse_regex],
    # the adaptor's name as a substring of the value is right in the toy world: no module there has a longer name
    "6.2": [predict_by_index, predict_as_set, predict_adaptor_in_value],
}
test_wrong_answers_fail_naming_the_mistake, test_right_answers_written_differently_pass = checker_tests(WRONG, RIGHT)


def test_predict_patched_checker():
    assert verdict("6.2", check_predict_patched, own_predict) == "correct"

    def env_is_enough(imports: Sequence[str], env: str | None) -> bool:
        return bool(env) or ADAPTOR in imports

    with pytest.raises(ExerciseFailure, match="act without toyverl"):  # it ignores the order too; a worker shows it
        check_predict_patched(env_is_enough)
    with pytest.raises(ExerciseFailure, match="bool"):
        check_predict_patched(lambda imports, env: "yes")
    assert verdict("6.2", check_predict_patched, _stub) == "not attempted"


def test_splitting_on_commas_as_verl_0_9_1_does_is_a_wrong_answer(assert_wrong):
    assert_wrong("6.1", lambda value: value.split(","), mentions="names no modules")
    assert split_like_verl_091("a, b") == ["a", " b"]  # the same mistake as the lesson's model of 0.9.1


def verl_split_but_empty_is_none(value):
    return value.split(",") if value else []


@pytest.mark.parametrize(
    ("answer", "mentions"),
    [
        (lambda value: [p for p in value.split(",") if p], "keep the blanks"),
        (lambda value: [p.lstrip() for p in value.split(",") if p.strip()], "keep the blanks"),
        (verl_split_but_empty_is_none, "verl 0.9.1's own split"),
        (lambda value: value.replace(" ", "").split(","), "names no modules"),
        (lambda value: [p.strip() for p in value.split(",")] if value else [], "empty names"),
        (lambda value: value.split(), "does not hold the names between the commas"),
    ],
    ids=["no strip", "left strip only", "verl's split", "no empty check", "keeps empty entries", "splits on blanks"],
)
def test_6_1_rejects_plausible_wrong_parsers(assert_wrong, answer, mentions):
    verdict_text = assert_wrong("6.1", answer, mentions=mentions)
    assert ".strip()" not in verdict_text and "split" not in verdict_text.replace("verl 0.9.1's own split", "")


def test_6_2_rejects_ignoring_the_import_order(assert_wrong):
    assert_wrong(
        "6.2", lambda imports, env: HOOK_PACKAGE in imports and ADAPTOR in (env or ""), mentions="ignores the order"
    )
    assert_wrong("6.2", lambda imports, env: env is not None and ADAPTOR in env, mentions="act without toyverl")


def test_6_2_messages_do_not_state_the_rule(assert_wrong):
    verdict_text = assert_wrong("6.2", lambda imports, env: False, mentions="yet you said unpatched")
    assert "iff" not in verdict_text and "before the library" not in verdict_text


@pytest.mark.parametrize(
    ("answer", "mentions"),
    [
        (predict_order_ignored, "ignores the order"),
        (predict_ops_too_late, "stops at toylib.ops"),
        (predict_first_only, "stops at toylib.ops"),
        (predict_variable_alone, "without toyverl"),
        (predict_library_needed, "never imports toylib.model"),
    ],
    ids=["order ignored", "toylib.ops decides", "first import only", "variable alone", "library needed"],
)
def test_6_2_first_tries_name_the_slip_not_the_rule(assert_wrong, answer, mentions):
    """A first wrong try shows the input, both answers and the kind of slip; why it is one is the method's job."""
    verdict_text = assert_wrong("6.2", answer, mentions=mentions)
    for rule in ("too late", "binds", "in place for a later import", "hook never runs", "imports nothing"):
        assert rule not in verdict_text, verdict_text


def test_6_2_the_variable_without_toyverl_is_named_as_such_not_as_the_order(assert_wrong):
    """The report's misnamed message: this answer kept the order; its slip is the variable acting on its own."""
    verdict_text = assert_wrong("6.2", predict_variable_alone, mentions="nothing here imports toyverl")
    assert "order" not in verdict_text


def test_6_2_an_ambiguous_input_gets_the_plain_line():
    """Where more than one slip gives the learner's answer, no mistake is named: the two values say it."""
    imports, env = ["toylib.ops", ADAPTOR], None
    assert checks._patch_names((imports, env), False, True) is None
    assert checks._patch_names((["toylib.ops", HOOK_PACKAGE, LIBRARY], f"json,{ADAPTOR}"), False, True) is None


def test_the_mechanisms_own_parser_and_predictor_are_refused(assert_wrong):
    assert_wrong("6.1", parse_module_list, mentions="library's own parse_module_list")
    assert_wrong("6.2", lambda imports, env: predict_patched(imports, env), mentions="calls the library's own")


@pytest.mark.parametrize("exercise_id", ["6.1", "6.2"])
def test_no_mechanism_function_passes(assert_mechanism_does_not_pass, exercise_id):
    assert_mechanism_does_not_pass(exercise_id, "verlstudy.lessons.l06_external_modules")


def test_6_2_reference_agrees_with_real_processes_running_the_lessons_hook(tmp_path):
    """The checker's named cases and 40 of its generated inputs, run as the lesson runs them: the notebook's toy
    packages (nothing added) with verl's hook. Every input must run (a name the toy world lacks would make
    `import toyverl` fail, and the question would have no answer) and the reference must be what the process shows.
    """
    from hypothesis import given, settings

    folder = write_toy_packages(tmp_path, toy_hook_source()[0])
    cases = [case.args for case in checks._PATCH_CASES]

    @settings(max_examples=40, derandomize=True, database=None)
    @given(checks._process())
    def collect(args):
        cases.append(args)

    collect()
    outcomes = run_experiments([Experiment(f"case{i}", tuple(im), env) for i, (im, env) in enumerate(cases)], folder)
    assert [o.patched for o in outcomes] == [predict_patched(im, env) for im, env in cases]


def test_6_2_never_asks_about_a_variable_naming_the_model_module():
    """The text rules such values out: the hook would import toylib.model itself, before the adaptor."""
    from hypothesis import given, settings

    @settings(max_examples=200, derandomize=True, database=None)
    @given(checks._process())
    def env_never_names_the_model(args):
        assert LIBRARY not in (args[1] or "").split(",")

    env_never_names_the_model()
    assert all(LIBRARY not in (case.args[1] or "").split(",") for case in checks._PATCH_CASES)
