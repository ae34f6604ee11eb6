"""Lesson 02's exercise checkers: 2.1 writes detach_tree, 2.2 places it in a forward step.

Both judge by property (`verlstudy.kit.properties`). Tensors with a `grad_fn` cannot be deep-copied, so
an input is drawn as a *description* (a tree of tensor kinds and plain values, a policy's sizes); the
checker builds fresh tensors from it for every call and compares what the learner's function made of
them with what the reference makes, as a summary (which leaf came back detached, the same object, a
copy ...). A notebook reaches them only as check_exercise("N.M", answer); the library's own detach_tree
(the course's, or verl's loaded from source) is refused as an answer to 2.1.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from verlstudy.common.trees import detach_tree, detach_tree_always, grad_attached_paths
from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.kit.properties import Case, compare_on_inputs, one_thread
from verlstudy.kit.resources import data_dir

# ---------------------------------------------------------------- 2.1 detach_tree


@dataclass(frozen=True)
class T:
    """A tensor in a drawn tree: 'live' (has a grad_fn), 'leaf' (requires grad, no grad_fn), 'plain', 'ints'."""

    kind: str

    def __repr__(self) -> str:
        return {"live": "<live tensor>", "leaf": "<leaf tensor requiring grad>"}.get(self.kind, f"<{self.kind} tensor>")


def _build(spec: Any, counter: list[int]) -> Any:
    if isinstance(spec, T):
        counter[0] += 1
        k = float(counter[0])
        if spec.kind == "live":
            return torch.ones(2, requires_grad=True) * k
        if spec.kind == "leaf":
            return torch.full((2,), k, requires_grad=True)
        if spec.kind == "plain":
            return torch.full((2,), k)
        return torch.arange(2) + counter[0]
    if isinstance(spec, dict):
        return {key: _build(v, counter) for key, v in spec.items()}
    if isinstance(spec, list | tuple):
        return type(spec)(_build(v, counter) for v in spec)
    return spec


def _snapshot(obj: Any) -> list[Any]:
    """Identity and grad state of every container and tensor: compared before and after the learner's call."""
    if isinstance(obj, torch.Tensor):
        return [id(obj), obj.requires_grad]
    if isinstance(obj, dict):
        return [id(obj), [(k, _snapshot(v)) for k, v in obj.items()]]
    if isinstance(obj, list | tuple):
        return [id(obj), [_snapshot(v) for v in obj]]
    return [obj]


CHANGED_INPUT = "your function changed its input"
DETACHED_INPUT = "your function detached a tensor of its input in place"
STILL_ATTACHED = "same object, still requires grad"
LEAF_ATTACHED = "same object, still requires grad (a leaf tensor: no grad_fn)"


def _requires_grad_inside(obj: Any) -> bool:
    return bool(grad_attached_paths(obj))


def _summary(got: Any, orig: Any) -> Any:
    """What `got` is, leaf by leaf, relative to the input `orig` it was made from."""
    if isinstance(orig, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"a {type(got).__name__}, not a tensor"
        if got is orig:
            if not orig.requires_grad:
                return "same object"
            return LEAF_ATTACHED if orig.grad_fn is None else STILL_ATTACHED
        if got.dtype != orig.dtype:
            return f"a tensor of dtype {got.dtype}, not {orig.dtype}"
        if got.shape != orig.shape or not torch.equal(got.detach(), orig.detach()):
            return "a tensor with other values"
        if got.requires_grad:
            return "a new tensor that still requires grad"
        if got.data_ptr() != orig.data_ptr():
            return "a copy (new storage)"
        return "detached" if orig.requires_grad else "a new tensor object"
    if isinstance(orig, dict):
        if got is orig:
            return "the input dict itself"
        if not isinstance(got, Mapping):
            return f"a {type(got).__name__}"
        return {k: (_summary(v, orig[k]) if k in orig else "an unexpected key") for k, v in got.items()}
    if isinstance(orig, list | tuple):
        if got is orig and (isinstance(orig, list) or _requires_grad_inside(orig)):
            return f"the input {type(orig).__name__} itself"
        if not isinstance(got, list | tuple):
            return f"a {type(got).__name__}"
        return type(got)(_summary(g, o) for g, o in zip(got, orig, strict=False)) + type(got)(
            ["an extra item"] * (len(got) - len(orig))
        )
    if type(got) is type(orig) and got == orig:
        return orig
    shown = repr(got)
    return f"changed to {shown if ' at 0x' not in shown else 'a ' + type(got).__name__}"


class _TreeRun:
    """Builds the drawn tree, hands it to `fn` and summarises the result (what compare_on_inputs compares)."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def __call__(self, spec: Any) -> Any:
        tree = _build(spec, [0])
        before = _snapshot(tree)
        try:
            got = self.fn(tree)
        except RuntimeError as e:
            if "deepcopy" not in str(e):
                raise
            raise RuntimeError(
                f"{str(e).split('.')[0]} (a deep copy of the whole tree fails on tensors that are part of a "
                "graph, and would allocate every tensor again anyway: build new containers around the same tensors)"
            ) from None
        after = _snapshot(tree)
        if after != before:
            return DETACHED_INPUT if _same_containers(after, before) else CHANGED_INPUT
        return _summary(got, tree)


def _same_containers(after: Any, before: Any) -> bool:
    """Two snapshots that differ only in some tensor's requires_grad (a tensor detached in place)."""
    flat_after, flat_before = _flatten_ids(after), _flatten_ids(before)
    return flat_after == flat_before


def _flatten_ids(snap: Any) -> list[Any]:
    if isinstance(snap, list) and len(snap) == 2 and isinstance(snap[1], bool):
        return [snap[0]]  # a tensor: its identity only, not its requires_grad
    if isinstance(snap, list) and len(snap) == 2 and isinstance(snap[1], list):
        return [snap[0], *[_flatten_ids(v[1] if isinstance(v, tuple) else v) for v in snap[1]]]
    return [snap]


def _reference_detach_tree(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: _reference_detach_tree(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_reference_detach_tree(v) for v in obj)
    return obj


def _tree_inputs() -> Any:
    from hypothesis import strategies as st

    leaves = st.one_of(
        st.sampled_from([T("live"), T("live"), T("leaf"), T("plain"), T("ints")]),
        st.sampled_from(["text", 3, None, 2.5, True]),
    )
    keys = st.sampled_from(["log_probs", "entropy", "mask", "meta", "a", "b"])
    trees = st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.lists(inner, max_size=3).map(tuple),
            st.dictionaries(keys, inner, max_size=3),
        ),
        max_leaves=8,
    )
    return st.tuples(trees)


