"""Lesson 02's exercise checkers: 2.1 writes detach_tree, 2.2 places it in a forward step.

A notebook reaches them only as check_exercise("N.M", answer); the library's own detach_tree (the
course's, or verl's loaded from source) is refused as an answer to 2.1. A wrong answer's message names
the mistake it shows; how to get there is each checker's `method`, shown after repeated tries or by
`exercise_hint`.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import torch
from torch import nn

from verlstudy.common.trees import detach_tree, detach_tree_always, grad_attached_paths
from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.kit.resources import data_dir


@checker(
    "2.1",
    library_answers=[detach_tree, detach_tree_always],
    method=(
        "recurse on the type of obj: a torch.Tensor comes back as obj.detach() if obj.requires_grad (a leaf "
        "that requires grad has no grad_fn, so test requires_grad), else as obj itself; a dict becomes "
        "{k: recurse(v) for k, v in obj.items()}; a list or tuple becomes type(obj)(recurse(v) for v in obj); "
        "anything else comes back unchanged. Build new containers, never assign into the input"
    ),
    reveals=[
        "`type(obj)(generator)`",
        "new tensor object per leaf per micro-batch; the identity rule makes none",
        "it would miss a nested container and a leaf that requires grad",
    ],
)
def check_detach_tree(fn: Any) -> str:
    """Exercise checker: does `fn` follow detach_tree's rules? Raises ExerciseFailure naming the mistake."""
    if not callable(fn):
        raise TypeError(f"pass your function itself, got {type(fn).__name__}")
    live_t = torch.ones(2, requires_grad=True) * 2
    top = torch.ones(2, requires_grad=True) * 3
    plain = torch.ones(2)
    leaf = torch.ones(3, requires_grad=True)  # requires grad but has no grad_fn
    tree = {"top": top, "log_probs": [live_t, plain], "pair": (plain, "text", 3), "meta": None, "leaf": leaf}
    out = fn(tree)
    if not isinstance(out, dict) or set(out) != set(tree):
        raise ExerciseFailure("a dict must come back as a new dict with the same keys")
    if out is tree:
        raise ExerciseFailure("you handed back the input dict itself: a new dict must come back")
    if tree["log_probs"][0] is not live_t or tree["top"] is not top or not live_t.requires_grad:
        raise ExerciseFailure("the input was mutated: your function assigned into the caller's containers")
    if type(out["log_probs"]) is not list or type(out["pair"]) is not tuple:
        got = f"{type(out['log_probs']).__name__} and {type(out['pair']).__name__}"
        raise ExerciseFailure(f"a list and a tuple came back as {got}: lists must stay lists and tuples stay tuples")
    if len(out["log_probs"]) != 2 or len(out["pair"]) != 3:
        raise ExerciseFailure("a container came back with fewer elements: every element must come back")
    first, second = out["log_probs"]
    if not isinstance(out["top"], torch.Tensor) or out["top"].requires_grad:
        raise ExerciseFailure("a tensor with a grad_fn came back still requiring grad: it must come back detached")
    if not isinstance(first, torch.Tensor) or first.requires_grad:
        raise ExerciseFailure(
            "the tensor inside a list still requires grad, though the top-level one came back detached: "
            "your function does not reach into nested containers"
        )
    if not torch.equal(first, live_t.detach()):
        raise ExerciseFailure("the detached tensor holds other values: detaching must keep the values")
    if first.data_ptr() != live_t.data_ptr():
        raise ExerciseFailure(
            "the detached tensor does not share storage with the original: a copy allocates the bytes again "
            "for every stored output"
        )
    if not isinstance(out["leaf"], torch.Tensor) or out["leaf"].requires_grad:
        raise ExerciseFailure(
            "a leaf tensor that requires grad (it has no grad_fn) came back still attached: it must be detached too"
        )
    if second is not plain or out["pair"][0] is not plain:
        raise ExerciseFailure(
            "an already-detached tensor came back as a new tensor object: it must come back as the same object"
        )
    if out["pair"][1:] != ("text", 3) or out["meta"] is not None:
        raise ExerciseFailure("non-tensor leaves (strings, ints, None) must come back unchanged")
    return ""


def _from_example_engines(fn: Any) -> bool:
    # The notebook loads data/engines/*.py, whose forward_step has the exercise's signature.
    try:
        source = inspect.getsourcefile(fn)
    except TypeError:
        return False
    return source is not None and Path(source).resolve().parent == (data_dir() / "engines").resolve()


