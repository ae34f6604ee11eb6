"""Lesson 05's exercise checkers: 5.1 matches a module pattern, 5.2 audits a strict=False load.

Each checker tests a contract (its docstring) on generated inputs that span real state-dict names (GLM-5's
`model.layers.78` next to layer 7, `mtp` next to `mtp_norm`, capitals, a letter where a dot was, eight-deep
expert keys) and, for 5.2, runs the learner's load twice into one model and compares every effect with the
contract. Named cases illustrate; the generated inputs are the check. A notebook reaches them only as
check_exercise("N.M", answer); the mechanism's own matcher and audit are refused as answers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import torch
from hypothesis import strategies as st
from torch import nn

from verlstudy.kit import i18n
from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.kit.properties import Case, compare_on_inputs
from verlstudy.lessons.l05_checkpoint.audit_cases import Load, Spec, run_loads, specs
from verlstudy.lessons.l05_checkpoint.checkpoint import audit_state_dict, load_state_dict_audited, matches_prefix

# ---------------------------------------------------------------- 5.1: whole module names


def _reference_matcher(key: str, pattern: str) -> bool:
    module = pattern[:-1] if pattern.endswith(".") else pattern
    return key == module or key.startswith(module + ".")


# pieces of real and toy state-dict names: GLM-5 keeps its MTP layer at model.layers.{num_hidden_layers}, its
# experts at mlp.experts.0..383; capitals and underscores appear in real checkpoints (lm_head, HF's `LayerNorm`)
_PIECES = (
    "model", "layers", "7", "78", "1", "10", "mtp", "mtp_norm", "norm", "eh_proj", "blocks", "weight", "bias",
    "mlp", "experts", "383", "38", "MTP", "LayerNorm", "layer", "lm_head",
)  # fmt: skip


@st.composite
def _key_and_pattern(draw: Any) -> tuple[str, str]:
    key = draw(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8))
    kind = draw(st.sampled_from(("prefix", "prefix", "letters", "elsewhere", "other", "not_a_dot", "capitals")))
    if kind == "prefix":  # a whole-module prefix of the key, or the key itself
        pattern = key[: draw(st.integers(1, len(key)))]
    elif kind == "letters":  # a prefix whose last piece is cut short: "7" of "78", "mtp" of "mtp_norm"
        cut = draw(st.integers(1, len(key)))
        last = key[cut - 1]
        pattern = [*key[: cut - 1], last[: draw(st.integers(1, len(last)))]]
    elif kind == "elsewhere":  # pieces of the key that do not start it
        start = draw(st.integers(0, len(key) - 1))
        pattern = key[start : start + draw(st.integers(1, 2))]
    elif kind == "not_a_dot" and len(key) > 1:  # the key has a letter where the pattern has a dot
        cut = draw(st.integers(2, len(key)))
        pattern, at = key[:cut], draw(st.integers(1, cut - 1))
        glue = draw(st.sampled_from(("_", "X", "0")))
        key = [*key[: at - 1], key[at - 1] + glue + key[at], *key[at + 1 :]]
    elif kind == "capitals":  # a prefix written with other capitals
        pattern = [p.swapcase() for p in key[: draw(st.integers(1, len(key)))]]
    else:
        pattern = draw(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=3))
    dot = draw(st.booleans())
    return ".".join(key), ".".join(pattern) + ("." if dot else "")


_MATCH_CASES = [
    Case(("mtp.eh_proj.weight", "mtp."), "a key inside the module"),
    Case(("mtp.eh_proj.weight", "mtp"), "the pattern written without its trailing dot"),
    Case(("mtp", "mtp"), "the pattern naming the key itself"),
    Case(("mtp", "mtp."), "the key is the module's own name, the pattern has its dot"),
    Case(("mtp_norm.weight", "mtp"), "another module that starts with the same letters"),
    Case(("model.layers.78.eh_proj.weight", "model.layers.78."), "GLM-5's MTP layer: model.layers.78"),
    Case(("model.layers.78.eh_proj.weight", "model.layers.7"), "layer 78 (GLM-5's MTP layer) is not inside layer 7"),
    Case(("layers.10.weight", "layers.1"), "layers.10 is not inside layers.1"),
    Case(("model.mtp.eh_proj.weight", "mtp."), "'mtp' is not the first module of this key"),
    Case(("head.weight", "mtp."), "an unrelated key"),
    Case(("model.layers.7.weight", "model.layers.7"), "a numbered layer, pattern without its dot"),
    Case(("mtp_norm.weight", "mtp.norm"), "a dot in the pattern is a dot: mtp_norm is not the module mtp.norm"),
    Case(("modelXlayers.78.weight", "model.layers.78."), "a dot in the pattern is a dot, not any character"),
    Case(("MTP.eh_proj.weight", "mtp"), "names are case-sensitive"),
]


def _answers_alike(fn: Callable[[str, str], object]) -> bool:
    """Whether `fn` gives one answer per key whatever the pattern (it does not read the pattern)."""
    try:
        probes = ("mtp.eh_proj.weight", "model.layers.1.weight", "head.weight")
        patterns = ("mtp", "mtp.", "model.layers.1.", "head.", "zz_unrelated")
        return all(len({fn(k, p) for p in patterns}) == 1 for k in probes)
    except Exception:
        return False


def _matcher_mistake(fn: Callable[[str, str], object]) -> Callable[[tuple[Any, ...], Any, Any], str | None]:
    def name(args: tuple[Any, ...], got: object, want: object) -> str | None:
        key, pattern = args
        module = pattern[:-1] if pattern.endswith(".") else pattern
        names = {"key": repr(key), "module": repr(module)}
        further_in = "{module} is not the first module of {key}: your test finds it further in"
        if not isinstance(got, bool):
            return i18n._("return True or False")
        if _answers_alike(fn):
            return i18n._("your answer is the same whatever the pattern: is the pattern read?")
        if got and not key.startswith(module) and module in key:
            return i18n.pick(further_in, **names)
        wildcard = re.match(re.escape(module).replace(r"\.", "."), key)
        if got and wildcard and not key.startswith(module):
            return i18n.pick(
                "the dots of {module} match any character in your test ({key} is not inside it): a dot in a module "
                "name is a dot",
                **names,
            )
        if got and key.lower().startswith(module.lower()) and not key.startswith(module):
            return i18n.pick(
                "your test ignores capitals: {key} is not inside {module} (module names are case-sensitive)", **names
            )
        if got and key.startswith(module) and not key.startswith(module + ".") and key != module:
            return i18n.pick("your test matches the letters of {module}, not the whole module name", **names)
        if got and module not in key:
            return i18n.pick(
                "your test matches {key}, which does not mention {module} at all: is the pattern read?", **names
            )
        if got:
            return i18n.pick(further_in, **names)
        if key == module:
            return i18n._("a key that is the module's own name lies in it too")
        if not pattern.endswith("."):
            try:
                if fn(key, pattern + ".") is True:
                    return i18n._("your matcher works only when the pattern ends with a dot")
            except Exception:
                pass
        return i18n._("your matcher misses a key inside the module")

    return name


@checker(
    "5.1",
    library_answers=[matches_prefix],
    where=(
        "the section 'Root cause': Megatron-Bridge matches its ignored prefixes letter by letter, and the trailing "
        "dot is all that keeps `mtp.` from covering `mtp_extra`; GLM-5's MTP layer is layer 78, right after layer 77"
    ),
    question=(
        "Take the module `mtp` and three keys: `mtp.eh_proj.weight`, `mtp_norm.weight` and `mtp`. All three begin "
        "with the same three letters. Which character (or the lack of one) right after those letters tells the "
        "keys inside the module from the one that is not? And does the pattern's own trailing dot change the module?"
    ),
    method=(
        "First decide what module the pattern names, whether or not it ends with a dot. Then compare the key with "
        "that name from the key's first character only, never further in, and case by case. Once the name's "
        "letters are used up, ask what the key may have next for it to be this module or inside it: the answer "
        "to the question rung gives you two situations; write both."
    ),
    reveals=['module names, so `"mtp"` and `"mtp."` both mean the module `mtp`', 'starts with `name + "."`'],
)
def check_prefix_matcher(fn: Callable[[str, str], bool]) -> str:
    """Exercise 5.1: `fn(key, pattern)` says whether `key` is the module `pattern` names or lies inside it.

    Contract. Returns a bool (the exercise asks for True/False, not 1/0 nor a match object): True exactly when
    the key equals the module name or begins with the module name followed by a dot, the module name being the
    pattern less one trailing dot. Names are compared as written: case-sensitive, a dot only matches a dot,
    only at the key's start. Domain: dot-separated state-dict names of one to eight pieces (GLM-5's
    `model.layers.78.*`, `mlp.experts.383.*`, `mtp_norm`, `LayerNorm`), patterns never empty, with or
    without their dot; strings are immutable, so there is no effect to check.
    """
    return compare_on_inputs(
        fn,
        _reference_matcher,
        inputs=_key_and_pattern(),
        edge_cases=_MATCH_CASES,
        mistakes=_matcher_mistake(fn),
        name="matches_module",
        max_examples=60,
    )


# ---------------------------------------------------------------- 5.2: the audit of a strict=False load


def _reference_audit(model: nn.Module, state_dict: Mapping[str, torch.Tensor], allowed: tuple[str, ...]) -> list[str]:
    result = model.load_state_dict(dict(state_dict), strict=False)
    return sorted(k for k in result.missing_keys if not any(_reference_matcher(k, p) for p in allowed))


_FULL = ("embed", "blocks.0", "blocks.mtp", "mtp.proj", "mtp.head", "mtp_extra", "head")
_MTP = ("mtp.proj", "mtp.head")
_GLM = ("embed", "model.layers.7", "model.layers.78", "head")
_BF16, _F32 = torch.bfloat16, torch.float32


def _case(leaves: tuple[str, ...], lost: tuple[str, ...], allowed: tuple[str, ...], name: str, **more: Any) -> Case:
    strays, layout = more.pop("strays", ()), more.pop("layout", "own")
    spec = Spec(leaves, (Load(lost, strays, layout), Load(())), allowed, **more)
    return Case((spec,), name)


_AUDIT_CASES = [
    _case(_FULL, _MTP, ("mtp.",), "the export without MTP: nothing hidden"),
    _case(_FULL, (*_MTP, "blocks.0"), ("mtp.",), "an export that also lost blocks.0"),
    _case(_FULL, (*_MTP, "mtp_extra"), ("mtp.",), "mtp_extra is not inside mtp"),
    _case(_FULL, (*_MTP, "mtp_extra"), ("mtp",), "the same, the module written 'mtp'"),
    _case(_FULL, ("mtp.proj", "blocks.mtp"), ("mtp.",), "the nested blocks.mtp is not the module mtp"),
    _case(_GLM, ("model.layers.78",), ("model.layers.7",), "GLM-5's MTP layer 78 is not inside layer 7"),
    _case(_FULL, (), ("mtp.",), "a complete checkpoint"),
    _case(_FULL, _MTP, (), "no module allowed at all"),
    _case(_FULL, _MTP, ("mtp.",), "a checkpoint with an unexpected key", strays=("old_head.weight",)),
    _case(("layers.1", "layers.10", "head"), ("layers.10",), ("layers.1",), "layers.10 is not inside layers.1"),
    _case(("embed", "layers.2", "head"), ("layers.2",), ("mtp.",), "layers.2 lost, its saved buffer with it"),
    _case(("embed", "blocks.0", "head"), (), (), "non-persistent buffers: never saved, so never missing"),
    _case(_FULL, (*_MTP, "blocks.0"), ("blocks.0", "mtp."), "two allowed modules, each counts"),
    _case(_FULL, _MTP, ("mtp.",), "a bfloat16 checkpoint into a float32 model", checkpoint_dtype=_BF16),
    _case(_FULL, _MTP, ("mtp.",), "a checkpoint memory-mapped as one buffer", layout="flat"),
    _case((), (), ("mtp.",), "an empty model"),
]


def _audit_mistake(args: tuple[Any, ...], got: Any, want: Any) -> str | None:
    (spec,) = args
    at = next((i for i, (g, w) in enumerate(zip(got, want, strict=True)) if list(g or ()) != list(w)), 0)
    named = _one_audit_mistake(spec.loads[at].strays, spec.allowed, got[at], want[at])
    if named and at:
        return i18n.pick("{mistake} (on the second load into the same model)", mistake=named)
    return named or None


def _one_audit_mistake(strays: tuple[str, ...], allowed: tuple[str, ...], got: Any, want: Any) -> str:
    if not isinstance(got, (list, tuple)) or not all(isinstance(k, str) for k in got):
        return i18n._("return a list of key names")
    got_keys, want_keys = list(got), list(want)
    caches = [k for k in got_keys if k.endswith(".cache") and k not in want_keys]
    if caches:
        return i18n.pick(
            "you returned {key}, a buffer the model does not save (non-persistent): it is never in a checkpoint, so "
            "it is never missing",
            key=caches[0],
        )
    buffers = [k for k in want_keys if k.endswith(".scale") and k not in got_keys]
    if buffers:
        return i18n.pick(
            "you left out {key}, a buffer the model saves: a missing buffer is missing too", key=buffers[0]
        )
    if set(got_keys) & set(strays):
        return i18n._(
            "you also returned unexpected keys (in the checkpoint, not in the model): only missing keys count"
        )
    if set(got_keys) == set(want_keys) and len(got_keys) == len(want_keys):
        return i18n._("the right keys, but not sorted")
    if set(got_keys) == set(want_keys):
        return i18n._("your list holds a key more than once")
    hidden = sorted(set(want_keys) - set(got_keys))
    if hidden and allowed and any(any(p.rstrip(".").lower() in k.lower() for p in allowed) for k in hidden):
        return i18n.pick(
            "you left out {keys}, which no allowed module covers: your test of the allowed modules covers more than "
            "the modules themselves",
            keys=", ".join(hidden),
        )
    if set(got_keys) - set(want_keys) and allowed:
        return i18n._("you also returned keys that an allowed module covers: those may be missing")
    if hidden:
        return i18n.pick("you left out {keys}: missing, and no allowed module covers them", keys=", ".join(hidden))
    return i18n._("you returned keys that are not missing")


@checker(
    "5.2",
    library_answers=[audit_state_dict, load_state_dict_audited, matches_prefix],
    where=(
        "the section 'The danger': a plain strict=False load reports what it skipped and carries on; and your "
        "5.1, which says whether a key lies inside an allowed module"
    ),
    question=(
        "A load with the check switched off hands you back an object holding two lists of keys: which of the two "
        "names keys the model has and the checkpoint lacks? And after the load, what must still be true of the "
        "model's own tensors: their dtype, the objects themselves, the memory they live in?"
    ),
    method=(
        "Let PyTorch do the load with the check switched off, so it copies every tensor the checkpoint has into "
        "the model's own tensors (keeping their dtype and leaving the checkpoint alone), and keep what it returns. "
        "Take only the keys the model lacked a value for; drop those your 5.1 matcher puts inside some allowed "
        "module, and return what is left in a sorted order."
    ),
    reveals=["any other missing source tensor", "missing key(s) not allowed"],
)
def check_missing_audit(fn: Callable[[nn.Module, Mapping[str, torch.Tensor], tuple[str, ...]], list[str]]) -> str:
    """Exercise 5.2: `fn(model, state_dict, allowed)` loads the checkpoint and names the missing keys no module allows.

    Contract. Returns the model's state-dict keys the checkpoint lacks (parameters and saved buffers, never a
    non-persistent buffer, never an unexpected checkpoint key), less those inside an allowed module (whole
    names, as 5.1), sorted, each once, in a list (a tuple passes). Effects: afterwards the model holds every
    checkpoint value it has a key for, converted to its own dtype, in its own tensor objects (an optimizer holds
    them), sharing no memory with the checkpoint; a tensor the checkpoint lacks, and every non-persistent
    buffer, keeps its value; the caller's dict keeps its keys, order, values and dtypes; a second load into the
    same model behaves the same. Domain: models of zero to six leaves with biases, saved and non-persistent
    buffers (GLM-5's `model.layers.78` next to layer 7, `mtp` next to `mtp_extra`, `blocks.mtp`), checkpoints
    lacking any leaves and carrying stray keys, tensors owned, strided or views of one flat buffer, float32 or
    bfloat16 models and float32, bfloat16 or float64 checkpoints, any tuple of patterns (empty included).
    """
    if not callable(fn):
        raise ExerciseFailure(i18n.pick("the answer should be a function, got {kind}", kind=type(fn).__name__))
    return compare_on_inputs(
        lambda spec: run_loads(fn, spec),
        lambda spec: run_loads(_reference_audit, spec),
        inputs=specs().map(lambda spec: (spec,)),
        edge_cases=_AUDIT_CASES,
        mistakes=_audit_mistake,
        show=lambda args, kwargs: args[0].describe(),
        name="silently_missing",
        max_examples=25,
    )
