"""Exercise 2.2's cases, reference and mistake names: serves `checks.py` only (nothing else imports it).

An input is a tiny policy's sizes and seed (`_step_world` builds it); `_StepRun` runs a forward_step on it
and summarises what the contract looks at (a dict handed to the loss and a dict stored, the log-probs in
each, the loss requiring grad, nothing stored requiring grad, the caller's micro_batch left as it was, the
metrics, every parameter's gradient). A message shows the first part where the learner's step and the
reference's differ (`_show_steps`); `_step_mistake` names what it shows.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from verlstudy.common.trees import grad_attached_paths
from verlstudy.kit.properties import Case, a_kind, difference
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
        return f"{a_kind(value)}, not a tensor"
    if tuple(value.shape) != (batch,):
        return f"a tensor of shape {tuple(value.shape)}"
    return [round(float(v), 5) for v in value.detach().float()]


# Two steps agree on a part when the kit finds no difference with these tolerances (log-probs rounded to 5 places)
_STEP_TOLERANCE = {"rtol": 1e-4, "atol": 1e-4}
_NOT_REACHED = "not reached"
_AS_IT_WAS = "as it was"
_A_DICT = "a dict"
_STEP_KEYS = (
    "returns",
    "loss_function calls",
    "model_output given to loss_function",
    "log_probs given to loss_function",
    "stored model_output",
    "stored log_probs",
    "loss requires grad",
    "loss value",
    "stored tensors still requiring grad",
    "micro_batch after the step",
    "metrics stored",
    "parameters without a gradient",
)


def _times(n: Any) -> str:
    return f"{n} time" if n == 1 else f"{n} times"


def _paths(paths: Any) -> str:
    return ", ".join(paths) if isinstance(paths, list) and paths else "none"


def _log_probs_shown(value: Any) -> str:
    return f"log_probs that are {value}" if isinstance(value, str) else f"the log_probs {value}"


# How a message shows one part of a step: (the learner's step, the expected value). The kit prints
# "forward_step on <the input> returned <the first>; expected <the second> there".
_SHOWN: dict[str, tuple[Callable[[Any], str], Callable[[Any], str]]] = {
    "returns": (str, str),
    "loss_function calls": (lambda v: f"a step that calls loss_function {_times(v)}", _times),
    "model_output given to loss_function": (lambda v: f"a step that hands loss_function {v}", str),
    "log_probs given to loss_function": (lambda v: f"a step that hands loss_function {_log_probs_shown(v)}", str),
    "stored model_output": (lambda v: f"a step that stores {v} under 'model_output'", str),
    "stored log_probs": (lambda v: f"a step that stores {_log_probs_shown(v)}", str),
    "loss requires grad": (
        lambda v: f"a loss that {'requires' if v is True else 'does not require'} grad",
        lambda v: "one that requires grad" if v is True else "one that does not",
    ),
    "loss value": (lambda v: f"a loss of {v}", str),
    "stored tensors still requiring grad": (
        lambda v: f"a step that stores tensors requiring grad: {_paths(v)}",
        _paths,
    ),
    "micro_batch after the step": (lambda v: f"a step that leaves the caller's micro_batch {v}", str),
    "metrics stored": (
        lambda v: (
            "a step that stores loss_function's metrics"
            if v is True
            else "a step without loss_function's metrics under 'metrics'"
        ),
        lambda v: "them stored" if v is True else "none",
    ),
    "parameters without a gradient": (
        lambda v: f"a step that leaves these parameters without a gradient: {_paths(v)}",
        _paths,
    ),
}


def _first_difference(got: Mapping[str, Any], want: Mapping[str, Any]) -> str | None:
    """The first part of the contract where the learner's step (`got`) and the reference's differ."""
    for key in _STEP_KEYS:
        if difference(got.get(key), want.get(key), **_STEP_TOLERANCE) is not None:
            return key
    return None


def _show_steps(got: Mapping[str, Any], want: Mapping[str, Any]) -> tuple[str, str]:
    """How a message shows two steps: the first part where they differ, each as `_SHOWN` writes it."""
    key = _first_difference(got, want)
    if key is None:
        return "a step that keeps the contract", "a step that keeps the contract"
    learners, references = _SHOWN[key]
    return learners(got.get(key)), references(want.get(key))


def _kind_of_output(value: Any) -> str:
    return _A_DICT if isinstance(value, Mapping) else a_kind(value)


def _snapshot_batch(micro_batch: Mapping[str, Any]) -> dict[str, tuple[int, Any]]:
    return {k: (id(v), v.detach().clone() if isinstance(v, torch.Tensor) else v) for k, v in micro_batch.items()}


def _keys(keys: list[str]) -> str:
    return ", ".join(map(repr, keys))


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


class _StepRun:
    """Runs a forward_step on the world a spec describes; returns what the contract looks at."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __call__(self, spec: tuple[int, ...]) -> dict[str, Any]:
        summary = dict.fromkeys(_STEP_KEYS, _NOT_REACHED)
        self._run(spec, summary)
        return summary

    def _run(self, spec: tuple[int, ...], summary: dict[str, Any]) -> None:
        policy, micro_batch, weighted = _step_world(spec)
        batch = int(micro_batch["states"].shape[0])
        given: list[Any] = []
        received: list[Any] = []
        metrics_made: list[dict[str, float]] = []

        def loss_function(model_output: Any, mb: Any) -> tuple[torch.Tensor, dict[str, float]]:
            given.append(_kind_of_output(model_output))
            if isinstance(model_output, Mapping) and "log_probs" not in model_output:
                raise KeyError(f"loss_function reads model_output['log_probs']; it got the keys {list(model_output)}")
            # verl's losses read model_output by key; a bare tensor is recorded as a mistake, then read as it is
            lp = model_output["log_probs"] if isinstance(model_output, Mapping) else model_output
            received.append(lp)
            loss = -(mb["advantages"] * lp).mean() if weighted else -lp.mean()
            metrics_made.append({"pg_loss": round(float(loss.detach()), 6)})
            return loss, metrics_made[-1]

        before = _snapshot_batch(micro_batch)
        result = self.fn(policy, micro_batch, loss_function)
        if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], Mapping)):
            summary["returns"] = f"{a_kind(result)}, not a pair (loss, output dict)"
            return
        loss, output = result
        has_output = "model_output" in output
        summary["returns"] = "a pair (loss, output dict)" if has_output else "a pair whose dict has no 'model_output'"
        summary["loss_function calls"] = len(received)
        if len(received) != 1 or not has_output:
            return
        summary["model_output given to loss_function"] = given[0]
        summary["log_probs given to loss_function"] = _log_probs_summary(received[0], batch)
        stored = output["model_output"]
        summary["stored model_output"] = _kind_of_output(stored)
        if isinstance(stored, Mapping):
            summary["stored log_probs"] = _log_probs_summary(stored.get("log_probs"), batch)
        summary["loss requires grad"] = isinstance(loss, torch.Tensor) and loss.requires_grad
        summary["loss value"] = round(float(loss.detach()), 5) if isinstance(loss, torch.Tensor) else repr(loss)
        summary["stored tensors still requiring grad"] = grad_attached_paths(output, "output")
        summary["micro_batch after the step"] = _batch_change(micro_batch, before)
        summary["metrics stored"] = output.get("metrics") == metrics_made[0]
        if summary["loss requires grad"]:
            loss.backward()
            summary["parameters without a gradient"] = [
                name for name, p in policy.named_parameters() if p.grad is None or not bool(p.grad.ne(0).any())
            ]


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
    key = _first_difference(got, want)
    if key is None:
        return None
    g = got[key]
    if key == "returns":
        return "return a pair (loss, output) where output is a dict holding 'model_output'"
    if key == "loss_function calls":
        return f"call loss_function exactly once per step (it was called {g} times)"
    if key == "model_output given to loss_function":
        return (
            f"loss_function was handed {g}, not a dict: it takes the model output as a dict of named tensors, "
            "as the exercise writes the call (verl's losses read model_output by key)"
        )
    if key == "log_probs given to loss_function":
        return f"the log_probs given to loss_function are wrong: {_log_probs_mistake(spec, g)}"
    if key == "stored model_output":
        return (
            f"you stored {g} under 'model_output', not a dict: the engine merges the stored outputs key by key "
            "at the end of the mini-batch (lesson 01's consume_store), so what is stored is a dict of named "
            "tensors, like the one the loss read"
        )
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
    if key == "micro_batch after the step":
        if "requires grad" in g:
            return (
                "your step wrote a tensor that requires grad into the caller's micro_batch: the engine keeps every "
                "micro-batch until the mini-batch ends, so that tensor pins this micro-batch's autograd graph as a "
                "stored output would; leave the micro_batch as it was"
            )
        return "your step changed the caller's micro_batch: leave it as it was (the engine keeps it after the step)"
    if key == "metrics stored":
        return "store the metrics loss_function returned under 'metrics'"
    if key == "parameters without a gradient":
        return f"{', '.join(g)} got no (or an all-zero) gradient: its loss term is cut from the graph"
    return None