def _show_tree(args: tuple[Any, ...], kwargs: Any) -> str:
    return f"my_detach_tree({args[0]!r})"


TREE_CASES = (
    Case(({"log_probs": T("live"), "mask": T("plain"), "meta": ("step", 3)},), "an engine-like output dict"),
    Case(({"log_probs": [T("live"), T("plain")]},), "a tensor that requires grad inside a list"),
    Case(({"pair": (T("live"), "text", 3)},), "a tuple holding a live tensor"),
    Case(({"leaf": T("leaf")},), "a leaf that requires grad: it has no grad_fn"),
    Case(({"a": {"b": [(T("live"),)]}},), "depth 4: dict, dict, list, tuple"),
    Case(({"mask": T("plain"), "ids": T("ints")},), "already detached: the same objects must come back"),
    Case(({"meta": None, "step": 3, "name": "text"},), "no tensors at all"),
    Case(([T("plain"), [T("plain")]],), "a list of detached tensors: still a new list"),
    Case((T("live"),), "a bare tensor, no container"),
)


def _first_difference(got: Any, want: Any, trail: tuple[str, ...] = ()) -> tuple[tuple[str, ...], Any, Any] | None:
    """The first place where two summaries differ: (the container types above it, got there, want there)."""
    if isinstance(want, Mapping) and isinstance(got, Mapping):
        if set(got) != set(want):
            return trail, got, want
        for key in want:
            found = _first_difference(got[key], want[key], (*trail, "dict"))
            if found:
                return found
        return None
    if isinstance(want, list | tuple) and isinstance(got, list | tuple):
        if type(got) is not type(want) or len(got) != len(want):
            return trail, got, want
        for g, w in zip(got, want, strict=True):
            found = _first_difference(g, w, (*trail, type(want).__name__))
            if found:
                return found
        return None
    return None if (type(got) is type(want) and got == want) else (trail, got, want)


def _tree_mistake(args: tuple[Any, ...], got: Any, want: Any) -> str | None:
    if got == CHANGED_INPUT:
        return "the input was mutated: your function assigned into the caller's containers; build new ones"
    if got == DETACHED_INPUT:
        return (
            "a tensor of the caller's input no longer requires grad: detaching in place (detach_(), or setting "
            "requires_grad) changes the caller's tensor; leave the input as it was and return new values"
        )
    found = _first_difference(got, want)
    if found is None:
        return None
    trail, g, w = found
    nested = len(trail) >= 2
    if isinstance(w, Mapping) and isinstance(g, Mapping):
        return "every key must come back, and no other: a dict comes back as a new dict with the same keys"
    if isinstance(w, list | tuple) and isinstance(g, list | tuple):
        if type(g) is not type(w):
            return f"a {type(w).__name__} came back as a {type(g).__name__}: lists must stay lists and tuples tuples"
        return "a container came back with another number of elements: every element must come back"
    if g == "the input dict itself":
        return "you handed back the input dict itself: a new dict must come back"
    if g == "the input list itself":
        where = "a nested list" if trail else "the list"
        return f"{where} came back as the input's own list: build a new list, and reach into nested containers"
    if g == "the input tuple itself":
        return "a tuple came back untouched though a tensor inside it requires grad: tuples must be walked too"
    if g == LEAF_ATTACHED:
        return "a leaf tensor that requires grad (it has no grad_fn) came back still attached: it must be detached too"
    if g == STILL_ATTACHED:
        if trail and trail[-1] == "tuple":
            return "a tensor inside a tuple still requires grad: tuples must be walked like lists"
        if nested:
            return "a tensor in a nested container still requires grad: your function does not reach deep enough"
        return "a tensor with a grad_fn came back still requiring grad: it must come back detached"
    if g == "a new tensor that still requires grad":
        return "a new tensor came back that still requires grad: it must come back detached"
    if g == "a copy (new storage)":
        return "the detached tensor does not share storage with the original: a copy allocates the bytes again"
    if g == "a new tensor object":
        return "an already-detached tensor came back as a new tensor object: it must come back as the same object"
    if isinstance(g, str) and g.startswith("a tensor of dtype"):
        return "a tensor came back with another dtype: detaching keeps the dtype (integer tensors stay integer)"
    if g == "a tensor with other values":
        return "a tensor came back with other values: detaching must keep the values"
    if isinstance(g, str) and g.startswith("changed to"):
        return "non-tensor leaves (strings, numbers, None) must come back unchanged"
    if isinstance(g, str) and g.endswith("not a tensor"):
        return "a tensor came back as something else: a tensor must come back as a tensor"
    return None


