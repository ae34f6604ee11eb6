"""Exercise 2.2's world, reference and loop: serves `checks.py` only (nothing else imports it).

An input is a tiny policy's sizes and seed, the micro-batches of one mini-batch and the loss (`_step_world`
builds them). `_StepRun` runs a forward_step the way an engine does: for every micro-batch it calls the step, runs
the engine's own backward on the returned loss (scaled by the number of micro-batches) and keeps the micro-batch and
the step's output until the mini-batch ends; then it takes an optimizer step and clears the gradients, and does it
all twice (a second mini-batch on the updated policy). What it sees is a list of events in the order they happen:
one per step (what the loss was handed, what was returned and stored, what the step did to the gradients, the
policy, grad mode and the micro-batch, whether the engine's backward could run) and one per mini-batch end (what the
engine holds, the gradients accumulated, the parameters after the optimizer step, live tensors kept elsewhere). The
learner's list is compared with the reference's; the first event and part where they differ is the mistake shown
(`step_messages.py`).
"""

from __future__ import annotations

import gc
import inspect
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from verlstudy.common.trees import grad_attached_paths
from verlstudy.kit import i18n
from verlstudy.kit.properties import a_kind, difference
from verlstudy.kit.resources import data_dir
from verlstudy.lessons.l02_detach.tree_cases import _reference_detach_tree

# Two steps agree on a part when the kit finds no difference with these tolerances: another right way to compute
# the log-probs (cross_entropy, Categorical) differs in the last float bits, a doubled or lost gradient does not
_STEP_TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
_ROUNDS = 2  # mini-batches: the second runs the step again on the policy the optimizer updated
_LR = 0.1
_NOT_REACHED = "not reached"
_AS_IT_WAS = "as it was"
_A_DICT = "a dict"
_UNTOUCHED = "untouched"
_CALLERS = "the caller's micro_batch"
_WHERE = "at"
# The parts of one step, in the order a mistake is looked for (the first that differs is named)
_STEP_KEYS = (
    "returns",
    "loss_function calls",
    "model_output given to loss_function",
    "log_probs given to loss_function",
    "micro_batch given to loss_function",
    "loss requires grad",
    "loss value",
    "gradients when the step returns",
    "policy after the step",
    "grad mode after the step",
    "stored model_output",
    "stored log_probs",
    "stored tensors still requiring grad",
    "micro_batch after the step",
    "metrics stored",
    "the engine's backward",
)
# The parts of a mini-batch's end, after all its steps
_ROUND_KEYS = (
    "held by the engine, still requiring grad",
    "live tensors kept after the mini-batch",
    "parameters without a gradient",
    "accumulated gradients",
    "parameters after the optimizer step",
)


def _from_example_engines(fn: Any) -> bool:
    # The notebook loads data/engines/*.py, whose forward_step has the exercise's signature.
    try:
        source = inspect.getsourcefile(fn)
    except TypeError:
        return False
    return source is not None and Path(source).resolve().parent == (data_dir() / "engines").resolve()


def _step_world(spec: tuple[int, ...]) -> tuple[nn.Module, list[dict[str, torch.Tensor]], bool]:
    """The policy, the micro-batches of one mini-batch and whether the loss reads the advantages."""
    n_states, hidden, n_actions, batch, seed, weighted, n_micro = spec
    gen = torch.Generator().manual_seed(seed)
    policy = nn.Sequential(nn.Embedding(n_states, hidden), nn.Linear(hidden, n_actions))
    with torch.no_grad():
        for p in policy.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    micro_batches = [
        {
            "states": torch.randint(n_states, (batch,), generator=gen),
            "actions": torch.randint(n_actions, (batch,), generator=gen),
            "advantages": torch.rand(batch, generator=gen) + 0.5,
        }
        for _ in range(n_micro)
    ]
    return policy, micro_batches, bool(weighted)


def _log_probs_summary(value: Any, batch: int) -> Any:
    if not isinstance(value, torch.Tensor):
        return f"{a_kind(value)}, not a tensor"
    if tuple(value.shape) != (batch,):
        return f"a tensor of shape {tuple(value.shape)}"
    return [round(float(v), 5) for v in value.detach().float()]


def _kind_of_output(value: Any) -> str:
    return _A_DICT if isinstance(value, Mapping) else a_kind(value)


def _snapshot_batch(micro_batch: Mapping[str, Any]) -> dict[str, tuple[int, Any]]:
    return {k: (id(v), v.detach().clone() if isinstance(v, torch.Tensor) else v) for k, v in micro_batch.items()}


def _keys(keys: list[str]) -> str:
    return ", ".join(map(repr, keys))


