"""Where the actor's state lives per rank: device vs host, with and without the #7788 recipe's offload.

The course's reconstruction (an estimate, not a measurement) of what the recipe's five offload
settings do, each fact from the source that owns the setting:

- ``megatron.param_offload`` (verl, ``verl/utils/megatron_utils.py::offload_megatron_model_to_cpu``):
  while the actor is inactive its bf16 weights are copied into a pinned host buffer and its gradient
  buffer is freed (resized to 0, not copied); both come back for training.
- ``megatron.optimizer_offload`` (verl, ``offload_megatron_optimizer``): while inactive the optimizer
  state moves to the host.
- ``optimizer_cpu_offload`` with ``optimizer_offload_fraction`` (Megatron-core,
  ``megatron/core/optimizer/optimizer_config.py``: "offload optimizer states tensor and compute to
  CPU", the fraction "of optimizer states to offload"; ``megatron/core/optimizer/__init__.py`` wraps
  a CPU Adam in ``HybridDeviceOptimizer``): that fraction of the optimizer state stays on the host
  the whole time, including during the step, which runs on the CPU.
- ``use_precision_aware_optimizer``: listed with the two above by Megatron's
  ``megatron/core/optimizer/cpu_offloading/README.md`` as the flags that enable CPU offload. It lets
  the main grads and Adam moments take lower dtypes, but the recipe passes it through
  ``override_optimizer_config`` and leaves ``main_grads_dtype``/``exp_avg_dtype``/``exp_avg_sq_dtype``
  at Megatron's fp32 defaults, so it changes no byte count here.

- Megatron-core's ``HybridDeviceOptimizer`` (``megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py``,
  ``_set_sub_optimizer_grads``) gives every parameter it steps on the CPU a host copy of its gradient, allocated
  once (``pin_memory=pin_cpu_grads``, default True) in the parameter's own dtype (fp32 main params here) and kept
  in ``cpu_copy_map_grad`` between steps: 4 B per optimizer-held parameter on the host, in both phases.
  ``memory_by_phase_without_grad_copy`` is the course's estimate before it counted that copy.

Byte counts per parameter as in ``parallel.estimate_train_memory_per_device`` (bf16 weights 2, fp32
main grads 4, fp32 master + Adam m + v 12); activations and other buffers are not modelled.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass, fields

from verlstudy.kit.params import got
from verlstudy.lessons.l07_grpo_recipe.parallel import ParallelLayout, estimate_train_memory_per_device

PHASES = ("train", "rollout")  # actor forward/backward/step; actor inactive while the engine generates
PLACES = ("device", "host")
STATE_BYTES, GRAD_COPY_BYTES = 12.0, 4.0  # per optimizer-held param: fp32 master + Adam m, v; its fp32 grad copy


@dataclass(frozen=True)
class OffloadSettings:
    """The actor's offload switches, named as in the recipe's ``offload`` section."""

    param_offload: bool = False
    optimizer_offload: bool = False
    optimizer_cpu_offload: bool = False
    optimizer_offload_fraction: float = 1.0
    use_precision_aware_optimizer: bool = False

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "optimizer_offload_fraction":
                if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 <= value <= 1.0:
                    raise ValueError(f"optimizer_offload_fraction must be a number in [0, 1], got {value!r}")
            elif not isinstance(value, bool):
                raise TypeError(f"{f.name} must be True or False, got {value!r}")

    @classmethod
    def from_recipe(cls, section: Mapping[str, object]) -> OffloadSettings:
        """Build from a recipe's ``offload`` section; keys the actor does not use (ref_*, ...) are ignored."""
        if not isinstance(section, Mapping):
            raise TypeError(f"section must be the recipe's offload mapping, got {type(section).__name__}")
        names = [f.name for f in fields(cls)]
        missing = [n for n in names if n not in section]
        if missing:
            raise ValueError(f"offload section lacks {', '.join(missing)}")
        return cls(**{n: section[n] for n in names})  # type: ignore[arg-type]

    @property
    def host_optimizer_fraction(self) -> float:
        """Share of the optimizer state that lives on the host even while training."""
        return float(self.optimizer_offload_fraction) if self.optimizer_cpu_offload else 0.0


NO_OFFLOAD = OffloadSettings()


