"""Lesson 02's exercise checkers: 2.1 writes detach_tree, 2.2 places it in a forward step.

Both judge by property (`verlstudy.kit.properties`). Tensors with a `grad_fn` cannot be deep-copied, so
an input is drawn as a *description* (a tree of tensor kinds and plain values, a policy's sizes); the
checker builds fresh tensors from it for every call and compares what the learner's function made of
them with what the reference makes, as a summary (which leaf came back detached, the same object, a
copy ...). A notebook reaches them only as check_exercise("N.M", answer); the library's own detach_tree
(the course's, or verl's loaded from source) is refused as an answer to 2.1. The cases, references and
mistake names are in `tree_cases.py` (2.1) and `step_cases.py` (2.2).
"""

from __future__ import annotations

from typing import Any

from verlstudy.common.trees import detach_tree, detach_tree_always
from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.kit.properties import compare_on_inputs, one_thread
from verlstudy.lessons.l02_detach.step_cases import (
    _STEP_CASES,
    _STEP_TOLERANCE,
    _from_example_engines,
    _reference_forward_step,
    _show_step,
    _show_steps,
    _step_inputs,
    _step_mistake,
    _StepRun,
)
from verlstudy.lessons.l02_detach.tree_cases import (
    _TREE_CASES,
    _reference_detach_tree,
    _show_summaries,
    _show_tree,
    _tree_inputs,
    _tree_mistake,
    _TreeRun,
)

# ---------------------------------------------------------------- 2.1 detach_tree


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
        edge_cases=_TREE_CASES,
        mistakes=_tree_mistake,
        name="my_detach_tree",
        show=_show_tree,
        describe=_show_summaries,
        strict_types=True,
        max_examples=60,
    )


# ---------------------------------------------------------------- 2.2 forward_step


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
    the dict the loss received and the dict stored with the log-probs in each, the loss requiring grad,
    nothing stored requiring grad, the caller's micro_batch left as it was, the metrics kept, and every
    parameter getting a non-zero gradient.
    """
    if not callable(fn):
        raise TypeError(f"pass your function itself, got {type(fn).__name__}")
    if _from_example_engines(fn):
        raise ExerciseFailure("that is one of the example engines from data/engines: write your own forward_step")
    with one_thread():
        return _compare_steps(fn)


def _compare_steps(fn: Any) -> str:
    return compare_on_inputs(
        _StepRun(fn),
        _StepRun(_reference_forward_step),
        inputs=_step_inputs(),
        edge_cases=_STEP_CASES,
        mistakes=_step_mistake,
        name="forward_step",
        show=_show_step,
        describe=_show_steps,
        **_STEP_TOLERANCE,
        max_examples=30,
    )
