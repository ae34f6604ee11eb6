"""The built site as a real headless browser shows it: every page, both editions (skipped without a browser).

A probe page loads each page of the site in an iframe and reports what a reader would meet: images
that do not decode, figures shown narrower than 600 px, anything fetched from outside the page, anchors
that lead nowhere, the sidebar and previous/next links, solutions left open in the student edition and
claims tables left as raw Markdown pipes. Broken links between pages are checked in test_site.py.
"""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from verlstudy.course import registry, site

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
PROBE = Path(__file__).with_name("site_probe.html")


def find_browser() -> str | None:
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


@pytest.fixture(scope="module")
def seen(tmp_path_factory):
    browser = find_browser()
    if browser is None:
        pytest.skip(f"no headless browser on this machine (looked for {', '.join(BROWSERS)}): site not checked in one")
    out = tmp_path_factory.mktemp("site") / "site"
    written = site.build_site(out)
    pages = [p.relative_to(out).as_posix() for p in written]
    (out / "probe.html").write_text(PROBE.read_text().replace("PAGES", json.dumps(pages)))
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--allow-file-access-from-files",  # the probe reads its iframes' documents (same folder, file://)
        "--virtual-time-budget=60000",
        "--dump-dom",
        (out / "probe.html").as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    match = re.search(r'<pre id="result">(.*?)</pre>', done.stdout, re.DOTALL)
    assert match and match.group(1) != "pending", f"the probe did not finish: {done.stderr[-500:]}"
    return json.loads(match.group(1))


def test_every_page_loads_with_its_title_and_sidebar(seen):
    assert len(seen) == 2 * (len(registry.LESSONS) + 1) + 1  # two editions' lessons and indexes, the guide
    for page, report in seen.items():
        assert report["title"].startswith(("verlstudy", *(lesson.code for lesson in registry.LESSONS))), page
        assert report["sidebar_lessons"] == len(registry.LESSONS), page


def test_no_page_fetches_anything_or_has_a_broken_image(seen):
    for page, report in seen.items():
        assert report["fetched"] == [], f"{page} loads {report['fetched']}: the site must work offline"
        assert report["broken_images"] == [], f"{page}: images that do not decode {report['broken_images']}"


def test_figures_are_shown_at_a_readable_width(seen):
    figures = sum(report["images"] for report in seen.values())
    assert figures >= 2 * len(registry.LESSONS)
    narrow = {page: r["narrow_figures"] for page, r in seen.items() if r["narrow_figures"]}
    assert narrow == {}, f"figures under 600 px wide: {narrow}"


def test_anchors_lead_somewhere_and_lessons_link_to_their_neighbours(seen):
    for page, report in seen.items():
        assert report["missing_anchors"] == [], f"{page}: {report['missing_anchors']}"
    first, last = registry.LESSONS[0].stem, registry.LESSONS[-1].stem
    for prefix in ("", "student/"):
        assert seen[f"{prefix}{first}.html"]["next"] and not seen[f"{prefix}{first}.html"]["prev"]
        assert seen[f"{prefix}{last}.html"]["prev"] and not seen[f"{prefix}{last}.html"]["next"]


def test_claims_tables_are_tables_not_pipes(seen):
    for page, report in seen.items():
        assert report["pipes_in_text"] == 0, f"{page} prints a Markdown table as text"
        if not page.endswith("facilitator.html"):
            assert report["tables"] >= 1, page


def test_the_student_edition_hides_every_solution_and_the_full_edition_none(seen):
    for lesson in registry.LESSONS:
        student, full = seen[f"student/{lesson.stem}.html"], seen[f"{lesson.stem}.html"]
        assert student["solutions"] >= 2 and student["open_solutions"] == 0, lesson.code
        assert student["visible_solution_code"] == 0, f"{lesson.code}: solution code on screen before a click"
        assert full["solutions"] == 0, lesson.code