def _same_entry(value: Any, before: tuple[int, Any]) -> bool:
    if id(value) == before[0]:
        return True
    return isinstance(value, torch.Tensor) and isinstance(before[1], torch.Tensor) and torch.equal(value, before[1])


def _batch_given(mb: Any, caller: Any, before: dict[str, tuple[int, Any]]) -> str:
    """What loss_function was handed as the micro-batch: the caller's (itself, or a dict of the same entries)."""
    if mb is caller:
        return _CALLERS
    if not isinstance(mb, Mapping):
        return a_kind(mb)
    missing = [k for k in before if k not in mb]
    if missing:
        return f"a dict without {_keys(missing)}"
    other = [k for k in before if not _same_entry(mb[k], before[k])]
    return f"a dict with other {_keys(other)}" if other else _CALLERS


def _batch_change(micro_batch: Any, before: dict[str, tuple[int, Any]]) -> str:
    """How the step left the caller's micro_batch: 'as it was', or what it added, replaced or changed."""
    if not isinstance(micro_batch, Mapping):
        return f"replaced by {a_kind(micro_batch)}"
    live = grad_attached_paths(dict(micro_batch), "micro_batch")
    added = [k for k in micro_batch if k not in before]
    removed = [k for k in before if k not in micro_batch]
    replaced = [k for k in micro_batch if k in before and id(micro_batch[k]) != before[k][0]]
    in_place = [
        k
        for k in micro_batch
        if k in before
        and k not in replaced
        and isinstance(micro_batch[k], torch.Tensor)
        and not torch.equal(micro_batch[k].detach(), before[k][1])
    ]
    parts = [f"with {_keys(added)} added"] if added else []
    parts += [f"with {_keys(replaced)} replaced"] if replaced else []
    parts += [f"without {_keys(removed)}"] if removed else []
    parts += [f"with {_keys(in_place)} changed in place"] if in_place else []
    if not parts:
        return _AS_IT_WAS
    return " and ".join(parts) + (f", holding a tensor that requires grad ({', '.join(live)})" if live else "")


def _grads(policy: nn.Module) -> dict[str, torch.Tensor]:
    """Each parameter's gradient so far (a missing one as zeros: the engine's backward treats both alike)."""
    return {n: torch.zeros_like(p) if p.grad is None else p.grad.detach().clone() for n, p in policy.named_parameters()}


def _grad_change(before: Mapping[str, torch.Tensor], after: Mapping[str, torch.Tensor]) -> str:
    """What the step did to the gradients the earlier micro-batches accumulated (before the engine's backward)."""
    if all(torch.equal(before[n], after[n]) for n in before):
        return _UNTOUCHED
    had = any(bool(before[n].ne(0).any()) for n in before)
    if had and all(not bool(after[n].ne(0).any()) for n in after):
        return "cleared: the earlier micro-batches' gradients are gone"
    return "changed: the step itself wrote into the parameters' gradients"


def _hooks(policy: nn.Module) -> int:
    """How many hooks the policy's modules and parameters carry (a step that adds one per call changes every later
    forward or backward, and they pile up)."""
    kinds = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
    on_modules = sum(len(getattr(m, kind, None) or {}) for m in policy.modules() for kind in kinds)
    tensor_kinds = ("_backward_hooks", "_post_accumulate_grad_hooks")
    return on_modules + sum(len(getattr(p, kind, None) or {}) for p in policy.parameters() for kind in tensor_kinds)


def _policy_state(policy: nn.Module) -> list[Any]:
    params = [(n, p.requires_grad, p.detach().clone()) for n, p in policy.named_parameters()]
    return [policy.training, params, _hooks(policy)]


def _policy_change(before: list[Any], policy: nn.Module) -> str:
    training, params, hooks = before
    if _hooks(policy) != hooks:
        return f"with {_hooks(policy) - hooks} hooks added"
    if policy.training != training:
        return "switched to eval mode" if training else "switched to train mode"
    now = dict(policy.named_parameters())
    if set(now) != {name for name, _, _ in params}:
        return "with other parameters"
    for name, requires_grad, value in params:
        if now[name].requires_grad != requires_grad:
            return f"with {name}'s requires_grad changed"
        if not torch.equal(now[name].detach(), value):
            return f"with {name}'s values changed"
    return _AS_IT_WAS


def _rounded(tensors: Mapping[str, torch.Tensor]) -> dict[str, list[float]]:
    return {n: [round(float(v), 6) for v in t.detach().flatten()] for n, t in tensors.items()}


