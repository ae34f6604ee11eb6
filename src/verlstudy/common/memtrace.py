"""Who holds the memory: a CPU allocation tracker, the slope of a leak, and a CUDA snapshot reader.

On CUDA a leak like lesson 01's is found with `torch.cuda.memory._record_memory_history` and snapshots,
whose allocation stacks name the creating call (Megatron's `create_tensor_recv_prev` in #7874's case:
that #7874 was found this way is the course's digest's account; #6699's commit message cites
memory-history profiling for its FSDP precursor). That API exists only for CUDA. `AllocationTracker`
is the CPU analogue used in lesson 01: a `TorchDispatchMode` that sees every aten op, records each
*new* storage an op returns together with the Python stack that created it (frames inside torch
trimmed), and forgets it when the storage is
freed. It holds only weak references, so it never keeps a storage alive itself.

The same `Site` view (bytes grouped by creating function and line) is produced from a CUDA snapshot
(`torch.cuda.memory._snapshot()` or the pickle `_dump_snapshot` writes) by `snapshot_top_sites`, and
`snapshot_from_tracker` writes a tracker's live set in that snapshot format.
"""

from __future__ import annotations

import numbers
import os
import pickle
import re
import sys
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from verlstudy.kit.params import got

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_THIS_FILE = os.path.abspath(__file__)
_MAX_FRAMES = 12
_CELL_FILE = re.compile(r"(ipykernel_\d+[/\\]\d+\.py|<ipython-input-[^>]*>)$")


@dataclass(frozen=True)
class Frame:
    """One Python frame of an allocation stack: a short file name, the line and the function."""

    file: str
    line: int
    function: str


@dataclass(frozen=True)
class Allocation:
    """A storage the tracker saw being created: order of creation, size, the op and its stack."""

    seq: int
    nbytes: int
    op: str
    frames: tuple[Frame, ...]  # innermost first, torch's own frames removed

    @property
    def site(self) -> Frame:
        """The innermost frame outside torch: the line of user code that caused the allocation."""
        return self.frames[0] if self.frames else Frame("<unknown>", 0, "<unknown>")


@dataclass(frozen=True)
class Site:
    """Live bytes grouped by the function and line that allocated them."""

    function: str
    file: str
    line: int
    bytes: int
    count: int

    def label(self) -> str:
        """`function (file:line)`: what a table of top sites shows."""
        return f"{self.function} ({self.file}:{self.line})"


def short_file(path: str) -> str:
    """A stable short name for a source file: `package/module.py`, or `<cell>` for a notebook cell."""
    if not isinstance(path, str):
        raise TypeError(f"path must be a string, got {type(path).__name__}")
    norm = path.replace("\\", "/")
    if _CELL_FILE.search(norm):
        return "<cell>"
    parts = [p for p in norm.split("/") if p]
    return "/".join(parts[-2:]) if len(parts) >= 2 else (parts[0] if parts else "<unknown>")


_FILE_CACHE: dict[str, str | None] = {}  # co_filename -> short name, or None for torch's / ours


def _short_user_file(filename: str) -> str | None:
    if filename not in _FILE_CACHE:
        skip = filename.startswith(_TORCH_DIR) or os.path.abspath(filename) == _THIS_FILE
        _FILE_CACHE[filename] = None if skip else short_file(filename)
    return _FILE_CACHE[filename]


_FRAME_CACHE: dict[tuple[CodeType, int], Frame | None] = {}


def _user_frames(frame: FrameType | None) -> tuple[Frame, ...]:
    # Walk outwards from the dispatch call, keeping frames that are neither torch's nor this module's.
    out: list[Frame] = []
    while frame is not None and len(out) < _MAX_FRAMES:
        key = (frame.f_code, frame.f_lineno)
        if key not in _FRAME_CACHE:
            short = _short_user_file(key[0].co_filename)
            _FRAME_CACHE[key] = None if short is None else Frame(short, key[1], key[0].co_name)
        found = _FRAME_CACHE[key]
        if found is not None:
            out.append(found)
        frame = frame.f_back
    return tuple(out)