@checker(
    "2.1",
    library_answers=[detach_tree, detach_tree_always],
    where=(
        "section 1's rules, one by one: which tensors are detached (and which come back untouched), which "
        "containers are rebuilt, and what happens to everything else"
    ),
    method=(
        "Write one function that looks at the kind of value it is given and calls itself on the parts. A tensor "
        "that requires grad comes back detached (test requires grad, not the grad_fn: a leaf has none); any "
        "other tensor comes back as the very same object. A dict comes back as a new dict with the same keys, "
        "each value passed through your function. A list or a tuple comes back as a new container of its own "
        "type, each element passed through. Everything else comes back as it is. Never assign into the input."
    ),
    reveals=[
        "`type(obj)(generator)`",
        "new tensor object per leaf per micro-batch; the identity rule makes none",
        "it would miss a nested container and a leaf that requires grad",
    ],
)
def check_detach_tree(fn: Any) -> str:
    """Exercise 2.1: does `fn` follow detach_tree's rules on every drawn tree? Raises ExerciseFailure if not."""
    if not callable(fn):
        raise TypeError(f"pass your function itself, got {type(fn).__name__}")
    return compare_on_inputs(
        _TreeRun(fn),
        _TreeRun(_reference_detach_tree),
        inputs=_tree_inputs(),
        edge_cases=TREE_CASES,
        mistakes=_tree_mistake,
        name="my_detach_tree",
        show=_show_tree,
        strict_types=True,
        max_examples=60,
    )


# ---------------------------------------------------------------- 2.2 forward_step


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


NOT_REACHED = "not reached"
STEP_KEYS = (
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
        summary: dict[str, Any] = _StepSummary(dict.fromkeys(STEP_KEYS, NOT_REACHED))
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


STEP_CASES = (
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
    for key in STEP_KEYS:
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


@checker(
    "2.2",
    where=(
        "lesson 01's store (the engine keeps the output until the mini-batch ends) and the contract this "
        "exercise states: which object backward needs attached, and which one must hold no graph"
    ),
    method=(
        "Compute the log-probabilities of the actions taken: normalise the policy's scores over the action "
        "dimension in log space, then pick, for each row, the entry of the action that row took. Put them in "
        "a dict under 'log_probs' and hand that dict, still attached, to loss_function, so the loss it builds "
        "keeps its graph. Only after the loss exists, make the copy you store: the same dict with every tensor "
        "that requires grad detached. Return the loss and a dict holding that stored copy and the metrics."
    ),
    reveals=[
        "(right: stored = detach_tree(model_output) here)",
        "where the output is stored, after the loss is built",
    ],
)
def check_forward_step(fn: Any) -> str:
    """Exercise 2.2: `fn(policy, micro_batch, loss_function)` must return (live loss, detached output).

    Runs the learner's step and the reference on tiny policies and compares what the contract looks at:
    the log-probs the loss received and the ones stored, the loss requiring grad, nothing stored
    requiring grad, the metrics kept, and every parameter getting a non-zero gradient.
    """
    if not callable(fn):
        raise TypeError(f"pass your function itself, got {type(fn).__name__}")
    if _from_example_engines(fn):
        raise ExerciseFailure("that is one of the example engines from data/engines: write your own forward_step")
    with one_thread():
        return _compare_steps(fn)


def _compare_steps(fn: Any) -> str:
    return compare_on_inputs(
        _StepRun(fn, "a step that breaks the contract"),
        _StepRun(_reference_forward_step, "one that keeps it"),
        inputs=_step_inputs(),
        edge_cases=STEP_CASES,
        mistakes=_step_mistake,
        name="forward_step",
        show=_show_step,
        rtol=1e-4,
        atol=1e-4,
        max_examples=30,
    )
