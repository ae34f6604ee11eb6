"""The `requires_grad` contract that guards where `detach_tree` is called, and the placement trap (lesson 02).

`detach_tree` follows upstream's `verl/workers/engine/utils.py::detach_tree` (verl PR #7874, checked
against verl 0.9.1); the code here is written for this course:

- a tensor is detached only if it requires grad; otherwise the *same object* comes back, so a tree of
  already-detached leaves costs no new tensor (no throwaway TensorImpl per key per micro-batch);
- dict -> a new plain ``dict`` (dict subclasses such as OrderedDict come back as ``dict``, as upstream);
- list / tuple -> the same type, rebuilt recursively;
- namedtuple -> the same namedtuple, rebuilt field by field. This is a deliberate difference from
  upstream, whose ``type(obj)(generator)`` raises TypeError for a namedtuple of two or more fields and
  silently stores the generator object in a one-field namedtuple;
- anything else (ints, strings, None, numpy arrays, ...) is returned unchanged;
- the input is never mutated; jagged nested tensors (``layout=torch.jagged``) are tensors and are
  detached whole, keeping their offsets.

Cyclic containers are not supported (as upstream): they recurse until RecursionError.
"""

from __future__ import annotations

import copy
import gc
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from verlstudy.common.memtrace import bytes_per_step
from verlstudy.common.trees import check_name, detach_tree, grad_attached_paths
from verlstudy.kit.params import check_int, got


class ContractError(AssertionError):
    """A `requires_grad` contract of a training step does not hold; the message names the path."""


def assert_detached(obj: object, name: str) -> None:
    """Contract for stored outputs: no tensor leaf may require grad (it would pin the autograd graph)."""
    paths = grad_attached_paths(obj, check_name(name))
    if paths:
        shown = ", ".join(paths[:5]) + (f" (and {len(paths) - 5} more)" if len(paths) > 5 else "")
        raise ContractError(
            f"{name} must hold no grad-attached tensors, but {shown} still require grad: "
            "wrap the stored value in detach_tree(...)"
        )


def assert_requires_grad(t: object, name: str) -> None:
    """Contract for the returned loss: it must be a tensor that requires grad, else backward is a no-op."""
    check_name(name)
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if not t.requires_grad:
        raise ContractError(
            f"{name} does not require grad: it was built from detached inputs, so backward cannot reach "
            "the parameters (was something detached before the loss?)"
        )


def assert_nonzero_grad(params: Iterable[tuple[str, Any]], name: str = "model") -> None:
    """Contract after backward: every named trainable parameter has a gradient that is not all zeros.

    `params` is an iterable of (name, parameter) pairs such as ``model.named_parameters()``; frozen
    parameters (requires_grad=False) are skipped. A missing or all-zero gradient names the parameter.
    """
    check_name(name)
    if isinstance(params, str | torch.Tensor) or not isinstance(params, Iterable):
        raise TypeError(
            f"argument params must be (name, parameter) pairs like model.named_parameters(), got {got(params)}"
        )
    pairs = list(params)
    for i, pair in enumerate(pairs):
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise TypeError(f"argument params[{i}] must be a (name, parameter) pair, got {got(pair)}")
    if not pairs:
        raise ValueError("params must hold at least one (name, parameter) pair, e.g. model.named_parameters()")
    for pname, p in pairs:
        if not isinstance(p, torch.Tensor):
            raise TypeError(f"parameter {pname!r} must be a torch.Tensor, got {type(p).__name__}")
        if not p.requires_grad:
            continue
        if p.grad is None:
            raise ContractError(f"{name}.{pname} has no gradient after backward: it is not connected to the loss")
        if not bool(p.grad.ne(0).any()):
            raise ContractError(
                f"{name}.{pname} has an all-zero gradient after backward: its loss term was cut from the graph "
                "(a detach placed before the loss?)"
            )


def check_train_step(
    loss: object, stored: object, named_params: Iterable[tuple[str, Any]], name: str = "policy"
) -> None:
    """The whole `requires_grad` contract of one step; call it after ``loss.backward()``.

    The returned loss requires grad, every stored output is detached, and every trainable parameter
    got a non-zero gradient. The first broken rule raises ContractError naming what broke it.
    """
    assert_requires_grad(loss, "loss")
    assert_detached(stored, "stored output")
    assert_nonzero_grad(named_params, name)


# --- the placement trap: a toy GRPO-style step on a contextual bandit ----------------------------