class _Saved:
    """What autograd saves for backward during a step, held through a hook: alive exactly as long as its graph."""

    __slots__ = ("__weakref__", "tensor")

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor.detach()  # without its grad_fn: a saved output kept with it would make a cycle


def _saving_into(live: list[weakref.ref]) -> Any:
    """A context in which every tensor autograd saves is tracked in `live` (a graph kept alive keeps them)."""

    def pack(tensor: torch.Tensor) -> _Saved:
        saved = _Saved(tensor)
        live.append(weakref.ref(saved))
        return saved

    return torch.autograd.graph.saved_tensors_hooks(pack, lambda saved: saved.tensor)


def _alive(refs: list[weakref.ref]) -> int:
    """How many of the live tensors the steps made are still reachable (a cycle collected first, only if any)."""
    if not any(r() is not None for r in refs):
        return 0
    gc.collect()
    return sum(r() is not None for r in refs)


def _sgd_step(policy: nn.Module) -> None:
    """The engine's optimizer step and zero_grad, as plain SGD (torch.optim's first use imports torch._dynamo: 3 s)."""
    with torch.no_grad():
        for p in policy.parameters():
            if p.grad is not None:
                p.add_(p.grad, alpha=-_LR)
            p.grad = None


class _StepRun:
    """Runs a forward_step inside the engine's loop on the world a spec describes; returns the events it saw."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __call__(self, spec: tuple[int, ...]) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        grad_mode = torch.is_grad_enabled()
        try:
            self._run(spec, events)
        finally:
            torch.set_grad_enabled(grad_mode)  # a step that switched grad mode off must not leave it off
        return events

    def _run(self, spec: tuple[int, ...], events: list[dict[str, Any]]) -> None:
        policy, micro_batches, weighted = _step_world(spec)
        for r in range(_ROUNDS):
            kept: list[Any] = []  # what the engine holds until the mini-batch ends
            live: list[weakref.ref] = []  # this mini-batch's live log-probs, losses and what their graphs saved
            for i, micro_batch in enumerate(micro_batches):
                event = {_WHERE: f"mini-batch {r + 1}, micro-batch {i + 1}", **dict.fromkeys(_STEP_KEYS, _NOT_REACHED)}
                events.append(event)
                if not self._one_step(policy, micro_batch, weighted, len(micro_batches), event, kept, live):
                    return
            end: dict[str, Any] = {_WHERE: f"the end of mini-batch {r + 1}"}
            end["held by the engine, still requiring grad"] = grad_attached_paths(kept, "held")
            kept.clear()  # the engine lets go of this mini-batch's outputs and micro-batches
            end["live tensors kept after the mini-batch"] = _alive(live)
            end["parameters without a gradient"] = [
                n for n, p in policy.named_parameters() if p.grad is None or not bool(p.grad.ne(0).any())
            ]
            end["accumulated gradients"] = _rounded(_grads(policy))
            _sgd_step(policy)
            end["parameters after the optimizer step"] = _rounded(dict(policy.named_parameters()))
            events.append(end)

    def _one_step(
        self,
        policy: nn.Module,
        micro_batch: dict[str, torch.Tensor],
        weighted: bool,
        n_micro: int,
        event: dict[str, Any],
        kept: list[Any],
        live: list[weakref.ref],
    ) -> bool:
        """One micro-batch: the learner's step, then the engine's backward; False where the loop cannot go on."""
        batch = int(micro_batch["states"].shape[0])
        before = _snapshot_batch(micro_batch)
        seen: list[dict[str, Any]] = []  # what each loss_function call was handed and made (no tensor kept)

        def loss_function(model_output: Any, mb: Any) -> tuple[torch.Tensor, dict[str, float]]:
            call = {"given": _kind_of_output(model_output), "batch": _batch_given(mb, micro_batch, before)}
            seen.append(call)
            if isinstance(model_output, Mapping) and "log_probs" not in model_output:
                raise KeyError(
                    i18n.pick(
                        "loss_function reads model_output['log_probs']; it got the keys {keys}", keys=list(model_output)
                    )
                )
            # verl's losses read model_output by key; a bare tensor is recorded as a mistake, then read as it is
            lp = model_output["log_probs"] if isinstance(model_output, Mapping) else model_output
            call["log_probs"] = _log_probs_summary(lp, batch)
            loss = -(mb["advantages"] * lp).mean() if weighted else -lp.mean()
            for t in (lp, loss):
                if isinstance(t, torch.Tensor) and t.requires_grad:
                    live.append(weakref.ref(t))
            call["metrics"] = {"pg_loss": round(float(loss.detach()), 6)}
            return loss, call["metrics"]

        grads_before, policy_before = _grads(policy), _policy_state(policy)
        with _saving_into(live):
            result = self.fn(policy, micro_batch, loss_function)
        if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], Mapping)):
            event["returns"] = f"{a_kind(result)}, not a pair (loss, output dict)"
            return False
        loss, output = result
        has_output = "model_output" in output
        event["returns"] = "a pair (loss, output dict)" if has_output else "a pair whose dict has no 'model_output'"
        event["loss_function calls"] = len(seen)
        if len(seen) != 1 or not has_output:
            return False
        call = seen[0]
        event["model_output given to loss_function"] = call["given"]
        event["log_probs given to loss_function"] = call["log_probs"]
        event["micro_batch given to loss_function"] = call["batch"]
        requires_grad = isinstance(loss, torch.Tensor) and loss.requires_grad
        event["loss requires grad"] = requires_grad
        event["loss value"] = round(float(loss.detach()), 5) if isinstance(loss, torch.Tensor) else repr(loss)
        event["gradients when the step returns"] = _grad_change(grads_before, _grads(policy))
        event["policy after the step"] = _policy_change(policy_before, policy)
        event["grad mode after the step"] = "enabled" if torch.is_grad_enabled() else "disabled"
        torch.set_grad_enabled(True)  # the engine's own loop runs with grad on
        stored = output["model_output"]
        event["stored model_output"] = _kind_of_output(stored)
        event["stored log_probs"] = (
            _log_probs_summary(stored.get("log_probs"), batch) if isinstance(stored, Mapping) else _NOT_REACHED
        )
        event["stored tensors still requiring grad"] = grad_attached_paths(output, "output")
        event["micro_batch after the step"] = _batch_change(micro_batch, before)
        event["metrics stored"] = output.get("metrics") == call["metrics"]
        if not requires_grad:
            return False
        try:
            (loss / n_micro).backward()  # the engine's own backward, the loss scaled over the mini-batch
        except RuntimeError as e:
            event["the engine's backward"] = f"raised RuntimeError: {str(e).split('.')[0]}"
            return False
        event["the engine's backward"] = "ran"
        kept.append((micro_batch, output))
        return True


def _reference_forward_step(policy: nn.Module, micro_batch: dict[str, Any], loss_function: Callable) -> Any:
    log_probs = torch.log_softmax(policy(micro_batch["states"]), dim=-1)
    model_output = {"log_probs": log_probs.gather(-1, micro_batch["actions"].unsqueeze(-1)).squeeze(-1)}
    loss, metrics = loss_function(model_output, micro_batch)
    return loss, {"model_output": _reference_detach_tree(model_output), "metrics": metrics}


_REFERENCE_EVENTS: dict[tuple[int, ...], list[dict[str, Any]]] = {}


def _reference_step_events(spec: tuple[int, ...]) -> list[dict[str, Any]]:
    """The reference's events on one world, run once per process: a world is rebuilt from its spec alike every time."""
    if spec not in _REFERENCE_EVENTS:
        _REFERENCE_EVENTS[spec] = _StepRun(_reference_forward_step)(spec)
    return _REFERENCE_EVENTS[spec]


