"""`verlstudy run`: its paths checked before any kernel starts, the lessons executed, its report, JUnit and results.

`cli.cmd_run` hands its arguments here; a bad path, lesson or parameter is a `usage.UsageError`.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from verlstudy.course import registry
from verlstudy.course.usage import UsageError
from verlstudy.kit import resources

if TYPE_CHECKING:
    from verlstudy.course.runner import RunResult


def progress_line(done: int, total: int, result: RunResult) -> str:
    """One line per finished notebook: where the run is, what finished, how it went (stderr, not a report)."""
    what = f"{result.lesson.code} {result.lesson.title}" if result.lesson else "floor (import torch + matplotlib)"
    how = result.status
    if result.status != "passed":
        how = result.status.upper() + (f": {result.error.splitlines()[0]}" if result.error else "")
    return f"[{done:>{len(str(total))}}/{total}] {what}: {how} ({result.seconds:.1f} s)"


def stopped_line(results: list[RunResult]) -> str:
    """The one line a stopped run ends with: passed, failed and not run (stopped or never started) counted apart."""
    from verlstudy.course.stopping import stop_name

    ran = [r for r in results if r.status not in ("not run", "interrupted")]
    passed = sum(r.status == "passed" for r in ran)
    return (
        f"stopped ({stop_name()}): {passed} passed, {len(ran) - passed} failed, {len(results) - len(ran)} not run "
        "(stopped or never started); the report above is partial"
    )


def _run_paths(args: argparse.Namespace, lessons: list[registry.Lesson]) -> tuple[Path, Path, Path | None, Path | None]:
    """(out, report, junit, results) for `verlstudy run`, checked before any kernel starts."""
    from verlstudy.course import files, run_out

    for flag, value in (
        ("--out", args.out),
        ("--report", args.report),
        ("--junit", args.junit),
        ("--results", args.results),
    ):
        if value is not None and not value.strip():
            raise UsageError(f"{flag} is empty: name a {'folder' if flag == '--out' else 'file'}")
    # without --out, the course's own build/ folder wherever you run from; a custom --out keeps its report inside
    out = Path(args.out) if args.out is not None else resources.build_root() / "executed"
    if args.report is not None:
        report = Path(args.report)
    else:
        report = out / "report.md" if args.out else resources.build_root() / "report.md"
    junit = Path(args.junit) if args.junit is not None else None
    results = Path(args.results) if args.results is not None else None
    try:
        run_out.check_run_out(out, [lesson.notebook.resolve() for lesson in lessons])
        files.check_report_paths({"--report": report, "--junit": junit, "--results": results})
    except ValueError as e:
        raise UsageError(str(e)) from e
    return out, report, junit, results


def _write_reports(args, out, report_path, junit, results_path, results, floor, interrupted=False) -> None:
    from verlstudy.course import reports
    from verlstudy.course.files import write_file_owned

    report = reports.report_markdown(results, floor, interrupted=interrupted, out=out)
    print(report, end="")  # on screen first: a full disk below still leaves the user the table
    # whole or not at all (a full disk keeps the previous file), and listed in its folder's manifest
    write_file_owned(report_path, report, "--report", legacy=lambda p: True)
    if junit:
        write_file_owned(junit, reports.junit_xml(results, floor), "--junit", legacy=lambda p: True)
    if results_path:
        text = reports.results_json(results, floor, interrupted=interrupted)
        write_file_owned(results_path, text, "--results", legacy=lambda p: True)


def _reprint_report(report_path: Path, out: Path) -> None:
    """Print a fresh run's stored report; a run folder copied or moved since is named as it is now, file and all."""
    from verlstudy.course import reports
    from verlstudy.course.files import write_file_owned

    text = report_path.read_text(encoding="utf-8", errors="replace")
    here = reports.relocated(text, out)
    if here != text:
        with contextlib.suppress(ValueError):  # not ours to rewrite: printed as it is now, the file left alone
            write_file_owned(report_path, here, "--report", legacy=lambda p: True)
    print(here, end="")


