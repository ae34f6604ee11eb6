"""The lesson registry: which notebooks make up the course, what each teaches, and its time budget.

The registry is the one list everything else reads: `verlstudy list`, the runner, the structure
tests, the student edition and the site.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from verlstudy.kit.resources import course_root, data_dir, notebooks_dir

UPSTREAM_REPO = "https://github.com/verl-project/verl"
MAX_BUDGET_S = 3.0  # seconds a lesson may add to the floor notebook (torch + matplotlib import), on 2 cores


def project_root() -> Path:
    """Where notebooks/ and data/ live: the checkout, or the installed package's bundled copy."""
    return course_root()


@dataclass(frozen=True)
class Lesson:
    number: int
    slug: str
    package: str  # the lesson's folder under verlstudy/lessons/ (lNN_topic)
    title: str
    prs: tuple[int, ...]  # first is the lesson's PR; the rest are related (precursor, revert, follow-up)
    minutes: int  # a learner's time, reading and exercises included
    budget_s: float  # seconds allowed beyond the floor notebook (2 cores); the runner starts the longest first
    needs: tuple[str, ...] = ("cpu",)  # "cpu" always works; "cuda"/"npu" cells are optional extras

    @property
    def code(self) -> str:
        return f"{self.number:02d}"

    @property
    def stem(self) -> str:
        return f"{self.code}_{self.slug}"

    @property
    def notebook(self) -> Path:
        return notebooks_dir() / f"{self.stem}.ipynb"

    @property
    def twin(self) -> Path:
        return notebooks_dir() / "py" / f"{self.stem}.py"

    @property
    def module(self) -> str:
        """The dotted name of the lesson's package."""
        return f"verlstudy.lessons.{self.package}"

    def import_part(self, part: str) -> ModuleType | None:
        """The lesson's module `part` (e.g. "upstream", "checks"), or None where the lesson has none."""
        name = f"{self.module}.{part}"
        if importlib.util.find_spec(self.module) is None:
            raise LookupError(f"lesson {self.code}'s package {self.module} is missing")
        if importlib.util.find_spec(name) is None:
            return None
        return importlib.import_module(name)

    @property
    def pr_links(self) -> tuple[str, ...]:
        return tuple(f"{UPSTREAM_REPO}/pull/{n}" for n in self.prs)

    @property
    def upstream_verified(self) -> str:
        """The verl version this lesson's facts were last verified against (data/upstream_verified.json)."""
        return upstream_verified_versions().get(self.code, "not yet verified")


LESSONS: tuple[Lesson, ...] = (
    Lesson(
        0, "start_here", "l00_start_here", "Start here: how this course runs, and how it checks itself", (), 15, 1.0
    ),
    Lesson(
        1,
        "memory_leak_attribution",
        "l01_memory_leak",
        "Attributing a per-micro-batch memory leak to its allocation site",
        (7874, 6699),
        60,
        2.0,
        ("cpu", "cuda"),
    ),
    Lesson(2, "detach_placement_trap", "l02_detach", "detach_tree and the detach-placement trap", (7874,), 45, 2.0),
    Lesson(
        3,
        "router_replay_scoping",
        "l03_router_replay",
        "Router replay made model-scoped and opt-in",
        (7805, 7106, 7786),
        60,
        3.0,  # it also runs verl 0.9.0's replay and RECORD on a stale registry, beside 0.9.1's
    ),
    Lesson(
        4, "thd_sequence_alignment", "l04_thd", "Aligning packed (THD) sequence lengths for SP and CP", (7702,), 40, 2.0
    ),
    Lesson(
        5, "checkpoint_strict_loading", "l05_checkpoint", "strict=False checkpoint loading, audited", (7836,), 30, 1.0
    ),
    Lesson(
        6,
        "external_modules_default",
        "l06_external_modules",
        "External modules loaded by an environment variable",
        (7827, 7886),
        30,
        1.5,  # two more named checker cases; +1.1 s in a fresh-clone run on a slow day
    ),
    Lesson(
        7,
        "grpo_recipe_at_scale",
        "l07_grpo_recipe",
        "A 512-device GRPO recipe read closely: layout and clip-higher",
        (7788,),
        50,
        2.0,
    ),
    Lesson(
        8,
        "dependency_stack_upgrade",
        "l08_dependency_stack",
        "A dependency-stack upgrade as data: manifests, diffs, unpinned clones",
        (7604, 7827),
        30,
        1.0,
    ),
    Lesson(
        9,
        "dead_config_cleanup",
        "l09_dead_config",
        "Removing a dead config key without breaking anyone silently",
        (7544, 7466),
        40,
        2.5,  # more named checker cases and the VeOmni claims; +2.0 s in a fresh-clone run on a slow day
    ),
)


