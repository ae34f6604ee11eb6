"""Exercise 5.2's world: checker models, checkpoints that load into them, and the effects a load must have.

A spec describes one model and two checkpoints loaded into it in turn (a resume, then another): which leaf
modules the model has, which leaves each checkpoint lacks, which stray keys it carries, how its tensors are laid
out in memory (each its own, strided views, or views into one flat buffer as a memory-mapped file gives), the
model's dtype and the checkpoint's. `run_loads(fn, spec)` builds both, calls `fn(model, state_dict, allowed)` per
checkpoint, and raises `ExerciseFailure` naming the first effect that breaks the contract of exercise 5.2
(see `checks.check_missing_audit`). Only checks.py uses it; a learner never sees it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from hypothesis import strategies as st
from torch import nn

from verlstudy.kit import i18n
from verlstudy.kit.exercises import ExerciseFailure

# leaf modules a checker model may have; names chosen so whole-name matching matters (GLM-5's MTP layer is 78)
LEAVES = (
    "embed",
    "head",
    "mtp.proj",
    "mtp.head",
    "mtp_extra",
    "mtp_norm",
    "layers.1",
    "layers.10",
    "layers.2",
    "blocks.0",
    "blocks.mtp",
    "model.layers.7",
    "model.layers.78",
)
_BIASED = {"mtp.proj", "layers.1", "layers.10", "blocks.mtp", "blocks.0", "model.layers.78"}
_SAVED_BUFFER = {"mtp_norm", "layers.2", "mtp.head", "model.layers.7"}  # a persistent buffer `scale`: saved
_CACHE_BUFFER = {"embed", "blocks.0", "layers.2", "model.layers.78"}  # a non-persistent buffer `cache`: never saved
PATTERNS = (
    "mtp",
    "mtp.",
    "layers.1",
    "layers.1.",
    "blocks",
    "mtp_extra",
    "layers.",
    "model.layers.7",
    "model.layers.78.",
)
# checkpoint keys the model does not have (unexpected); embed.cache is a buffer the model never saves
STRAYS = ("old_head.weight", "mtp.extra_scale", "embed.cache")
LAYOUTS = ("own", "strided", "flat")  # each tensor its own storage, non-contiguous views, views of one buffer
DTYPES = (torch.float32, torch.bfloat16, torch.float64)


@dataclass(frozen=True)
class Load:
    """One checkpoint: the leaves it lacks, the stray keys it carries, how its tensors lie in memory."""

    lost: tuple[str, ...]
    strays: tuple[str, ...] = ()
    layout: str = "own"


@dataclass(frozen=True)
class Spec:
    """A model, the checkpoints loaded into it in turn, the allowed patterns, and the two dtypes."""

    leaves: tuple[str, ...]
    loads: tuple[Load, ...]
    allowed: tuple[str, ...]
    model_dtype: torch.dtype = torch.float32
    checkpoint_dtype: torch.dtype = torch.float32

    def describe(self) -> str:
        loads = [
            i18n.pick(_LOAD_WORDS[bool(load.strays), load.layout], lost=list(load.lost), strays=list(load.strays))
            for load in self.loads
        ]
        in_turn = functools.reduce(_then, loads) if loads else ""
        if self.model_dtype == self.checkpoint_dtype == torch.float32:
            return i18n.pick(
                "model with modules {leaves}: {loads}, allowed={allowed}",
                leaves=list(self.leaves),
                loads=in_turn,
                allowed=self.allowed,
            )
        return i18n.pick(
            "model with modules {leaves}, model in {model_dtype}, checkpoint in {checkpoint_dtype}: {loads}, "
            "allowed={allowed}",
            leaves=list(self.leaves),
            model_dtype=_short(self.model_dtype),
            checkpoint_dtype=_short(self.checkpoint_dtype),
            loads=in_turn,
            allowed=self.allowed,
        )


def _then(before: str, then: str) -> str:
    return i18n.pick("{before}; then {then}", before=before, then=then)


# one checkpoint of a spec, by (whether it carries stray keys, its layout): a whole phrase each, for translation
_LOAD_WORDS = {
    (False, "own"): "a checkpoint lacking {lost}",
    (True, "own"): "a checkpoint lacking {lost} plus unexpected {strays}",
    (False, "strided"): "a checkpoint lacking {lost} (its tensors non-contiguous views)",
    (True, "strided"): "a checkpoint lacking {lost} plus unexpected {strays} (its tensors non-contiguous views)",
    (False, "flat"): "a checkpoint lacking {lost} (its tensors views of one flat buffer)",
    (True, "flat"): "a checkpoint lacking {lost} plus unexpected {strays} (its tensors views of one flat buffer)",
}


def _short(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def build_model(leaves: Sequence[str], dtype: torch.dtype = torch.float32) -> nn.Module:
    """A nested ModuleDict with one Linear(2, 2) per leaf path; some leaves carry a saved buffer `scale` or a
    non-persistent buffer `cache`. Every tensor holds its own whole negative values (exact in bfloat16)."""
    root = nn.ModuleDict()
    for path in leaves:
        *parents, last = path.split(".")
        node = root
        for part in parents:
            if part not in node:
                node[part] = nn.ModuleDict()
            node = node[part]
        leaf = nn.Linear(2, 2, bias=path in _BIASED)
        if path in _SAVED_BUFFER:
            leaf.register_buffer("scale", torch.zeros(2))
        if path in _CACHE_BUFFER:
            leaf.register_buffer("cache", torch.zeros(2), persistent=False)
        node[last] = leaf
    root.to(dtype)
    with torch.no_grad():
        for i, (_, t) in enumerate([*root.named_parameters(), *root.named_buffers()]):
            t.fill_(-(i + 1))
    return root


@functools.cache
def _saved(leaves: tuple[str, ...]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """The names and shapes of the state dict of `build_model(leaves)`, in its order (built once per leaves)."""
    return tuple((k, tuple(v.shape)) for k, v in build_model(leaves).state_dict().items())


def build_checkpoint(spec: Spec, index: int) -> dict[str, torch.Tensor]:
    """Checkpoint number `index` of `spec`: the model's state dict with whole values of its own (1..~128, exact
    in bfloat16), less its lost leaves, plus its stray keys, laid out as the load says."""
    load = spec.loads[index]
    values = {k: torch.full(shape, float(i + 1 + 64 * index)) for i, (k, shape) in enumerate(_saved(spec.leaves))}
    kept = {k: v for k, v in values.items() if not any(k.startswith(leaf + ".") for leaf in load.lost)}
    state = {**kept, **{s: torch.full((2,), 7.0) for s in load.strays}}
    state = {k: v.to(spec.checkpoint_dtype) for k, v in state.items()}
    if load.layout == "strided":  # every second element of a doubled tensor: same values, non-contiguous
        return {k: torch.stack([v, v], dim=-1)[..., 0] for k, v in state.items()}
    if load.layout == "flat":  # one buffer for the whole file, each tensor a view into it
        flat = torch.cat([v.reshape(-1) for v in state.values()]) if state else torch.zeros(0)
        out, start = {}, 0
        for k, v in state.items():
            out[k] = flat[start : start + v.numel()].view(v.shape)
            start += v.numel()
        return out
    return state


def _storages(tensors: Sequence[torch.Tensor]) -> set[int]:
    return {t.untyped_storage().data_ptr() for t in tensors if t.numel()}


def _snapshot(state: Mapping[str, torch.Tensor]) -> dict[str, tuple[torch.dtype, torch.Tensor]]:
    return {k: (v.dtype, v.detach().clone()) for k, v in state.items()}


def _effect_problem(model: nn.Module, before: dict[str, Any], state: Mapping[str, Any], kept: dict[str, Any]) -> str:
    """What the load did wrong to the model or the checkpoint ('' when nothing): the contract's effects."""
    if list(state) != list(kept) or any(
        not isinstance(state[k], torch.Tensor) or state[k].dtype != d or not torch.equal(state[k], v)
        for k, (d, v) in kept.items()
    ):
        return i18n._("your function changed the checkpoint it was given (leave the state dict as it was)")
    tensors = dict([*model.named_parameters(), *model.named_buffers()])
    for name, (obj, dtype, grad, _value) in before.items():
        now = tensors.get(name)
        if now is not obj:
            return i18n.pick(
                "after your load the model's {name} is another tensor object, not the one it had: anything holding "
                "the old one (an optimizer) no longer sees the model's weights (write into it)",
                name=name,
            )
        if now.dtype != dtype:
            return i18n.pick(
                "after your load the model's {name} is {dtype}, not its own {own_dtype}",
                name=name,
                dtype=_short(now.dtype),
                own_dtype=_short(dtype),
            )
        if now.requires_grad != grad:
            return i18n.pick("after your load the model's {name} changed requires_grad", name=name)
    theirs = _storages([v for v in state.values() if isinstance(v, torch.Tensor)])
    shared = [name for name, t in tensors.items() if _storages([t]) & theirs]
    if shared:
        return i18n.pick(
            "after your load the model's {name} shares memory with the checkpoint: a training step would write into "
            "the checkpoint (the model must hold copies)",
            name=shared[0],
        )
    held = model.state_dict()
    loadable = [name for name in before if name in state and name in held]
    skipped = [name for name in loadable if not torch.equal(held[name], state[name].to(before[name][1]))]
    if skipped and len(skipped) == len(loadable):
        return i18n._(
            "the model does not hold the checkpoint's weights afterwards: your function worked out the keys but did "
            "not load the weights into the model"
        )
    if skipped and skipped[0] not in dict(model.named_parameters()):
        return i18n.pick(
            "your load skipped {name} (a saved buffer): the model does not hold the checkpoint's value for it",
            name=skipped[0],
        )
    if skipped:
        return i18n.pick(
            "your load skipped {name} (a parameter): the model does not hold the checkpoint's value for it",
            name=skipped[0],
        )
    for name, (_obj, _dtype, _grad, value) in before.items():
        if name in loadable:
            continue
        if not torch.equal(tensors[name].detach(), value) and name in state:
            return i18n.pick(
                "your load changed the model's {name}, a buffer the model never saves: it keeps the model's own value",
                name=name,
            )
        if not torch.equal(tensors[name].detach(), value):
            return i18n.pick(
                "your load changed the model's {name}, a key the checkpoint lacks: it keeps the model's own value",
                name=name,
            )
    return ""


