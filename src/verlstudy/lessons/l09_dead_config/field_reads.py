"""Lesson 09's dead-field search: config fields that code copies somewhere and never reads, found with `ast`.

In verl 0.9.0 `grad_offload` was copied into `self._is_offload_grad`, which nothing read; `dead_fields`
finds such fields by following every read of a field (`read_index`) through its chain of copies. A field
that code may read by computed name instead (`reflective`) is reported as "cannot tell", not as dead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from verlstudy.common.heap import collector_paused
from verlstudy.lessons.l09_dead_config.read_index import _ReadIndex, reflective_filters, source_texts
from verlstudy.lessons.l09_dead_config.reflective import passes
from verlstudy.lessons.l09_dead_config.schema import field_names


@dataclass(frozen=True)
class DeadField:
    """A config field that no code acts on: never read, or only copied into names never read."""

    name: str
    copied_into: tuple[str, ...]  # e.g. ('self._is_offload_grad',)
    sites: tuple[str, ...]  # 'engine.py:27' for every read of the field
    reflective: tuple[str, ...] = ()  # where code reads the config's fields by computed name (fields()+getattr)

    @property
    def cannot_tell(self) -> bool:
        """No read by name, but the config is read reflectively: whether this field is used cannot be told."""
        return bool(self.reflective)

    def __str__(self) -> str:
        if self.reflective:
            return f"{self.name}: read reflectively: cannot tell ({', '.join(self.reflective)})"
        if not self.copied_into:
            return f"{self.name}: never read"
        into = ", ".join(self.copied_into)
        return f"{self.name}: copied into {into} ({', '.join(self.sites)}), which is never read"


def _field_list(config: type | Iterable[str]) -> list[str]:
    if isinstance(config, type):
        return field_names(config)
    if isinstance(config, str) or not isinstance(config, Iterable):
        raise TypeError(f"config must be a dataclass type or a list of field names, got {config!r}")
    names = list(config)
    if not all(isinstance(n, str) and n.isidentifier() for n in names):
        raise TypeError(f"field names must be identifiers, got {names!r}")
    return names


def dead_fields(
    source_files: Mapping[str, str] | Sequence[str | Path],
    config: type | Iterable[str],
    *,
    root: str | Path | None = None,
    class_name: str | None = None,
    index: _ReadIndex | None = None,
) -> list[DeadField]:
    """Fields of `config` (a dataclass, or field names read from source) that no code in
    `source_files` acts on, in field order. Names starting with '_' (`_target_`) are not searched.

    A field is live when some read of it is used (in a condition, a call, arithmetic...). A read
    that is only copied (`self._x = cfg.field`, `x = cfg.field`) counts when the copy is itself
    live, followed through any chain of copies. Matching is by attribute name, whatever the object,
    so it may miss a dead field whose name is also used for something else (`full_determinism` is read by
    some engines and not by Megatron's). A field with no read by name, in a config that code reads by computed
    name (`fields()` + `getattr`, `asdict`, `vars`: `reflective_reads`; a loop that skips fields by name first
    reads only those it keeps: `reflective_filters`), or whose name is written as a string
    somewhere (`optim_config.get(field)` over a tuple of names), is returned with `reflective` set: "read
    reflectively: cannot tell". `class_name` names the config class (default: `config`'s own name).
    `source_files`: paths (keyed relative to `root`, default their shared folder), or a mapping path -> text;
    `index` reuses the read index of an earlier search over the same sources.
    """
    names = [n for n in _field_list(config) if not n.startswith("_")]
    texts = source_texts(source_files, root) if index is None else index.sources
    index = index if index is not None else _ReadIndex(texts)
    cls = class_name or (config.__name__ if isinstance(config, type) else None)
    with collector_paused():  # the search frees what it builds by reference counting: no collection need walk the heap
        return _search(index, names, cls)


def _search_any_read_is_live(index: _ReadIndex, names: list[str], class_name: str | None) -> list[DeadField]:
    """`_search` before it followed copies (kept to show the fix as a change): a field is live as soon as any
    code reads it, so `self._is_offload_grad = engine_config.grad_offload` keeps `grad_offload` alive."""
    prefer = index.spelling_counts(names)  # the files that write most of the fields are tried first

    def live(attr: str, seen: frozenset[str]) -> bool:
        for _read in index.reads_of(attr, prefer=prefer):
            return True  # a grep's verdict: any mention that reads the field keeps it
        return False

    out = []
    for name in names:
        if live(name, frozenset({name})):
            continue
        # dead: every read is a copy; list them in source order, whichever files the search tried first
        into: list[str] = []
        sites: list[str] = []
        for read in index.reads_of(name, in_source_order=True):
            sites.append(f"{read.file}:{read.line}")
            into += [t if kind == "local" else f"self.{t}" if t.startswith("_") else f".{t}"
                     for kind, t in read.copied_into or ()]  # fmt: skip
        named = tuple(index.string_sites(name, first=2))  # e.g. a tuple of field names read with .get(field)
        reflective = reflective_filters(index, class_name) if class_name else []  # only a dead field needs them
        reads = tuple(site for site, tests in reflective if passes(name, tests))
        out.append(DeadField(name, tuple(into), tuple(sites), reads or named))
    return out


def _search(index: _ReadIndex, names: list[str], class_name: str | None) -> list[DeadField]:
    prefer = index.spelling_counts(names)  # the files that write most of the fields are tried first

    def live(attr: str, seen: frozenset[str]) -> bool:
        for read in index.reads_of(attr, prefer=prefer):
            if read.copied_into is None:
                return True
            for kind, target in read.copied_into:
                if kind == "local":
                    if target in read.loads:
                        return True
                elif target not in seen and live(target, seen | {target}):
                    return True
        return False

    out = []
    for name in names:
        if live(name, frozenset({name})):
            continue
        # dead: every read is a copy; list them in source order, whichever files the search tried first
        into: list[str] = []
        sites: list[str] = []
        for read in index.reads_of(name, in_source_order=True):
            sites.append(f"{read.file}:{read.line}")
            into += [t if kind == "local" else f"self.{t}" if t.startswith("_") else f".{t}"
                     for kind, t in read.copied_into or ()]  # fmt: skip
        named = tuple(index.string_sites(name, first=2))  # e.g. a tuple of field names read with .get(field)
        reflective = reflective_filters(index, class_name) if class_name else []  # only a dead field needs them
        reads = tuple(site for site, tests in reflective if passes(name, tests))
        out.append(DeadField(name, tuple(into), tuple(sites), reads or named))
    return out
