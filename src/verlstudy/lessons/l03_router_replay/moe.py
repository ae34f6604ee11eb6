"""One router's replay state and a toy top-k MoE that runs on a CPU (lesson 03, verl PR #7805).

Routing replay records which experts every token went to during one forward and forces the same
experts in a later forward. In verl, R2 records during the old-logprob pass (forward_only) and
replays in the policy update; R3 records at rollout in the inference engine. Facts were checked
against verl 0.9.1 (`verl/utils/megatron/router_replay_patch.py`); the code here is written for
this course:

- `RouterReplay`: one router's replay state and the actions RECORD, REPLAY_FORWARD and
  REPLAY_BACKWARD (a FIFO, so activation-recompute re-forwards pop their own micro-batch's routes),
  with an optional replay mask (replayed where set, native elsewhere), registered in the
  process-global `ROUTER_REGISTRY` as upstream's `RouterReplay.router_instances`;
- `TopKRouter`, `MoELayer`, `DenseLayer`, `TinyMoE`: linear -> softmax -> top-k, experts, a decoder of
  layers (optionally dense ones between MoE layers, and an MTP sibling beside the decoder);
- `sgd_step`: the one policy update of the lesson's experiments.

`RouterReplay` and `TopKRouter` also answer to upstream's attribute names (`router_replay`,
`recorded_topk_idx`, `router_replay_action`, `set_target_indices`, `set_router_replay_action`), so the
lesson can run verl's own `merge_router_topk_indices` and `set_router_replay_data` on the toy model.
"""

from __future__ import annotations

import numbers
from collections import deque
from collections.abc import Sequence
from enum import Enum

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from verlstudy.kit.params import positive_int

__all__ = [
    "ROUTER_REGISTRY",
    "ROUTE_DTYPE",
    "DenseLayer",
    "MoELayer",
    "ReplayAction",
    "RouterReplay",
    "TinyMoE",
    "TopKRouter",
    "sgd_step",
]

ROUTE_DTYPE = torch.int16  # verl stores routes as int16: expert ids fit, and the map stays small


class ReplayAction(Enum):
    """What a router does with its top-k choice on the next forward."""

    RECORD = "record"
    REPLAY_FORWARD = "replay_forward"
    REPLAY_BACKWARD = "replay_backward"


# ---------------------------------------------------------------------------------------------
# One router's replay state
# ---------------------------------------------------------------------------------------------

# Process-global, like upstream's `RouterReplay.router_instances`: every replay-enabled router built
# in this process appends itself here, whichever model it belongs to. Upstream empties its registry only
# in `apply_router_replay_patch`, which the engine calls when it is built with replay on; the course
# never empties this one.
ROUTER_REGISTRY: list[RouterReplay] = []


