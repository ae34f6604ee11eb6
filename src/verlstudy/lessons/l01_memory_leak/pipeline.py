"""A toy pipeline-parallel schedule that keeps the structure behind verl #7874's memory leak.

What is kept from Megatron + verl (names follow upstream so stack traces read the same):

- `create_tensor_recv_prev`: every micro-batch, a stage > 0 receives its input into a *fresh*
  buffer allocated with `requires_grad=True` (megatron/core/pipeline_parallel/p2p_communication.py);
- the last stage's `loss_func` returns `(loss, {"model_output": {"log_probs": ...}})`, with per-token
  log-probs (S values) in a dict like verl's `model_output`, and the schedule appends that dict to
  `forward_data_store` once per micro-batch; the store is consumed only after the whole mini-batch
  (megatron/core/pipeline_parallel/schedules.py, verl/workers/engine/utils.py::postprocess_batch_func);
- `entropy="stored"` also puts per-token entropy into `model_output` (the formula of verl's
  `verl/utils/torch_functional.py::entropy_from_logits`) without the loss reading it, the case verl
  #7166 describes; `entropy="in_loss"` adds `0.0 * entropy` to the loss, the shape of verl 0.9.1's
  `verl/workers/utils/losses.py::ppo_loss` (`policy_loss -= entropy_coeff * entropy_loss`);
- backward runs on the separately returned live loss, then sends the receive buffer's gradient back;
- `forward_only` runs under `torch.no_grad()`, as verl's `infer_batch` does (verl/workers/engine/base.py);
- `detach_outputs=True` is the fix: the stored dict goes through `verlstudy.common.trees.detach_tree`.

If `model_output` still has a `grad_fn`, it pins the micro-batch's graph; after backward the graph's
saved activations are freed, but its leaves are not: the receive buffer and its `.grad` stay alive
as long as the stored output does. `run_pipeline` runs the stages one after another in one process.

The rest of the lesson builds on this module:

- `gloo_ranks`: the same stages as real gloo ranks (a stage per rank, 1F1B order, send/recv);
- `store`: what the stored outputs hold (their graph's leaves) and the end-of-mini-batch merge;
- `measure`: bytes retained per micro-batch, the control runs, the residency guard, and the
  leak written in the CUDA memory snapshot format.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

import torch
from torch import nn
from torch.autograd import Variable

from verlstudy.common.memtrace import AllocationTracker, bytes_per_step
from verlstudy.common.trees import detach_tree
from verlstudy.lessons.l01_memory_leak.store import Detach, store_for

DTYPES: dict[str, torch.dtype] = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
PLANTED_LEAKS: tuple[str, ...] = ("activation_log", "score_cache")
ENTROPY_MODES: tuple[str, ...] = ("stored", "in_loss")  # None: no entropy is computed


@dataclass(frozen=True)
class PipelineConfig:
    """Sizes of the toy pipeline: S tokens per micro-batch, hidden H, vocabulary, depth, stages."""

    seq_len: int = 64
    hidden: int = 32
    vocab: int = 48
    layers_per_stage: int = 1
    pp_size: int = 2
    dtype: str = "float32"
    device: str = "cpu"

    def __post_init__(self) -> None:
        for name, lo, hi in (
            ("seq_len", 1, 1 << 16),
            ("hidden", 1, 1 << 14),
            ("vocab", 2, 1 << 17),
            ("layers_per_stage", 1, 64),
            ("pp_size", 1, 8),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise TypeError(f"PipelineConfig.{name} must be an int, got {type(value).__name__} {value!r}")
            if not lo <= value <= hi:
                raise ValueError(f"PipelineConfig.{name}={value} is out of range; allowed {lo}..{hi}")
        if self.dtype not in DTYPES:
            raise ValueError(f"PipelineConfig.dtype={self.dtype!r} is not allowed; choose one of {tuple(DTYPES)}")
        if not isinstance(self.device, str) or not re.fullmatch(r"cpu|cuda(:\d+)?", self.device):
            raise ValueError(f"PipelineConfig.device must be 'cpu' or 'cuda', got {self.device!r}")

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    @property
    def itemsize(self) -> int:
        """Bytes per element of `dtype` (4 for float32, 2 for bfloat16)."""
        return torch.empty((), dtype=self.torch_dtype).element_size()


class Layer(nn.Module):
    """A residual MLP block, h + tanh(W h): enough depth to have saved activations."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + torch.tanh(self.proj(h))


