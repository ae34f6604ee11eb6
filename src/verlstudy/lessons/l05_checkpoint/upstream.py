"""Lesson 05 and upstream verl: verl's own save path, run against the course's export.

`checkpoint.strict` has no pure function of its own in verl: verl 0.9.1 hands it to Megatron-Bridge's
`save_hf_weights` (not part of verl). What verl decides, and what the body cell runs from verl's source,
are two methods of `MegatronCheckpointManager` in `verl/utils/checkpoint/megatron_checkpoint_manager.py`:
`should_save_hf_model` (HF weights are written when `"hf_model"` is saved, or `"model"` is saved and
`use_dist_checkpointing` is off) and `_save_model_as_hf_via_bridge` (with Megatron-Bridge and no PEFT it calls
`bridge.save_hf_weights(..., strict=...)`; with PEFT `save_hf_adapter`, with the vanilla mbridge `save_weights`,
neither with `strict`).
"""

from __future__ import annotations

import ast
import copy
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType, SimpleNamespace

from torch import nn

from verlstudy.kit.upstream import (
    NotComparable,
    UpstreamMoved,
    load_from_source,
    report_not_comparable,
    upstream_file,
)
from verlstudy.lessons.l05_checkpoint.export import ExportIncomplete, ExportResult, export_hf_weights

MANAGER_FILE = "utils/checkpoint/megatron_checkpoint_manager.py"
MANAGER_CLASS = "MegatronCheckpointManager"
MANAGER_METHODS = ("should_save_hf_model", "_save_model_as_hf_via_bridge")
DEFAULT_SAVE_CONTENTS = ("model", "optimizer", "extra")  # verl/trainer/config/config.py::CheckpointConfig

NOT_COMPARABLE = NotComparable(
    lesson="05",
    upstream="checkpoint.strict in the GLM recipe",
    why="a flag for Megatron-Bridge's save_hf_weights; the body runs verl's save path on the course's export",
)
COMPARISONS = ()


def load_manager_methods(release: str | None = None) -> Mapping[str, Callable[..., object]]:
    """verl's `MegatronCheckpointManager.should_save_hf_model` and `._save_model_as_hf_via_bridge`, as functions.

    The methods are cut out of the class with `ast` (the class needs Megatron to import) and take a
    stand-in `self`. Raises UpstreamMoved when the class or a method is no longer there. Loaded once per
    process and release (the methods hold no state of their own), so the mapping is read-only.
    """
    return _manager_methods(release)  # one cache key per release: `functools.cache` tells f() from f(None)


@functools.cache
def _manager_methods(release: str | None) -> Mapping[str, Callable[..., object]]:
    source, filename = upstream_file(MANAGER_FILE, release)
    tree = ast.parse(source, filename=filename)
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == MANAGER_CLASS), None)
    if cls is None:
        raise UpstreamMoved(f"{filename} defines no class {MANAGER_CLASS}")
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    missing = [m for m in MANAGER_METHODS if m not in methods]
    if missing:
        raise UpstreamMoved(f"{filename}::{MANAGER_CLASS} has no {', '.join(missing)}: it moved or was renamed")
    nodes = []
    for name in MANAGER_METHODS:
        node = copy.deepcopy(methods[name])
        node.decorator_list = []  # @property: called here as a plain function of the stand-in self
        nodes.append(node)
    text = ast.unparse(ast.Module(body=nodes, type_ignores=[]))
    provided = {"os": __import__("os"), "log_with_rank": lambda *a, **k: None, "logger": None}
    return MappingProxyType(load_from_source(text, MANAGER_METHODS, provided, f"{filename}::{MANAGER_CLASS}"))


@dataclass
class CourseBridge:
    """A stand-in for Megatron-Bridge's AutoBridge (v0.5.0, the recipe's pin): `save_hf_weights` runs the course's
    export and records it."""

    source: Mapping[str, object]
    calls: list[dict[str, object]] = field(default_factory=list)

    def save_hf_weights(self, model: object, path: str, strict: bool = True) -> None:
        chunks = list(model) if isinstance(model, list | tuple | nn.ModuleList) else [model]
        weights = [(k, v) for chunk in chunks for k, v in chunk.state_dict().items()]
        try:
            outcome: ExportResult | ExportIncomplete = export_hf_weights(weights, self.source, strict=strict)
        except ExportIncomplete as e:
            outcome = e
        self.calls.append({"method": "save_hf_weights", "path": path, "strict": strict, "outcome": outcome})

    def save_hf_adapter(self, model: object, path: str, peft_cls: object) -> None:
        """Megatron-Bridge's PEFT adapter export: takes no `strict`; recorded only."""
        self.calls.append({"method": "save_hf_adapter", "path": path, "strict": None, "outcome": None})

    def save_weights(self, model: object, path: str, **kwargs: object) -> None:
        """The vanilla mbridge's export: takes no `strict`; recorded only."""
        self.calls.append({"method": "save_weights", "path": path, "strict": None, "outcome": None})


def verl_save(
    bridge: CourseBridge,
    model: nn.Module,
    *,
    strict: bool,
    use_dist_checkpointing: bool = False,
    save_contents: tuple[str, ...] = DEFAULT_SAVE_CONTENTS,
    vanilla_bridge: bool = False,
    peft: bool = False,
    release: str | None = None,
) -> bool:
    """Run verl's own save decision and HF save call on a stand-in manager; return whether HF weights were saved.

    By default the stand-in has what the recipe sets: Megatron-Bridge (`vanilla_mbridge=False`, which the
    manager holds as `vanilla_bridge`), no PEFT, so the branch that calls `save_hf_weights` runs.
    `vanilla_bridge=True` or `peft=True` take verl's other two branches. `bridge.calls` records what verl asked
    for. verl's methods are loaded once per release (`load_manager_methods` caches them).
    """
    if not isinstance(bridge, CourseBridge):
        raise TypeError(f"bridge must be a CourseBridge, got {type(bridge).__name__}")
    flags = (strict, use_dist_checkpointing, vanilla_bridge, peft)
    if not all(isinstance(flag, bool) for flag in flags):
        raise TypeError("strict, use_dist_checkpointing, vanilla_bridge and peft must be True or False")
    verl = load_manager_methods(release)
    manager = SimpleNamespace(
        checkpoint_save_contents=list(save_contents),
        use_dist_checkpointing=use_dist_checkpointing,
        vanilla_bridge=vanilla_bridge,
        peft_cls=SimpleNamespace(name="a PEFT config") if peft else None,
        bridge=bridge,
        model=nn.ModuleList([model]),
        checkpoint_config=SimpleNamespace(strict=strict),
        rank=0,
        _get_bridge_extended_args=dict,  # verl's reads `mbridge_config` extras for `save_weights`: none here
    )
    if not verl["should_save_hf_model"](manager):
        return False
    verl["_save_model_as_hf_via_bridge"](manager, "huggingface")
    return True


def upstream_check(cases: int = 50) -> None:
    """The lesson's upstream cell: says why this lesson has no upstream function to compare."""
    report_not_comparable(NOT_COMPARABLE)
