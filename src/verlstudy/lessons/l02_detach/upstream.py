"""Lesson 02's comparison with upstream verl's own functions, on generated cases (`verlstudy verify-upstream`)."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping

import torch

from verlstudy.common.trees import detach_tree
from verlstudy.kit import upstream
from verlstudy.kit.params import check_callable, check_instance, check_int, check_items, got, positive_int
from verlstudy.kit.upstream import Comparison, report_check
from verlstudy.lessons.l02_detach.astcheck import Store, check_sources, upstream_engine_files

DETACH_TREE = "verl/workers/engine/utils.py::detach_tree"
# Writes into model_output that a name rule cannot clear and a reader has: why each holds no graph.
REVIEWED_WRITES: dict[str, str] = {
    "routed_experts": (
        "int16 expert indices (verl/utils/megatron/router_replay_utils.py; an integer tensor cannot "
        "require grad), written after the schedule; megatron's second write targets the merged output "
        "postprocess_batch_func returns, not the per-micro-batch store"
    ),
}


def upstream_detach_tree() -> Callable[[object], object]:
    """verl's own detach_tree, loaded from the installed verl's source (needs only torch)."""
    return upstream.load_upstream("workers/engine/utils.py", ["detach_tree"], {"torch": torch})["detach_tree"]


def engine_sources(release: str | None = None) -> dict[str, str]:
    """Source text of upstream's four engine files: installed verl, or an earlier release (e.g. '0.9.0')."""
    files = upstream_engine_files(upstream.verl_root(release))
    return {name: path.read_text() for name, path in files.items()}


def unwrapped_stores(report: dict[str, list[Store]]) -> dict[str, list[Store]]:
    """Per engine, the stores a check report flags (empty lists kept, so every engine is listed)."""
    check_instance("report", report, Mapping, what="check_sources' report {engine: list of Store}")
    report = {name: check_items(f"report[{name!r}]", stores, Store, what="a Store") for name, stores in report.items()}
    return {name: [s for s in stores if not s.wrapped] for name, stores in report.items()}


def differences(tree: object, ours: Callable[[object], object], theirs: Callable[[object], object]) -> str | None:
    """None when both detach functions give the same result on `tree`, else where they first differ."""
    for arg, fn in (("ours", ours), ("theirs", theirs)):
        if not callable(fn):
            raise TypeError(f"argument {arg} must be a detach function (tree -> tree), got {got(fn)}")
    return _same_result(tree, ours(tree), theirs(tree))


def _random_tree(rng: random.Random, depth: int) -> object:
    kind = rng.choice(["dict", "list", "tuple", "grad", "grad", "plain", "int", "str", "none", "jagged"])
    if depth <= 0 and kind in ("dict", "list", "tuple"):
        kind = "grad"
    if kind == "dict":
        return {f"k{i}": _random_tree(rng, depth - 1) for i in range(rng.randint(0, 3))}
    if kind in ("list", "tuple"):
        items = [_random_tree(rng, depth - 1) for _ in range(rng.randint(0, 3))]
        return items if kind == "list" else tuple(items)
    if kind == "grad":
        leaf = torch.randn(rng.randint(1, 4), requires_grad=True)
        return leaf if rng.random() < 0.3 else leaf * 2  # a leaf, or an output with a graph behind it
    if kind == "plain":
        return torch.randn(rng.randint(1, 4))
    if kind == "jagged":
        parts = [torch.randn(rng.randint(1, 4), requires_grad=rng.random() < 0.5) for _ in range(2)]
        return torch.nested.as_nested_tensor(parts, layout=torch.jagged)
    return {"int": rng.randint(0, 9), "str": "log_probs", "none": None}[kind]