PLACEMENTS: tuple[str, ...] = ("after_loss", "before_loss")
# Where the KL term reads the log-probs: beside the forward ("live", the silent trap) or from the
# model_output dict, as verl 0.9.1's `verl/workers/utils/losses.py::ppo_loss` reads every term.
KL_READS: tuple[str, ...] = ("live", "model_output")


def low_var_kl(log_probs: torch.Tensor, ref_log_probs: torch.Tensor) -> torch.Tensor:
    """Per-token k3 KL estimate, as verl's ``low_var_kl`` computes it (``core_algos.kl_penalty``).

    With d = ref - logp clamped to [-20, 20] first (so exp cannot overflow): exp(d) - d - 1, clamped
    to [-10, 10]. Where the policy equals the reference it is 0 with an exactly zero gradient
    (d/dlogp = 1 - exp(0)).
    """
    if not (isinstance(log_probs, torch.Tensor) and isinstance(ref_log_probs, torch.Tensor)):
        raise TypeError("log_probs and ref_log_probs must be torch.Tensors")
    if log_probs.shape != ref_log_probs.shape:
        raise ValueError(
            f"log_probs and ref_log_probs must have the same shape, got {tuple(log_probs.shape)} "
            f"and {tuple(ref_log_probs.shape)}"
        )
    diff = (ref_log_probs - log_probs).clamp(-20.0, 20.0)
    return (diff.exp() - diff - 1).clamp(-10.0, 10.0)


def bandit_advantages(rewards: torch.Tensor, group_size: int, eps: float = 1e-6) -> torch.Tensor:
    """GRPO advantages: each reward minus its group's mean, over the group's std (+eps); groups are consecutive."""
    if not isinstance(rewards, torch.Tensor) or rewards.dim() != 1:
        raise TypeError("rewards must be a 1-D torch.Tensor (one reward per response)")
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 2:
        raise ValueError(f"group_size must be an int >= 2, got {group_size!r}")
    if rewards.numel() % group_size:
        raise ValueError(f"len(rewards)={rewards.numel()} is not a multiple of group_size={group_size}")
    groups = rewards.float().view(-1, group_size)
    centred = groups - groups.mean(dim=1, keepdim=True)
    return (centred / (groups.std(dim=1, keepdim=True) + eps)).reshape(-1)


def _check_placement(placement: object) -> str:
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {PLACEMENTS}, got {placement!r}")
    return placement  # type: ignore[return-value]


def policy_step(
    policy: nn.Module,
    states: torch.Tensor,
    actions: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    ref_log_probs: torch.Tensor,
    *,
    kl_coef: float,
    placement: str,
    kl_reads: str = "live",
) -> tuple[torch.Tensor, dict[str, Any]]:
    """One engine forward step: returns (loss, output to store), with `detach_tree` at `placement`.

    The policy-gradient term reads the ``model_output`` dict. With ``kl_reads="live"`` the KL penalty
    is computed beside the forward from the live log-probs: then ``placement="before_loss"``
    (`loss_detached_before`) keeps the loss value, backward still runs (the KL term keeps the loss attached),
    and no gradient flows through the policy-gradient term (the silent case). With ``kl_reads="model_output"``
    every term reads the dict, as verl's ``ppo_loss`` does: the loss then does not require grad and backward
    raises (the loud case). ``placement="after_loss"`` is `loss_detached_after`.
    """
    _check_placement(placement)
    if kl_reads not in KL_READS:
        raise ValueError(f"kl_reads must be one of {KL_READS}, got {kl_reads!r}")
    log_probs = torch.log_softmax(policy(states), dim=-1).gather(-1, actions[:, None]).squeeze(-1)
    step = loss_detached_before if placement == "before_loss" else loss_detached_after
    return step(log_probs, old_log_probs, advantages, ref_log_probs, kl_coef, kl_reads == "live")


def loss_detached_before(
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    ref_log_probs: torch.Tensor,
    kl_coef: float,
    kl_live: bool,
) -> tuple[torch.Tensor, dict[str, Any]]:
    """The trap: `detach_tree` before the loss reads `model_output` (KL from the live log-probs if `kl_live`)."""
    model_output = {"log_probs": log_probs}
    model_output = detach_tree(model_output)
    kl = low_var_kl(log_probs if kl_live else model_output["log_probs"], ref_log_probs).mean()
    pg_loss = -(advantages * torch.exp(model_output["log_probs"] - old_log_probs)).mean()
    loss = pg_loss + kl_coef * kl
    stored = model_output
    return loss, {"model_output": stored, "metrics": {"pg_loss": pg_loss.item(), "kl": kl.item()}}


