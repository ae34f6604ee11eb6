"""Exercise 2.2's named cases and messages: how a summary of the engine's loop reads, and the mistake it shows.

`_show_steps` shows the first part of the contract where the learner's step and the reference's differ, on the
first micro-batch (or mini-batch) where they do; `_step_mistake` names the mistake from what was observed there,
never how to write the step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from verlstudy.kit.properties import Case
from verlstudy.lessons.l02_detach.step_cases import (
    _ROUNDS,
    _first_difference,
    _step_world,
    _values_at,
)


def _times(n: Any) -> str:
    return f"{n} time" if n == 1 else f"{n} times"


def _paths(paths: Any) -> str:
    return ", ".join(paths) if isinstance(paths, list) and paths else "none"


def _log_probs_shown(value: Any) -> str:
    return f"log_probs that are {value}" if isinstance(value, str) else f"the log_probs {value}"


def _tensors_shown(value: Any) -> str:
    if not isinstance(value, Mapping):
        return str(value)
    return "; ".join(f"{name} {values[:4]}{' ...' if len(values) > 4 else ''}" for name, values in value.items())


# How a message shows one part of a step: (the learner's step, the expected value). The kit prints
# "forward_step on <the input> returned <the first>; expected <the second> there".
_SHOWN: dict[str, tuple[Callable[[Any], str], Callable[[Any], str]]] = {
    "returns": (str, str),
    "loss_function calls": (lambda v: f"a step that calls loss_function {_times(v)}", _times),
    "model_output given to loss_function": (lambda v: f"a step that hands loss_function {v}", str),
    "log_probs given to loss_function": (lambda v: f"a step that hands loss_function {_log_probs_shown(v)}", str),
    "micro_batch given to loss_function": (lambda v: f"a step that hands loss_function {v} as its micro-batch", str),
    "gradients when the step returns": (
        lambda v: f"a step that leaves the gradients {v}",
        lambda v: f"the gradients {v} until the engine's backward",
    ),
    "policy after the step": (lambda v: f"a step that leaves the policy {v}", str),
    "grad mode after the step": (lambda v: f"a step that leaves autograd {v}", str),
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
    "the engine's backward": (lambda v: f"a loss on which the engine's own backward {v}", str),
    "held by the engine, still requiring grad": (
        lambda v: f"a mini-batch whose outputs and micro-batches, held by the engine, require grad at {_paths(v)}",
        _paths,
    ),
    "live tensors kept after the mini-batch": (
        lambda v: f"a step that keeps {v} live tensors or saved activations after the engine let go of them",
        lambda v: f"{v} kept",
    ),
    "parameters without a gradient": (
        lambda v: f"a step that leaves these parameters without a gradient: {_paths(v)}",
        _paths,
    ),
    "accumulated gradients": (
        lambda v: f"gradients over the mini-batch of {_tensors_shown(v)}",
        _tensors_shown,
    ),
    "parameters after the optimizer step": (
        lambda v: f"parameters after the optimizer step of {_tensors_shown(v)}",
        _tensors_shown,
    ),
}


def _show_steps(got: Any, want: Any) -> tuple[str, str]:
    """How a message shows two runs: the first part where they differ, each as `_SHOWN` writes it."""
    where = _first_difference(got, want)
    if where is None:
        return "a step that keeps the contract", "a step that keeps the contract"
    learners, references = _SHOWN[where[1]]
    g, w, _ = _values_at(got, want, where)
    return learners(g), references(w)


def _show_step(args: tuple[Any, ...], kwargs: Any) -> str:
    n_states, hidden, n_actions, batch, _seed, weighted, n_micro = args[0]
    loss = "weights each log-prob by micro_batch['advantages']" if weighted else "is minus the mean log-prob"
    return (
        f"forward_step in the engine's loop ({_ROUNDS} mini-batches of {n_micro} micro-batches of {batch}, "
        f"the engine's backward after each step, then an optimizer step) on a policy of {n_states} states and "
        f"{n_actions} actions (hidden {hidden}), a loss_function that {loss}"
    )


_STEP_CASES = (
    Case(((3, 4, 5, 4, 0, 0, 2),), "the notebook-sized policy, a plain mean loss, two micro-batches"),
    Case(((3, 4, 5, 1, 1, 0, 2),), "micro-batches of one sequence"),
    Case(((4, 6, 3, 5, 2, 1, 3),), "a loss that reads micro_batch['advantages'] too, three micro-batches"),
)


def _log_probs_mistake(spec: tuple[int, ...], got: Any, event: int = 0) -> str:
    """What a wrong set of per-action values is, named without how to compute the right one (`event`: the index of
    the step they were seen at; a step of the first mini-batch is recognised, on the policy not yet updated)."""
    if isinstance(got, str):
        if got.startswith("a tensor of shape ()") or (spec[3] == 1 and got.startswith("a tensor of shape")):
            return "on a one-sequence micro-batch the shape is wrong: keep one log-probability per sequence"
        if got.startswith("a tensor of shape"):
            return f"they must be one log-probability per action taken, shape ({spec[3]},)"
        return "they must be a tensor of log-probabilities"
    policy, micro_batches, _ = _step_world(spec)
    if event >= len(micro_batches):
        return "they are not the log-probabilities of the actions taken"
    mb = micro_batches[event]
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
        if values.shape == value.shape and torch.allclose(values, value, atol=1e-4):
            return name
    if bool((values > 1e-6).any()):
        return "some are > 0, and a log-probability is <= 0"
    return "they are not the log-probabilities of the actions taken"


def _gradient_ratio(got: Any, want: Any) -> float | None:
    """The one factor between the learner's accumulated gradients and the reference's, if there is one."""
    if not (isinstance(got, Mapping) and isinstance(want, Mapping)) or set(got) != set(want):
        return None
    g = torch.tensor([v for n in want for v in got[n]], dtype=torch.float64)
    w = torch.tensor([v for n in want for v in want[n]], dtype=torch.float64)
    if g.shape != w.shape or not bool(w.ne(0).any()):
        return None
    ratio = float((g @ w) / (w @ w))
    return ratio if torch.allclose(g, ratio * w, rtol=1e-3, atol=1e-5) else None


def _step_mistake(args: tuple[Any, ...], got: Any, want: Any) -> str | None:
    spec = args[0]
    where = _first_difference(got, want)
    if where is None or where[1] not in _NAMED:
        return None
    g, w, at = _values_at(got, want, where)
    named = _NAMED[where[1]](spec, g, w, where[0])
    return named if where[0] == 0 else f"{named} (first seen at {at})"


def _gradients_when_returned(spec: Any, g: Any, w: Any, i: int) -> str:
    if isinstance(g, str) and g.startswith("cleared"):
        return (
            "your step wipes the gradients the earlier micro-batches of this mini-batch accumulated: the engine "
            "sums every micro-batch's gradient and clears them only after the optimizer step, never inside a step"
        )
    return (
        "your step writes into the parameters' gradients itself (it runs a backward, or sets .grad): the engine "
        "runs its own backward on the loss you return, so every gradient would be counted twice"
    )


def _accumulated(spec: Any, g: Any, w: Any, i: int) -> str:
    ratio = _gradient_ratio(g, w)
    if ratio is not None and abs(ratio - round(ratio)) < 1e-3 and round(ratio) > 1:
        return f"the gradients over the mini-batch are {round(ratio)} times the engine's: a loss is counted twice"
    if ratio is not None and abs(ratio) < 1e-6:
        return "no gradient reaches the parameters over the mini-batch: the loss is cut from the graph"
    return (
        "the gradients summed over the mini-batch are not the engine's: each micro-batch's loss must reach the "
        "parameters through the log-probs it was built from, and add its gradient once"
    )


def _batch_given(spec: Any, g: Any, w: Any, i: int) -> str:
    return (
        f"loss_function was handed {g} as its micro-batch, not the micro-batch you were given: verl's losses read "
        "many of its entries (masks, old log-probs, advantages), so hand it the caller's micro_batch"
    )


def _live_kept(spec: Any, g: Any, w: Any, i: int) -> str:
    return (
        f"{g} live tensors or activations saved for backward by your steps are still reachable after the engine "
        "let go of the mini-batch: your step keeps a tensor with a graph somewhere else (a global, the policy, a "
        "default argument), which pins that graph as a stored output would; keep only what has no graph"
    )


_NAMED: dict[str, Callable[[Any, Any, Any, int], str]] = {
    "returns": lambda s, g, w, i: "return a pair (loss, output) where output is a dict holding 'model_output'",
    "loss_function calls": lambda s, g, w, i: f"call loss_function exactly once per step (it was called {_times(g)})",
    "model_output given to loss_function": lambda s, g, w, i: (
        f"loss_function was handed {g}, not a dict: it takes the model output as a dict of named tensors, "
        "as the exercise writes the call (verl's losses read model_output by key)"
    ),
    "log_probs given to loss_function": lambda s, g, w, i: (
        f"the log_probs given to loss_function are wrong: {_log_probs_mistake(s, g, i)}"
    ),
    "micro_batch given to loss_function": _batch_given,
    "loss requires grad": lambda s, g, w, i: (
        "the returned loss does not require grad: backward cannot reach the policy's parameters"
    ),
    "loss value": lambda s, g, w, i: (
        "the returned loss is not the one loss_function built from your log-probs and the micro-batch: "
        "return its loss as it is"
    ),
    "gradients when the step returns": _gradients_when_returned,
    "policy after the step": lambda s, g, w, i: (
        f"your step changed the policy ({g}): the engine owns the policy's mode, its parameters and their updates"
    ),
    "grad mode after the step": lambda s, g, w, i: (
        f"your step left autograd {g} for everyone after it: the engine's next forward would build no graph; "
        "whatever you switch off inside the step, switch back before it returns"
    ),
    "stored model_output": lambda s, g, w, i: (
        f"you stored {g} under 'model_output', not a dict: the engine merges the stored outputs key by key "
        "at the end of the mini-batch (lesson 01's consume_store), so what is stored is a dict of named "
        "tensors, like the one the loss read"
    ),
    "stored log_probs": lambda s, g, w, i: (
        f"the stored log_probs are not what the loss read: {_log_probs_mistake(s, g, i)}"
    ),
    "stored tensors still requiring grad": lambda s, g, w, i: (
        f"{_paths(g)} still require grad: what the engine keeps until the mini-batch ends would pin each "
        "micro-batch's autograd graph"
    ),
    "micro_batch after the step": lambda s, g, w, i: (
        "your step wrote a tensor that requires grad into the caller's micro_batch: the engine keeps every "
        "micro-batch until the mini-batch ends, so that tensor pins this micro-batch's autograd graph as a "
        "stored output would; leave the micro_batch as it was"
        if isinstance(g, str) and "requires grad" in g
        else "your step changed the caller's micro_batch: leave it as it was (the engine keeps it after the step)"
    ),
    "metrics stored": lambda s, g, w, i: "store the metrics loss_function returned under 'metrics'",
    "the engine's backward": lambda s, g, w, i: (
        f"the engine's own backward on your loss failed ({g}): your step already used up the loss's graph"
    ),
    "held by the engine, still requiring grad": lambda s, g, w, i: (
        f"at the end of the mini-batch the engine holds tensors that require grad ({_paths(g)}): a step changed "
        "what it returned or the micro-batch after returning it"
    ),
    "live tensors kept after the mini-batch": _live_kept,
    "parameters without a gradient": lambda s, g, w, i: (
        f"{_paths(g)} got no (or an all-zero) gradient: its loss term is cut from the graph"
    ),
    "accumulated gradients": _accumulated,
    "parameters after the optimizer step": lambda s, g, w, i: (
        "the parameters after the optimizer step are not the engine's: something in your step changes them"
    ),
}
