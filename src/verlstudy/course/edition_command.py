"""`verlstudy edition LANG`: build (`--out`, `--student`), run (`--run`), check (`--check`) or update (`--update`)
one language's edition of the course (course.edition holds the catalogs' logic; docs/translating.md)."""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from verlstudy.course import claim_catalog, edition, registry
from verlstudy.course.files import read_notebook
from verlstudy.course.registry import Lesson

RUN_TIMEOUT_S = 600.0  # one notebook's limit, as `verlstudy run`'s default


def run_edition(lang: str, out: Path, lessons: Sequence[Lesson], timeout_s: float = RUN_TIMEOUT_S) -> list[str]:
    """Execute the lessons' edition in `lang` into `out` (one fresh kernel each, messages in `lang`); the failures.

    The executed notebooks are what `verlstudy site --translation LANG=OUT` renders. `out` follows `verlstudy run
    --out`'s rules: a notebook there is replaced only if a run wrote it and nobody changed it since.
    """
    from verlstudy.course import run_out, runner

    manifest = run_out.check_run_out(out, [lesson.notebook.name for lesson in lessons])
    failed = []
    saved = {key: os.environ.get(key) for key in ("VERLSTUDY_LANG", "VERLSTUDY_ATTEMPTS")}
    os.environ.update({"VERLSTUDY_LANG": lang, "VERLSTUDY_ATTEMPTS": "0"})  # the kernels inherit both
    try:
        with tempfile.TemporaryDirectory(prefix=f"verlstudy-{lang}-") as tmp:
            sources, _ = edition.build_edition(lang, Path(tmp) / "edition", lessons)
            for source in sources:
                target = Path(out) / source.name
                manifest.pending([target])
                try:
                    status, error, seconds = runner.execute_with_papermill(source, target, {}, Path(out), timeout_s)
                finally:
                    manifest.record([target])
                print(f"{source.stem}: {status} in {seconds:.0f} s" + (f" ({error})" if error else ""), flush=True)
                if status != "passed":
                    failed.append(source.stem)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return failed


def cmd_edition(args: argparse.Namespace) -> int:
    """`verlstudy edition LANG --out DIR | --run --out DIR | --check | --update`."""
    from verlstudy.course.files import check_target
    from verlstudy.course.usage import UsageError

    try:
        lang = edition.check_language(args.lang)
        lessons = registry.select_lessons(args.lessons)
        modes = [flag for flag in ("--check", "--update", "--run") if getattr(args, flag[2:])]
        if len(modes) > 1:  # `--check --update` ran the update alone and dropped the check without a word
            raise ValueError(
                f"{' and '.join(modes)} do different things: give one (--check only reads, --update "
                "rewrites the catalogs, --run executes the edition)"
            )
        if args.update:  # make translations
            changes = [line for lesson in lessons for line in edition.update_catalog(lesson, lang)]
            changes += claim_catalog.update_claims_catalog(lang)  # every lesson's claims: one catalog
            need = f"{len(changes)} entries need a translator"
            print(f"edition {lang}: {len(lessons)} lesson catalogs and the claims' catalog brought up to date, {need}")
            for line in changes:
                print(f"  {line}")
            return 0
        if args.check:
            stale = edition.stale_cells(lang, lessons)
            strings = claim_catalog.claim_strings()  # read once: the notebooks' claim records
            claims = claim_catalog.stale_claims(lang, strings=strings)
            for item in stale + claims:
                print(item.line())
            cells = sum(len(edition.markdown_cells(read_notebook(lesson.notebook))) for lesson in lessons)
            print(f"edition {lang}: {cells - len(stale)} of {cells} markdown cells translated from today's English")
            done = len(strings) - len(claims)
            print(f"edition {lang}: {done} of {len(strings)} claim names and upstream notes translated")
            return 1 if stale or claims else 0
        if args.out is None:
            raise ValueError("name a folder with --out DIR (or pass --check or --update)")
        out = check_target(args.out, "--out")
        if args.run:
            failed = run_edition(lang, out, lessons)
            print(f"edition {lang}: {len(lessons) - len(failed)} of {len(lessons)} lessons passed, executed in {out}")
            return 1 if failed else 0
        written, left = edition.build_edition(  # with the lessons they link to: the glossary's links land
            lang, out, registry.with_linked_lessons(lessons), allow_missing=args.allow_missing, student=args.student
        )
    except ValueError as e:
        raise UsageError(str(e)) from e
    kind = "student edition" if args.student else "edition"
    print(f"{kind} {lang}: {len(written)} notebooks in {args.out} (outputs cleared: run them to see them)")
    for item in left:
        print(f"  left in English: {item.line()}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The `edition` subcommand (cli.build_parser calls this)."""
    parser = sub.add_parser("edition", help="build, run or check a translated edition (docs/translating.md)")
    parser.add_argument("lang", help=f"the language: {', '.join(edition.LANGUAGES)}")
    parser.add_argument("lessons", nargs="*", help="lesson numbers (default: all)")
    parser.add_argument("--out", default=None, help="folder to write the translated notebooks into")
    parser.add_argument("--student", action="store_true", help="write the student edition (solutions as stubs)")
    parser.add_argument(
        "--run", action="store_true", help="execute the edition into --out, messages in LANG (for the site)"
    )
    parser.add_argument(
        "--allow-missing", action="store_true", help="keep untranslated cells in English instead of stopping"
    )
    parser.add_argument("--check", action="store_true", help="name every cell whose translation is missing or stale")
    parser.add_argument("--update", action="store_true", help="update the catalogs from the English notebooks")
    parser.set_defaults(func=cmd_edition)
