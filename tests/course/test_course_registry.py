"""The lesson registry: one list that the CLI, runner, tests, student edition and site all read."""

import pytest

from verlstudy.course import registry


def test_numbers_are_consecutive_from_zero_and_slugs_unique():
    assert [lesson.number for lesson in registry.LESSONS] == list(range(len(registry.LESSONS)))
    assert len({lesson.slug for lesson in registry.LESSONS}) == len(registry.LESSONS)


def test_every_budget_is_within_the_course_rule():
    for lesson in registry.LESSONS:
        assert 0 < lesson.budget_s <= registry.MAX_BUDGET_S, lesson.stem


def test_every_lesson_but_the_first_cites_a_pull_request():
    for lesson in registry.LESSONS[1:]:
        assert lesson.prs and lesson.pr_links[0] == f"https://github.com/verl-project/verl/pull/{lesson.prs[0]}"


@pytest.mark.parametrize("key", [3, "3", "03", "03_router_replay_scoping", "03_router_replay_scoping.ipynb"])
def test_get_lesson_accepts_number_code_and_stem(key):
    assert registry.get_lesson(key).slug == "router_replay_scoping"


def test_unknown_lesson_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown lesson '42'; known lessons: 00, 01"):
        registry.get_lesson("42")
    with pytest.raises(TypeError):
        registry.get_lesson(3.0)  # type: ignore[arg-type]


def test_select_keeps_course_order_and_drops_repeats():
    assert [lesson.code for lesson in registry.select_lessons(["04", "1", "01"])] == ["01", "04"]
    assert registry.select_lessons(None) == list(registry.LESSONS)


def test_course_map_has_a_row_per_lesson_and_a_total():
    text = registry.course_map()
    assert all(lesson.title in text for lesson in registry.LESSONS)
    assert (
        text.splitlines()[-1]
        == f"{len(registry.LESSONS)} lessons, {sum(x.minutes for x in registry.LESSONS)} minutes in all"
    )
