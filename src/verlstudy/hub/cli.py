"""`verlstudy hub ...`: init, users add|remove, up. Bad input is one line on stderr (exit 2) and changes nothing."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from verlstudy.hub import init, users


def build_parser() -> argparse.ArgumentParser:
    """The `verlstudy hub` argument parser."""
    parser = argparse.ArgumentParser(prog="verlstudy hub", description="a workshop on JupyterHub, on one machine")
    sub = parser.add_subparsers(dest="action", required=True)
    start = sub.add_parser("init", help="write a ready JupyterHub deployment into DIR (and the learners' accounts)")
    start.add_argument("folder", metavar="DIR")
    start.add_argument("--users", required=True, help="learner names, comma-separated: alice,bob")
    start.add_argument("--admin", required=True, help="the facilitator's hub name (sees the progress service)")
    start.add_argument("--port", type=int, default=8000, help="the port learners open (default 8000)")
    start.add_argument("--prefix", default=users.DEFAULT_PREFIX, help="system user names start with it (vs-)")
    start.add_argument("--idle-timeout", type=int, default=3600, help="stop a server idle this many seconds (3600)")
    start.add_argument(
        "--no-system-users",
        action="store_true",
        help="a trial without root: every server runs as you, homes in DIR/homes (learners NOT kept apart)",
    )
    people = sub.add_parser("users", help="add or remove learners (and their system users)")
    people.add_argument("change", choices=("add", "remove"))
    people.add_argument("folder", metavar="DIR")
    people.add_argument("names", nargs="+", metavar="NAME")
    people.add_argument("--delete-home", action="store_true", help="remove: delete the learner's home too")
    run = sub.add_parser("up", help="run the hub in DIR in the foreground (Ctrl-C stops it)")
    run.add_argument("folder", metavar="DIR")
    run.add_argument("--port", type=int, default=None, help="the port learners open (default: hub init's)")
    run.add_argument("--proxy", default=None, help="the configurable-http-proxy to run (default: found on PATH)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one `verlstudy hub` action; 0 on success, 2 on bad input (one line, nothing changed)."""
    args = build_parser().parse_args(argv)
    folder = Path(args.folder)
    try:
        if args.action == "init":
            settings = init.init_hub(
                folder,
                users.split_names(args.users),
                args.admin,
                port=args.port,
                prefix=args.prefix,
                system_users=not args.no_system_users,
                idle_timeout=args.idle_timeout,
            )
            who = f"system users {settings.prefix}NAME" if settings.system_users else "no system users (a trial)"
            print(f"hub written to {folder}: {len(settings.learners)} learners, admin {settings.admin}, {who}")
            print(f"  admin token: {folder / init.TOKEN_FILE} (mode 0600); student edition: {folder / init.REPO}")
            print(f"next: verlstudy hub up {folder}")
        elif args.action == "users":
            if args.change == "add":
                if args.delete_home:  # else silently ignored
                    raise ValueError("--delete-home goes with `users remove`: adding a learner deletes nothing")
                done = init.add_users(folder, args.names)
                print(f"added: {', '.join(done)} (a running hub: restart it)")
            else:
                done, kept = init.remove_users(folder, args.names, delete_home=args.delete_home)
                homes = "home deleted" if args.delete_home else "home kept (--delete-home deletes it)"
                if kept:
                    homes = f"home kept for {', '.join(kept)}: no system user verlstudy created (delete it by hand)"
                print(f"removed: {', '.join(done)}; {homes} (a running hub: restart it)")
        else:
            from verlstudy.hub import up

            return up.run(folder, args.port, args.proxy)
    except ValueError as e:
        print(f"verlstudy hub {args.action}: {e}", file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as e:
        print(f"verlstudy hub {args.action}: {' '.join(e.cmd)} failed: {(e.stderr or '').strip()}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
