"""A miniature MegatronEngine, shaped like verl 0.9.0's verl/workers/engine/megatron/transformer_impl.py.

Fixture for verlstudy lesson 09: `__init__` copies the gradient-offload flag into a private attribute
that nothing ever reads. Gradients live in an fp32 main-grad buffer per parameter (Megatron's default,
`grad_reduce_in_fp32`); when parameters are offloaded, that buffer is *freed* on the device, not copied, as
upstream's `offload_megatron_model_to_cpu` does (`grad_data.storage().resize_(0)` in
verl/utils/megatron_utils.py).
"""

from __future__ import annotations

import torch

from engine_config.config import McoreEngineConfig

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}


class MegatronEngine:
    def __init__(self, engine_config: McoreEngineConfig, hidden: int = 16) -> None:
        self.engine_config = engine_config
        torch.manual_seed(engine_config.seed)
        self.module = torch.nn.Linear(hidden, hidden, dtype=DTYPES[engine_config.dtype])
        self.model_parallel_size = engine_config.tensor_model_parallel_size * engine_config.pipeline_model_parallel_size
        self.replays_routes = engine_config.router_replay.mode != "disabled"
        self._use_sequence_parallel = engine_config.sequence_parallel

        self._is_offload_param = engine_config.param_offload
        self._is_offload_grad = engine_config.grad_offload
        self._is_offload_optimizer = engine_config.optimizer_offload

        # a forward-only engine (the reference policy) keeps no optimizer state
        self.optimizer_state: dict[str, torch.Tensor] = {}
        if not engine_config.forward_only:
            self.optimizer_state = {name: torch.zeros_like(p) for name, p in self.module.named_parameters()}

    def train_step(self, batch: torch.Tensor) -> float:
        """One backward pass; each parameter's gradient is accumulated into its fp32 main-grad buffer."""
        if self._use_sequence_parallel and batch.shape[0] % self.model_parallel_size:
            raise ValueError("sequence length must divide by the model-parallel size")
        loss = self.module(batch.to(self.module.weight.dtype)).float().pow(2).mean()
        loss.backward()
        self.main_grads = {name: p.grad.float() for name, p in self.module.named_parameters()}
        for p in self.module.parameters():
            p.grad = None
        return float(loss.detach())

    def offload(self, device: str = "cpu") -> dict[str, int]:
        """Offload what the config says; return the device bytes released per kind (model and optimizer are
        copied to `device`; the gradient buffers are freed, their contents dropped)."""
        moved = {"model": 0, "grad": 0, "optimizer": 0}
        for p in self.module.parameters():
            if self._is_offload_param:
                p.data = p.data.to(device)
                moved["model"] += p.numel() * p.element_size()
        if self._is_offload_param:  # the gradient buffers are released with the parameters, not copied
            for grad in getattr(self, "main_grads", {}).values():
                moved["grad"] += grad.untyped_storage().nbytes()
                grad.untyped_storage().resize_(0)
        if self._is_offload_optimizer:
            for name, state in self.optimizer_state.items():
                self.optimizer_state[name] = state.to(device)
                moved["optimizer"] += state.numel() * state.element_size()
        return moved