class RouterReplay:
    """Replay state of one router: what it recorded, what it must replay, and its current action.

    `select(scores, topk)` returns the expert indices the router uses:
    RECORD -> native top-k, remembered in `recorded`; REPLAY_FORWARD -> the target routes;
    REPLAY_BACKWARD -> the oldest queued target (FIFO: every `set_target` also queues its routes, so
    each activation-recompute re-forward, run later in backward, pops its own micro-batch's routes);
    no action -> native top-k. With a replay mask, replayed rows are taken where the mask is True and
    native ones elsewhere. Replaying without routes is an error, never a silent native fallback.
    """

    def __init__(self, layer_number: int, registry: list[RouterReplay] | None = None) -> None:
        self.layer_number = positive_int("layer_number", layer_number)
        self.action: ReplayAction | None = None
        self.recorded: torch.Tensor | None = None
        self.target: torch.Tensor | None = None
        self.target_mask: torch.Tensor | None = None
        self.backward_queue: deque[tuple[torch.Tensor, torch.Tensor | None]] = deque()
        (ROUTER_REGISTRY if registry is None else registry).append(self)

    def __repr__(self) -> str:
        action = self.action.value if self.action else None
        return f"RouterReplay(layer_number={self.layer_number}, action={action})"

    def set_action(self, action: ReplayAction | None) -> None:
        if action is not None and not isinstance(action, ReplayAction):
            raise TypeError(f"action must be a ReplayAction or None, got {type(action).__name__} {action!r}")
        self.action = action

    def set_target(self, indices: torch.Tensor, mask: torch.Tensor | None = None) -> None:
        """Routes to replay: `indices` (tokens, topk) integer; `mask` (tokens,) bool, True = replay."""
        if not isinstance(indices, torch.Tensor) or indices.dim() != 2 or indices.is_floating_point():
            raise TypeError(f"layer {self.layer_number}: target routes must be an integer tensor (tokens, topk)")
        if mask is not None and (
            not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.shape != indices.shape[:1]
        ):
            raise TypeError(
                f"layer {self.layer_number}: replay mask must be a bool tensor of shape ({indices.shape[0]},)"
            )
        self.target = indices.to(torch.int64)
        self.target_mask = mask
        self.backward_queue.append((self.target, mask))

    # upstream's names (verl/utils/megatron/router_replay_patch.py::RouterReplay), read by verl's own functions
    @property
    def recorded_topk_idx(self) -> torch.Tensor | None:
        return self.recorded

    @property
    def router_replay_action(self) -> ReplayAction | None:
        return self.action

    def set_router_replay_action(self, action: ReplayAction | None) -> None:
        self.set_action(action)

    def set_target_indices(self, topk_indices: torch.Tensor, replay_mask: torch.Tensor | None = None) -> None:
        self.set_target(topk_indices, replay_mask)

    def clear(self) -> None:
        """Forget recorded and target routes and the action (verl clears them at the end of every
        `forward_backward_batch` with replay on: after each log-prob pass and each mini-batch update)."""
        self.action = None
        self.recorded = None
        self.target = None
        self.target_mask = None
        self.backward_queue.clear()

    def select(self, scores: torch.Tensor, topk: int) -> torch.Tensor:
        """Expert indices (tokens, topk) for `scores` (tokens, experts) under the current action."""
        native = torch.topk(scores, k=topk, dim=1).indices
        if self.action is None:
            return native
        if self.action is ReplayAction.RECORD:
            self.recorded = native.detach().to(ROUTE_DTYPE)
            return native
        if self.action is ReplayAction.REPLAY_FORWARD:
            if self.target is None:
                raise RuntimeError(f"layer {self.layer_number}: REPLAY_FORWARD but no target routes were set")
            wanted, mask = self.target, self.target_mask
        else:
            if not self.backward_queue:
                raise RuntimeError(
                    f"layer {self.layer_number}: REPLAY_BACKWARD but the FIFO is empty "
                    "(more recompute re-forwards than replayed forwards)"
                )
            wanted, mask = self.backward_queue.popleft()
        if wanted.shape != native.shape:
            raise RuntimeError(
                f"layer {self.layer_number}: replay routes are not aligned with this forward: "
                f"targets {tuple(wanted.shape)}, scores {tuple(scores.shape)} with topk={topk}"
            )
        if mask is None:
            return wanted
        return torch.where(mask.unsqueeze(-1), wanted, native)


# ---------------------------------------------------------------------------------------------
# A toy MoE: linear -> softmax -> top-k router, dense experts, layers numbered from 1
# ---------------------------------------------------------------------------------------------


class TopKRouter(nn.Module):
    """linear -> softmax -> top-k over `num_experts`; with `replay`, a RouterReplay picks the indices."""

    def __init__(
        self, hidden: int, num_experts: int, topk: int, layer_number: int, replay: RouterReplay | None = None
    ) -> None:
        super().__init__()
        self.topk = positive_int("topk", topk)
        num_experts = positive_int("num_experts", num_experts)
        if self.topk > num_experts:
            raise ValueError(f"topk={topk} must not exceed num_experts={num_experts}")
        self.layer_number = positive_int("layer_number", layer_number)
        self.linear = nn.Linear(positive_int("hidden", hidden), num_experts, bias=False)
        self.replay = replay
        self.last_indices: torch.Tensor | None = None  # what the latest forward used, for inspection

    @property
    def router_replay(self) -> RouterReplay | None:
        """upstream's name for the patched router's replay state (verl's iter_model_routers reads it)."""
        return self.replay

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        scores = torch.softmax(self.linear(x), dim=-1)
        if self.replay is None:
            indices = torch.topk(scores.detach(), k=self.topk, dim=1).indices
        else:
            indices = self.replay.select(scores.detach(), self.topk)
        self.last_indices = indices.detach()
        return scores.gather(1, indices), indices


class MoELayer(nn.Module):
    """x + sum over the chosen experts of gate * (x @ W_expert); every expert is a (hidden, hidden) map."""

    def __init__(
        self, hidden: int, num_experts: int, topk: int, layer_number: int, replay: RouterReplay | None = None
    ) -> None:
        super().__init__()
        self.router = TopKRouter(hidden, num_experts, topk, layer_number, replay)
        self.experts = nn.Parameter(torch.randn(num_experts, hidden, hidden) / hidden**0.5)

    @property
    def layer_number(self) -> int:
        return self.router.layer_number

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gates, indices = self.router(x)
        every_expert = torch.einsum("th,ehg->teg", x, self.experts)  # tiny sizes: compute all, gather k
        chosen = every_expert.gather(1, indices.unsqueeze(-1).expand(-1, -1, x.shape[-1]))
        return x + (gates.unsqueeze(-1) * chosen).sum(dim=1)


