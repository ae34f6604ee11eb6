"""Run a function on N local `torch.distributed` gloo ranks from a notebook, and always come back.

`run_local(fn, world_size, *args)` starts `world_size` processes on this machine (forked on Linux, spawned
where fork is missing or unsafe: `start_method`), joins them into one gloo process group over loopback, calls
`fn(rank, world_size, *args)` in each and returns the results in rank order. A rank that raises, or that is
still running after `timeout_s`, turns into a `DistributedRunError` whose message is stable text (no ports,
PIDs, addresses or paths), so a notebook can print it under nbval. Nothing listens beyond this machine: the
ranks meet through a file store (no rendezvous port to race for or to expose) and gloo's pair sockets bind
127.0.0.1 whatever the hostname resolves to or GLOO_SOCKET_IFNAME says. Once a rank has failed, the others get
`grace_s` to report and are then stopped, so one failure never costs the whole timeout. Children are always
reaped; their stdout/stderr noise (C++ log lines carrying PIDs) is discarded, and what matters travels back
through a pipe.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing as mp
import numbers
import os
import pickle
import re
import shutil
import socket
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from multiprocessing.connection import Connection, wait
from typing import Any

import torch

# the example rank functions moved to rank_workers; importable from here as before (tests, benchmarks)
from verlstudy.common.rank_workers import all_reduce_rank_sum as all_reduce_rank_sum
from verlstudy.common.rank_workers import count_in as count_in
from verlstudy.common.rank_workers import hang_on_rank as hang_on_rank
from verlstudy.common.rank_workers import listening_addresses as listening_addresses
from verlstudy.common.rank_workers import peer_sockets_after_a_raise as peer_sockets_after_a_raise
from verlstudy.common.rank_workers import raise_on_rank as raise_on_rank
from verlstudy.common.rank_workers import raise_on_rank_then_all_reduce as raise_on_rank_then_all_reduce
from verlstudy.common.rank_workers import raise_then_hang_on_peer as raise_then_hang_on_peer
from verlstudy.kit.params import check_items, check_str

MAX_WORLD_SIZE = 8
LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class RankOutcome:
    """What one rank did: its return value (ok=True) or the type and first line of its error."""

    rank: int
    ok: bool
    value: Any = None
    error_type: str = ""
    error_message: str = ""


class DistributedRunError(RuntimeError):
    """One or more ranks raised or did not finish in time; `.outcomes` holds every rank's outcome."""

    def __init__(self, outcomes: list[RankOutcome], tracebacks: dict[int, str] | None = None) -> None:
        self.outcomes = list(outcomes)
        # Full child tracebacks for debugging; never part of the (stable) message.
        self.tracebacks = dict(tracebacks or {})
        failed = [o for o in self.outcomes if not o.ok]
        super().__init__("\n".join(f"rank {o.rank}: {o.error_type}: {o.error_message}" for o in failed))


# What makes an error message differ between runs: file:line tags from C++ sources, paths,
# hex addresses, host:port pairs and PIDs. Order matters (a path may contain digits).
_UNSTABLE = (
    (re.compile(r"\[[^\]\s]*\.(?:cc|cpp|cxx|c|h|hpp|py):\d+\]\s*"), ""),
    (re.compile(r"(?:[A-Za-z]:)?(?:/[\w.\-+@~]+){2,}/?"), "<path>"),
    (re.compile(r"0x[0-9a-fA-F]+"), "0x?"),
    (re.compile(r"\[?(\d{1,3}(?:\.\d{1,3}){3}|localhost|::1)\]?:\d+"), r"\1:<port>"),
    (re.compile(r"\b(pid|PID|process|Process)([ =:]+)\d+"), r"\1\2<pid>"),
)


def stable_message(message: str) -> str:
    """First non-empty line of `message` with ports, PIDs, hex addresses and file paths removed."""
    if not isinstance(message, str):
        raise TypeError(f"message must be a string, got {type(message).__name__}")
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    text = lines[0] if lines else ""
    for pattern, replacement in _UNSTABLE:
        text = pattern.sub(replacement, text)
    return text.strip()


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port on `host` that was free a moment ago (the OS picks it; another process could race)."""
    if host not in (LOOPBACK, "localhost"):
        raise ValueError(f"host must be loopback ({LOOPBACK!r} or 'localhost'), got {host!r}")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class LoopbackUnavailable(RuntimeError):
    """This machine's loopback interface (127.0.0.1) cannot be reached, so no local gloo rank could connect."""