class ToyPipelineModel(nn.Module):
    """Embedding -> `pp_size` stages of `layers_per_stage` layers -> LM head, split by stage."""

    def __init__(self, config: PipelineConfig, seed: int = 0) -> None:
        super().__init__()
        if not isinstance(config, PipelineConfig):
            raise TypeError(f"config must be a PipelineConfig, got {type(config).__name__}")
        self.config = config
        gen_state = torch.random.get_rng_state()
        torch.manual_seed(seed)  # every rank builds identical weights from the same seed
        self.embed = nn.Embedding(config.vocab, config.hidden)
        self.stages = nn.ModuleList(
            nn.Sequential(*(Layer(config.hidden) for _ in range(config.layers_per_stage)))
            for _ in range(config.pp_size)
        )
        self.head = nn.Linear(config.hidden, config.vocab, bias=False)
        torch.random.set_rng_state(gen_state)
        self.to(device=config.device, dtype=config.torch_dtype)


def make_micro_batches(config: PipelineConfig, num_micro_batches: int, seed: int = 0) -> list[torch.Tensor]:
    """`num_micro_batches` token sequences of length S+1 (inputs and next-token labels)."""
    if isinstance(num_micro_batches, bool) or not isinstance(num_micro_batches, int) or num_micro_batches < 1:
        raise ValueError(f"num_micro_batches must be an int >= 1, got {num_micro_batches!r}")
    gen = torch.Generator().manual_seed(seed)
    return [
        torch.randint(0, config.vocab, (config.seq_len + 1,), generator=gen).to(config.device)
        for _ in range(num_micro_batches)
    ]


# -- the pieces, named as upstream names them --------------------------------------------------


def create_tensor_recv_prev(shape: Sequence[int], dtype: torch.dtype, device: torch.device | str) -> torch.Tensor:
    """A fresh receive buffer for the previous stage's activations, as Megatron allocates it."""
    return torch.empty(tuple(shape), dtype=dtype, device=device, requires_grad=True)


def stage_forward(
    model: ToyPipelineModel, stage: int, h: torch.Tensor, planted_leak: str | None = None
) -> torch.Tensor:
    """Run one stage's layers (and the embedding on stage 0, given token ids)."""
    if stage == 0:
        h = model.embed(h)
    for layer in model.stages[stage]:
        h = layer(h)
        if planted_leak == "activation_log":
            record_activation_stats(h)
    return h


_ACTIVATION_LOG: list[torch.Tensor] = []
_SCORE_CACHE: list[torch.Tensor] = []


def record_activation_stats(h: torch.Tensor) -> None:
    """A planted leak (for exercise 1.2): a "debug log" that keeps every activation it is shown."""
    _ACTIVATION_LOG.append(h.detach().clone())


def cache_scores(logits: torch.Tensor) -> None:
    """A second planted leak: a "score cache" that keeps every micro-batch's logits."""
    _SCORE_CACHE.append(logits.detach().clone())


def clear_planted_leaks() -> None:
    """Drop what the planted leaks hold (the tests and the notebook call it between runs)."""
    _ACTIVATION_LOG.clear()
    _SCORE_CACHE.clear()


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Per-token entropy, logsumexp(z) - sum(softmax(z) * z): the formula of verl's entropy_from_logits.

    Autograd saves the softmax and the logits (S x V each) and the logsumexp (S) for backward.
    """
    pd = torch.softmax(logits, dim=-1)
    return torch.logsumexp(logits, dim=-1) - torch.sum(pd * logits, dim=-1)


def loss_func(
    logits: torch.Tensor, labels: torch.Tensor, entropy: str | None = None
) -> tuple[torch.Tensor, dict[str, Any]]:
    """Mean next-token NLL, and `model_output` = {"log_probs": S values[, "entropy": S values]}."""
    log_probs = torch.log_softmax(logits, dim=-1).gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    loss = -log_probs.mean()
    model_output = {"log_probs": log_probs}
    if entropy is not None:
        model_output["entropy"] = entropy_from_logits(logits)
        if entropy == "in_loss":  # entropy_coeff = 0.0: the value is unchanged, backward still visits it
            loss = loss - 0.0 * model_output["entropy"].mean()
    return loss, {"model_output": model_output}


def last_stage_step(
    model: ToyPipelineModel,
    h: torch.Tensor,
    labels: torch.Tensor,
    planted_leak: str | None = None,
    entropy: str | None = None,
) -> tuple[torch.Tensor, dict[str, Any]]:
    """The last stage's layers, the LM head and `loss_func`."""
    h = stage_forward(model, model.config.pp_size - 1, h, planted_leak)
    logits = model.head(h)
    if planted_leak == "score_cache":
        cache_scores(logits)
    return loss_func(logits, labels, entropy)