class DenseLayer(nn.Module):
    """x + x @ W: a decoder layer without a router, anywhere a per-layer `moe_layer_freq` list puts a 0.

    (DeepSeek-V3's dense layers are its first k, `first_k_dense_replace`; the toy also allows one between
    MoE layers.)
    """

    def __init__(self, hidden: int, layer_number: int) -> None:
        super().__init__()
        self.layer_number = positive_int("layer_number", layer_number)
        self.weight = nn.Parameter(torch.randn(hidden, hidden) / hidden**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + x @ self.weight


class TinyMoE(nn.Module):
    """Embedding -> decoder layers in layer-number order -> vocabulary head, small enough for a CPU.

    `layer_numbers` is the order the decoder's layers are *registered* (built) in, which is the order a
    module walk meets their routers; forward always runs them by layer number. The default is
    1..num_layers; a shuffled order reproduces routers met out of order. `dense_layers` names layers
    that have no router (a dense MLP), as `moe_layer_freq` makes them in Megatron. `mtp_layers` adds
    an MTP sibling beside `decoder` (as Megatron's GPTModel has `mtp` beside `decoder`) whose MoE
    layers restart their numbering at 1; it runs after the decoder and its output is not used.
    `enable_replay=False` is an ordinary job (no RouterReplay anywhere, as verl without the replay
    patch); `registry` defaults to the process-global ROUTER_REGISTRY. `checkpoint_layers` recomputes
    each decoder layer in backward.
    """

    def __init__(
        self,
        *,
        vocab: int = 16,
        hidden: int = 8,
        num_experts: int = 4,
        topk: int = 2,
        layer_numbers: Sequence[int] = (1, 2, 3),
        dense_layers: Sequence[int] = (),
        mtp_layers: int = 0,
        enable_replay: bool = True,
        registry: list[RouterReplay] | None = None,
        checkpoint_layers: bool = False,
    ) -> None:
        super().__init__()
        numbers_ = list(layer_numbers)
        if not numbers_ or len(set(numbers_)) != len(numbers_):
            raise ValueError(f"layer_numbers must be distinct and non-empty, got {list(layer_numbers)}")
        dense = set(dense_layers)
        if not dense <= set(numbers_) or dense == set(numbers_):
            raise ValueError(f"dense_layers {sorted(dense)} must be some, not all, of layer_numbers {numbers_}")
        if isinstance(mtp_layers, bool) or not isinstance(mtp_layers, int) or mtp_layers < 0:
            raise ValueError(f"mtp_layers must be an int >= 0, got {mtp_layers!r}")

        def moe(n: int) -> MoELayer:
            return MoELayer(hidden, num_experts, topk, n, RouterReplay(n, registry) if enable_replay else None)

        self.embed = nn.Embedding(positive_int("vocab", vocab), hidden)
        self.decoder = nn.ModuleList(DenseLayer(hidden, n) if n in dense else moe(n) for n in numbers_)
        self.head = nn.Linear(hidden, vocab)
        self.mtp = nn.ModuleList(moe(n) for n in range(1, mtp_layers + 1))  # numbering restarts at 1
        self.num_layers = len(numbers_)  # decoder layers, dense ones included (Megatron's num_layers)
        self.checkpoint_layers = bool(checkpoint_layers)

    @property
    def layers(self) -> nn.ModuleList:
        """The decoder's layers in registration order."""
        return self.decoder

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if not isinstance(tokens, torch.Tensor) or tokens.dim() != 1 or tokens.is_floating_point():
            raise TypeError("tokens must be a 1-D integer tensor of token ids")
        x = self.embed(tokens)
        for layer in sorted(self.decoder, key=lambda m: m.layer_number):
            x = checkpoint(layer, x, use_reentrant=False) if self.checkpoint_layers else layer(x)
        mtp = x
        for layer in self.mtp:  # routes natively unless something arms its routers
            mtp = layer(mtp)
        return self.head(x)


def sgd_step(model: nn.Module, lr: float) -> None:
    """One plain SGD update `p -= lr * p.grad` on every parameter that has a gradient, then zero them.

    (Written out rather than torch.optim.SGD: its first construction imports torch._dynamo, seconds
    of a notebook's budget for one line of arithmetic.)
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if isinstance(lr, bool) or not isinstance(lr, numbers.Real) or not lr > 0:
        raise ValueError(f"lr must be a positive number, got {lr!r}")
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p -= float(lr) * p.grad
                p.grad = None
