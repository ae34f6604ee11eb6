"""The `verlstudy` command: list, run, doctor, refresh, the workshop (student, site, plan), edition, upstream."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from verlstudy.course import registry, terminal
from verlstudy.course.doctor import doctor_checks, lab_hint
from verlstudy.course.usage import UsageError
from verlstudy.kit import resources

MAX_TIMEOUT_S = 86400  # a notebook's --timeout: a day at most (a larger number would mean no limit)
DEVICE_CHOICES = ("auto", "cpu", "cuda", "npu")  # the same as verlstudy.kit.devices, without importing torch


def cmd_list(args: argparse.Namespace) -> int:
    if args.json:  # for scripts and lesson 00, which runs the command rather than importing the course
        print(json.dumps([registry.lesson_record(lesson) for lesson in registry.LESSONS], indent=1))
    else:
        print(registry.course_map())
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from verlstudy.course import run_command  # paths, parameters, the run itself and its reports

    return run_command.cmd_run(args)


def cmd_progress(args: argparse.Namespace) -> int:
    from verlstudy.course import files, progress, progress_live, progress_verify, runner

    try:  # the attempt logs by default (nothing executed); --verify re-executes what changed since its last time
        progress_live.check_options(args)
        if not args.verify:
            return progress_live.run(args)
    except ValueError as e:
        raise UsageError(str(e)) from e
    csv_path = Path(args.csv) if args.csv is not None else None
    junit = Path(args.junit) if args.junit is not None else None
    try:
        files.check_report_paths({"--csv": args.csv, "--junit": args.junit})
        build = files.check_target(args.build, "--build") if args.build is not None else None
        with runner.stop_signals():  # Ctrl-C, SIGTERM and an inherited ignored SIGINT all stop it
            rows = progress_verify.collect(
                [Path(f) for f in args.folders],
                build or resources.build_root() / "progress",
                workers=args.workers,
                timeout_s=args.timeout,
            )
    except ValueError as e:
        raise UsageError(str(e)) from e
    except progress.ProgressInterrupted as stop:
        print(progress.table(stop.rows), end="")
        partial = f"interrupted after {stop.finished} of {stop.total} notebooks; the table above is partial"
        print(f"verlstudy progress: {partial} (no CSV or JUnit written)", file=sys.stderr)
        return runner.stop_exit_code()
    print(progress.table(rows), end="")
    if csv_path:
        files.write_file_owned(csv_path, progress.to_csv(rows), "--csv", legacy=lambda p: True)
    if junit:
        files.write_file_owned(junit, progress.to_junit(rows), "--junit", legacy=lambda p: True)
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from verlstudy.course.stopping import stop_exit_code, stop_name

    try:
        checks = doctor_checks(start_kernel=not args.no_kernel_start)
    except KeyboardInterrupt:  # a stop is not a broken kernel: no [FAIL] line for it, no checks half-reported
        print(f"verlstudy doctor: stopped ({stop_name()}) before the checks finished; run it again", file=sys.stderr)
        return stop_exit_code()
    for ok, line in checks:
        print(f"[{'OK' if ok else 'FAIL'}] {line}")
    return 0 if all(ok for ok, _ in checks) else 1


def cmd_refresh(args: argparse.Namespace) -> int:
    from verlstudy.course import twins

    try:
        lessons = registry.select_lessons(args.lessons)
    except ValueError as e:
        raise UsageError(str(e)) from e
    if not args.lessons:
        raise UsageError("name the lessons to refresh, e.g. `verlstudy refresh 01` (refreshing rewrites outputs)")
    if resources.checkout_root() is None:  # the installed package's own notebooks are never rewritten
        raise UsageError(
            "refresh rewrites the course's own notebooks and works in a checkout only: "
            "use `verlstudy init DIR` for a copy of your own"
        )
    from verlstudy.course.stopping import stop_exit_code, stop_signals

    for lesson in lessons:
        try:
            with stop_signals():  # Ctrl-C, SIGTERM, an inherited ignored SIGINT: one line, files left whole
                changes = twins.refresh(lesson, source=args.source, force=args.force)
        except (ValueError, FileNotFoundError) as e:  # cells it would drop; a corrupt notebook, twin or kernel.json
            raise UsageError(str(e)) from e
        except KeyboardInterrupt:
            print(
                f"verlstudy refresh: interrupted while executing {lesson.stem}; its notebook and twin are as they"
                " were (they are written only after a whole run), lessons listed above were refreshed",
                file=sys.stderr,
            )
            return stop_exit_code()
        print(f"{lesson.stem}: {len(changes)} change(s)")
        for change in changes:
            print(f"  {change}")
    return 0


def cmd_student(args: argparse.Namespace) -> int:
    from verlstudy.course import files, student

    try:
        out = files.check_target(args.out, "--out")
        written = student.write_student_edition(
            out, registry.with_linked_lessons(registry.select_lessons(args.lessons)), force=args.force
        )
    except ValueError as e:
        raise UsageError(str(e)) from e
    print(f"student edition: {len(written)} notebooks in {args.out}")
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    from verlstudy.course import files, learner_copy

    try:
        report = learner_copy.init_course(files.check_target(args.folder, "the folder name"))
    except ValueError as e:
        raise UsageError(str(e)) from e
    print(f"course copied into {args.folder}: {report.summary()}")
    print(f"next: {lab_hint(Path(args.folder) / 'student')}")
    return 0


def cmd_site(args: argparse.Namespace) -> int:
    from verlstudy.course import site

    source = Path(args.from_dir) if args.from_dir else None
    try:
        if not args.out.strip():
            raise ValueError("--out is empty: name a folder")
        lang, _, folder = (args.translation or "").partition("=")  # --translation zh_CN=DIR (issue 45)
        if args.translation is not None and not (lang and folder):
            raise ValueError(
                f"--translation wants LANG=DIR (e.g. zh_CN=build/executed-zh_CN), got {args.translation!r}"
            )
        translation = (lang, Path(folder)) if args.translation else None
        written = site.build_site(Path(args.out), source, registry.select_lessons(args.lessons), translation)
    except (ValueError, FileNotFoundError) as e:
        raise UsageError(str(e)) from e
    out = Path(args.out)
    print(f"site: {len(written)} pages; to project, open {out / 'index.html'}")
    print(f"site: the student site (solutions behind 'show solution') is {out / site.STUDENT_DIR / 'index.html'}")
    if translation:
        print(f"site: the {lang} edition, each page linked to its English twin, is {out / lang / 'index.html'}")
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from verlstudy.course import plan

    try:
        lessons = registry.select_lessons(args.lessons)
        codes = {lesson.code for lesson in lessons}
        breaks = [] if args.no_breaks else [b for b in plan.DAY_BREAKS if b[0] in codes]
        print(plan.day_plan(start=args.start, breaks=breaks, lessons=lessons))
    except ValueError as e:
        raise UsageError(str(e)) from e
    return 0


def cmd_verify_upstream(args: argparse.Namespace) -> int:
    from verlstudy.course import verify
    from verlstudy.kit import upstream

    if not 1 <= args.cases <= verify.MAX_CASES:
        raise UsageError(f"--cases must be 1 to {verify.MAX_CASES} (inputs per comparison), got {args.cases}")

    def announce(lesson: registry.Lesson) -> None:  # a line per lesson: a long --cases run shows where it is
        print(f"verify-upstream: lesson {lesson.code} ({args.cases} cases per comparison)", file=sys.stderr, flush=True)

    from verlstudy.course.stopping import stop_exit_code, stop_signals

    try:
        read = verify.verl_read()
        print(read.line(), file=sys.stderr, flush=True)  # which verl the rows are about: a PYTHONPATH copy is named
        with stop_signals():  # Ctrl-C, SIGTERM and an inherited ignored SIGINT: one line, not a traceback
            rows = verify.verify_all(cases=args.cases, seed=args.seed, on_lesson=announce)
    except upstream.VerlNotInstalled as e:
        raise UsageError(str(e)) from e
    except KeyboardInterrupt:
        print("verlstudy verify-upstream: interrupted; nothing compared is reported or recorded", file=sys.stderr)
        return stop_exit_code()
    print(verify.table(rows))
    counts = {status: sum(r.status == status for r in rows) for status in verify.STATUSES}
    print("\n" + ", ".join(f"{n} {status}" for status, n in counts.items() if n or status not in ("moved", "error")))
    differ = [r for r in rows if r.status not in ("agree", "not comparable")]
    if args.record and not differ:
        if read.shadowed:  # data/upstream_verified.json speaks of the installed verl, not a copy on PYTHONPATH
            raise UsageError(f"not recording: the verl read ({read.root}) is not the installed one; unset PYTHONPATH")
        try:
            path = verify.record(rows)
        except ValueError as e:
            raise UsageError(str(e)) from e
        print(f"recorded the verified verl version in {path.relative_to(registry.project_root())}")
    return 1 if differ else 0


def _installed_version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("verlstudy")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed: running from a source tree)"


def cmd_hub(args: argparse.Namespace) -> int:  # hub (issue 44): dispatch to verlstudy.hub.cli
    from verlstudy.hub import cli as hub_cli

    return hub_cli.main(args.hub_args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="verlstudy", description=__doc__)
    parser.add_argument("--version", action="version", version=f"verlstudy {_installed_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    listing = sub.add_parser("list", help="the course map")
    listing.add_argument("--json", action="store_true", help="one JSON record per lesson instead of the table")
    listing.set_defaults(func=cmd_list)

    run = sub.add_parser("run", help="execute lessons with papermill and report")
    run.add_argument("lessons", nargs="*", help="lesson numbers (default: all)")
    run.add_argument(
        "-p", "--parameter", action="append", default=[], metavar="NAME=VALUE", help="override a notebook parameter"
    )
    run.add_argument("--device", choices=DEVICE_CHOICES, default=None, help="sets every lesson's `device` parameter")
    run.add_argument("--workers", type=int, default=2, help="notebooks executed at once (default 2)")
    run.add_argument("--out", default=None, help="folder for the executed notebooks (default: build/executed)")
    run.add_argument(
        "--report", default=None, help="markdown report (default: build/report.md, or OUT/report.md with --out)"
    )
    run.add_argument("--junit", default=None, metavar="FILE", help="also write a JUnit XML file")
    run.add_argument(
        "--results", default=None, metavar="FILE", help="also write the results as JSON (the course_run tests read it)"
    )
    run.add_argument("--no-floor", action="store_true", help="skip the floor notebook (no timing baseline)")
    run.add_argument(
        "--if-stale",
        action="store_true",
        help="execute only if OUT's last run is stale or partial (make course; the record is OUT/run-record.json)",
    )
    run.add_argument(
        "--timeout", type=float, default=600, metavar="SECONDS", help="stop a notebook after this long (default 600)"
    )
    run.set_defaults(func=cmd_run)

    prog = sub.add_parser("progress", help="each learner's exercises, from their attempt logs (--verify re-executes)")
    prog.add_argument("folders", nargs="+", help="a class folder (a folder per learner inside) or learners' folders")
    prog.add_argument("--html", default=None, metavar="FILE", help="also write the matrix as a page to project")
    prog.add_argument(
        "--watch", type=float, default=None, metavar="SECONDS", help="rewrite the --html page every SECONDS (Ctrl-C)"
    )
    prog.add_argument(
        "--idle", type=float, default=15, metavar="MINUTES", help="stuck after no attempt this long (0: off; 15)"
    )
    prog.add_argument(
        "--verify", action="store_true", help="re-execute the notebooks changed since their last verification"
    )
    prog.add_argument("--csv", default=None, metavar="FILE", help="also write the rows as CSV")
    prog.add_argument("--junit", default=None, metavar="FILE", help="also write a JUnit XML file")
    prog.add_argument("--build", default=None, help="--verify: where executed copies go (default: build/progress)")
    prog.add_argument("--workers", type=int, default=2)
    prog.add_argument(
        "--timeout",
        type=float,
        default=300,
        metavar="SECONDS",
        help="stop a learner's notebook after this long (an endless loop; default 300)",
    )
    prog.set_defaults(func=cmd_progress)

    doctor = sub.add_parser("doctor", help="[OK]/[FAIL] environment check (starts the lessons' kernel once)")
    doctor.add_argument(
        "--no-kernel-start", action="store_true", help="only resolve the kernel spec (fast; lesson 00 uses it)"
    )
    doctor.set_defaults(func=cmd_doctor)

    refresh = sub.add_parser("refresh", help="re-execute lessons and store their reference outputs")
    refresh.add_argument("lessons", nargs="*")
    refresh.add_argument(
        "--source", choices=("py", "ipynb"), default="py", help="build cells from the twin or the ipynb"
    )
    refresh.add_argument(
        "--force", action="store_true", help="rebuild from the twin even if the .ipynb holds cells the twin lacks"
    )
    refresh.set_defaults(func=cmd_refresh)

    student_cmd = sub.add_parser("student", help="write the student edition (solutions replaced by stubs)")
    student_cmd.add_argument("lessons", nargs="*")
    student_cmd.add_argument("--out", required=True, help="folder to write (learners work here)")
    student_cmd.add_argument("--force", action="store_true", help="overwrite notebooks a learner has changed")
    student_cmd.set_defaults(func=cmd_student)

    init_cmd = sub.add_parser("init", help="copy the course into a folder you own (never over your edits)")
    init_cmd.add_argument("folder", help="folder to create or update, e.g. ~/verlstudy")
    init_cmd.set_defaults(func=cmd_init)

    site_cmd = sub.add_parser("site", help="render executed lessons to HTML with an index")
    site_cmd.add_argument("lessons", nargs="*")
    site_cmd.add_argument("--out", required=True)
    site_cmd.add_argument("--from", dest="from_dir", default=None, help="executed notebooks (default: the stored ones)")
    site_cmd.add_argument(
        "--translation", default=None, metavar="LANG=DIR", help="also the edition in LANG (verlstudy edition --run)"
    )
    site_cmd.set_defaults(func=cmd_site)

    plan_cmd = sub.add_parser("plan", help="a workshop day's timetable from the registry (docs/facilitator.md)")
    plan_cmd.add_argument("lessons", nargs="*", help="lesson numbers (default: all)")
    plan_cmd.add_argument("--start", default="09:00", help="start time, HH:MM (default 09:00)")
    plan_cmd.add_argument("--no-breaks", action="store_true", help="leave out the breaks and lunch")
    plan_cmd.set_defaults(func=cmd_plan)

    # hub (issue 44): a workshop on JupyterHub; its own parser lives in verlstudy.hub.cli
    hub_cmd = sub.add_parser(
        "hub", help="a workshop on JupyterHub: hub init|users|up (verlstudy hub --help)", add_help=False
    )
    hub_cmd.add_argument("hub_args", nargs=argparse.REMAINDER)
    hub_cmd.set_defaults(func=cmd_hub)
    # end hub

    from verlstudy.course import edition_command  # `verlstudy edition LANG` (docs/translating.md)

    edition_command.add_parser(sub)

    check = sub.add_parser("verify-upstream", help="compare each lesson's helper with upstream verl's function")
    check.add_argument("--cases", type=int, default=300, help="generated cases per comparison")
    check.add_argument("--seed", type=int, default=0)
    check.add_argument("--record", action="store_true", help="write data/upstream_verified.json when all agree")
    check.set_defaults(func=cmd_verify_upstream)
    return parser


PATH_OPTIONS = ("out", "report", "junit", "results", "build", "csv", "html", "folder", "from_dir")


def _expand_home(args: argparse.Namespace) -> None:
    """`~/x` as a folder, also when the shell did not expand it (quoted, or no HOME): never a folder named '~'."""
    import os

    for name in PATH_OPTIONS:
        value = getattr(args, name, None)
        if isinstance(value, str) and value.startswith("~"):
            expanded = os.path.expanduser(value)
            if expanded.startswith("~"):  # ~name of no user, or no home folder at all
                who = value.split("/")[0]
                raise UsageError(f"{value}: there is no home folder for {who!r}; name the folder in full")
            setattr(args, name, expanded)
    if isinstance(getattr(args, "folders", None), list):
        args.folders = [os.path.expanduser(f) if f.startswith("~") else f for f in args.folders]


def main(argv: Sequence[str] | None = None) -> int:
    from verlstudy.course.stopping import stop_exit_code, stop_name, stop_signals

    terminal.readable_output()
    words = list(sys.argv[1:] if argv is None else argv)
    command = next((w for w in words if not w.startswith("-")), "")
    try:
        with stop_signals():  # from the very start: a stop while the parser loads is one line, not a silent exit
            return _main(argv)
    except KeyboardInterrupt:
        print(f"verlstudy {command}: stopped ({stop_name()}) before it began; nothing was written", file=sys.stderr)
        return stop_exit_code()


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if getattr(args, "command", None) == "hub":  # `hub --help`: an option before the hub's action is the hub's
        args.hub_args, extra = [*extra, *args.hub_args], []
    # argparse gives a `lessons` list only the words before the first option: `edition zh_CN --update 07` (or
    # `run --timeout 60 00 05`) leaves the later lesson numbers over; they are lessons too
    if extra and isinstance(getattr(args, "lessons", None), list) and not any(e.startswith("-") for e in extra):
        args.lessons += extra
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if getattr(args, "workers", 1) < 1:  # R2: the command and the value named, as every other usage error
        print(f"verlstudy {args.command}: --workers must be at least 1, got {args.workers}", file=sys.stderr)
        return 2
    timeout = getattr(args, "timeout", 1.0)
    if not 0 < timeout <= MAX_TIMEOUT_S:  # nan and inf fail too: 1e300 would remove the limit
        print(
            f"verlstudy: --timeout must be a number of seconds above 0 and at most {MAX_TIMEOUT_S} (a day), "
            f"got {timeout:g}",
            file=sys.stderr,
        )
        return 2
    from verlstudy.course.files import WriteFailed, disk_full_message, is_disk_full
    from verlstudy.course.stopping import stop_exit_code, stop_name, stop_signals

    try:
        _expand_home(args)
        # Ctrl-C, SIGTERM, SIGHUP (and an inherited ignored SIGINT) stop every command alike
        with stop_signals(), terminal.stdout_named():
            code = int(args.func(args))
            sys.stdout.flush()  # a closed pipe shows here, not as a traceback at exit
        return code
    except BrokenPipeError:  # `verlstudy list | head`: the reader has what it wanted
        terminal.quiet_stdout()
        return 128 + 13  # as a tool killed by SIGPIPE
    except KeyboardInterrupt:  # a command with no stop of its own: files are written whole or not at all
        print(f"verlstudy {args.command}: stopped ({stop_name()}); no file is left half-written", file=sys.stderr)
        return stop_exit_code()
    except UsageError as e:
        print(f"verlstudy {args.command}: {e}", file=sys.stderr)
        return 2
    except WriteFailed as e:
        print(f"verlstudy {args.command}: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # a full disk, a read-only or occupied path anywhere: one line naming the file
        if is_disk_full(e):
            if e.filename == terminal.STDOUT_NAME:
                terminal.quiet_stdout()  # Python's own flush at exit would fail the same way
            print(f"verlstudy {args.command}: {disk_full_message(e.filename or '?')}", file=sys.stderr)
            return 1
        where = f"{e.filename}: " if e.filename else ""
        why = e.strerror or str(e)
        if isinstance(e, FileExistsError | NotADirectoryError):  # mkdir met a file: say which way round
            why = "a file is where a folder is needed"
        print(f"verlstudy {args.command}: {where}{why}; check that path and its permissions", file=sys.stderr)
        return 1