def upstream_verified_versions() -> dict[str, str]:
    """Lesson code -> verl version, as last written by `verlstudy verify-upstream`."""
    path = data_dir() / "upstream_verified.json"
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    return {str(k): str(v["verl_version"]) if isinstance(v, dict) else str(v) for k, v in data.items()}


def get_lesson(key: object) -> Lesson:
    """Find a lesson by number (3), code ('03') or stem ('03_router_replay_scoping')."""
    if isinstance(key, bool) or not isinstance(key, int | str):
        raise TypeError(f"lesson must be a number like 3 or '03', got {type(key).__name__} {key!r}")
    text = str(key).strip()
    for lesson in LESSONS:
        if text in (str(lesson.number), lesson.code, lesson.stem, lesson.stem + ".ipynb"):
            return lesson
    known = ", ".join(lesson.code for lesson in LESSONS)
    raise ValueError(f"unknown lesson {key!r}; known lessons: {known}")


def select_lessons(keys: list[str] | tuple[str, ...] | None) -> list[Lesson]:
    """All lessons for an empty selection, else the named ones in course order, without repeats."""
    if not keys:
        return list(LESSONS)
    chosen = {get_lesson(k) for k in keys}
    return [lesson for lesson in LESSONS if lesson in chosen]


def with_linked_lessons(lessons: list[Lesson]) -> list[Lesson]:
    """`lessons` and every lesson their markdown links to (lesson 00's glossary, `00_start_here.ipynb#1F1B`), in
    course order: a partial edition whose links land nowhere teaches less than one that carries the glossary."""
    stems = {lesson.stem: lesson for lesson in LESSONS}
    chosen = set(lessons)
    for lesson in lessons:
        try:
            cells = json.loads(lesson.notebook.read_text(encoding="utf-8")).get("cells", [])
        except (OSError, ValueError):
            continue  # a missing or damaged notebook is named by the command that writes it
        text = "".join("".join(c.get("source", "")) for c in cells if c.get("cell_type") == "markdown")
        chosen |= {stems[stem] for stem in re.findall(r"\b(\d\d_[\w-]+)\.ipynb", text) if stem in stems}
    return [lesson for lesson in LESSONS if lesson in chosen]


def lesson_record(lesson: Lesson) -> dict[str, object]:
    """One lesson as plain data: what `verlstudy list --json` prints."""
    return {
        "code": lesson.code,
        "title": lesson.title,
        "package": lesson.module,
        "prs": list(lesson.prs),
        "minutes": lesson.minutes,
        "needs": list(lesson.needs),
        "notebook": f"{lesson.stem}.ipynb",
    }


def course_map() -> str:
    """The course map as a fixed-width table (what `verlstudy list` prints and lesson 00 shows)."""
    lines = [f"{'NN':<3} {'minutes':>7}  {'needs':<9} {'PR':<22} title"]
    for lesson in LESSONS:
        prs = ", ".join(f"#{n}" for n in lesson.prs) or "-"
        needs = "+".join(lesson.needs)
        lines.append(f"{lesson.code:<3} {lesson.minutes:>7}  {needs:<9} {prs:<22} {lesson.title}")
    total = sum(lesson.minutes for lesson in LESSONS)
    lines.append(f"{len(LESSONS)} lessons, {total} minutes in all")
    return "\n".join(lines)