def cmd_run(args: argparse.Namespace) -> int:
    from verlstudy.course import parameters, runner

    try:
        lessons = registry.select_lessons(args.lessons)
        params, given = {}, {}
        for text in args.parameter:
            name, params[name] = parameters.parse_parameter(text)
            if name in given:  # `-p seed=1 -p seed=2` ran with seed=2, the first dropped without a word
                raise ValueError(f"parameter {name} is given twice (-p {given[name]}, -p {text}): give it once")
            given[name] = text
    except ValueError as e:
        raise UsageError(str(e)) from e
    if args.device is not None:
        if "device" in params and params["device"] != args.device:
            raise UsageError(f"--device {args.device} conflicts with -p device={params['device']}: give one")
        params["device"] = args.device
    out, report_path, junit, results_path = _run_paths(args, lessons)
    for lesson in lessons:
        if not lesson.notebook.exists():
            raise UsageError(f"lesson {lesson.code} is registered but {lesson.notebook.name} does not exist")
        try:
            parameters.check_parameter_names(lesson, params)
        except ValueError as e:
            raise UsageError(str(e)) from e
    if params:  # a bad value is reported before any kernel starts
        for lesson in lessons:
            try:
                parameters.validate_parameters(lesson, params)
            except (ValueError, TypeError) as e:  # the validation helper's error, naming the parameter
                raise UsageError(f"bad parameter for lesson {lesson.code}: {e}") from e
            except parameters.ValidationCellFailed as e:  # a bug in the lesson's cell is not the user's bad input
                print(f"verlstudy run: {e}", file=sys.stderr)
                return 1
    from verlstudy.course import run_record

    if args.if_stale:  # `make course`: a run whose record matches today's sources stands (course.run_record)
        reports = [p for p in (report_path, junit, results_path) if p is not None]
        stale = run_record.stale_reasons(out, lessons, params, with_floor=not args.no_floor, reports=reports)
        if not stale:
            _reprint_report(report_path, out)
            print(f"verlstudy run: {out} is fresh (same notebooks, sources and parameters); nothing executed")
            return 0
        print(f"verlstudy run: running again: {'; '.join(stale[:3])}", file=sys.stderr, flush=True)
    run_record.mark_running(out)
    total, finished = len(lessons) + (0 if args.no_floor else 1), []
    # a plain line per notebook, so a terminal, a pipe and a CI log all see where the run is (TQDM_DISABLE or not)
    print(f"verlstudy run: {total} notebooks, {args.workers} at a time, into {out}", file=sys.stderr, flush=True)

    def done(result: runner.RunResult) -> None:
        finished.append(result)
        print(progress_line(len(finished), total, result), file=sys.stderr, flush=True)

    from verlstudy.course.files import Manifest

    try:
        with runner.stop_signals():  # Ctrl-C, SIGTERM and an inherited ignored SIGINT all stop it and report
            results, floor = runner.run_lessons(
                lessons,
                out,
                params,
                workers=args.workers,
                with_floor=not args.no_floor,
                on_done=done,
                timeout_s=args.timeout,
                manifest=Manifest(out),
            )
    except runner.Interrupted as stop:
        _write_reports(args, out, report_path, junit, results_path, stop.results, stop.floor, interrupted=True)
        run_record.write(out, stop.results, stop.floor, params, with_floor=not args.no_floor, interrupted=True)
        print(f"verlstudy run: {stopped_line(stop.results)}", file=sys.stderr)
        return runner.stop_exit_code()
    _write_reports(args, out, report_path, junit, results_path, results, floor)
    run_record.write(out, results, floor, params, with_floor=not args.no_floor)
    bad = [r for r in results if r.status == "bad parameter"]
    if bad:
        # one clear line, the way a usage error reads
        print(f"verlstudy run: bad parameter for lesson {bad[0].lesson.code}: {bad[0].error}", file=sys.stderr)
        return 2
    return 0 if all(r.status == "passed" for r in results) else 1
