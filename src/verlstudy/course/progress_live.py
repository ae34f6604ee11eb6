"""`verlstudy progress CLASS` without `--verify`: the matrix from the attempt logs, once or every `--watch` seconds.

Prints the one-screen matrix (course.class_progress), writes the CSV and JUnit files through progress.py's writers
and `--html FILE` as a page that reloads itself; with `--watch SECONDS` the page (and CSV/JUnit) are regenerated
in a loop until Ctrl-C. Every file passes the guard of every writing command (files.check_report_paths): an
existing file is replaced only if verlstudy wrote it and nobody changed it since.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from collections.abc import Callable
from pathlib import Path

from verlstudy.course import class_progress, class_progress_page, files, progress

DEFAULT_IDLE_MINUTES = 15.0
MIN_WATCH_S = 1.0  # a page rewritten (and reloaded) faster than once a second only loads the machine


def check_options(args: argparse.Namespace) -> None:
    """One ValueError line per bad combination or value of the log-mode options."""
    watch, idle = args.watch, args.idle
    if watch is not None and not (MIN_WATCH_S <= watch < 86400):  # nan fails too
        raise ValueError(
            f"--watch must be a number of seconds from {MIN_WATCH_S:g} (the page reloads at that pace) to under a "
            f"day, got {watch:g}"
        )
    if watch is not None and args.html is None:
        raise ValueError("--watch regenerates the --html page: name it, e.g. --html progress.html --watch 30")
    if not (0 <= idle < class_progress.MAX_IDLE):  # nan fails too
        raise ValueError(
            f"--idle must be a number of minutes >= 0 and under {class_progress.MAX_IDLE} (about two years; 0 turns "
            f"the idle check off), got {idle:g}"
        )
    if args.verify and (args.html is not None or watch is not None):
        raise ValueError(
            "--html and --watch show the attempt logs live, --verify re-executes once: use one or the other"
        )
    files.check_report_paths({"--csv": args.csv, "--junit": args.junit, "--html": args.html})
    from verlstudy.course.class_progress import find_learners

    layout = find_learners(args.folders)
    learners = layout.learners
    for flag, value in (("--csv", args.csv), ("--junit", args.junit), ("--html", args.html)):
        if value is None:
            continue
        where = Path(value).resolve()
        for name, folder in learners.items():
            if folder.resolve() in where.parents:
                raise ValueError(f"{flag} {value} is inside learner {name}'s folder {folder}: write it elsewhere")
    if args.build is not None and not args.verify:  # a forbidden folder is named first, then the missing --verify
        from verlstudy.course.progress_verify import check_build

        check_build(args.build, layout, [Path(f) for f in args.folders])
        raise ValueError(
            f"--build {args.build} is where --verify puts the executed copies: add --verify, or drop --build "
            "(without --verify nothing is executed)"
        )


def write_once(args: argparse.Namespace, *, quiet: bool = False) -> class_progress.ClassProgress:
    """Read the class, print the matrix (unless `quiet`), write the files asked for; the progress read."""
    now = dt.datetime.now(dt.UTC)
    found = class_progress.read_class([Path(f) for f in args.folders], idle_minutes=args.idle, now=now)
    if not quiet:
        print(class_progress.matrix_text(found), end="")
    rows = class_progress.to_rows(found)
    if args.csv:
        files.write_file_owned(Path(args.csv), progress.to_csv(rows), "--csv", legacy=lambda p: True)
    if args.junit:
        files.write_file_owned(Path(args.junit), progress.to_junit(rows), "--junit", legacy=lambda p: True)
    if args.html:
        page = class_progress_page.page_html(found, args.watch)
        files.write_file_owned(Path(args.html), page, "--html", legacy=class_progress_page.is_progress_page)
    return found


def run(args: argparse.Namespace, sleep: Callable[[float], None] = time.sleep) -> int:
    """The log mode of `verlstudy progress`: 0 when written (and, watching, when stopped by Ctrl-C)."""
    check_options(args)
    found = write_once(args)
    if args.watch is None:
        return 0
    print(
        f"verlstudy progress: {args.html} is rewritten every {args.watch:g} s (the page reloads itself); Ctrl-C stops",
        file=sys.stderr,
        flush=True,
    )
    try:
        while True:
            sleep(args.watch)
            found = write_once(args, quiet=True)
            stuck = len(found.stuck())
            print(
                f"{found.now:%H:%M:%S} UTC: {len(found.learners)} learners, {stuck} stuck; {args.html} updated",
                file=sys.stderr,
                flush=True,
            )
    except KeyboardInterrupt:
        print(f"verlstudy progress: stopped watching; {args.html} shows the last update", file=sys.stderr)
        return 0
