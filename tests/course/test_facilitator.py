"""docs/facilitator.md and the day plan it embeds: in step with the registry and the notebooks."""

import itertools
import re

import pytest

from verlstudy.course import plan, registry, student

GUIDE = (registry.project_root() / "docs" / "facilitator.md").read_text()
PLAN_BLOCK = re.compile(r"<!-- day-plan:[^>]*-->\n(.*?)\n<!-- end day-plan -->", re.DOTALL)


def _section(lesson) -> str:
    match = re.search(rf"^### {lesson.code} · .*?(?=^### |^## |\Z)", GUIDE, flags=re.MULTILINE | re.DOTALL)
    assert match, f"docs/facilitator.md has no '### {lesson.code} · ...' section"
    return match.group(0)


def test_the_embedded_day_plan_is_what_the_registry_gives_today():
    block = PLAN_BLOCK.search(GUIDE)
    assert block, "the day plan must sit between the day-plan markers"
    assert block.group(1) == plan.day_plan(), "regenerate it with verlstudy.course.plan.day_plan()"


@pytest.mark.parametrize("lesson", registry.LESSONS, ids=lambda lesson: lesson.code)
def test_every_lesson_has_what_to_project_a_question_and_every_exercise(lesson):
    text = _section(lesson)
    assert "**Project:**" in text and "**Ask" in text
    named = re.findall(r"^  - \*\*(\d+\.\d+)\*\*", text, flags=re.MULTILINE)
    assert named == student.exercise_ids(lesson), "one common-mistakes bullet per exercise, in notebook order"


class TestDayPlan:
    def test_clock_times_add_up_to_the_registry_minutes_plus_breaks(self):
        day = plan.day_plan(start="08:30", breaks=[("00", "Coffee", 10)], wrap_up_minutes=0)
        rows = day.splitlines()[2:]
        assert len(rows) == len(registry.LESSONS) + 1
        assert rows[0].startswith("| 08:30-08:45 | 00 ")
        assert rows[1] == "| 08:45-08:55 | Coffee | 10 |  |"
        total = sum(lesson.minutes for lesson in registry.LESSONS) + 10
        end = 8 * 60 + 30 + total
        assert rows[-1].split(" | ")[0].endswith(f"-{end // 60:02d}:{end % 60:02d}")

    def test_each_session_starts_when_the_previous_ends(self):
        spans = [row.split(" | ")[0].lstrip("| ").split("-") for row in plan.day_plan().splitlines()[2:]]
        assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))

    @pytest.mark.parametrize("start", ["9am", "25:00", "09:75", 900])
    def test_a_bad_start_names_the_format(self, start):
        with pytest.raises(ValueError, match="start must be a time of day 'HH:MM'"):
            plan.day_plan(start=start)

    def test_a_break_after_an_unknown_lesson_is_refused(self):
        with pytest.raises(ValueError, match="after lesson '42', which is not in the plan"):
            plan.day_plan(breaks=[("42", "Break", 15)])

    def test_break_minutes_must_be_positive_whole_numbers(self):
        with pytest.raises(ValueError, match="positive whole number of minutes, got 0"):
            plan.day_plan(breaks=[("01", "Break", 0)])

    def test_a_plan_past_midnight_is_refused(self):
        with pytest.raises(ValueError, match="runs past midnight"):
            plan.day_plan(start="20:00")


def test_exercise_ids_are_read_from_the_notebook_tags():
    assert student.exercise_ids(registry.get_lesson(4)) == ["4.1", "4.2", "4.3"]


def _makefile_targets() -> set[str]:
    makefile = (registry.project_root() / "Makefile").read_text()
    return set(re.findall(r"^([a-z][a-z-]*):", makefile, flags=re.MULTILINE))


def _subcommands() -> set[str]:
    from verlstudy.course.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return set(sub.choices)


def test_every_command_the_guide_names_exists():
    commands = re.findall(r"`(?:\.venv/bin/)?(verlstudy|make) ([a-z-]+)", GUIDE)
    assert {tool for tool, _ in commands} == {"verlstudy", "make"}, "the guide names no commands?"
    missing = [
        f"{tool} {name}"
        for tool, name in commands
        if name not in (_subcommands() if tool == "verlstudy" else _makefile_targets())
    ]
    assert missing == [], f"docs/facilitator.md names commands that do not exist: {missing}"


def test_the_day_table_names_the_workshop_commands_and_the_hint():
    day = GUIDE[GUIDE.index("## The day, command by command") : GUIDE.index("## How to run every session")]
    for command in ("make course", "make site", "make student", "verlstudy doctor", "make lab"):
        assert f"`{command}" in day or f"/{command}" in day, command
    assert "verlstudy progress" in day and 'exercise_hint("N.M")' in day
    from verlstudy.kit import exercises

    assert "fourth wrong try" in day and exercises.METHOD_AFTER_TRIES == 4


def test_the_guide_projects_the_student_site_and_shows_the_live_progress_page():
    before = GUIDE[GUIDE.index("## The day before") : GUIDE.index("## The day's plan")]
    assert "**Project the student site, `site/student/index.html`**" in before
    assert "`site/index.html`" not in before.split("Project the student site")[0], "project the full site nowhere"
    day = GUIDE[GUIDE.index("## The day, command by command") : GUIDE.index("## How to run every session")]
    assert "`verlstudy progress class/ --html progress.html --watch 30`" in day


def test_every_verlstudy_command_line_in_the_guide_parses():
    from verlstudy.course.cli import build_parser

    lines = re.findall(r"`(?:\.venv/bin/)?verlstudy ([^`]+)`", GUIDE)
    assert len(lines) >= 5
    for line in lines:
        try:
            build_parser().parse_args(line.split())
        except SystemExit:
            pytest.fail(f"docs/facilitator.md runs `verlstudy {line}`, which the command refuses")


@pytest.mark.parametrize("lesson", registry.LESSONS, ids=lambda lesson: lesson.code)
def test_the_questions_follow_the_lessons_order_and_name_sections_that_exist(lesson):
    text = _section(lesson)
    asked = [int(n) for n in re.findall(r"^- \*\*Ask (?:at|before) [^*]*?section (\d+)", text, flags=re.MULTILINE)]
    assert asked == sorted(asked), f"lesson {lesson.code}: questions out of the lesson's order {asked}"
    headings = "\n".join(
        line
        for cell in student.read_notebook(lesson.notebook).cells
        if cell.cell_type == "markdown"
        for line in cell.source.splitlines()
        if line.startswith("## ")
    )
    for n in asked:
        assert re.search(rf"^## {n}\b", headings, flags=re.MULTILINE), f"lesson {lesson.code} has no section {n}"


def test_no_question_asks_what_an_exercise_now_asks():
    # 1.1 predicts the bytes per micro-batch and 7.1 derives dp/edp: the guide debriefs them, never asks them again
    assert "Predict the bytes per micro-batch from the shapes" not in GUIDE
    assert "what is the data-parallel size, and" not in GUIDE
