"""`verlstudy hub init DIR` and `verlstudy hub users add|remove DIR`: a ready JupyterHub deployment for one machine.

DIR gets:
- `jupyterhub_config.py` (config_template: fixed code, its first line marks it as ours) and `hub.json` (learners,
  admin, prefix, port, whether learners are system users);
- `admin.token` (an API token for the admin), `jupyterhub_cookie_secret` and an empty `jupyterhub.sqlite`, each mode
  0600 (JupyterHub keeps the modes of files that exist);
- `student.git`: a bare git repository of the student edition (branch `main`), which nbgitpuller clones into each
  learner's home and later merges without overwriting a learner's edits.

Every check runs before anything is written or any account is created, so bad input changes nothing.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import stat
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlencode

from verlstudy.hub import users
from verlstudy.hub.config_template import CONFIG, MARKER

FORMAT = 1
GENERATOR = "verlstudy hub init"
SETTINGS = "hub.json"
CONFIG_FILE = "jupyterhub_config.py"
TOKEN_FILE = "admin.token"
SECRET_FILE = "jupyterhub_cookie_secret"
DB_FILE = "jupyterhub.sqlite"
REPO = "student.git"
GITCONFIG = "learner.gitconfig"  # the learners' servers read it as their global git config (safe.directory)
BRANCH = "main"
TARGET = "verlstudy"  # the folder the student edition lands in, in each learner's home
PRIVATE = (TOKEN_FILE, SECRET_FILE, DB_FILE)  # mode 0600
GIT_ENV = {
    "GIT_AUTHOR_NAME": "verlstudy hub",
    "GIT_AUTHOR_EMAIL": "hub@verlstudy.invalid",
    "GIT_COMMITTER_NAME": "verlstudy hub",
    "GIT_COMMITTER_EMAIL": "hub@verlstudy.invalid",
}


@dataclass
class Settings:
    """What hub.json holds (the config reads it at every start)."""

    learners: list[str]
    admin: str
    prefix: str = users.DEFAULT_PREFIX
    system_users: bool = True
    port: int = 8000
    ip: str = "0.0.0.0"
    idle_timeout: int = 3600
    default_url: str = "/lab"
    generator: str = GENERATOR
    format: int = FORMAT
    homes: dict[str, str] = field(default_factory=dict)  # without system users: hub name -> home folder


SETTING_TYPES: dict[str, type | tuple[type, ...]] = {
    "learners": list,
    "admin": str,
    "prefix": str,
    "system_users": bool,
    "port": int,
    "ip": str,
    "idle_timeout": int,
    "default_url": str,
    "generator": str,
    "format": int,
    "homes": dict,
}


def load(folder: Path) -> Settings:
    """The settings of the hub in `folder`; ValueError when `folder` holds no hub `hub init` wrote, or one line
    naming hub.json when it is damaged (torn, edited into another shape)."""
    check_ours(folder, must_exist=True)
    path = folder / SETTINGS
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ValueError(f"{path} cannot be read ({e.strerror or e}): check its permissions; nothing changed") from e
    except (UnicodeDecodeError, ValueError) as e:
        raise ValueError(_damaged(path, f"not valid JSON: {str(e).splitlines()[0][:80]}")) from e
    if not isinstance(data, dict):
        raise ValueError(_damaged(path, f"a JSON {type(data).__name__}, not an object"))
    known = {k: v for k, v in data.items() if k in Settings.__dataclass_fields__}
    for key in ("learners", "admin"):
        if key not in known:
            raise ValueError(_damaged(path, f"no {key!r}"))
    for key, value in known.items():
        kind = SETTING_TYPES[key]
        wrong = not isinstance(value, kind) or (kind is int and isinstance(value, bool))
        if key == "learners" and not wrong:
            wrong = not all(isinstance(name, str) for name in value)
        if key == "homes" and not wrong:
            wrong = not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
        if wrong:
            raise ValueError(_damaged(path, f"{key!r} is {json.dumps(value)[:40]}"))
    return Settings(**known)


def _damaged(path: Path, why: str) -> str:
    return (
        f"{path} is damaged ({why}): restore it from a copy, or fix it by hand (learners, admin, prefix, port), "
        "or run `verlstudy hub init` in a new folder; nothing changed"
    )


def save(folder: Path, settings: Settings) -> None:
    """Write hub.json (through a temporary file, so a crash leaves the old one)."""
    from verlstudy.course.files import write_text

    write_text(folder / SETTINGS, json.dumps(asdict(settings), indent=1) + "\n")


def check_ours(folder: Path, *, must_exist: bool) -> bool:
    """True when `folder` holds a hub we wrote; False when it holds none; ValueError for a foreign config."""
    config = folder / CONFIG_FILE
    if config.exists():
        if not config.read_text(errors="replace").startswith(MARKER):
            raise ValueError(f"{config} was not written by verlstudy hub init: use another folder (nothing changed)")
        if not (folder / SETTINGS).exists():
            raise ValueError(f"{folder} has a verlstudy config but no {SETTINGS}: run hub init in a new folder")
        return True
    if must_exist:
        raise ValueError(f"{folder} holds no hub: run `verlstudy hub init {folder} --users NAME,... --admin NAME`")
    return False


def check_port(port: int, ip: str = "0.0.0.0") -> None:
    """ValueError unless `port` is a TCP port that can be bound now."""
    if not 1 <= port <= 65535:
        raise ValueError(f"--port must be 1-65535, got {port}")
    with socket.socket() as probe:
        try:
            probe.bind((ip, port))
        except OSError:
            raise ValueError(f"port {port} is in use: pick another with --port") from None


def check_reachable(folder: Path) -> None:
    """ValueError when the learners' accounts could not reach `folder` (a folder above it not searchable by others)."""
    above = Path(os.path.abspath(folder))
    while not above.exists():
        above = above.parent
    for part in [above, *above.parents]:
        if not part.stat().st_mode & stat.S_IXOTH:
            raise ValueError(
                f"learners' accounts cannot reach {folder}: {part} is not searchable by others; pick a folder such as "
                "/srv/verlstudy-hub"
            )


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def write_private(path: Path, text: str) -> None:
    """Create `path` with mode 0600 from the start (never readable by others, even for a moment)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    path.chmod(0o600)


def build_student_repo(repo: Path) -> str:
    """Write the student edition into a new bare repository `repo` (branch main); return the commit id."""
    from verlstudy.course import student  # the course's own builder: solutions become stubs, outputs cleared

    env = {**os.environ, **GIT_ENV}
    with tempfile.TemporaryDirectory(prefix="verlstudy-hub-") as tmp:
        work = Path(tmp) / "work"
        student.write_student_edition(work)
        (work / ".gitignore").write_text(".verlstudy/\n.ipynb_checkpoints/\n")

        def git(*args: str, cwd: Path = work) -> str:
            done = subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True)
            return done.stdout.strip()

        git("init", "-q", "-b", BRANCH)
        git("add", "-A")
        git("commit", "-q", "-m", "verlstudy student edition")
        commit = git("rev-parse", "HEAD")
        git("clone", "-q", "--bare", str(work), str(repo), cwd=Path(tmp))
        git("update-server-info", cwd=repo)  # so a plain static web server can serve it too (dumb HTTP)
    for here, dirs, names in os.walk(repo):  # every learner's server clones it: world-readable
        for name in dirs:
            (Path(here) / name).chmod(0o755)
        for name in names:
            (Path(here) / name).chmod(0o644)
    repo.chmod(0o755)
    return commit


def pull_link(base_url: str, repo: str, settings: Settings | None = None) -> str:
    """The nbgitpuller link that places the student edition in a learner's home and opens lesson 00."""
    app = (settings.default_url if settings else "/lab").strip("/") or "lab"
    query = urlencode(
        {
            "repo": repo,
            "branch": BRANCH,
            "targetpath": TARGET,
            "urlpath": f"{app}/tree/{TARGET}/00_start_here.ipynb",
        }
    )
    return f"{base_url.rstrip('/')}/hub/user-redirect/git-pull?{query}"


