"""Exercise 2.2's cases, reference and mistake names: serves `checks.py` only (nothing else imports it).

An input is a tiny policy's sizes and seed (`_step_world` builds it); `_StepRun` runs a forward_step on it
and summarises what the contract looks at (the log-probs the loss received and the ones stored, the loss
requiring grad, nothing stored requiring grad, the metrics, every parameter's gradient). `_step_mistake`
names what a wrong summary shows.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from verlstudy.common.trees import grad_attached_paths
from verlstudy.kit.properties import Case
from verlstudy.kit.resources import data_dir
from verlstudy.lessons.l02_detach.tree_cases import _reference_detach_tree


def _from_example_engines(fn: Any) -> bool:
    # The notebook loads data/engines/*.py, whose forward_step has the exercise's signature.
    try:
        source = inspect.getsourcefile(fn)
    except TypeError:
        return False
    return source is not None and Path(source).resolve().parent == (data_dir() / "engines").resolve()


def _step_world(spec: tuple[int, ...]) -> tuple[nn.Module, dict[str, torch.Tensor], bool]:
    n_states, hidden, n_actions, batch, seed, weighted = spec
    gen = torch.Generator().manual_seed(seed)
    policy = nn.Sequential(nn.Embedding(n_states, hidden), nn.Linear(hidden, n_actions))
    with torch.no_grad():
        for p in policy.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    micro_batch = {
        "states": torch.randint(n_states, (batch,), generator=gen),
        "actions": torch.randint(n_actions, (batch,), generator=gen),
        "advantages": torch.rand(batch, generator=gen) + 0.5,
    }
    return policy, micro_batch, bool(weighted)


def _log_probs_summary(value: Any, batch: int) -> Any:
    if not isinstance(value, torch.Tensor):
        return f"a {type(value).__name__}, not a tensor"
    if tuple(value.shape) != (batch,):
        return f"a tensor of shape {tuple(value.shape)}"
    return [round(float(v), 5) for v in value.detach().float()]


_NOT_REACHED = "not reached"
_STEP_KEYS = (
    "returns",
    "loss_function calls",
    "log_probs given to loss_function",
    "stored log_probs",
    "loss requires grad",
    "loss value",
    "stored tensors still requiring grad",
    "metrics stored",
    "parameters without a gradient",
)


class _StepSummary(dict):
    """What the contract looks at in one step; shown in a message by a short label, not as a dict dump."""

    label = "a step"

    def __repr__(self) -> str:
        return self.label


class _StepRun:
    """Runs a forward_step on the world a spec describes; returns what the contract looks at."""

    def __init__(self, fn: Callable[..., Any], label: str) -> None:
        self.fn, self.label = fn, label

    def __call__(self, spec: tuple[int, ...]) -> dict[str, Any]:
        policy, micro_batch, weighted = _step_world(spec)
        batch = int(micro_batch["states"].shape[0])
        summary: dict[str, Any] = _StepSummary(dict.fromkeys(_STEP_KEYS, _NOT_REACHED))
        summary.label = self.label
        received: list[Any] = []
        metrics_made: list[dict[str, float]] = []

        def loss_function(model_output: Any, mb: Any) -> tuple[torch.Tensor, dict[str, float]]:
            lp = model_output.get("log_probs") if isinstance(model_output, Mapping) else model_output
            received.append(lp)
            loss = -(mb["advantages"] * lp).mean() if weighted else -lp.mean()
            metrics_made.append({"pg_loss": round(float(loss.detach()), 6)})
            return loss, metrics_made[-1]

        result = self.fn(policy, micro_batch, loss_function)
        if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], Mapping)):
            summary["returns"] = f"{type(result).__name__}, not a pair (loss, output dict)"
            return summary
        loss, output = result
        summary["returns"] = "a pair (loss, output dict)" if "model_output" in output else "no 'model_output' key"
        summary["loss_function calls"] = len(received)
        if len(received) != 1 or "model_output" not in output:
            return summary
        summary["log_probs given to loss_function"] = _log_probs_summary(received[0], batch)
        stored = output["model_output"]
        summary["stored log_probs"] = _log_probs_summary(
            stored.get("log_probs") if isinstance(stored, Mapping) else stored, batch
        )
        summary["loss requires grad"] = isinstance(loss, torch.Tensor) and loss.requires_grad
        summary["loss value"] = round(float(loss.detach()), 5) if isinstance(loss, torch.Tensor) else repr(loss)
        summary["stored tensors still requiring grad"] = grad_attached_paths(output, "output")
        summary["metrics stored"] = output.get("metrics") == metrics_made[0]
        if summary["loss requires grad"]:
            loss.backward()
            summary["parameters without a gradient"] = [
                name for name, p in policy.named_parameters() if p.grad is None or not bool(p.grad.ne(0).any())
            ]
        return summary


def _reference_forward_step(policy: nn.Module, micro_batch: dict[str, Any], loss_function: Callable) -> Any:
    log_probs = torch.log_softmax(policy(micro_batch["states"]), dim=-1)
    model_output = {"log_probs": log_probs.gather(-1, micro_batch["actions"].unsqueeze(-1)).squeeze(-1)}
    loss, metrics = loss_function(model_output, micro_batch)
    return loss, {"model_output": _reference_detach_tree(model_output), "metrics": metrics}


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
        )
    )


def _show_step(args: tuple[Any, ...], kwargs: Any) -> str:
    n_states, hidden, n_actions, batch, _seed, weighted = args[0]
    loss = "weights each log-prob by micro_batch['advantages']" if weighted else "is minus the mean log-prob"
    return (
        f"forward_step on a policy of {n_states} states and {n_actions} actions (hidden {hidden}), "
        f"a micro-batch of {batch}, a loss_function that {loss}"
    )


_STEP_CASES = (
    Case(((3, 4, 5, 4, 0, 0),), "the notebook-sized policy, a plain mean loss"),
    Case(((3, 4, 5, 1, 1, 0),), "a micro-batch of one sequence"),
    Case(((4, 6, 3, 5, 2, 1),), "a loss that reads micro_batch['advantages'] too"),
)


def _log_probs_mistake(spec: tuple[int, ...], got: Any) -> str:
    """What a wrong set of per-action values is, named without how to compute the right one."""
    if isinstance(got, str):
        if got.startswith("a tensor of shape ()") or (spec[3] == 1 and got.startswith("a tensor of shape")):
            return "on a one-sequence micro-batch the shape is wrong: keep one log-probability per sequence"
        if got.startswith("a tensor of shape"):
            return f"they must be one log-probability per action taken, shape ({spec[3]},)"
        return "they must be a tensor of log-probabilities"
    policy, mb, _ = _step_world(spec)
    with torch.no_grad():
        logits = policy(mb["states"])
    take = mb["actions"][:, None]
    variants = {
        "these are probabilities, not log-probabilities": torch.softmax(logits, -1).gather(-1, take).squeeze(-1),
        "these are the raw logits of the taken actions, not normalised": logits.gather(-1, take).squeeze(-1),
        "they are normalised over the batch dimension, not over the action dimension": (
            torch.log_softmax(logits, 0).gather(-1, take).squeeze(-1)
        ),
        "these are negative log-probabilities (a log-probability is <= 0)": (
            -torch.log_softmax(logits, -1).gather(-1, take).squeeze(-1)
        ),
    }
    values = torch.tensor(got)
    for name, value in variants.items():
        if torch.allclose(values, value, atol=1e-4):
            return name
    if bool((values > 1e-6).any()):
        return "some are > 0, and a log-probability is <= 0"
    return "they are not the log-probabilities of the actions taken"


def _step_mistake(args: tuple[Any, ...], got: Any, want: Any) -> str | None:
    spec = args[0]
    if not isinstance(got, Mapping):
        return None
    for key in _STEP_KEYS:
        g, w = got.get(key), want[key]
        if g == w:
            continue
        if key == "returns":
            return "return a pair (loss, output) where output is a dict holding 'model_output'"
        if key == "loss_function calls":
            return f"call loss_function exactly once per step (it was called {g} times)"
        if key == "log_probs given to loss_function":
            return f"the log_probs given to loss_function are wrong: {_log_probs_mistake(spec, g)}"
        if key == "stored log_probs":
            return f"the stored log_probs are not what the loss read: {_log_probs_mistake(spec, g)}"
        if key == "loss requires grad":
            return "the returned loss does not require grad: backward cannot reach the policy's parameters"
        if key == "loss value":
            return (
                "the returned loss is not the one loss_function builds from your log-probs and the micro-batch: "
                "return its loss as it is, and pass it the micro-batch you were given"
            )
        if key == "stored tensors still requiring grad":
            return f"{', '.join(g)} still require grad: the stored output would pin each micro-batch's autograd graph"
        if key == "metrics stored":
            return "store the metrics loss_function returned under 'metrics'"
        if key == "parameters without a gradient":
            return f"{', '.join(g)} got no (or an all-zero) gradient: its loss term is cut from the graph"
    return None
