"""A real JupyterHub on localhost (no mocks), driven from outside as a room would use it: make hub-test.

`verlstudy hub init` writes the deployment with two learners and an admin (system users with a test prefix),
`verlstudy hub up` serves it; both learners' servers spawn, nbgitpuller places the student edition in each home,
a checker run in alice's kernel through her server's kernel API shows on the progress page the admin opens after
the hub's OAuth login, and bob gets 403 on alice's server, on her files and on the progress service. Ctrl-C on
`hub up` stops every server. The system users are removed afterwards.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from verlstudy.hub import init, users
from verlstudy.hub.client import Person

pytestmark = pytest.mark.hub
PREFIX = "vst-"
LEARNERS = ("alice", "bob")
ADMIN = "teach"
PASSWORD = "a-long-password"
ANSWER_01 = """
import torch
from verlstudy.kit.exercises import check_exercise

def seeded_sample(seed, n):  # a learner's own words (the solution's exact text is refused as the course's)
    local = torch.Generator()
    local.manual_seed(seed)
    draws = torch.randn(n, generator=local)
    return draws

check_exercise("0.1", seeded_sample)
"""


def _processes_of(account: str) -> list[int]:
    uid = pwd.getpwnam(account).pw_uid
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


@pytest.fixture(scope="module")
def hub() -> Iterator[dict[str, object]]:
    if os.geteuid() != 0:
        pytest.fail("the live hub creates system users: run make hub-test as root (CI uses sudo)")
    top = Path(tempfile.mkdtemp(prefix="verlstudy-hubtest-"))  # pytest's own temp folders are 0700: learners need in
    top.chmod(0o755)
    folder = top / "room"
    port = init.free_port()
    systems = [users.system_name(n, PREFIX) for n in (*LEARNERS, ADMIN)]
    for system in systems:  # a run killed earlier may have left its accounts
        users.remove(system, delete_home=True)
    command = [sys.executable, "-m", "verlstudy", "hub"]
    prefix = ["--prefix", PREFIX]
    made = subprocess.run(
        [*command, "init", str(folder), "--users", ",".join(LEARNERS), "--admin", ADMIN, "--port", str(port), *prefix],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    log = open(folder.parent / "hub.log", "w")  # noqa: SIM115 (open for the hub's whole life)
    proc = subprocess.Popen([*command, "up", str(folder)], stdout=subprocess.PIPE, stderr=log, text=True)
    lines: list[str] = []
    try:
        end = time.monotonic() + 120
        while time.monotonic() < end:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "up at" in line:
                break
        assert any("up at" in line for line in lines), "".join(lines) + (folder.parent / "hub.log").read_text()[-3000:]
        base = f"http://127.0.0.1:{port}/"
        admin_token = (folder / init.TOKEN_FILE).read_text().strip()
        yield {"folder": folder, "base": base, "admin_token": admin_token, "proc": proc, "lines": lines}
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()
        for system in systems:
            for pid in _processes_of(system) if users.account(system) else []:
                os.kill(pid, signal.SIGKILL)
            users.remove(system, delete_home=True)
        shutil.rmtree(top, ignore_errors=True)


@pytest.fixture(scope="module")
def people(hub: dict[str, object]) -> dict[str, Person]:
    found = {}
    for name in (*LEARNERS, ADMIN):
        person = Person(str(hub["base"]), name)
        person.login(PASSWORD)
        person.get_token(str(hub["admin_token"]))
        found[name] = person
    return found


def test_hub_up_prints_the_url_the_pull_link_and_the_token_file(hub: dict[str, object]) -> None:
    text = "".join(hub["lines"])
    assert "git-pull?repo=" in text and "targetpath=verlstudy" in text
    assert str(Path(hub["folder"]) / init.TOKEN_FILE) in text
    for name in init.PRIVATE:
        assert (Path(hub["folder"]) / name).stat().st_mode & 0o777 == 0o600, name


def test_both_servers_spawn_and_nbgitpuller_places_the_student_edition(
    hub: dict[str, object], people: dict[str, Person]
) -> None:
    repo = str(Path(hub["folder"]) / init.REPO)
    for name in LEARNERS:
        person = people[name]
        person.start_server()
        person.pull(repo)
        listing = person.api("GET", f"user/{name}/api/contents/verlstudy").json()
        assert "00_start_here.ipynb" in {item["name"] for item in listing["content"]}
        home = Path(pwd.getpwnam(PREFIX + name).pw_dir)
        notebook = home / init.TARGET / "00_start_here.ipynb"
        assert notebook.stat().st_uid == pwd.getpwnam(PREFIX + name).pw_uid
        assert home.stat().st_mode & 0o777 == 0o700
    people[LEARNERS[0]].pull(repo)  # a second pull merges (nothing to do) rather than failing


def test_a_check_in_alices_kernel_shows_on_the_admins_progress_page(
    hub: dict[str, object], people: dict[str, Person]
) -> None:
    alice, admin = people["alice"], people[ADMIN]
    result = alice.run_in_notebook("verlstudy/00_start_here.ipynb", ANSWER_01)
    assert result["status"] == "ok", result["stdout"]
    page = admin.session.get(admin.url("services/progress/"), timeout=60)
    assert page.status_code == 200, page.text[:300]
    assert 'id="matrix"' in page.text and "alice" in page.text
    states = admin.session.get(admin.url("services/progress/progress.json"), timeout=60).json()["learners"]
    # her right answer is called right in a kernel of the hub's Python (the course's packages layered by a .pth file)
    assert "exercise 0.1: correct" in str(result["stdout"]), result["stdout"]
    assert states["alice"]["0.1"] == "correct", result["stdout"]
    assert states["bob"]["0.1"] == "not attempted"


def test_bob_gets_403_on_alices_server_her_files_and_the_progress_service(
    hub: dict[str, object], people: dict[str, Person]
) -> None:
    bob = people["bob"]
    assert bob.api("GET", "user/alice/api/contents/verlstudy").status_code == 403
    assert bob.session.get(bob.url("user/alice/api/contents"), timeout=60).status_code == 403
    assert bob.api("GET", "services/progress/").status_code == 403  # with his token
    browser = bob.session.get(bob.url("services/progress/"), timeout=60)  # through the hub's OAuth, as a browser
    assert browser.status_code == 403, (browser.status_code, browser.url)
    peek = bob.run_in_notebook(
        "verlstudy/00_start_here.ipynb",
        f"import os\ntry:\n    os.listdir({str(Path(pwd.getpwnam(PREFIX + 'alice').pw_dir))!r})\n"
        "    print('READ')\nexcept PermissionError:\n    print('DENIED')\n",
    )
    assert "DENIED" in str(peek["stdout"]), peek


def test_ctrl_c_stops_the_hub_and_every_learners_server(hub: dict[str, object], people: dict[str, Person]) -> None:
    proc = hub["proc"]
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=90) is not None
    end = time.monotonic() + 20  # a kernel ends a moment after its server
    while time.monotonic() < end and any(_processes_of(PREFIX + n) for n in LEARNERS):
        time.sleep(0.5)
    for name in LEARNERS:
        assert _processes_of(PREFIX + name) == [], f"{name}'s server outlived the hub"
