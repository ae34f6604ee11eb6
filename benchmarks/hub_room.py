"""A room's load on one hub: N simulated learners log in, spawn, pull the student edition and run lesson 00's checks.

    sudo build/hub/venv/bin/python benchmarks/hub_room.py --learners 10

Each learner (a thread) logs in through the hub's form, gets a token, spawns their server, runs nbgitpuller, then
runs a right answer to 0.1 and 0.2 in a kernel of 00_start_here.ipynb. Reported: how many completed, time from login
to the first check's verdict (median, p95), and the peak memory of the hub, the proxy and every learner's server
and kernel together (RSS sampled every 0.5 s). Needs root (system users vsb-NAME, removed afterwards), JupyterHub
in this Python (make hub-env) and configurable-http-proxy ($VERLSTUDY_HUB_PROXY or PATH).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pwd
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

from verlstudy.hub import init, users
from verlstudy.hub.client import Person

PREFIX = "vsb-"
ADMIN = "teach"
CHECKS = """
import re
import torch
from verlstudy.kit.exercises import check_exercise

def seeded_sample(seed, n):
    local = torch.Generator()
    local.manual_seed(seed)
    return torch.randn(n, generator=local)

def find_unstable(text):
    kinds = [r"0x[0-9a-fA-F]{6,}", r"\\b\\d+(?:\\.\\d+)?\\s?(?:s|ms|us)\\b",
             r"\\b\\d{4}-\\d\\d-\\d\\d(?:T\\d\\d:\\d\\d)?",
             r"/tmp/[\\w./-]+", r"\\bpid \\d+", r"(?:127\\.0\\.0\\.1|localhost):\\d+"]
    return [m.group(0) for k in kinds for m in re.finditer(k, text)]

check_exercise("0.1", seeded_sample)
check_exercise("0.2", find_unstable)
"""


def learner(base: str, name: str, admin_token: str, repo: str) -> dict[str, object]:
    """One learner's session; the seconds from login to the first verdict, or the error."""
    start = time.monotonic()
    try:
        person = Person(base, name)
        person.login("a-long-password")
        person.get_token(admin_token)
        person.start_server(timeout_s=900)
        person.pull(repo, timeout_s=600)
        result = person.run_in_notebook(f"{init.TARGET}/00_start_here.ipynb", CHECKS, timeout_s=900)
        text = str(result["stdout"])
        ok = result["status"] == "ok" and text.count("exercise 0.") >= 2  # both checkers gave a verdict
        seconds = time.monotonic() - start
        return {"name": name, "ok": ok, "correct": text.count(": correct"), "seconds": seconds, "stdout": text[-300:]}
    except Exception as e:  # a learner who failed is counted, not fatal
        return {"name": name, "ok": False, "seconds": time.monotonic() - start, "error": repr(e)[:300]}


def tree_rss(root: int, accounts: set[int]) -> int:
    """RSS of the hub's process tree plus every process of the learners' accounts, in bytes."""
    total, seen = 0, set()
    try:
        procs = [psutil.Process(root), *psutil.Process(root).children(recursive=True)]
    except psutil.NoSuchProcess:
        procs = []
    procs += [p for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real in accounts]
    for proc in procs:
        if proc.pid in seen:
            continue
        seen.add(proc.pid)
        with contextlib.suppress(psutil.Error):
            total += proc.memory_info().rss
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=10)
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("hub_room: the learners are system users: run it as root (sudo)", file=sys.stderr)
        return 2
    names = [f"l{i:03d}" for i in range(args.learners)]
    systems = [users.system_name(n, PREFIX) for n in [*names, ADMIN]]
    top = Path(tempfile.mkdtemp(prefix="verlstudy-hubroom-"))
    top.chmod(0o755)
    folder, port = top / "room", init.free_port()
    proc = None
    peak = [0]
    try:
        init.init_hub(folder, names, ADMIN, port=port, prefix=PREFIX)
        accounts = {pwd.getpwnam(s).pw_uid for s in systems}
        log = open(top / "hub.log", "w")  # noqa: SIM115
        proc = subprocess.Popen(
            [sys.executable, "-m", "verlstudy", "hub", "up", str(folder)], stdout=subprocess.PIPE, stderr=log, text=True
        )
        while "up at" not in (line := proc.stdout.readline()):
            if not line:
                raise RuntimeError("the hub did not start: " + (top / "hub.log").read_text()[-2000:])
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], tree_rss(proc.pid, accounts))
                stop.wait(0.5)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        base, token = f"http://127.0.0.1:{port}/", (folder / init.TOKEN_FILE).read_text().strip()
        began = time.monotonic()
        with ThreadPoolExecutor(max_workers=len(names)) as pool:
            results = list(pool.map(lambda n: learner(base, n, token, str(folder / init.REPO)), names))
        wall = time.monotonic() - began
        stop.set()
        sampler.join()
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
        for system in systems:
            if users.account(system):
                for p in psutil.process_iter(["uids"]):
                    if p.info["uids"] and p.info["uids"].real == pwd.getpwnam(system).pw_uid:
                        p.kill()
            users.remove(system, delete_home=True)
        shutil.rmtree(top, ignore_errors=True)
    done = sorted(r["seconds"] for r in results if r["ok"])
    figures = {
        "learners": len(names),
        "completed": len(done),
        "verdicts_correct": sum(int(r.get("correct", 0)) for r in results),
        "first_check_median_s": round(statistics.median(done), 1) if done else None,
        "first_check_p95_s": round(done[min(len(done) - 1, int(0.95 * len(done)))], 1) if done else None,
        "wall_s": round(wall, 1),
        "peak_rss_gib": round(peak[0] / 2**30, 2),
        "cpus": os.cpu_count(),
        "failures": [r for r in results if not r["ok"]][:3],
    }
    print(json.dumps(figures, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
    return 0 if len(done) == len(names) else 1


if __name__ == "__main__":
    sys.exit(main())
