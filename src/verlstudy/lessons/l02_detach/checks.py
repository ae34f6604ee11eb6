"""Lesson 02's exercise checkers: 2.1 writes detach_tree, 2.2 places it in a forward step.

Both judge by property (`verlstudy.kit.properties`). Tensors with a `grad_fn` cannot be deep-copied, so
an input is drawn as a *description* (a tree of tensor kinds and plain values; a policy's sizes and its
micro-batches); the checker builds fresh tensors from it for every call and compares what the learner's
function made of them with what the reference makes, as a summary (which leaf came back detached, the same
object, a copy; what the engine's loop saw ...). A notebook reaches them only as check_exercise("N.M", answer);
the library's own detach_tree (the course's, or verl's loaded from source) is refused as an answer to 2.1. The
cases, references and summaries are in `tree_cases.py` (2.1) and `step_cases.py` (2.2), 2.2's messages in
`step_messages.py`.
"""

from __future__ import annotations

from typing import Any

from verlstudy.common.trees import _detach_tree, _detach_tree_always, detach_tree, detach_tree_always
from verlstudy.kit import i18n
from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.kit.properties import compare_on_inputs, one_thread
from verlstudy.lessons.l02_detach.step_cases import (
    _STEP_TOLERANCE,
    _from_example_engines,
    _reference_forward_step,
    _reference_step_events,
    _step_inputs,
    _StepRun,
)
from verlstudy.lessons.l02_detach.step_messages import _STEP_CASES, _show_step, _show_steps, _step_mistake
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
    # the references live in tree_cases/step_cases: named here, the answer guard refuses them to a learner's code
    # (and the private bodies the public ones call: a wrapper of those is the library's answer too)
    library_answers=[detach_tree, detach_tree_always, _detach_tree, _detach_tree_always, _reference_detach_tree],
    where=(
        "section 1's rules, one by one: which tensors are detached (and which come back untouched), which "
        "containers are rebuilt, and what happens to everything else"
    ),
    question=(
        "Take {'w': p, 'mask': m, 'pair': (x, 'step')}, where p is a model's nn.Parameter, m a mask computed "
        "under no_grad and x a live output. Which of p, m and x must come back as the very same object, which as "
        "a new object, and which of the three containers must be new? What would a test for 'is this a tensor' "
        "have to accept so that p is not missed?"
    ),
    method=(
        "Write one function that looks at the kind of value it is given and calls itself on the parts. Decide "
        "for a tensor from whether autograd tracks it (a leaf that is tracked has no grad_fn, and a parameter is "
        "a tensor too); a tracked one comes back as a new tensor without graph over the same storage, any other "
        "comes back as the very same object. A dict, a list or a tuple comes back as a new container of the "
        "kind the rules name, each part passed through your function. Everything else comes back as it is. "
        "Never assign into the input."
    ),
    reveals=[
        "`type(obj)(generator)`",
        "new tensor object per leaf per micro-batch; the identity rule makes none",
        "it would miss a nested container and a leaf that requires grad",
    ],
)
def check_detach_tree(fn: Any) -> str:
    """Exercise 2.1: does `fn` follow detach_tree's rules on every drawn tree? Raises ExerciseFailure if not.

    Contract (upstream's detach_tree, #7874): `fn(obj)` returns
    - for a tensor that requires grad (a live output with a grad_fn, a leaf, an `nn.Parameter`, a non-contiguous
      view, any float dtype, 0-dim or empty): a tensor that does not require grad, with the same values, dtype,
      shape and strides over the same storage (a detach, not a copy: `.data` is one too);
    - for any other tensor (masks, ids, a frozen `nn.Parameter`): the very same object;
    - for a dict: a new dict with the same keys in any order; for a list or a tuple: a new list or tuple of the same
      length (a tuple holding nothing that requires grad may be the same object: it is immutable); each part passed
      through the same rules, to any depth;
    - anything else (str, int, float, bool, None, any other object): unchanged, the same object.
    Effects: the input is never changed (no assignment into its containers, no tensor detached in place, no
    requires_grad flipped on the caller's tensors, no value or .grad of theirs changed). Domain: trees of dicts, lists
    and tuples up to 8 leaves deep and wide, drawn from every tensor kind above (also a parameter holding a .grad, a
    slice at an offset, a plain non-contiguous view, a bool mask) and plain values (str, int, float, bool, None, an
    arbitrary object that must come back as the same object); named cases cover each kind and empty containers.
    """
    if not callable(fn):
        raise TypeError(i18n.pick("pass your function itself, got {kind}", kind=type(fn).__name__))
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
    library_answers=[_reference_forward_step, _reference_step_events],
    where=(
        "lesson 01's store (the engine keeps the output until the mini-batch ends) and the contract this "
        "exercise states: which object backward needs attached, and which one must hold no graph"
    ),
    question=(
        "Your step returns two things that live for different times: the loss, which the engine runs backward on "
        "right after your step, and the output, which the engine keeps until the whole mini-batch ends. Which of "
        "the two must still reach the policy's parameters through its graph, and which must reach nothing? And "
        "who runs backward and clears the gradients: your step, or the engine around it?"
    ),
    method=(
        "Compute the log-probabilities of the actions taken: normalise the policy's scores over the action "
        "dimension in log space, then pick, for each row, the entry of the action that row took. Put them in "
        "a dict under 'log_probs' and hand that dict, still attached, to loss_function, so the loss it builds "
        "keeps its graph. Only after the loss exists, make what you store from that dict, with nothing in it "
        "tracked by autograd. Return the loss and a dict holding the stored output and the metrics; leave "
        "backward, the gradients, the policy and the micro-batch to the engine."
    ),
    reveals=[
        "(right: `stored = detach_tree(model_output)` there)",
        "where the output is stored, after the loss is built",
    ],
)
def check_forward_step(fn: Any) -> str:
    """Exercise 2.2: `fn(policy, micro_batch, loss_function)` must return (live loss, detached output).

    Contract: `fn` calls `loss_function` exactly once, with a dict whose 'log_probs' are the policy's
    log-probabilities of the actions taken, shape (B,) also for B = 1, still attached to the policy, and the caller's
    micro_batch (itself, or a dict of the same entries); it returns a tuple `(loss, out)`: `loss` is that call's loss
    as it is (requires grad, same value), `out` a dict with 'model_output' (a dict whose 'log_probs' equal what the
    loss read, in any float dtype that keeps their values) and 'metrics' (the call's metrics), and nothing in `out`
    requires grad (a copy or a detach alike). Effects: the step leaves the parameters' gradients, values and
    requires_grad, the policy's train/eval mode, autograd's grad mode and the caller's micro_batch as they were (no
    backward of its own, no zero_grad, no update), and keeps no tensor with a graph anywhere once it returns (no
    global, no attribute on the policy): the engine runs backward on the returned loss, sums the gradients over the
    micro-batches and steps the optimizer. Checked inside that loop: two mini-batches (the second on the updated
    policy) of 2-3 micro-batches of 1-6 sequences, the engine's own backward after each step, then an SGD step; the
    run is compared with the reference's event by event (each step, each mini-batch's end): the accumulated gradients
    and the updated parameters must equal the reference's (rtol 1e-4), the engine's backward must run on every
    returned loss, and no live log-prob, loss or activation saved for backward during a step may still be reachable
    after the engine let go of the mini-batch. Domain: policies of 2-6 states, hidden 2-8, 2-7 actions, a loss that
    reads only the log-probs or the micro-batch's advantages too.
    """
    if not callable(fn):
        raise TypeError(i18n.pick("pass your function itself, got {kind}", kind=type(fn).__name__))
    if _from_example_engines(fn):
        raise ExerciseFailure(
            i18n._("that is one of the example engines from data/engines: write your own forward_step")
        )
    with one_thread():
        return _compare_steps(fn)


def _compare_steps(fn: Any, *, reference_only: bool = False) -> str:
    return compare_on_inputs(
        _reference_step_events if reference_only else _StepRun(fn),
        _reference_step_events,
        inputs=_step_inputs(),
        edge_cases=_STEP_CASES,
        mistakes=_step_mistake,
        name="forward_step",
        show=_show_step,
        describe=_show_steps,
        **_STEP_TOLERANCE,
        max_examples=24,
    )


def _warm_reference_steps() -> None:
    """The reference's events on every world a right answer's check meets (named and generated: the drawing is
    derandomized), computed once at the lesson's set-up into `_reference_step_events`'s per-process store, so the
    learner's first 2.2 check runs only their own step. The same inputs, cases and messages as the check."""
    with one_thread():
        _compare_steps(None, reference_only=True)


# run by the lesson's set-up (`kit.lesson_start.prepare_checks`)
WARM_UP = (_warm_reference_steps,)
