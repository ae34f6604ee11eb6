"""Exercise 2.2's named cases and messages: how a summary of the engine's loop reads, and the mistake it shows.

`_show_steps` shows the first part of the contract where the learner's step and the reference's differ, on the
first micro-batch (or mini-batch) where they do; `_step_mistake` names the mistake from what was observed there,
never how to write the step.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import torch

from verlstudy.kit import i18n
from verlstudy.kit.properties import Case
from verlstudy.lessons.l02_detach.step_cases import (
    _ROUNDS,
    _first_difference,
    _step_world,
    _values_at,
)


def _times(n: Any) -> str:
    return i18n.pick("{n} time", n=n) if n == 1 else i18n.pick("{n} times", n=n)


def _paths(paths: Any) -> str:
    return ", ".join(paths) if isinstance(paths, list) and paths else i18n._("none")


def _value(value: Any) -> str:
    """An observed value as the message shows it: the loop's fixed descriptions ("untouched", "ran" ...) are
    recorded in English and translated here; a value with data in it reads as recorded."""
    return i18n._(value) if isinstance(value, str) else str(value)


def _log_probs_shown(value: Any) -> str:
    if isinstance(value, str):
        return i18n.pick("a step that hands loss_function log_probs that are {value}", value=_value(value))
    return i18n.pick("a step that hands loss_function the log_probs {value}", value=value)


def _stored_log_probs_shown(value: Any) -> str:
    if isinstance(value, str):
        return i18n.pick("a step that stores log_probs that are {value}", value=_value(value))
    return i18n.pick("a step that stores the log_probs {value}", value=value)


def _tensors_shown(value: Any) -> str:
    if not isinstance(value, Mapping):
        return str(value)
    return "; ".join(f"{name} {values[:4]}{' ...' if len(values) > 4 else ''}" for name, values in value.items())


def _shown(template: str) -> Callable[[Any], str]:
    """How one observed value reads in a message: `template` with the value as {v}, translated."""
    return lambda v: i18n.pick(template, v=_value(v))


# How a message shows one part of a step: (the learner's step, the expected value). The kit prints
# "forward_step on <the input> returned <the first>; expected <the second> there".
_SHOWN: dict[str, tuple[Callable[[Any], str], Callable[[Any], str]]] = {
    "returns": (_value, _value),
    "loss_function calls": (lambda v: i18n.pick("a step that calls loss_function {times}", times=_times(v)), _times),
    "model_output given to loss_function": (_shown("a step that hands loss_function {v}"), _value),
    "log_probs given to loss_function": (_log_probs_shown, _value),
    "micro_batch given to loss_function": (_shown("a step that hands loss_function {v} as its micro-batch"), _value),
    "gradients when the step returns": (
        _shown("a step that leaves the gradients {v}"),
        _shown("the gradients {v} until the engine's backward"),
    ),
    "policy after the step": (_shown("a step that leaves the policy {v}"), _value),
    "grad mode after the step": (_shown("a step that leaves autograd {v}"), _value),
    "stored model_output": (_shown("a step that stores {v} under 'model_output'"), _value),
    "stored log_probs": (_stored_log_probs_shown, _value),
    "loss requires grad": (
        lambda v: i18n._("a loss that requires grad") if v is True else i18n._("a loss that does not require grad"),
        lambda v: i18n._("one that requires grad") if v is True else i18n._("one that does not"),
    ),
    "loss value": (_shown("a loss of {v}"), _value),
    "stored tensors still requiring grad": (
        lambda v: i18n.pick("a step that stores tensors requiring grad: {paths}", paths=_paths(v)),
        _paths,
    ),
    "micro_batch after the step": (_shown("a step that leaves the caller's micro_batch {v}"), _value),
    "metrics stored": (
        lambda v: (
            i18n._("a step that stores loss_function's metrics")
            if v is True
            else i18n._("a step without loss_function's metrics under 'metrics'")
        ),
        lambda v: i18n._("them stored") if v is True else i18n._("none"),
    ),
    "the engine's backward": (_shown("a loss on which the engine's own backward {v}"), _value),
    "held by the engine, still requiring grad": (
        lambda v: i18n.pick(
            "a mini-batch whose outputs and micro-batches, held by the engine, require grad at {paths}", paths=_paths(v)
        ),
        _paths,
    ),
    "live tensors kept after the mini-batch": (
        _shown("a step that keeps {v} live tensors or saved activations after the engine let go of them"),
        _shown("{v} kept"),
    ),
    "parameters without a gradient": (
        lambda v: i18n.pick("a step that leaves these parameters without a gradient: {paths}", paths=_paths(v)),
        _paths,
    ),
    "accumulated gradients": (
        lambda v: i18n.pick("gradients over the mini-batch of {values}", values=_tensors_shown(v)),
        _tensors_shown,
    ),
    "parameters after the optimizer step": (
        lambda v: i18n.pick("parameters after the optimizer step of {values}", values=_tensors_shown(v)),
        _tensors_shown,
    ),
}


def _show_steps(got: Any, want: Any) -> tuple[str, str]:
    """How a message shows two runs: the first part where they differ, each as `_SHOWN` writes it."""
    where = _first_difference(got, want)
    if where is None:
        return i18n._("a step that keeps the contract"), i18n._("a step that keeps the contract")
    learners, references = _SHOWN[where[1]]
    g, w, _ = _values_at(got, want, where)
    return learners(g), references(w)


def _show_step(args: tuple[Any, ...], kwargs: Any) -> str:
    n_states, hidden, n_actions, batch, _seed, weighted, n_micro = args[0]
    template = (
        "forward_step in the engine's loop ({rounds} mini-batches of {micro} micro-batches of {batch}, the engine's "
        "backward after each step, then an optimizer step) on a policy of {states} states and {actions} actions "
        "(hidden {hidden}), a loss_function that weights each log-prob by micro_batch['advantages']"
        if weighted
        else "forward_step in the engine's loop ({rounds} mini-batches of {micro} micro-batches of {batch}, the "
        "engine's backward after each step, then an optimizer step) on a policy of {states} states and {actions} "
        "actions (hidden {hidden}), a loss_function that is minus the mean log-prob"
    )
    return i18n.pick(
        template,
        rounds=_ROUNDS,
        micro=n_micro,
        batch=batch,
        states=n_states,
        actions=n_actions,
        hidden=hidden,
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
            return i18n._("on a one-sequence micro-batch the shape is wrong: keep one log-probability per sequence")
        if got.startswith("a tensor of shape"):
            return i18n.pick("they must be one log-probability per action taken, shape ({batch},)", batch=spec[3])
        return i18n._("they must be a tensor of log-probabilities")
    policy, micro_batches, _ = _step_world(spec)
    if event >= len(micro_batches):
        return i18n._("they are not the log-probabilities of the actions taken")
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
            return i18n._(name)
    if bool((values > 1e-6).any()):
        return i18n._("some are > 0, and a log-probability is <= 0")
    return i18n._("they are not the log-probabilities of the actions taken")


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
    return named if where[0] == 0 else i18n.pick("{named} (first seen at {at})", named=named, at=_where_shown(at))


def _where_shown(at: str) -> str:
    """Where an event was seen, as the loop records it ("mini-batch 2, micro-batch 1", "the end of mini-batch 1")."""
    step = re.fullmatch(r"mini-batch (\d+), micro-batch (\d+)", at)
    if step:
        return i18n.pick("mini-batch {round}, micro-batch {micro}", round=step[1], micro=step[2])
    end = re.fullmatch(r"the end of mini-batch (\d+)", at)
    return i18n.pick("the end of mini-batch {round}", round=end[1]) if end else at


def _gradients_when_returned(spec: Any, g: Any, w: Any, i: int) -> str:
    if isinstance(g, str) and g.startswith("cleared"):
        return i18n._(
            "your step wipes the gradients the earlier micro-batches of this mini-batch accumulated: the engine "
            "sums every micro-batch's gradient and clears them only after the optimizer step, never inside a step"
        )
    return i18n._(
        "your step writes into the parameters' gradients itself (it runs a backward, or sets .grad): the engine "
        "runs its own backward on the loss you return, so every gradient would be counted twice"
    )


def _accumulated(spec: Any, g: Any, w: Any, i: int) -> str:
    ratio = _gradient_ratio(g, w)
    if ratio is not None and abs(ratio - round(ratio)) < 1e-3 and round(ratio) > 1:
        return i18n.pick(
            "the gradients over the mini-batch are {ratio} times the engine's: a loss is counted twice",
            ratio=round(ratio),
        )
    if ratio is not None and abs(ratio) < 1e-6:
        return i18n._("no gradient reaches the parameters over the mini-batch: the loss is cut from the graph")
    return i18n._(
        "the gradients summed over the mini-batch are not the engine's: each micro-batch's loss must reach the "
        "parameters through the log-probs it was built from, and add its gradient once"
    )


def _batch_given(spec: Any, g: Any, w: Any, i: int) -> str:
    return i18n.pick(
        "loss_function was handed {given} as its micro-batch, not the micro-batch you were given: verl's losses read "
        "many of its entries (masks, old log-probs, advantages), so hand it the caller's micro_batch",
        given=_value(g),
    )


def _live_kept(spec: Any, g: Any, w: Any, i: int) -> str:
    return i18n.pick(
        "{count} live tensors or activations saved for backward by your steps are still reachable after the engine "
        "let go of the mini-batch: your step keeps a tensor with a graph somewhere else (a global, the policy, a "
        "default argument), which pins that graph as a stored output would; keep only what has no graph",
        count=g,
    )


_NAMED: dict[str, Callable[[Any, Any, Any, int], str]] = {
    "returns": lambda s, g, w, i: i18n._("return a pair (loss, output) where output is a dict holding 'model_output'"),
    "loss_function calls": lambda s, g, w, i: i18n.pick(
        "call loss_function exactly once per step (it was called {times})", times=_times(g)
    ),
    "model_output given to loss_function": lambda s, g, w, i: i18n.pick(
        "loss_function was handed {given}, not a dict: it takes the model output as a dict of named tensors, as the "
        "exercise writes the call (verl's losses read model_output by key)",
        given=_value(g),
    ),
    "log_probs given to loss_function": lambda s, g, w, i: i18n.pick(
        "the log_probs given to loss_function are wrong: {why}", why=_log_probs_mistake(s, g, i)
    ),
    "micro_batch given to loss_function": _batch_given,
    "loss requires grad": lambda s, g, w, i: i18n._(
        "the returned loss does not require grad: backward cannot reach the policy's parameters"
    ),
    "loss value": lambda s, g, w, i: i18n._(
        "the returned loss is not the one loss_function built from your log-probs and the micro-batch: "
        "return its loss as it is"
    ),
    "gradients when the step returns": _gradients_when_returned,
    "policy after the step": lambda s, g, w, i: i18n.pick(
        "your step changed the policy ({change}): the engine owns the policy's mode, its parameters and their updates",
        change=_value(g),
    ),
    "grad mode after the step": lambda s, g, w, i: i18n.pick(
        "your step left autograd {mode} for everyone after it: the engine's next forward would build no graph; "
        "whatever you switch off inside the step, switch back before it returns",
        mode=_value(g),
    ),
    "stored model_output": lambda s, g, w, i: i18n.pick(
        "you stored {stored} under 'model_output', not a dict: the engine merges the stored outputs key by key at "
        "the end of the mini-batch (lesson 01's consume_store), so what is stored is a dict of named tensors, like "
        "the one the loss read",
        stored=_value(g),
    ),
    "stored log_probs": lambda s, g, w, i: i18n.pick(
        "the stored log_probs are not what the loss read: {why}", why=_log_probs_mistake(s, g, i)
    ),
    "stored tensors still requiring grad": lambda s, g, w, i: i18n.pick(
        "{paths} still require grad: what the engine keeps until the mini-batch ends would pin each micro-batch's "
        "autograd graph",
        paths=_paths(g),
    ),
    "micro_batch after the step": lambda s, g, w, i: (
        i18n._(
            "your step wrote a tensor that requires grad into the caller's micro_batch: the engine keeps every "
            "micro-batch until the mini-batch ends, so that tensor pins this micro-batch's autograd graph as a "
            "stored output would; leave the micro_batch as it was"
        )
        if isinstance(g, str) and "requires grad" in g  # the loop's record, English in every language
        else i18n._(
            "your step changed the caller's micro_batch: leave it as it was (the engine keeps it after the step)"
        )
    ),
    "metrics stored": lambda s, g, w, i: i18n._("store the metrics loss_function returned under 'metrics'"),
    "the engine's backward": lambda s, g, w, i: i18n.pick(
        "the engine's own backward on your loss failed ({failure}): your step already used up the loss's graph",
        failure=_value(g),
    ),
    "held by the engine, still requiring grad": lambda s, g, w, i: i18n.pick(
        "at the end of the mini-batch the engine holds tensors that require grad ({paths}): a step changed what it "
        "returned or the micro-batch after returning it",
        paths=_paths(g),
    ),
    "live tensors kept after the mini-batch": _live_kept,
    "parameters without a gradient": lambda s, g, w, i: i18n.pick(
        "{paths} got no (or an all-zero) gradient: its loss term is cut from the graph", paths=_paths(g)
    ),
    "accumulated gradients": _accumulated,
    "parameters after the optimizer step": lambda s, g, w, i: i18n._(
        "the parameters after the optimizer step are not the engine's: something in your step changes them"
    ),
}