def _step_inputs() -> Any:
    from hypothesis import strategies as st

    return st.tuples(
        st.tuples(
            st.integers(2, 6),
            st.integers(2, 8),
            st.integers(2, 7),
            st.integers(1, 6),
            st.integers(0, 1000),
            st.sampled_from([0, 1]),
            st.integers(2, 3),
        )
    )


def _first_difference(got: Any, want: Any) -> tuple[int, str] | None:
    """Where the learner's events (`got`) first differ from the reference's: (event index, part), or None."""
    if not (isinstance(got, list) and isinstance(want, list)):
        return None if got == want else (0, "returns")
    for i in range(max(len(got), len(want))):
        g = got[i] if i < len(got) else {}
        w = want[i] if i < len(want) else {}
        for key in (*_STEP_KEYS, *_ROUND_KEYS):
            if key not in g and key not in w:
                continue
            if difference(g.get(key, _NOT_REACHED), w.get(key, _NOT_REACHED), **_STEP_TOLERANCE) is not None:
                return i, key
    return None


def _values_at(got: list[Any], want: list[Any], where: tuple[int, str]) -> tuple[Any, Any, str]:
    """The learner's and the reference's value of one part at one event, and where that event is."""
    i, key = where
    g = got[i] if i < len(got) else {}
    w = want[i] if i < len(want) else {}
    return g.get(key, _NOT_REACHED), w.get(key, _NOT_REACHED), str(w.get(_WHERE, g.get(_WHERE, "")))
