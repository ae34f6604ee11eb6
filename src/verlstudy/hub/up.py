"""`verlstudy hub up DIR [--port P]`: run the hub in the foreground until Ctrl-C, which stops every learner's server.

Checks first, in one line each and before anything starts: DIR holds a hub `hub init` wrote, root when learners are
system users, JupyterHub and its plugins importable by this Python, this Python reachable by the learners' accounts,
the proxy found, the port free. Then it prints the URL, the nbgitpuller link and where the admin token is, starts
JupyterHub (`python -m jupyterhub`) with the run's ports in the environment the config reads, and says when the hub
answers.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from verlstudy.hub import init

NEEDED = {  # module -> distribution, for the message
    "jupyterhub": "jupyterhub",
    "nbgitpuller": "nbgitpuller",
    "firstuseauthenticator": "jupyterhub-firstuseauthenticator",
    "jupyterhub_idle_culler": "jupyterhub-idle-culler",
    "jupyter_server": "jupyter-server",
}
PROXY = "configurable-http-proxy"
LOCAL_PROXY = Path("build/hub/node/node_modules/.bin") / PROXY  # where `make hub-env` puts it (npm install)


def check_modules() -> None:
    """ValueError naming what this Python lacks of JupyterHub and its plugins."""
    missing = [dist for module, dist in NEEDED.items() if importlib.util.find_spec(module) is None]
    if missing:
        raise ValueError(
            f"{sys.executable} lacks {', '.join(missing)}: pip install -r requirements-hub.txt "
            "(make hub-env makes build/hub/venv with them), then run hub up with that Python"
        )


def check_reachable(path: Path) -> None:
    """ValueError when another account cannot run `path` (a folder above it not searchable by others)."""
    for folder in [*reversed(path.parents), *reversed(path.resolve().parents)]:
        mode = folder.stat().st_mode
        if not mode & stat.S_IXOTH:
            raise ValueError(
                f"learners' accounts cannot reach {path}: {folder} is not searchable by others; run hub up with a "
                "Python outside it (make hub-env HUB_PYTHON=/usr/bin/python3.11)"
            )


def find_proxy(given: str | None) -> Path:
    """The configurable-http-proxy to run: --proxy, $VERLSTUDY_HUB_PROXY, PATH, or build/hub/node; ValueError."""
    for candidate in (given, os.environ.get("VERLSTUDY_HUB_PROXY"), shutil.which(PROXY), str(LOCAL_PROXY)):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate).resolve()
    raise ValueError(f"{PROXY} not found: npm install -g {PROXY} (or make hub-env), or name it with --proxy")


def hub_command(folder: Path) -> list[str]:
    """The JupyterHub command line for the deployment in `folder`."""
    return [sys.executable, "-m", "jupyterhub", "-f", str(folder / init.CONFIG_FILE)]


def prepare(folder: Path, port: int | None, proxy: str | None) -> tuple[init.Settings, dict[str, str]]:
    """Every check `hub up` makes, then the environment the config reads; ValueError with one line."""
    folder = folder.resolve()
    settings = init.load(folder)
    if settings.system_users and os.geteuid() != 0:
        raise ValueError(
            f"this hub runs each learner as a system user, which needs root: sudo {sys.executable} -m verlstudy hub up "
            f"{folder}"
        )
    check_modules()
    if settings.system_users:
        check_reachable(Path(sys.executable))
    chp = find_proxy(proxy)
    port = settings.port if port is None else port
    init.check_port(port, settings.ip)
    for name in init.PRIVATE:  # JupyterHub may recreate the database; the modes stay 0600 either way
        if (folder / name).exists():
            (folder / name).chmod(0o600)
    env = {
        **os.environ,
        "VERLSTUDY_HUB_PYTHON": sys.executable,
        "VERLSTUDY_HUB_PORT": str(port),
        "VERLSTUDY_HUB_API_PORT": str(init.free_port()),
        "VERLSTUDY_HUB_PROXY_API_PORT": str(init.free_port()),
        "VERLSTUDY_HUB_PROGRESS_PORT": str(init.free_port()),
        "VERLSTUDY_HUB_PROXY": str(chp),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    return settings, env


def base_url(settings: init.Settings, port: int) -> str:
    """The URL learners open (this machine's name when the hub listens on every address)."""
    host = socket.gethostname() if settings.ip in ("0.0.0.0", "") else settings.ip
    return f"http://{host}:{port}/"


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout_s: float = 120) -> bool:
    """True once the hub's API answers at `url`, False if the process ended or `timeout_s` passed."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end and proc.poll() is None:
        try:
            with urllib.request.urlopen(url + "hub/api/", timeout=2) as reply:
                if reply.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    return False


def run(folder: Path, port: int | None = None, proxy: str | None = None) -> int:
    """Run the hub in `folder` until Ctrl-C (or SIGTERM); its exit status."""
    folder = Path(folder).resolve()
    settings, env = prepare(folder, port, proxy)
    port = int(env["VERLSTUDY_HUB_PORT"])
    url = base_url(settings, port)
    local = f"http://127.0.0.1:{port}/"
    print(f"verlstudy hub: {url} (on this machine: {local}); learners: {', '.join(settings.learners)}", flush=True)
    link = init.pull_link(url, str(folder / init.REPO), settings)
    print(f"  hand out this link (it places the student edition in ~/verlstudy): {link}")
    print(
        f"  admin {settings.admin}: the API token is in {folder / init.TOKEN_FILE}; progress: {url}services/progress/"
    )
    print(
        "  each name sets its password at its first login; Ctrl-C stops the hub and every learner's server", flush=True
    )
    # its own session: a terminal's Ctrl-C reaches only this process, which forwards it once (a second SIGINT would
    # cut JupyterHub's shutdown short and leave learners' servers running)
    proc = subprocess.Popen(hub_command(folder), cwd=folder, env=env, start_new_session=True)
    stop = {"signal": False}

    def on_term(signum: int, frame: object) -> None:  # SIGTERM: the same clean stop as Ctrl-C
        stop["signal"] = True
        proc.send_signal(signal.SIGINT)

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        if wait_ready(local, proc):
            print(f"verlstudy hub: up at {url}", flush=True)
        return proc.wait()
    except KeyboardInterrupt:  # give the hub time to stop every learner's server
        if proc.poll() is None and not stop["signal"]:
            proc.send_signal(signal.SIGINT)
        try:
            return proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.terminate()
            return proc.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        print("verlstudy hub: stopped", flush=True)
