"""The facilitator's day: clock times for any selection of lessons, from the registry's minutes."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from verlstudy.course import registry
from verlstudy.course.registry import Lesson
from verlstudy.kit.i18n import _

# (after lesson, what, minutes): pauses placed where a lesson's ideas need time to settle
DAY_BREAKS: tuple[tuple[str, str, int], ...] = (("01", "Break", 15), ("03", "Lunch", 60), ("06", "Break", 15))
WRAP_UP_MINUTES = 15


def _minutes_of_day(clock: str) -> int:
    match = re.fullmatch(r"(\d{1,2}):(\d{2})", clock) if isinstance(clock, str) else None
    if not match or int(match.group(1)) > 23 or int(match.group(2)) > 59:
        raise ValueError(f"start must be a time of day 'HH:MM' (24-hour), got {clock!r}")
    return int(match.group(1)) * 60 + int(match.group(2))


def day_plan(
    start: str = "09:00",
    breaks: Sequence[tuple[str, str, int]] = DAY_BREAKS,
    wrap_up_minutes: int = WRAP_UP_MINUTES,
    lessons: Sequence[Lesson] | None = None,
    titles: Mapping[str, str] | None = None,
) -> str:
    """The workshop day as a markdown table: clock times from the registry's minutes, breaks in between.

    `titles` maps a lesson's stem to its title in the reader's language (a translated edition's); the table's own
    words are in the language `kit.i18n` has chosen."""
    titles = dict(titles or {})
    lessons = list(lessons or registry.LESSONS)
    codes = {lesson.code for lesson in lessons}
    for after, what, minutes in breaks:
        if after not in codes:
            raise ValueError(
                f"break {what!r} is placed after lesson {after!r}, which is not in the plan {sorted(codes)}"
            )
        if isinstance(minutes, bool) or not isinstance(minutes, int) or minutes <= 0:
            raise ValueError(f"break {what!r} needs a positive whole number of minutes, got {minutes!r}")
    if isinstance(wrap_up_minutes, bool) or not isinstance(wrap_up_minutes, int) or wrap_up_minutes < 0:
        raise ValueError(f"wrap_up_minutes must be a whole number >= 0, got {wrap_up_minutes!r}")
    now = _minutes_of_day(start)
    rows = [_("| time | session | minutes | upstream PR |"), "| --- | --- | ---: | --- |"]

    def add(label: str, minutes: int, prs: str = "") -> None:
        nonlocal now
        begin, end = now, now + minutes
        rows.append(
            f"| {begin // 60:02d}:{begin % 60:02d}-{end // 60:02d}:{end % 60:02d} | {label} | {minutes} | {prs} |"
        )
        now = end

    for lesson in lessons:
        title = titles.get(lesson.stem, lesson.title)
        add(f"{lesson.code} {title}", lesson.minutes, ", ".join(f"#{n}" for n in lesson.prs) or "-")
        for after, what, minutes in breaks:
            if after == lesson.code:
                add(_(what), minutes)
    if wrap_up_minutes:
        add(_("Wrap-up: questions, what to read next"), wrap_up_minutes)
    if now > 24 * 60:
        raise ValueError(f"the plan runs past midnight from {start}; start earlier or split it over two days")
    return "\n".join(rows)