def loss_detached_after(
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    ref_log_probs: torch.Tensor,
    kl_coef: float,
    kl_live: bool,
) -> tuple[torch.Tensor, dict[str, Any]]:
    """The fix's placement: `detach_tree` on what is stored, after the loss is built from the live outputs."""
    model_output = {"log_probs": log_probs}
    kl = low_var_kl(log_probs if kl_live else model_output["log_probs"], ref_log_probs).mean()
    pg_loss = -(advantages * torch.exp(model_output["log_probs"] - old_log_probs)).mean()
    loss = pg_loss + kl_coef * kl
    stored = detach_tree(model_output)
    return loss, {"model_output": stored, "metrics": {"pg_loss": pg_loss.item(), "kl": kl.item()}}


@dataclass(frozen=True)
class TrapRun:
    """Per-step curves of one bandit training run."""

    placement: str
    losses: list[float]
    kls: list[float]
    rewards: list[float]
    grad_norms: list[float]
    param_change: float  # largest absolute change of any parameter from its initial value


def _bandit_policy(num_states: int, num_actions: int, hidden: int) -> nn.Module:
    return nn.Sequential(nn.Embedding(num_states, hidden), nn.Tanh(), nn.Linear(hidden, num_actions))


def train_placement_bandit(
    placement: str,
    *,
    steps: int = 12,
    num_states: int = 4,
    num_actions: int = 6,
    hidden: int = 8,
    group_size: int = 8,
    lr: float = 0.5,
    kl_coef: float = 0.001,
    seed: int = 0,
    kl_reads: str = "live",
) -> TrapRun:
    """Train a tiny policy with GRPO-style steps on a contextual bandit (reward 1 for the state's target action).

    The policy starts equal to the frozen reference, as an actor starts from its reference model.
    Same seed -> same initial weights, targets and sampling stream for both placements.
    """
    _check_placement(placement)
    for label, value in (("steps", steps), ("num_states", num_states), ("num_actions", num_actions)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{label} must be a positive int, got {value!r}")
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    policy = _bandit_policy(num_states, num_actions, hidden)
    reference = copy.deepcopy(policy).requires_grad_(False)
    targets = torch.randint(num_actions, (num_states,), generator=gen)
    states = torch.arange(num_states).repeat_interleave(group_size)
    initial = [p.detach().clone() for p in policy.parameters()]
    losses, kls, rewards, grad_norms = [], [], [], []
    for _ in range(steps):
        with torch.no_grad():
            old_log_softmax = torch.log_softmax(policy(states), dim=-1)
            actions = torch.multinomial(old_log_softmax.exp(), 1, generator=gen).squeeze(-1)
            old_log_probs = old_log_softmax.gather(-1, actions[:, None]).squeeze(-1)
            ref_log_probs = torch.log_softmax(reference(states), dim=-1).gather(-1, actions[:, None]).squeeze(-1)
        reward = (actions == targets[states]).float()
        advantages = bandit_advantages(reward, group_size)
        policy.zero_grad(set_to_none=True)
        loss, output = policy_step(
            policy,
            states,
            actions,
            old_log_probs,
            advantages,
            ref_log_probs,
            kl_coef=kl_coef,
            placement=placement,
            kl_reads=kl_reads,
        )
        loss.backward()
        grad_norms.append(float(torch.cat([p.grad.reshape(-1) for p in policy.parameters()]).norm()))
        with torch.no_grad():  # plain SGD by hand: torch.optim's first step costs seconds of lazy imports
            for p in policy.parameters():
                p.sub_(lr * p.grad)
        losses.append(loss.item())
        kls.append(output["metrics"]["kl"])
        rewards.append(reward.mean().item())
    change = max(float((p.detach() - p0).abs().max()) for p, p0 in zip(policy.parameters(), initial, strict=True))
    return TrapRun(placement, losses, kls, rewards, grad_norms, change)


# --- upstream's regression test, in miniature ----------------------------------------------------


class TinyCheckpointedLM(nn.Module):
    """A frozen embedding whose output is forced to require grad, a checkpointed block, a head.

    The forward hook does what PEFT's ``enable_input_require_grads`` does. `saved_input` is a weakref
    to the last checkpoint-saved input, so a test can see when the autograd graph lets it go.
    """

    def __init__(self, vocab: int = 16, hidden: int = 8) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden).requires_grad_(False)
        self.embed.register_forward_hook(lambda _m, _i, out: out.requires_grad_(True))
        self.block = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, hidden))
        self.head = nn.Linear(hidden, vocab)
        self.saved_input: weakref.ref[torch.Tensor] | None = None

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        hidden = self.embed(ids)
        self.saved_input = weakref.ref(hidden)
        return self.head(checkpoint(self.block, hidden, use_reentrant=False))