def _same_result(original: object, ours: object, theirs: object) -> str | None:
    """None when ours and upstream's outputs agree on type, identity, grad-ness and values."""
    if type(ours) is not type(theirs):
        return f"types differ: {type(ours).__name__} vs {type(theirs).__name__}"
    if isinstance(ours, torch.Tensor):
        if (ours is original) != (theirs is original):
            return "one returned the same tensor object, the other a new one"
        if ours.requires_grad != theirs.requires_grad:
            return f"requires_grad differs: {ours.requires_grad} vs {theirs.requires_grad}"
        if ours.is_nested:
            same = torch.equal(ours.values(), theirs.values()) and torch.equal(ours.offsets(), theirs.offsets())
        else:
            same = torch.equal(ours, theirs)
        return None if same else "tensor values differ"
    if isinstance(ours, dict):
        if list(ours) != list(theirs):  # type: ignore[arg-type]
            return "dict keys differ"
        for key in ours:
            problem = _same_result(original[key], ours[key], theirs[key])  # type: ignore[index]
            if problem:
                return f"[{key!r}] {problem}"
        return None
    if isinstance(ours, list | tuple):
        if len(ours) != len(theirs):  # type: ignore[arg-type]
            return "lengths differ"
        for i, (o, a, b) in enumerate(zip(original, ours, theirs, strict=True)):  # type: ignore[call-overload]
            problem = _same_result(o, a, b)
            if problem:
                return f"[{i}] {problem}"
        return None
    return None if ours is theirs or ours == theirs else f"leaf differs: {ours!r} vs {theirs!r}"


def compare_detach_tree(cases: int = 300, seed: int = 0, ours: Callable[[object], object] | None = None) -> Comparison:
    cases = positive_int("cases", cases)
    seed = check_int("seed", seed, minimum=0, kind="argument")
    if ours is not None:
        check_callable("ours", ours, what="a function (the code under comparison) or None")
    ours = ours or detach_tree
    theirs = upstream_detach_tree()
    rng = random.Random(seed)
    for i in range(cases):
        tree = _random_tree(rng, depth=3)
        problem = _same_result(tree, ours(tree), theirs(tree))
        if problem:
            return Comparison(
                "02",
                "verl/workers/engine/utils.py::detach_tree",
                upstream.verl_version(),
                i + 1,
                "differ",
                f"case {i}: {problem}",
            )
    return Comparison(
        "02",
        "verl/workers/engine/utils.py::detach_tree",
        upstream.verl_version(),
        cases,
        "agree",
        "namedtuples excluded: upstream's type(obj)(generator) raises TypeError on a namedtuple of two or more fields"
        " and stores the generator in a one-field one; ours rebuilds",
    )


def check_engine_call_sites(cases: int = 0, seed: int = 0) -> Comparison:
    """Every `model_output` store in upstream's four engine files that store it wraps detach_tree (cases, seed unused).

    Writes into the stored dict are cleared only by REVIEWED_WRITES (megatron's routing indices).
    """
    sources = engine_sources()
    report = check_sources(sources, reviewed=REVIEWED_WRITES)
    stores = [store for found in report.values() for store in found]
    unwrapped = [f"{name}: {s.describe()}" for name, found in unwrapped_stores(report).items() for s in found]
    name = "workers/engine/*/transformer_impl.py model_output stores"
    if len(sources) != 4 or not stores or unwrapped:
        detail = unwrapped[0] if unwrapped else f"found {len(sources)} engine files, {len(stores)} stores"
        return Comparison("02", name, upstream.verl_version(), len(stores), "differ", detail)
    reviewed = sum(s.reason.startswith("reviewed") for s in stores)
    return Comparison(
        "02",
        name,
        upstream.verl_version(),
        len(stores),
        "agree",
        f"all {len(stores)} stores in {len(sources)} engines wrap detach_tree or are reviewed writes ({reviewed})",
    )


COMPARISONS = (compare_detach_tree, check_engine_call_sites)


def upstream_check(cases: int = 50) -> None:
    """The lesson's upstream cell: one line per comparison, a skip line without verl; raises if upstream differs."""
    cases = positive_int("cases", cases)
    report_check("02", [lambda: compare_detach_tree(cases), check_engine_call_sites])
