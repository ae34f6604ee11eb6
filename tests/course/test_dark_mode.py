"""The site and the progress page follow the reader's dark setting with CSS alone (prefers-color-scheme, no script):
every rule that paints a background or a text colour in the light page is given a dark one."""

from __future__ import annotations

import re

import pytest

from verlstudy.course import class_progress_page, site_page

DARK = "@media (prefers-color-scheme:dark){"


def _painting_selectors(css: str) -> set[str]:
    """Each selector (split at commas) of a top-level rule that sets a background or a colour."""
    found = set()
    for selectors, body in re.findall(r"^([^@{}\n][^{}]*)\{([^{}]*)\}", css, re.M):
        if re.search(r"(?:^|;)\s*(?:background|color)\s*:", body):
            found |= {s.strip() for s in selectors.split(",")}
    return found


def _split(css: str) -> tuple[str, str]:
    assert css.count(DARK) == 1 and ":root{color-scheme:light dark}" in css
    light, dark = css.split(DARK)
    return light, dark.rsplit("}", 1)[0]


@pytest.mark.parametrize("css", [site_page.CSS, class_progress_page.CSS], ids=["site", "progress"])
def test_every_painted_rule_has_a_dark_counterpart(css: str) -> None:
    light, dark = _split(css)
    dark_selectors = _painting_selectors(dark)
    assert {"body"} <= dark_selectors
    missing = {s for s in _painting_selectors(light) if s not in dark_selectors and not s.startswith(":root")}
    assert not missing, f"painted only in the light scheme: {sorted(missing)}"


def test_the_sites_code_colours_change_with_the_scheme() -> None:
    css = site_page.pygments_css()
    light, dark = css.split(DARK)
    assert ".highlight" in light and ".highlight" in dark and "<script" not in css