def saved_input_lifetime(detach: bool, seed: int = 0) -> tuple[bool, bool, list[str]]:
    """Upstream's weakref regression test (#6699's, tests/workers/test_engine_forward_step_detach_on_cpu.py) as an
    experiment, on CPU.

    One forward through `TinyCheckpointedLM`, a loss, and the output held under "model_output"
    (wrapped in `detach_tree` when `detach`). Returns (checkpoint-saved input alive while the loss
    lives, still alive after `del loss` and a collection, the held output's grad-attached paths).
    """
    check_int("seed", seed, minimum=0, kind="argument")
    if not isinstance(detach, bool):
        raise TypeError(f"detach must be True or False, got {type(detach).__name__} {detach!r}")
    torch.manual_seed(seed)
    model = TinyCheckpointedLM()
    ids = torch.randint(16, (2, 5))
    log_probs = torch.log_softmax(model(ids), -1).gather(-1, ids[..., None]).squeeze(-1)
    saved = model.saved_input  # a weakref: it does not keep the input alive itself
    loss = -log_probs.mean()
    held = {"model_output": detach_tree({"log_probs": log_probs}) if detach else {"log_probs": log_probs}}
    del log_probs
    alive_with_loss = saved is not None and saved() is not None
    del loss
    gc.collect()
    return alive_with_loss, saved is not None and saved() is not None, grad_attached_paths(held, "output")


def retained_per_micro_batch(
    model: nn.Module,
    ids: torch.Tensor,
    *,
    wrap: bool,
    measure: Any,
    micro_batches: int = 6,
) -> float:
    """The GPU cell's loop, on any device: bytes `measure()` grows by per micro-batch while outputs are held.

    Each micro-batch runs forward, a loss and backward, then keeps its output under "model_output"
    (wrapped in `detach_tree` when `wrap`), as an engine's output list does. `measure` returns the
    bytes live now (``torch.cuda.memory_allocated``, or a CPU ``AllocationTracker.live_bytes``).
    """
    if not isinstance(wrap, bool):
        raise TypeError(f"wrap must be True or False, got {type(wrap).__name__} {wrap!r}")
    if not callable(measure):
        raise TypeError("measure must be a function returning the bytes live now, e.g. torch.cuda.memory_allocated")
    if isinstance(micro_batches, bool) or not isinstance(micro_batches, int) or micro_batches < 3:
        raise ValueError(f"micro_batches must be an int >= 3 (a slope needs a few points), got {micro_batches!r}")
    kept, samples = [], []
    for _ in range(micro_batches):
        log_probs = torch.log_softmax(model(ids), -1).gather(-1, ids[..., None]).squeeze(-1)
        loss = -log_probs.mean()
        loss.backward()
        kept.append({"model_output": detach_tree({"log_probs": log_probs}) if wrap else {"log_probs": log_probs}})
        del log_probs, loss
        samples.append(float(measure()))
    del kept
    model.zero_grad(set_to_none=True)
    return bytes_per_step(samples)


def detach_like_6699(model_output: dict[str, Any]) -> dict[str, Any]:
    """The course's reconstruction, as a function, of the inline rule verl #6699 put in FSDP's forward_step.

    #6699 (commit dbbf0853f, ``FSDPEngineWithLMHead.forward_step`` in
    ``verl/workers/engine/fsdp/transformer_impl.py``; still so in verl 0.9.0) rebuilt the top-level
    dict, detaching each value that is a tensor with a ``grad_fn``. It does not recurse into
    containers and leaves a leaf that requires grad (no ``grad_fn``) attached.
    """
    if not isinstance(model_output, dict):
        raise TypeError(f"model_output must be a dict, as the engine's is; got {type(model_output).__name__}")
    return {k: v.detach() if torch.is_tensor(v) and v.grad_fn is not None else v for k, v in model_output.items()}