def backward_step(output_tensor: torch.Tensor, output_tensor_grad: torch.Tensor | None) -> None:
    """Backward from a stage's output: the loss on the last stage, else with the received gradient."""
    if output_tensor_grad is None:
        torch.autograd.backward(output_tensor)  # the last stage: a scalar loss
        return
    if output_tensor_grad.shape != output_tensor.shape:
        raise ValueError(
            f"output_tensor_grad has shape {tuple(output_tensor_grad.shape)}, "
            f"expected the output's shape {tuple(output_tensor.shape)}"
        )
    # Same as torch.autograd.backward(output_tensor, grad_tensors=output_tensor_grad), whose argument
    # check imports sympy on first use (seconds per process): call the autograd engine directly.
    Variable._execution_engine.run_backward(
        (output_tensor,), (output_tensor_grad,), False, False, (), allow_unreachable=True, accumulate_grad=True
    )


def p2p_copy(t: torch.Tensor) -> torch.Tensor:
    """In one process, "sending" a tensor to the next stage is a copy into a fresh buffer."""
    with torch.no_grad():
        return t.detach().clone()


# -- the single-process schedule ---------------------------------------------------------------


@dataclass
class PipelineRun:
    """What `run_pipeline` leaves behind: the store (still alive), losses, samples and grads."""

    forward_data_store: list[Any]
    losses: list[float]
    live_bytes: list[int]  # tracker's live bytes after each micro-batch
    marks: list[int]  # tracker mark at the start of each micro-batch
    grads: dict[str, torch.Tensor] = field(default_factory=dict)

    @property
    def slope(self) -> float:
        """Bytes retained per micro-batch: least-squares slope of `live_bytes`."""
        if len(self.live_bytes) < 2:
            raise ValueError("slope needs a run with a tracker and at least 2 micro-batches")
        return bytes_per_step(self.live_bytes)


@dataclass(frozen=True)
class StepOptions:
    """How each micro-batch runs: forward only, the fix (and which detach), a planted leak, entropy."""

    forward_only: bool = False
    detach_outputs: bool = False
    planted_leak: str | None = None
    entropy: str | None = None
    detach_fn: Detach = detach_tree

    def __post_init__(self) -> None:
        if self.planted_leak is not None and self.planted_leak not in PLANTED_LEAKS:
            raise ValueError(f"planted_leak must be None or one of {PLANTED_LEAKS}, got {self.planted_leak!r}")
        if self.entropy is not None and self.entropy not in ENTROPY_MODES:
            raise ValueError(f"entropy must be None or one of {ENTROPY_MODES}, got {self.entropy!r}")
        if not callable(self.detach_fn):
            raise TypeError(f"detach_fn must be a function like detach_tree, got {type(self.detach_fn).__name__}")


def _run_micro_batch(model: ToyPipelineModel, tokens: torch.Tensor, store: list[Any], opts: StepOptions) -> float:
    cfg = model.config
    inputs, labels = tokens[:-1], tokens[1:]
    # Forward through every stage; a stage > 0 reads its input from a fresh receive buffer.
    stage_outputs: list[torch.Tensor] = []
    recv_buffers: list[torch.Tensor] = []
    h = inputs
    for stage in range(cfg.pp_size - 1):
        h = stage_forward(model, stage, h, opts.planted_leak)
        stage_outputs.append(h)
        recv = create_tensor_recv_prev((cfg.seq_len, cfg.hidden), cfg.torch_dtype, cfg.device)
        with torch.no_grad():  # the p2p receive writes into the buffer outside autograd
            recv.copy_(h)
        recv_buffers.append(recv)
        h = recv
    loss, output = last_stage_step(model, h, labels, opts.planted_leak, opts.entropy)
    store_for(opts.detach_outputs)(store, output, opts.detach_fn)
    if not opts.forward_only:
        backward_step(loss, None)
        for stage in range(cfg.pp_size - 2, -1, -1):
            # The next stage sends back the gradient of its receive buffer.
            backward_step(stage_outputs[stage], p2p_copy(recv_buffers[stage].grad))  # type: ignore[arg-type]
    return float(loss.detach())


