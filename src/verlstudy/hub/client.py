"""A learner or facilitator driving a running hub from outside, as a browser would: for `make hub-test` and the room
benchmark. Only public endpoints: the hub's login form and REST API, a server's contents, sessions and kernel
channels, nbgitpuller's `git-pull/api` stream and the progress service.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
import uuid
from dataclasses import dataclass, field
from urllib.parse import urlencode

import requests

from verlstudy.hub import init


class HubError(RuntimeError):
    """The hub answered something a learner's browser would show as an error."""


@dataclass
class Person:
    """One hub user: a browser session (cookies after login) and, once asked for, an API token."""

    base: str  # http://127.0.0.1:PORT/
    name: str
    session: requests.Session = field(default_factory=requests.Session)
    token: str | None = None

    def url(self, path: str) -> str:
        return self.base.rstrip("/") + "/" + path.lstrip("/")

    def login(self, password: str) -> None:
        """The login form (FirstUseAuthenticator sets the password at the first login)."""
        page = self.session.get(self.url("hub/login"), timeout=30)
        page.raise_for_status()
        xsrf = self.session.cookies.get("_xsrf", path="/hub/")
        reply = self.session.post(
            self.url("hub/login"),
            data={"username": self.name, "password": password, "_xsrf": xsrf or ""},
            allow_redirects=False,
            timeout=60,
        )
        if reply.status_code != 302:
            raise HubError(f"{self.name}: login answered {reply.status_code}")

    def api(self, method: str, path: str, token: str | None = None, **kwargs: object) -> requests.Response:
        """A call to the hub's REST API (or any path) with `token` (default: this person's)."""
        headers = {"Authorization": f"token {token or self.token}"}
        return requests.request(method, self.url(path), headers=headers, timeout=120, **kwargs)

    def get_token(self, admin_token: str) -> str:
        """An API token for this person, made by the admin."""
        reply = self.api("POST", f"hub/api/users/{self.name}/tokens", admin_token, json={"note": "verlstudy client"})
        reply.raise_for_status()
        self.token = reply.json()["token"]
        return self.token

    def start_server(self, timeout_s: float = 300) -> None:
        """Spawn this person's server and wait until the hub says it is ready."""
        reply = self.api("POST", f"hub/api/users/{self.name}/server")
        if reply.status_code not in (201, 202, 400):  # 400: already running
            raise HubError(f"{self.name}: spawn answered {reply.status_code}: {reply.text[:200]}")
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            model = self.api("GET", f"hub/api/users/{self.name}").json()
            server = model.get("servers", {}).get("", {})
            if server.get("ready"):
                return
            time.sleep(0.5)
        raise HubError(f"{self.name}: server not ready after {timeout_s:g} s")

    def pull(self, repo: str, timeout_s: float = 300) -> list[dict[str, object]]:
        """nbgitpuller's API: clone or merge `repo` into ~/verlstudy; its events (the last one 'finished')."""
        query = urlencode({"repo": repo, "branch": init.BRANCH, "targetpath": init.TARGET})
        events = []
        with self.api("GET", f"user/{self.name}/git-pull/api?{query}", stream=True) as reply:
            reply.raise_for_status()
            for line in reply.iter_lines(decode_unicode=True):
                if line and line.startswith("data:"):
                    event = json.loads(line[5:])
                    events.append(event)
                    if event.get("phase") in ("finished", "error"):
                        break
        if not events or events[-1].get("phase") != "finished":
            raise HubError(f"{self.name}: nbgitpuller did not finish: {events[-1:] or 'no events'}")
        return events

    def run_in_notebook(self, notebook: str, code: str, timeout_s: float = 300) -> dict[str, object]:
        """Start a kernel for `notebook` (a session, as JupyterLab does) and run `code`; stdout, reply status."""
        body = {
            "path": notebook,
            "name": notebook.rsplit("/", 1)[-1],
            "type": "notebook",
            "kernel": {"name": "python3"},
        }
        reply = self.api("POST", f"user/{self.name}/api/sessions", json=body)
        if reply.status_code != 201:
            raise HubError(f"{self.name}: session answered {reply.status_code}: {reply.text[:200]}")
        kernel = reply.json()["kernel"]["id"]
        ws = self.url(f"user/{self.name}/api/kernels/{kernel}/channels").replace("http", "ws", 1)
        return asyncio.run(execute(ws, self.token or "", code, timeout_s))


async def execute(url: str, token: str, code: str, timeout_s: float) -> dict[str, object]:
    """Send one execute_request over a kernel's channels websocket; gather stdout, errors and the reply status."""
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    request = HTTPRequest(url, headers={"Authorization": f"token {token}"}, request_timeout=timeout_s)
    conn = await websocket_connect(request)
    msg_id = uuid.uuid4().hex
    header = {
        "msg_id": msg_id,
        "username": "verlstudy",
        "session": uuid.uuid4().hex,
        "msg_type": "execute_request",
        "version": "5.3",
        "date": dt.datetime.now(dt.UTC).isoformat(),
    }
    content = {"code": code, "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False}
    message = {"header": header, "parent_header": {}, "metadata": {}, "content": content, "channel": "shell"}
    conn.write_message(json.dumps(message))
    out: list[str] = []
    status = None
    idle = False
    end = time.monotonic() + timeout_s
    try:
        while (status is None or not idle) and time.monotonic() < end:
            raw = await asyncio.wait_for(conn.read_message(), timeout=max(0.1, end - time.monotonic()))
            if raw is None:
                break
            msg = json.loads(raw)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = msg["header"]["msg_type"]
            if kind == "stream":
                out.append(msg["content"]["text"])
            elif kind == "error":
                out.append("\n".join(msg["content"]["traceback"]))
            elif kind == "execute_reply":
                status = msg["content"]["status"]
            elif kind == "status" and msg["content"]["execution_state"] == "idle":
                idle = True
    finally:
        conn.close()
    return {"status": status, "stdout": "".join(out)}