def learner_home(settings: Settings, folder: Path, name: str) -> Path:
    """Where learner `name`'s server starts (its home): the system user's home, or DIR/homes/NAME."""
    if settings.system_users:
        entry = users.account(users.system_name(name, settings.prefix))
        if entry is not None:
            return Path(entry.pw_dir)
        return Path("/home") / users.system_name(name, settings.prefix)
    return folder / "homes" / name


def init_hub(
    folder: Path,
    learners: list[str],
    admin: str,
    *,
    port: int = 8000,
    prefix: str = users.DEFAULT_PREFIX,
    system_users: bool = True,
    idle_timeout: int = 3600,
) -> Settings:
    """Write the deployment into `folder` (new or empty); create the system users. ValueError changes nothing."""
    users.check_prefix(prefix)
    names = users.check_names(learners, prefix)
    if not names:
        raise ValueError("name at least one learner: --users alice,bob")
    (admin_name,) = users.check_names([admin], prefix)
    if admin_name in names:
        raise ValueError(f"the admin {admin_name!r} is also named as a learner: the facilitator is not in the matrix")
    if not 60 <= idle_timeout <= 7 * 86400:
        raise ValueError(f"--idle-timeout must be 60 s to a week, got {idle_timeout}")
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} is a file, not a folder")
    if check_ours(folder, must_exist=False):
        raise ValueError(
            f"{folder} already holds a verlstudy hub: change learners with `verlstudy hub users add|remove`"
        )
    if folder.exists() and any(folder.iterdir()):
        raise ValueError(f"{folder} is not empty: hub init writes into a new or empty folder")
    check_port(port)
    systems = [users.system_name(n, prefix) for n in [*names, admin_name]]
    if system_users:
        users.check_creatable(systems)
        check_reachable(folder)
    if shutil.which("git") is None:
        raise ValueError("git is not on PATH: the student edition's repository cannot be made")

    created_folder = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    created: list[str] = []
    try:
        folder.chmod(0o755)  # learners' servers read student.git; the private files are 0600
        build_student_repo(folder / REPO)
        (folder / GITCONFIG).write_text(
            f"[safe]\n\tdirectory = {(folder / REPO).resolve()}\n[include]\n\tpath = ~/.gitconfig\n"
        )
        if system_users:
            for system in systems:
                existed = users.is_ours(system)
                users.create(system)
                if not existed:
                    created.append(system)
        settings = Settings(names, admin_name, prefix, system_users, port, idle_timeout=idle_timeout)
        if not system_users:
            settings.homes = {n: str(folder / "homes" / n) for n in names}
        write_private(folder / TOKEN_FILE, secrets.token_hex(32) + "\n")
        write_private(folder / SECRET_FILE, secrets.token_hex(32) + "\n")
        write_private(folder / DB_FILE, "")  # an empty file is an empty SQLite database; JupyterHub keeps the mode
        save(folder, settings)
        (folder / CONFIG_FILE).write_text(CONFIG)  # last: a folder without it is not a hub yet
    except BaseException:
        for system in created:
            users.remove(system, delete_home=True)
        if created_folder:
            shutil.rmtree(folder, ignore_errors=True)
        else:
            for child in folder.iterdir():
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        raise
    return settings