def run_pipeline(
    config: PipelineConfig,
    num_micro_batches: int,
    *,
    forward_only: bool = False,
    detach_outputs: bool = False,
    planted_leak: str | None = None,
    entropy: str | None = None,
    detach_fn: Detach = detach_tree,
    tracker: AllocationTracker | None = None,
    seed: int = 0,
    model: ToyPipelineModel | None = None,
) -> PipelineRun:
    """Run one mini-batch of `num_micro_batches` through all stages in this process.

    With a tracker, records its live bytes after every micro-batch (and a mark before each).
    The returned run keeps `forward_data_store` alive, as the engine does until the mini-batch ends.
    `entropy` is None, "stored" or "in_loss" (see `loss_func`); `detach_fn` is used when `detach_outputs`.
    """
    if not isinstance(config, PipelineConfig):
        raise TypeError(f"config must be a PipelineConfig, got {type(config).__name__}")
    opts = StepOptions(forward_only, detach_outputs, planted_leak, entropy, detach_fn)
    if tracker is not None and not isinstance(tracker, AllocationTracker):
        raise TypeError(f"tracker must be an AllocationTracker or None, got {type(tracker).__name__}")
    model = model if model is not None else ToyPipelineModel(config, seed)
    batches = make_micro_batches(config, num_micro_batches, seed + 1)
    run = PipelineRun([], [], [], [])
    grad_mode = torch.no_grad() if forward_only else nullcontext()
    with tracker if tracker is not None else nullcontext(), grad_mode:
        for tokens in batches:
            run.marks.append(tracker.mark() if tracker is not None else 0)
            run.losses.append(_run_micro_batch(model, tokens, run.forward_data_store, opts))
            if tracker is not None:
                run.live_bytes.append(tracker.live_bytes())
    run.grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    return run


def _check_config(config: object) -> None:
    """The door of the helpers below (defined here: the notebook's stored outputs name lines above this one)."""
    if not isinstance(config, PipelineConfig):
        got = f"{type(config).__name__} {config!r:.60}"
        raise TypeError(f"argument config must be a PipelineConfig (e.g. PipelineConfig(pp_size=2)), got {got}")


def predicted_leak_bytes(config: PipelineConfig, entropy: str | None = None) -> dict[str, int]:
    """What one leaking micro-batch keeps alive on the last stage, by name (bytes).

    With `entropy="stored"` the loss never reads the entropy, so backward never visits its graph and
    the tensors that graph saved (logits and softmax, S x V each) stay too; with "in_loss" only the
    entropy itself (S values) is added.
    """
    _check_config(config)
    StepOptions(entropy=entropy)  # validates the mode
    s, h, v, isz = config.seq_len, config.hidden, config.vocab, config.itemsize
    parts = {} if config.pp_size == 1 else {_BUFFER: s * h * isz, _GRAD: s * h * isz}
    parts[_LOG_PROBS] = s * isz
    if entropy == "stored":
        parts |= {_LOGITS: s * v * isz, _SOFTMAX: s * v * isz, _ENTROPY_SAVED: 2 * s * isz}
    elif entropy == "in_loss":
        parts[_ENTROPY] = s * isz
    return parts


_BUFFER = "receive buffer (create_tensor_recv_prev)"
_GRAD = "its gradient (backward_step)"
_LOG_PROBS = "model_output (per-token log-probs)"
_LOGITS = "logits, saved by the unvisited entropy graph (S x V)"
_SOFTMAX = "softmax, saved by the unvisited entropy graph (S x V)"
_ENTROPY_SAVED = "stored entropy + its saved logsumexp (2 x S)"
_ENTROPY = "model_output entropy (per token)"
# Which function the tracker names for each part of `predicted_leak_bytes`.
LEAK_PART_SITES: dict[str, str] = {
    _BUFFER: "create_tensor_recv_prev",
    _GRAD: "backward_step",
    _LOG_PROBS: "loss_func",
    _LOGITS: "last_stage_step",
    _SOFTMAX: "entropy_from_logits",
    _ENTROPY_SAVED: "entropy_from_logits",
    _ENTROPY: "entropy_from_logits",
}


def predicted_leak_sites(config: PipelineConfig, entropy: str | None = None) -> dict[str, int]:
    """`predicted_leak_bytes` summed by the function the tracker should name for each part."""
    sites: dict[str, int] = {}
    for part, nbytes in predicted_leak_bytes(config, entropy).items():
        sites[LEAK_PART_SITES[part]] = sites.get(LEAK_PART_SITES[part], 0) + nbytes
    return sites


def config_with(config: PipelineConfig, **changes: Any) -> PipelineConfig:
    """A copy of `config` with some fields changed (validated again)."""
    _check_config(config)
    return replace(config, **changes)


class MicroBatchRunner:
    """Runs one more micro-batch of a pipeline (with the fix applied) each time it is called.

    The store and any planted leak persist between calls, as in a mini-batch; exercise 1.2 gets one.
    """

    def __init__(self, config: PipelineConfig, planted_leak: str | None, seed: int = 0) -> None:
        self.model = ToyPipelineModel(config, seed)
        self.planted_leak = planted_leak
        self.store: list[Any] = []
        self._batches = make_micro_batches(config, 8, seed + 1)
        self._next = 0

    def __call__(self) -> None:
        tokens = self._batches[self._next % len(self._batches)]
        self._next += 1
        opts = StepOptions(detach_outputs=True, planted_leak=self.planted_leak)
        _run_micro_batch(self.model, tokens, self.store, opts)
