"""Learner names and the system users behind them: one prefixed Unix account per learner, home readable by it only.

A hub name (`alice`) is what a learner types at the login page and sees in URLs (`/user/alice/`); the system user
behind it carries a prefix (`vs-alice`) so it cannot clash with a real account on the machine. Accounts this module
creates carry a marker in their comment field (GECOS), and it removes or reuses only accounts that carry it.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

DEFAULT_PREFIX = "vs-"
MARKER = "verlstudy hub learner"  # the GECOS comment of every account `hub init` / `hub users add` creates
UNIX_NAME = re.compile(r"[a-z_][a-z0-9_-]*")
MAX_SYSTEM_NAME = 32  # useradd's limit on Linux


def check_prefix(prefix: str) -> str:
    """The prefix itself, or ValueError when it cannot start a Unix user name."""
    if not (prefix == "" or UNIX_NAME.fullmatch(prefix)):
        raise ValueError(f"--prefix {prefix!r} must be lowercase letters, digits, '_' or '-', starting with a letter")
    return prefix


def check_names(names: Iterable[str], prefix: str = DEFAULT_PREFIX) -> list[str]:
    """The names, each a valid Unix name once prefixed; ValueError naming the first bad or repeated one."""
    found: list[str] = []
    for raw in names:
        name = raw.strip()
        if not UNIX_NAME.fullmatch(name):
            raise ValueError(
                f"learner name {raw!r} is not a valid Unix user name: lowercase letters, digits, '_' and '-', "
                "starting with a letter or '_'"
            )
        if len(prefix + name) > MAX_SYSTEM_NAME:
            raise ValueError(f"learner name {name!r} is too long: {prefix}{name} exceeds {MAX_SYSTEM_NAME} characters")
        if name in found:
            raise ValueError(f"learner name {name!r} is given twice")
        found.append(name)
    return found


def split_names(text: str) -> list[str]:
    """'a,b, c' -> ['a', 'b', 'c'] (empty entries dropped)."""
    return [part.strip() for part in text.split(",") if part.strip()]


def system_name(name: str, prefix: str = DEFAULT_PREFIX) -> str:
    """The system account behind hub user `name`."""
    return f"{prefix}{name}"


def account(system: str) -> pwd.struct_passwd | None:
    """The system account `system`, or None when there is none."""
    try:
        return pwd.getpwnam(system)
    except KeyError:
        return None


def is_ours(system: str) -> bool:
    """True when `system` exists and was created by this module (its comment carries the marker)."""
    entry = account(system)
    return entry is not None and MARKER in entry.pw_gecos


def check_creatable(systems: Sequence[str]) -> None:
    """ValueError unless each account is absent or ours, and this process may create accounts (root, useradd)."""
    if os.geteuid() != 0:
        raise ValueError(
            "creating the learners' system users needs root: run it with sudo (or pass --no-system-users for a trial "
            "in which every learner's server runs as you, not kept apart)"
        )
    if shutil.which("useradd") is None:
        raise ValueError("useradd is not on PATH: system users cannot be created on this machine")
    for system in systems:
        if account(system) is not None and not is_ours(system):
            raise ValueError(f"system user {system} already exists and was not created by verlstudy hub: pick another")


def create(system: str) -> Path:
    """Create `system` (home 0700, owned by it) unless it is already ours; return its home."""
    if not is_ours(system):
        subprocess.run(
            ["useradd", "--create-home", "--shell", "/bin/bash", "--comment", MARKER, system],
            check=True,
            capture_output=True,
            text=True,
        )
    entry = pwd.getpwnam(system)
    home = Path(entry.pw_dir)
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    home.chmod(0o700)  # other learners cannot list or read it
    return home


def remove(system: str, *, delete_home: bool = False) -> bool:
    """Remove the account `system` if it is ours (its home too with `delete_home`); others are left alone.
    True when an account was removed."""
    if not is_ours(system):
        return False
    command = ["userdel", *(["--remove"] if delete_home else []), system]
    subprocess.run(command, check=True, capture_output=True, text=True)
    return True