def _log_probs_mistake(got: torch.Tensor, logits: torch.Tensor, actions: torch.Tensor) -> str:
    """What a wrong set of per-action values is, named without how to compute the right one."""
    take = actions[:, None]
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
    got = got.detach().float()
    for name, value in variants.items():
        if torch.allclose(got, value, atol=1e-5):
            return f": {name}"
    if bool((got > 1e-6).any()):
        return " (some are > 0: a log-probability is <= 0)"
    return ""


def _check_log_probs(
    got: object, expected: torch.Tensor, what: str, logits: torch.Tensor, actions: torch.Tensor
) -> None:
    if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
        shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
        raise ExerciseFailure(
            f"{what} must be one log-probability per action, shape {tuple(expected.shape)}, got {shape}"
        )
    if not torch.allclose(got.detach().float(), expected, atol=1e-5):
        raise ExerciseFailure(
            f"{what} are not the log-probabilities of the taken actions{_log_probs_mistake(got, logits, actions)}; "
            f"expected {[round(v, 3) for v in expected.tolist()]}, got {[round(v, 3) for v in got.detach().tolist()]}"
        )


@checker(
    "2.2",
    method=(
        "take log_softmax of policy(micro_batch['states']) over the last (action) dimension, gather it at "
        "micro_batch['actions'][:, None] and squeeze(-1); pass {'log_probs': those} to loss_function live, not "
        "detached, so the loss keeps its gradient; only then detach what you store: return "
        "(loss, {'model_output': detach_tree(model_output), 'metrics': metrics})"
    ),
    reveals=[
        "(right: stored = detach_tree(model_output) here)",
        "where the output is stored, after the loss is built",
    ],
)
def check_forward_step(fn: Any) -> str:
    """Exercise checker: `fn(policy, micro_batch, loss_function)` must return (live loss, detached output).

    Runs the learner's step on a tiny policy, compares the log-probs the loss received and the ones
    stored with the true ones, and applies the full contract: the loss requires grad, nothing stored
    requires grad, and every parameter gets a non-zero gradient.
    """
    if not callable(fn):
        raise TypeError(f"pass your function itself, got {type(fn).__name__}")
    if _from_example_engines(fn):
        raise ExerciseFailure("that is one of the example engines from data/engines: write your own forward_step")
    gen = torch.Generator().manual_seed(0)
    policy = nn.Sequential(nn.Embedding(3, 4), nn.Linear(4, 5))
    with torch.no_grad():
        for p in policy.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    batch = {"states": torch.tensor([0, 1, 2, 1]), "actions": torch.tensor([4, 0, 1, 2])}
    with torch.no_grad():
        logits = policy(batch["states"])
        expected = torch.log_softmax(logits, dim=-1).gather(-1, batch["actions"][:, None]).squeeze(-1)
    received: list[object] = []

    def loss_function(model_output: dict[str, Any], micro_batch: dict[str, Any]) -> tuple[torch.Tensor, dict]:
        received.append(model_output.get("log_probs") if isinstance(model_output, dict) else model_output)
        loss = -model_output["log_probs"].mean()
        return loss, {"pg_loss": loss.detach().item()}

    result = fn(policy, batch, loss_function)
    if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict)):
        raise ExerciseFailure("return a pair (loss, output) where output is a dict holding 'model_output'")
    loss, output = result
    if "model_output" not in output:
        raise ExerciseFailure("the output dict must store the step's outputs under 'model_output'")
    if len(received) != 1:
        raise ExerciseFailure(f"call loss_function exactly once per step (it was called {len(received)} times)")
    actions = batch["actions"]
    _check_log_probs(received[0], expected, "the log_probs given to loss_function", logits, actions)
    stored = output["model_output"]
    stored_log_probs = stored.get("log_probs") if isinstance(stored, dict) else stored
    _check_log_probs(stored_log_probs, expected, "the stored log_probs", logits, actions)
    if not isinstance(loss, torch.Tensor):
        raise ExerciseFailure(f"the returned loss must be a torch.Tensor, got {type(loss).__name__}")
    if not loss.requires_grad:
        raise ExerciseFailure("the returned loss does not require grad: backward cannot reach the policy's parameters")
    attached = grad_attached_paths(output, "output")
    if attached:
        raise ExerciseFailure(
            f"{', '.join(attached)} still require grad: the stored output would pin each micro-batch's autograd graph"
        )
    loss.backward()
    for name, p in policy.named_parameters():
        if p.grad is None or not bool(p.grad.ne(0).any()):
            raise ExerciseFailure(
                f"policy.{name} got no (or an all-zero) gradient: its loss term is cut from the graph"
            )
    return ""