_ALIASING: dict[Any, bool] = {}  # op -> does any result alias an input (schema lookups are slow)


def _returns_alias(func: Any) -> bool:
    if func not in _ALIASING:
        returns = getattr(getattr(func, "_schema", None), "returns", ())
        _ALIASING[func] = any(r.alias_info is not None for r in returns)
    return _ALIASING[func]


def _tensors(obj: object) -> Iterator[torch.Tensor]:
    # Op arguments and results are tensors, or lists/tuples/dicts of them (cheaper than pytree).
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, list | tuple):
        for item in obj:
            yield from _tensors(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from _tensors(item)


class AllocationTracker(TorchDispatchMode):
    """Record every new tensor storage with its creating stack while active; drop it when freed.

    Use as a context manager around the code to watch. `live_bytes()` is what is still allocated
    of what was created inside; `top_sites(n, since=mark)` groups it by creating function and line
    (only allocations made after `mark()` when `since` is given); `timeline` is the live-byte count
    after every allocation and free. Storages created before entering, and views of existing
    storages, are not counted. The tracker holds weak references only.
    """

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Otherwise torch wraps __torch_dispatch__ in dynamo.disable, and the first op imports
        # torch._dynamo (and sympy): seconds per process. Nothing here is ever compiled.
        return False

    def __init__(self) -> None:
        super().__init__()
        self._live: dict[int, Allocation] = {}  # seq -> allocation, for storages still alive
        self._by_storage: dict[int, int] = {}  # storage key (_cdata) -> seq
        self._refs: dict[int, weakref.ref[Any]] = {}
        self._seq = 0
        self._live_bytes = 0
        self.timeline: list[int] = []
        self.total_allocated = 0

    # -- recording --------------------------------------------------------------------------
    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if _returns_alias(func):
            return out  # views, in-place and out= results reuse an existing storage
        outputs = list(_tensors(out))
        if outputs:
            inputs = {t.untyped_storage()._cdata for t in _tensors((args, kwargs)) if t.layout == torch.strided}
            frames: tuple[Frame, ...] | None = None
            for t in outputs:
                if t.layout != torch.strided or t.device.type == "meta":
                    continue
                storage = t.untyped_storage()
                key = storage._cdata
                if key in self._by_storage or key in inputs or storage.nbytes() == 0:
                    continue
                if frames is None:  # one stack walk per op, only when it allocated
                    frames = _user_frames(sys._getframe(1))
                self._add(storage, key, int(storage.nbytes()), str(func), frames)
        return out

    def _add(self, storage: Any, key: int, nbytes: int, op: str, frames: tuple[Frame, ...]) -> None:
        seq = self._seq
        self._seq += 1
        self._live[seq] = Allocation(seq, nbytes, op, frames)
        self._by_storage[key] = seq
        # A weak reference, and a callback that knows only ints: the tracker never keeps a storage alive.
        self._refs[seq] = weakref.ref(storage, lambda _ref, seq=seq, key=key: self._free(seq, key))
        self._live_bytes += nbytes
        self.total_allocated += nbytes
        self.timeline.append(self._live_bytes)

    def _free(self, seq: int, key: int) -> None:
        alloc = self._live.pop(seq, None)
        self._refs.pop(seq, None)
        if self._by_storage.get(key) == seq:
            del self._by_storage[key]
        if alloc is not None:
            self._live_bytes -= alloc.nbytes
            self.timeline.append(self._live_bytes)

    # -- reporting --------------------------------------------------------------------------
    def mark(self) -> int:
        """A position in the allocation order: pass it as `since=` to see only later allocations."""
        return self._seq

    def live(self, since: int | None = None) -> list[Allocation]:
        """Allocations still alive (created at or after `since` when given), oldest first."""
        start = _check_since(since)
        return [a for seq, a in sorted(self._live.items()) if seq >= start]

    def live_bytes(self, since: int | None = None) -> int:
        """Bytes of storages created inside the tracker (after `since` when given) that are still alive."""
        if since is None:
            return self._live_bytes
        return sum(a.nbytes for a in self.live(since))

    def top_sites(self, n: int = 5, since: int | None = None) -> list[Site]:
        """The `n` sites holding the most live bytes; ties go to the site that allocated first."""
        return group_sites(((a.site, a.nbytes, a.seq) for a in self.live(since)), n)


def _check_since(since: int | None) -> int:
    if since is None:
        return 0
    if isinstance(since, bool) or not isinstance(since, int) or since < 0:
        raise ValueError(f"since must be a mark() value (an int >= 0) or None, got {since!r}")
    return since


def group_sites(items: Iterable[tuple[Frame, int, int]], n: int = 5) -> list[Site]:
    """Group (site frame, bytes, order) triples by function and line; the `n` largest, stable order."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int (how many sites to return), got {n!r}")
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        raise TypeError(f"argument items must be a list of (Frame, bytes, order) triples, got {got(items)}")
    totals: dict[Frame, list[int]] = {}
    for i, item in enumerate(items):
        if not (isinstance(item, tuple) and len(item) == 3 and isinstance(item[0], Frame)):
            raise TypeError(f"argument items[{i}] must be a (Frame, bytes, order) triple, got {got(item)}")
        frame, nbytes, order = item
        entry = totals.setdefault(frame, [0, 0, order])
        entry[0] += nbytes
        entry[1] += 1
        entry[2] = min(entry[2], order)
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1][0], kv[1][2]))
    return [Site(f.function, f.file, f.line, total, count) for f, (total, count, _) in ranked[:n]]


def bytes_per_step(samples: Sequence[float], steps: Sequence[float] | None = None) -> float:
    """Least-squares slope of `samples` against `steps` (default 0, 1, 2, ...): bytes per step.

    Computed with exact fractions, so samples that grow by exactly k per step give exactly k.
    """
    ys = _numbers("samples", samples)
    xs = list(range(len(ys))) if steps is None else _numbers("steps", steps)
    if len(ys) < 2:
        raise ValueError(f"samples needs at least 2 values to fit a slope, got {len(ys)}")
    if len(xs) != len(ys):
        raise ValueError(f"steps has {len(xs)} values but samples has {len(ys)}")
    fx = [Fraction(x) for x in xs]
    fy = [Fraction(y) for y in ys]
    mx = sum(fx) / len(fx)
    my = sum(fy) / len(fy)
    sxx = sum((x - mx) ** 2 for x in fx)
    if sxx == 0:
        raise ValueError("steps must not all be equal (the slope is undefined)")
    return float(sum((x - mx) * (y - my) for x, y in zip(fx, fy, strict=True)) / sxx)


def _numbers(name: str, values: object) -> list[float]:
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a sequence of numbers, got {type(values).__name__}")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or v != v:
            raise TypeError(f"{name} must hold real numbers (no NaN), got {v!r}")
    return list(values)  # type: ignore[arg-type]


# -- CUDA memory snapshots ---------------------------------------------------------------------

LIVE_STATES = ("active_allocated",)


def load_snapshot(source: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    """A CUDA memory snapshot as a dict: from `torch.cuda.memory._snapshot()` or a pickle file."""
    if isinstance(source, Mapping):
        snapshot: Any = dict(source)
    elif isinstance(source, str | Path):
        path = Path(source)
        if not path.is_file():
            raise ValueError(f"snapshot file not found: {path.name}")
        try:
            with path.open("rb") as f:
                snapshot = pickle.load(f)  # the format torch.cuda.memory._dump_snapshot writes
        except (pickle.UnpicklingError, EOFError, ValueError, AttributeError, ImportError, IndexError) as e:
            raise ValueError(f"{path}: not a snapshot pickle ({type(e).__name__}: {e}); restore it with git") from e
    else:
        raise TypeError(f"source must be a snapshot dict or a path to a snapshot pickle, got {type(source).__name__}")
    if not isinstance(snapshot, dict) or not isinstance(snapshot.get("segments"), list):
        raise ValueError("not a CUDA memory snapshot: expected a dict with a 'segments' list")
    for i, seg in enumerate(snapshot["segments"]):
        if not isinstance(seg, dict) or not isinstance(seg.get("blocks"), list):
            raise ValueError(f"snapshot segment {i} has no 'blocks' list")
    return snapshot


NO_STACK = Frame("<no stack>", 0, "<no Python stack>")


def _snapshot_site(frames: Sequence[Mapping[str, Any]]) -> Frame:
    # Frames are innermost first; the site is the first Python frame outside torch.
    # No frames at all: the block was allocated before recording started (parameters, optimizer
    # state), recording ran without stacks, or it was allocated on a thread with no Python frames,
    # which on CUDA includes every backward allocation (autograd runs it on its device thread).
    if not frames:
        return NO_STACK
    for fr in frames:
        filename = str(fr.get("filename", ""))
        if filename.endswith(".py") and "/torch/" not in filename.replace("\\", "/"):
            return Frame(short_file(filename), int(fr.get("line", 0)), str(fr.get("name", "?")))
    return Frame("<no python frame>", 0, "<unknown>")


def snapshot_blocks(snapshot: Mapping[str, Any]) -> list[tuple[Frame, int, int]]:
    """(site, requested bytes, address) for every live block of a snapshot, in address order."""
    snap = load_snapshot(snapshot)
    out = []
    for seg in snap["segments"]:
        for block in seg["blocks"]:
            if block.get("state") not in LIVE_STATES:
                continue
            frames = block.get("frames")
            size = block.get("requested_size", block.get("size", 0))
            if frames is None and block.get("history"):  # the pre-2.1 snapshot format
                frames = block["history"][0].get("frames", [])
                size = block["history"][0].get("real_size", size)
            out.append((_snapshot_site(frames or []), int(size), int(block.get("address", 0))))
    return sorted(out, key=lambda t: t[2])


def snapshot_top_sites(snapshot: str | Path | Mapping[str, Any], n: int = 5) -> list[Site]:
    """The same view as `AllocationTracker.top_sites`, read from a CUDA memory snapshot."""
    return group_sites(snapshot_blocks(load_snapshot(snapshot)), n)


# The CUDA caching allocator hands out blocks in multiples of this many bytes
ALLOCATOR_GRANULARITY = 512


def allocator_block(nbytes: int) -> int:
    """The bytes of the block the CUDA caching allocator gives a request of `nbytes`: rounded up to its granularity."""
    if isinstance(nbytes, bool) or not isinstance(nbytes, numbers.Integral):
        raise TypeError(f"nbytes must be an int, got {type(nbytes).__name__}")
    if nbytes < 0:
        raise ValueError(f"nbytes must be >= 0, got {nbytes}")
    return -(-int(nbytes) // ALLOCATOR_GRANULARITY) * ALLOCATOR_GRANULARITY


def snapshot_from_tracker(
    tracker: AllocationTracker, since: int | None = None, base_address: int = 0x7F0000000000
) -> dict[str, Any]:
    """Write a tracker's live allocations in the CUDA snapshot format (segments / blocks / frames).

    Constructed, not recorded: one segment per allocation, sizes rounded up as the CUDA caching
    allocator rounds them (`allocator_block`), synthetic addresses in allocation order.
    """
    if not isinstance(tracker, AllocationTracker):
        raise TypeError(f"tracker must be an AllocationTracker, got {type(tracker).__name__}")
    segments = []
    trace = []
    address = base_address
    for alloc in tracker.live(since):
        size = allocator_block(alloc.nbytes)
        frames = [{"filename": f.file, "line": f.line, "name": f.function} for f in alloc.frames]
        block = {
            "address": address,
            "size": size,
            "requested_size": alloc.nbytes,
            "state": "active_allocated",
            "frames": frames,
        }
        segments.append(
            {
                "device": 0,
                "address": address,
                "total_size": size,
                "allocated_size": size,
                "active_size": size,
                "requested_size": alloc.nbytes,
                "stream": 0,
                "segment_type": "small" if size <= 1 << 20 else "large",
                "segment_pool_id": (0, 0),
                "blocks": [block],
            }
        )
        trace.append({"action": "alloc", "addr": address, "size": size, "stream": 0, "frames": frames})
        address += size
    return {"segments": segments, "device_traces": [trace]}