_loopback_ok = False


def check_loopback(timeout_s: float = 2.0) -> None:
    """LoopbackUnavailable, one line naming 127.0.0.1 and what to do, unless a TCP connection to this machine's
    loopback succeeds (checked once per process). Without it every rank would wait out the connect timeout."""
    global _loopback_ok
    if _loopback_ok:
        return
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
            server.bind((LOOPBACK, 0))
            server.listen(1)
            with socket.create_connection(server.getsockname()[:2], timeout=timeout_s):
                pass
    except OSError as e:
        raise LoopbackUnavailable(
            f"local gloo ranks meet over the loopback interface, and {LOOPBACK} cannot be reached here "
            f"({e.strerror or type(e).__name__}); bring it up (ip link set lo up) or run the container with a "
            "network (not --network none), then run again"
        ) from None
    _loopback_ok = True


def _check_fn(fn: object) -> Callable[..., Any]:
    if not callable(fn):
        raise TypeError(f"fn must be a function, got {type(fn).__name__}")
    module_name = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    what = f"{module_name}.{qualname}" if module_name and qualname else repr(fn)
    hint = "define the worker as a module-level function in an importable module (e.g. in verlstudy)"
    if not module_name or not qualname or module_name == "__main__" or "<" in qualname or "." in qualname:
        raise TypeError(f"fn must be an importable module-level function, got {what}; {hint}")
    try:
        found = getattr(importlib.import_module(module_name), qualname)
    except (ImportError, AttributeError) as e:
        raise TypeError(f"fn {what} cannot be imported by name ({type(e).__name__}); {hint}") from e
    if found is not fn:
        raise TypeError(f"fn {what} is not the object its module exports under that name; {hint}")
    return fn  # type: ignore[return-value]


def start_method(platform: str = sys.platform, available: Sequence[str] | None = None) -> str:
    """How run_local starts its ranks: "fork" on Linux (fast, nothing re-imported), else "spawn".

    macOS has fork but its system libraries are not fork-safe once threads exist (Python's default there is
    spawn since 3.8); Windows has no fork. Spawned ranks import `fn` by name, which `_check_fn` already requires.
    """
    check_str("platform", platform, what="a sys.platform value like 'linux' (a str)")
    methods = (
        mp.get_all_start_methods()
        if available is None
        else check_items("available", available, str, what="a start method name like 'fork' (a str)")
    )
    return "fork" if platform.startswith("linux") and "fork" in methods else "spawn"


