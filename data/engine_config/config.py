"""Engine configuration dataclasses, shaped like verl 0.9.0's verl/workers/config/engine.py.

Fixture for verlstudy lesson 09: the gradient-offload flag is still here, as before verl PR #7544.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RouterReplayConfig:
    # 'disabled', 'R2' or 'R3'
    mode: str = "disabled"
    record_file: str | None = None
    replay_file: str | None = None


@dataclass
class OptimConfig:
    lr: float = 1e-6
    weight_decay: float = 0.01
    betas: list[float] = field(default_factory=lambda: [0.9, 0.999])


@dataclass
class EngineConfig:
    # whether to offload param
    param_offload: bool = False
    # whether to offload optimizer
    optimizer_offload: bool = False
    # whether to offload grad
    grad_offload: bool = False
    # whether the engine is forward only (e.g., ref policy)
    forward_only: bool = False
    # model dtype
    dtype: str = "bfloat16"
    seed: int = 42
    router_replay: RouterReplayConfig = field(default_factory=RouterReplayConfig)


@dataclass
class McoreEngineConfig(EngineConfig):
    tensor_model_parallel_size: int = 1
    pipeline_model_parallel_size: int = 1
    sequence_parallel: bool = True
    strategy: str = "megatron"

    def __post_init__(self) -> None:
        if self.strategy != "megatron":
            raise ValueError(f"strategy must be 'megatron', got {self.strategy!r}")
        if self.dtype not in ("bfloat16", "float16"):
            raise ValueError(f"dtype {self.dtype!r} not supported; use 'bfloat16' or 'float16'")
        if self.router_replay.mode not in ("disabled", "R2", "R3"):
            raise ValueError(f"router_replay.mode {self.router_replay.mode!r} not in ('disabled', 'R2', 'R3')")
