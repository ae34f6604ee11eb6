"""The `jupyterhub_config.py` that `verlstudy hub init` writes: fixed code that reads DIR/hub.json at start.

The learners, the admin and the prefix live in hub.json (`verlstudy hub users add|remove` edits it), and what
depends on the run (ports, the Python that has the course and JupyterHub, the proxy) comes from the environment
`verlstudy hub up` sets, so the file itself never changes after `hub init` and its first line marks it as ours.
"""

from __future__ import annotations

MARKER = "# Written by `verlstudy hub init`"

CONFIG = '''# Written by `verlstudy hub init` (format 1). Learners, admin: hub.json, changed by `verlstudy hub users`.
# Run it with `verlstudy hub up DIR`, which sets the ports, the Python and the proxy in the environment below.
import json
import os
import pwd
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner, SimpleLocalProcessSpawner

HERE = Path(__file__).resolve().parent
settings = json.loads((HERE / "hub.json").read_text())
python = os.environ.get("VERLSTUDY_HUB_PYTHON", settings.get("python", "python3"))
prefix = settings["prefix"]
c = get_config()  # noqa: F821 (JupyterHub's loader defines it)

c.JupyterHub.bind_url = f"http://{settings['ip']}:{os.environ.get('VERLSTUDY_HUB_PORT', settings['port'])}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{os.environ.get('VERLSTUDY_HUB_API_PORT', 8081)}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{os.environ.get('VERLSTUDY_HUB_PROXY_API_PORT', 8001)}"
c.ConfigurableHTTPProxy.command = [os.environ.get("VERLSTUDY_HUB_PROXY", "configurable-http-proxy")]
c.JupyterHub.cookie_secret_file = str(HERE / "jupyterhub_cookie_secret")
c.JupyterHub.db_url = f"sqlite:///{HERE / 'jupyterhub.sqlite'}"
c.JupyterHub.pid_file = str(HERE / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True  # Ctrl-C on `hub up` stops every learner's server
c.JupyterHub.api_tokens = {(HERE / "admin.token").read_text().strip(): settings["admin"]}

# A room's login: each name sets its password on first login; only the names in hub.json may log in.
c.JupyterHub.authenticator_class = "firstuseauthenticator"
c.FirstUseAuthenticator.create_users = False
c.FirstUseAuthenticator.dbm_path = str(HERE / "passwords.dbm")
c.FirstUseAuthenticator.min_password_length = 8
c.Authenticator.allowed_users = set(settings["learners"])
c.Authenticator.admin_users = {settings["admin"]}


class LearnerSpawner(LocalProcessSpawner):
    """A learner's server runs as their prefixed system user (hub name alice -> account vs-alice), in its home."""

    def make_preexec_fn(self, name):
        return super().make_preexec_fn(prefix + name)

    def user_env(self, env):
        entry = pwd.getpwnam(prefix + self.user.name)
        env.update(USER=entry.pw_name, HOME=entry.pw_dir, SHELL=entry.pw_shell or "/bin/bash")
        return env


if settings["system_users"]:
    c.JupyterHub.spawner_class = LearnerSpawner
else:  # a trial without root: every server runs as the hub's own user, homes under DIR/homes (not kept apart)
    c.JupyterHub.spawner_class = SimpleLocalProcessSpawner
    c.SimpleLocalProcessSpawner.home_dir_template = str(HERE / "homes" / "{username}")

# Learners install nothing: their servers and kernels run the Python that has the course installed.
c.Spawner.cmd = [python, "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = settings.get("default_url", "/lab")
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 180
c.Spawner.environment = {
    # nbgitpuller clones DIR/student.git, owned by the hub's user: git accepts it only when safe.directory names it
    # in a global config, which includes the learner's own ~/.gitconfig
    "GIT_CONFIG_GLOBAL": str(HERE / "learner.gitconfig"),
    "TQDM_DISABLE": "1",
    "TORCH_CPP_LOG_LEVEL": "ERROR",
    "OMP_NUM_THREADS": "1",
}

# The facilitator's progress: verdicts from each learner's attempt log, only for the admin (hub OAuth).
c.JupyterHub.services = [
    {
        "name": "progress",
        "url": f"http://127.0.0.1:{os.environ.get('VERLSTUDY_HUB_PROGRESS_PORT', 8099)}",
        "command": [python, "-m", "verlstudy.hub.progress_service", str(HERE)],
        "oauth_no_confirm": True,
        "display": True,
    },
    {
        "name": "idle-culler",
        "command": [python, "-m", "jupyterhub_idle_culler", f"--timeout={settings['idle_timeout']}"],
    },
]
c.JupyterHub.load_roles = [
    {
        "name": "idle-culler",
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
        "services": ["idle-culler"],
    },
]
'''