def add_users(folder: Path, names: list[str]) -> list[str]:
    """Add learners (and their system users) to the hub in `folder`; return the names added."""
    settings = load(folder)
    new = users.check_names(names, settings.prefix)
    for name in new:
        if name in settings.learners or name == settings.admin:
            raise ValueError(f"{name} is already on this hub")
    systems = [users.system_name(n, settings.prefix) for n in new]
    if settings.system_users:
        users.check_creatable(systems)
        for system in systems:
            users.create(system)
    else:
        settings.homes.update({n: str(folder / "homes" / n) for n in new})
    settings.learners.extend(new)
    save(folder, settings)
    return new


def remove_users(folder: Path, names: list[str], *, delete_home: bool = False) -> tuple[list[str], list[str]]:
    """Remove learners from the hub in `folder` (their system users too; homes kept unless `delete_home`); the names
    removed, and those whose home `delete_home` did not delete (a system user verlstudy did not create)."""
    settings = load(folder)
    gone = users.check_names(names, settings.prefix)
    for name in gone:
        if name not in settings.learners:
            raise ValueError(f"{name} is not a learner on this hub (learners: {', '.join(settings.learners)})")
    if settings.system_users and os.geteuid() != 0:
        raise ValueError("removing the learners' system users needs root: run it with sudo")
    # a trial hub's homes are DIR/homes/NAME, deleted here; userdel deletes a system user's (checked before anything)
    homes = [_trial_home(folder, name) for name in gone] if delete_home and not settings.system_users else []
    kept: list[str] = []
    for name in gone:
        system = users.system_name(name, settings.prefix)
        if settings.system_users and not users.remove(system, delete_home=delete_home) and delete_home:
            kept.append(name)
        settings.homes.pop(name, None)
    settings.learners = [n for n in settings.learners if n not in gone]
    save(folder, settings)
    for home in homes:
        if home.exists():
            shutil.rmtree(home)
    return gone, kept


def _trial_home(folder: Path, name: str) -> Path:
    """Learner `name`'s home on a trial hub: DIR/homes/NAME, where the config starts their server; ValueError
    naming it when it is a link or a file, which --delete-home leaves to a person (nothing deleted)."""
    home = folder / "homes" / name
    if home.parent.is_symlink() or home.is_symlink() or (home.exists() and not home.is_dir()):
        link = home.parent if home.parent.is_symlink() else home
        raise ValueError(
            f"{link} is a link or a file, not the hub's own folder: delete {name}'s home by hand (nothing changed)"
        )
    return home