def memory_by_phase_without_grad_copy(
    layout: ParallelLayout, dense_params: float, expert_params: float, offload: OffloadSettings
) -> dict[str, dict[str, dict[str, float]]]:
    """The course's estimate before it counted the CPU optimizer's pinned gradient copy (kept to show the fix
    as a change): as ``memory_by_phase``, with no gradient bytes on the host in either phase."""
    if not isinstance(offload, OffloadSettings):
        raise TypeError(f"offload must be an OffloadSettings, got {type(offload).__name__}")
    est = estimate_train_memory_per_device(layout, dense_params, expert_params)
    params = est["dense_params_per_device"] + est["expert_params_per_device"]
    weights, grads, optimizer = params * 2.0, params * 4.0, est["optimizer_bytes"]
    on_host = offload.host_optimizer_fraction
    idle_optimizer_host = 1.0 if offload.optimizer_offload else on_host
    out = {phase: {place: {"weights": 0.0, "grads": 0.0, "optimizer": 0.0} for place in PLACES} for phase in PHASES}
    out["train"]["device"].update(weights=weights, grads=grads, optimizer=optimizer * (1 - on_host))
    out["train"]["host"]["optimizer"] = optimizer * on_host
    out["rollout"]["device" if not offload.param_offload else "host"]["weights"] = weights
    out["rollout"]["device"]["grads"] = 0.0 if offload.param_offload else grads  # freed, not copied
    out["rollout"]["device"]["optimizer"] = optimizer * (1 - idle_optimizer_host)
    out["rollout"]["host"]["optimizer"] = optimizer * idle_optimizer_host
    return out


def memory_by_phase(
    layout: ParallelLayout, dense_params: float, expert_params: float, offload: OffloadSettings
) -> dict[str, dict[str, dict[str, float]]]:
    """Bytes per rank as {phase: {place: {"weights"|"grads"|"optimizer": bytes}}}.

    ``train``: weights and grads on the device (param_offload brings them back); the optimizer state
    split by ``host_optimizer_fraction``. ``rollout``: with param_offload the weights sit on the host
    and the grad buffer is freed; with optimizer_offload all optimizer state is on the host. The CPU
    optimizer's pinned fp32 copy of the gradients it steps (4 B per optimizer-held parameter, the same share
    as its state) stays on the host in both phases.
    """
    if not isinstance(offload, OffloadSettings):
        raise TypeError(f"offload must be an OffloadSettings, got {type(offload).__name__}")
    est = estimate_train_memory_per_device(layout, dense_params, expert_params)
    params = est["dense_params_per_device"] + est["expert_params_per_device"]
    weights, grads, optimizer = params * 2.0, params * 4.0, est["optimizer_bytes"]
    on_host = offload.host_optimizer_fraction
    idle_optimizer_host = 1.0 if offload.optimizer_offload else on_host
    out = {phase: {place: {"weights": 0.0, "grads": 0.0, "optimizer": 0.0} for place in PLACES} for phase in PHASES}
    out["train"]["device"].update(weights=weights, grads=grads, optimizer=optimizer * (1 - on_host))
    out["train"]["host"]["optimizer"] = optimizer * on_host
    host_grad_copy = optimizer / STATE_BYTES * GRAD_COPY_BYTES * on_host  # pinned, never freed
    for phase in PHASES:
        out[phase]["host"]["grads"] = host_grad_copy
    out["rollout"]["device" if not offload.param_offload else "host"]["weights"] = weights
    out["rollout"]["device"]["grads"] = 0.0 if offload.param_offload else grads  # freed, not copied
    out["rollout"]["device"]["optimizer"] = optimizer * (1 - idle_optimizer_host)
    out["rollout"]["host"]["optimizer"] = optimizer * idle_optimizer_host
    return out


def totals(by_phase: Mapping[str, Mapping[str, Mapping[str, float]]]) -> dict[str, float]:
    """Flatten memory_by_phase to {"train device": bytes, "train host": ..., "rollout device": ..., ...}."""
    shape = all(
        isinstance(by_phase, Mapping)
        and isinstance(by_phase.get(phase), Mapping)
        and isinstance(by_phase[phase].get(place), Mapping)
        for phase in PHASES
        for place in PLACES
    )
    if not shape:
        raise TypeError(
            f"argument by_phase must be memory_by_phase's {{phase: {{place: {{part: bytes}}}}}}, got {got(by_phase)}"
        )
    return {f"{phase} {place}": float(sum(by_phase[phase][place].values())) for phase in PHASES for place in PLACES}