def run_loads(fn: Callable[..., Any], spec: Spec) -> tuple[Any, ...]:
    """Call `fn(model, checkpoint, allowed)` for each checkpoint of `spec` in turn, into one model; return the
    results. Raises ExerciseFailure at the first effect that breaks the contract."""
    model = build_model(spec.leaves, spec.model_dtype)
    results = []
    for index in range(len(spec.loads)):
        state = build_checkpoint(spec, index)
        kept = _snapshot(state)
        before = {
            name: (t, t.dtype, t.requires_grad, t.detach().clone())
            for name, t in [*model.named_parameters(), *model.named_buffers()]
        }
        results.append(fn(model, state, spec.allowed))
        problem = _effect_problem(model, before, state, kept)
        if problem and index:
            problem = i18n.pick("{mistake} (on the second load into the same model)", mistake=problem)
        if problem:
            raise ExerciseFailure(i18n.pick("{spec}: {problem}", spec=spec.describe(), problem=problem))
    return tuple(results)


@st.composite
def specs(draw: Any) -> Spec:
    """Generated specs: 0..6 leaves (empty model and single leaf included), two loads, any layouts and dtypes."""
    leaves = tuple(draw(st.lists(st.sampled_from(LEAVES), min_size=0, max_size=6, unique=True)))
    loads = tuple(
        Load(
            tuple(draw(st.lists(st.sampled_from(leaves), max_size=len(leaves), unique=True))) if leaves else (),
            tuple(draw(st.lists(st.sampled_from(STRAYS), max_size=2, unique=True))),
            draw(st.sampled_from(LAYOUTS)),
        )
        for _ in range(2)
    )
    allowed = tuple(draw(st.lists(st.sampled_from(PATTERNS), max_size=3, unique=True)))
    return Spec(leaves, loads, allowed, draw(st.sampled_from(DTYPES[:2])), draw(st.sampled_from(DTYPES)))