def _check_seconds(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number of seconds, got {type(value).__name__} {value!r}")
    if not 0 < float(value) <= 3600:
        raise ValueError(f"{name} must be in (0, 3600] seconds, got {value!r}")
    return float(value)


def _silence_output() -> None:
    # The child's C++ log lines (gloo, c10d) carry PIDs and would land in the notebook; drop them.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)


CONNECT_TIMEOUT_S = 60.0  # ranks joining the group (fork, import, rendezvous) on a loaded machine


def _loopback_options(collective_timeout_s: float) -> Any:
    """gloo options whose one device binds 127.0.0.1 (not the hostname's address, not GLOO_SOCKET_IFNAME)."""
    import torch.distributed as dist

    options = dist.ProcessGroupGloo._Options()
    options._devices = [dist.ProcessGroupGloo.create_device(hostname=LOOPBACK)]
    options._timeout = timedelta(seconds=collective_timeout_s)
    return options


def _child(
    rank: int,
    world_size: int,
    store_path: str,
    collective_timeout_s: float,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    conn: Connection,
) -> None:
    _silence_output()
    os.environ["TORCH_CPP_LOG_LEVEL"] = "ERROR"
    # a cluster's interface settings name devices this machine may not have; local ranks use loopback
    for name in ("GLOO_SOCKET_IFNAME", "GLOO_DEVICE_TRANSPORT"):
        os.environ.pop(name, None)
    # One thread per rank: ranks share the cores, and OpenMP after fork is only safe single-threaded.
    torch.set_num_threads(1)
    import torch.distributed as dist

    store = None
    try:
        store = dist.FileStore(store_path, world_size)
        # Connecting may take long on a loaded machine; only the collectives get the short timeout (a stranded
        # rank's wait). A torch without _set_pg_timeout gets the short one for both, as before.
        set_timeout = getattr(dist.distributed_c10d, "_set_pg_timeout", None)
        if not hasattr(dist.ProcessGroupGloo, "_set_default_timeout"):  # what _set_pg_timeout calls for gloo
            set_timeout = None
        connect_s = max(collective_timeout_s, CONNECT_TIMEOUT_S) if set_timeout else collective_timeout_s
        dist.init_process_group(
            "gloo",
            store=store,
            rank=rank,
            world_size=world_size,
            timeout=timedelta(seconds=connect_s),
            pg_options=_loopback_options(connect_s),
        )
        if connect_s != collective_timeout_s:
            set_timeout(timedelta(seconds=collective_timeout_s))
        payload: tuple[Any, ...] = ("ok", fn(rank, world_size, *args))
    except BaseException as e:  # report everything, KeyboardInterrupt included, then exit
        payload = ("error", type(e).__name__, str(e), traceback.format_exc())
    _send(conn, payload, rank)  # the outcome first: a peer that never finishes cannot delay it
    conn.close()
    # Leave together, whether `fn` returned or raised: a rank that leaves (its gloo sockets close) while a peer still
    # connects to it or reads from it makes the peer fail with "Connection closed by peer" though the peer did
    # nothing wrong (seen under load: a rank raising early broke its peer's connect, 1 run in 60). The file store,
    # not the gloo sockets, tells each rank when every rank is done; a peer that never counts itself (it hangs, or
    # died) is given up on after the collective timeout, and run_local stops a rank grace_s after a failure anyway.
    # The group is not destroyed: the process ends right after (os._exit), which closes its sockets some 25 ms
    # sooner than a destroy.
    if store is not None:
        with contextlib.suppress(BaseException):  # the outcome is sent; a broken store only means leaving now
            wait_for_peers(store, world_size, collective_timeout_s)


def _send(conn: Connection, payload: tuple[Any, ...], rank: int) -> None:
    try:
        data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:  # the return value could not be sent back
        data = pickle.dumps(("error", "PicklingError", f"rank {rank} returned an unpicklable value: {e}", ""))
    conn.send_bytes(data)


EXITED_KEY = "verlstudy/ranks-done"


def wait_for_peers(store: Any, world_size: int, timeout_s: float) -> bool:
    """Count this rank as done in `store`, then wait until all `world_size` ranks are; True if they all were.

    A peer that failed never counts itself: after `timeout_s` this gives up and returns False (the caller
    then leaves anyway, and the failure is reported by the peer's own outcome).
    """
    done = int(store.add(EXITED_KEY, 1))
    deadline = time.monotonic() + timeout_s
    while done < world_size:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
        done = int(store.add(EXITED_KEY, 0))
    return True


def _outcome(rank: int, payload: tuple[Any, ...]) -> tuple[RankOutcome, str]:
    if payload[0] == "ok":
        return RankOutcome(rank, True, payload[1]), ""
    _, error_type, message, tb = payload
    return RankOutcome(rank, False, None, error_type, stable_message(message) or "(no message)"), tb


def run_local(
    fn: Callable[..., Any],
    world_size: int,
    *args: Any,
    timeout_s: float = 30.0,
    collective_timeout_s: float = 10.0,
    grace_s: float = 2.0,
    while_waiting: Callable[[], object] | None = None,
) -> list[Any]:
    """Run `fn(rank, world_size, *args)` on `world_size` local gloo ranks; return results in rank order.

    Each rank joins a process group on 127.0.0.1 (collectives time out after `collective_timeout_s`),
    runs `fn` and sends its return value back (anything picklable, tensors included; where ranks are spawned,
    not forked, `args` must pickle too), then waits for the other ranks and exits. If a rank raises, or any
    rank is still running after `timeout_s` (it is killed), raises DistributedRunError with every rank's
    RankOutcome. After the first failure the other ranks have `grace_s` seconds to report before they are stopped.

    `while_waiting()`, if given, runs in this process once every rank has started and before their
    results are read: work that overlaps the ranks' (a wait, say), not work they need. Its return value
    is dropped; if it raises, the ranks are stopped and the error propagates. `timeout_s` counts from
    the start, while_waiting included: keep it well under that.
    """
    fn = _check_fn(fn)
    if isinstance(world_size, bool) or not isinstance(world_size, numbers.Integral):
        raise TypeError(f"world_size must be an int, got {type(world_size).__name__} {world_size!r}")
    if not 1 <= int(world_size) <= MAX_WORLD_SIZE:
        raise ValueError(f"world_size must be between 1 and {MAX_WORLD_SIZE}, got {world_size}")
    world_size = int(world_size)
    timeout_s = _check_seconds("timeout_s", timeout_s)
    collective_timeout_s = _check_seconds("collective_timeout_s", collective_timeout_s)
    grace_s = _check_seconds("grace_s", grace_s)
    if while_waiting is not None and not callable(while_waiting):
        raise TypeError(f"while_waiting must be a function taking no arguments, got {type(while_waiting).__name__}")
    check_loopback()  # one line now, not a connect timeout in every rank

    ctx = mp.get_context(start_method())
    store_dir = tempfile.mkdtemp(prefix="verlstudy-gloo-")
    store_path = os.path.join(store_dir, "store")
    procs: list[Any] = []
    readers: dict[Connection, int] = {}
    with warnings.catch_warnings():
        # Python 3.12+ warns that fork() in a threaded process (a Jupyter kernel) may deadlock; the
        # child only runs fn with one thread, so the warning would only add noise to the notebook.
        warnings.simplefilter("ignore", DeprecationWarning)
        for rank in range(world_size):
            reader, writer = ctx.Pipe(duplex=False)
            proc = ctx.Process(
                target=_child,
                args=(rank, world_size, store_path, collective_timeout_s, fn, args, writer),
                daemon=True,
            )
            proc.start()
            writer.close()  # the child holds the write end; EOF then means the child died
            procs.append(proc)
            readers[reader] = rank

    outcomes: dict[int, RankOutcome] = {}
    tracebacks: dict[int, str] = {}
    deadline = time.monotonic() + timeout_s
    first_failure: int | None = None
    try:
        if while_waiting is not None:
            while_waiting()  # the ranks are running; a rank whose result fills its pipe waits for the read below
        # Read while waiting: a child blocks on a large result until the parent takes it.
        while readers:
            # a result already sent is read even past the deadline (after a long while_waiting, say)
            ready = wait(list(readers), timeout=max(deadline - time.monotonic(), 0.0))
            if not ready:
                break
            for conn in ready:
                rank = readers.pop(conn)  # type: ignore[call-overload]
                try:
                    payload = pickle.loads(conn.recv_bytes())
                except EOFError:
                    code = procs[rank].join(timeout=1.0) or procs[rank].exitcode
                    payload = ("error", "ChildProcessError", f"rank {rank} exited (code {code}) without a result", "")
                finally:
                    conn.close()
                outcomes[rank], tracebacks[rank] = _outcome(rank, payload)
                if not outcomes[rank].ok and first_failure is None:
                    first_failure = rank
                    deadline = min(deadline, time.monotonic() + grace_s)  # the rest may not wait it out
        for rank in readers.values():
            if first_failure is not None:
                message = f"stopped {grace_s:g} s after rank {first_failure} failed"
                outcomes[rank] = RankOutcome(rank, False, None, "Stopped", message)
            else:
                message = f"did not finish within timeout_s={timeout_s:g} s (killed)"
                outcomes[rank] = RankOutcome(rank, False, None, "TimeoutError", message)
    finally:
        for conn, rank in readers.items():
            conn.close()
            procs[rank].kill()  # past the deadline (or interrupted): never leave a rank running
        for proc in procs:
            proc.join(timeout=1.0)
            if proc.is_alive():
                proc.kill()
                proc.join()
            proc.close()
        shutil.rmtree(store_dir, ignore_errors=True)

    ordered = [outcomes[rank] for rank in range(world_size)]
    if not all(o.ok for o in ordered):
        raise DistributedRunError(ordered, {r: tb for r, tb in tracebacks.items() if tb})
    return [o.value for o in ordered]
