"""Lesson 02's exercise checkers: 2.1 writes detach_tree, 2.2 places it in a forward step.

A notebook reaches them only as check_exercise("N.M", answer); the library's own detach_tree (the
course's, or verl's loaded from source) is refused as an answer to 2.1.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import torch
from torch import nn

from verlstudy.common.trees import detach_tree, detach_tree_always
from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.kit.resources import data_dir
from verlstudy.lessons.l02_detach.trees import ContractError, assert_detached, assert_nonzero_grad, assert_requires_grad


@checker("2.1", library_answers=[detach_tree, detach_tree_always])
def check_detach_tree(fn: Any) -> str:
    """Exercise checker: does `fn` follow detach_tree's rules? Raises ExerciseFailure with a hint."""
    if not callable(fn):
        raise TypeError(f"pass your function itself, got {type(fn).__name__}")
    live_t = torch.ones(2, requires_grad=True) * 2
    plain = torch.ones(2)
    leaf = torch.ones(3, requires_grad=True)  # requires grad but has no grad_fn
    tree = {"log_probs": [live_t, plain], "pair": (plain, "text", 3), "meta": None, "leaf": leaf}
    out = fn(tree)
    if not isinstance(out, dict) or set(out) != set(tree):
        raise ExerciseFailure("a dict must come back as a new dict with the same keys")
    if out is tree:
        raise ExerciseFailure("return a new dict, do not hand back (or mutate) the input")
    if tree["log_probs"][0] is not live_t or not live_t.requires_grad:
        raise ExerciseFailure("the input was mutated: build new containers instead of assigning into the old ones")
    if type(out["log_probs"]) is not list or type(out["pair"]) is not tuple:
        raise ExerciseFailure("lists must stay lists and tuples stay tuples (rebuild with type(obj)(...))")
    if len(out["log_probs"]) != 2 or len(out["pair"]) != 3:
        raise ExerciseFailure("containers must keep every element (recurse into each one)")
    first, second = out["log_probs"]
    if not isinstance(first, torch.Tensor) or first.requires_grad:
        raise ExerciseFailure("a tensor that requires grad must come back detached (recurse into lists)")
    if not torch.equal(first, live_t.detach()):
        raise ExerciseFailure("detaching must keep the values: use .detach(), not a new tensor")
    if first.data_ptr() != live_t.data_ptr():
        raise ExerciseFailure(
            "the detached tensor must share storage with the original (.detach() is a view): a copy such as "
            ".detach().clone() allocates the bytes again for every stored output"
        )
    if not isinstance(out["leaf"], torch.Tensor) or out["leaf"].requires_grad:
        raise ExerciseFailure(
            "a leaf tensor that requires grad has no grad_fn and must be detached too: test requires_grad, "
            "not grad_fn (a grad_fn rule leaves such a leaf attached)"
        )
    if second is not plain or out["pair"][0] is not plain:
        raise ExerciseFailure(
            "an already-detached tensor must come back as the *same object*: calling .detach() on it "
            "creates a throwaway tensor per key per micro-batch"
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


def _check_log_probs(got: object, expected: torch.Tensor, what: str) -> None:
    if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
        shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
        raise ExerciseFailure(
            f"{what} must be one log-probability per action, shape {tuple(expected.shape)}, got {shape}: "
            "gather at micro_batch['actions'] and squeeze the last dimension"
        )
    if not torch.allclose(got.detach().float(), expected, atol=1e-5):
        hint = " (some are > 0: a log-probability is <= 0)" if bool((got > 1e-6).any()) else ""
        raise ExerciseFailure(
            f"{what} are not the log-probabilities of the taken actions{hint}: expected "
            f"{[round(v, 3) for v in expected.tolist()]}, got {[round(v, 3) for v in got.detach().tolist()]}. "
            "Take log_softmax over the action dimension (-1) of the logits, then gather the actions"
        )


@checker("2.2")
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
        expected = torch.log_softmax(policy(batch["states"]), dim=-1).gather(-1, batch["actions"][:, None]).squeeze(-1)
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
    _check_log_probs(received[0], expected, "the log_probs given to loss_function")
    stored = output["model_output"]
    _check_log_probs(stored.get("log_probs") if isinstance(stored, dict) else stored, expected, "the stored log_probs")
    try:
        assert_requires_grad(loss, "loss")
        assert_detached(output, "output")
        loss.backward()
        assert_nonzero_grad(policy.named_parameters(), "policy")
    except (ContractError, TypeError) as e:
        raise ExerciseFailure(f"{e}. Hint: compute the loss from the live outputs, detach only what you store") from e
    return ""
