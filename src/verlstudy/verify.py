"""`verlstudy verify-upstream`: each lesson's helper against upstream's own function, on generated cases.

A lesson re-implements an upstream mechanism in small form; this is what keeps the two the same as
verl moves. Where upstream has no single function to call (it needs config objects, a cluster, or is
a recipe), the table says so instead of skipping silently.
"""

from __future__ import annotations

import collections
import functools
import json
import random
import types
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import torch

from verlstudy import course, upstream


@dataclass(frozen=True)
class Comparison:
    lesson: str
    upstream: str
    version: str
    cases: int
    status: str  # "agree" | "differ" | "not comparable"
    detail: str = ""


NOT_COMPARABLE: tuple[tuple[str, str, str], ...] = (
    ("00", "-", "about the course itself; no upstream function"),
    (
        "01",
        "megatron 1F1B forward_data_store",
        "a pipeline schedule over real ranks and GPU memory; the mechanism is "
        "pinned by lesson 02's weakref test and call-site check instead",
    ),
    (
        "05",
        "checkpoint.strict in the GLM recipe",
        "a flag passed to Megatron-Bridge's HF weight export (save_hf_weights); no pure function",
    ),
    ("06", "verl/__init__.py VERL_USE_EXTERNAL_MODULES", "runs at verl import time, which needs verl's dependencies"),
    ("08", "docker/ and scripts/ refs", "Dockerfiles and install scripts are not shipped in the verl package"),
    (
        "09",
        "verl/workers/config/engine.py::EngineConfig",
        "a dataclass tree with verl's base config classes; the "
        "removed field is checked with dataclasses.fields in the lesson",
    ),
)


# ---------------------------------------------------------------- detach_tree (lesson 02)


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
    from verlstudy.trees import detach_tree

    ours = ours or detach_tree
    theirs = upstream.load_upstream("workers/engine/utils.py", ["detach_tree"], {"torch": torch})["detach_tree"]
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
        "namedtuples excluded: upstream's type(obj)(generator) raises TypeError on them; ours rebuilds",
    )


# ---------------------------------------------------------------- THD alignment (lesson 04)


def compare_thd_padding(cases: int = 300, seed: int = 0, ours: Callable[..., object] | None = None) -> Comparison:
    from verlstudy.thd import pad_nested

    ours = ours or pad_nested
    name = "verl/models/mcore/util.py::build_vlm_attn_mask_thd"
    sizes = {"tp": 1, "cp": 1}  # what the stand-in for Megatron's parallel state answers, set per case
    mpu = types.SimpleNamespace(
        get_tensor_model_parallel_world_size=lambda: sizes["tp"], get_context_parallel_world_size=lambda: sizes["cp"]
    )
    theirs = upstream.load_upstream("models/mcore/util.py", ["build_vlm_attn_mask_thd"], {"torch": torch, "mpu": mpu})[
        "build_vlm_attn_mask_thd"
    ]
    rng = random.Random(seed)
    for i in range(cases):
        tp, cp = rng.choice([1, 2, 4, 8]), rng.choice([1, 1, 2, 4])
        sizes.update(tp=tp, cp=cp)
        lengths = [rng.randint(1, 40) for _ in range(rng.randint(1, 4))]
        ids = torch.nested.nested_tensor([torch.randint(1, 100, (n,)) for n in lengths], layout=torch.jagged)
        padded_o, mask_o = ours(ids, 0, tp, cp)  # type: ignore[misc]
        padded_t, mask_t = theirs(ids, 0)
        if not (torch.equal(padded_o, padded_t) and torch.equal(mask_o, mask_t)):
            return Comparison(
                "04",
                name,
                upstream.verl_version(),
                i + 1,
                "differ",
                f"case {i}: lengths {lengths}, tp={tp}, cp={cp}: shapes {tuple(padded_o.shape)} vs "
                f"{tuple(padded_t.shape)}",
            )
    return Comparison("04", name, upstream.verl_version(), cases, "agree")


# ---------------------------------------------------------------- nested config walk (lesson 03)

_CHILDREN = ("text_config", "language_config", "thinker_config", "model_config", "audio_config", "code2wav_config")


class _Config(types.SimpleNamespace):
    pass


class _ConfigWithText(types.SimpleNamespace):
    def get_text_config(self):  # like transformers' PretrainedConfig.get_text_config
        return getattr(self, "text_config", None)


def _random_config(rng: random.Random, depth: int, nodes: list) -> object:
    cls = _ConfigWithText if rng.random() < 0.4 else _Config
    config = cls()
    nodes.append(config)
    if rng.random() < 0.6:
        config.hidden_size = rng.choice([None, 0, False, 1024, 4096, 7])
    if depth > 0:
        for child in rng.sample(_CHILDREN, rng.randint(0, 3)):
            setattr(config, child, _random_config(rng, depth - 1, nodes))
    return config


def _outcome(fn: Callable[[object, str], object], config: object) -> tuple[str, object]:
    try:
        return "value", fn(config, "hidden_size")
    except AttributeError:
        return "raises", AttributeError


def compare_config_attr(cases: int = 300, seed: int = 0, ours: Callable[[object, str], object] | None = None):
    from verlstudy.router_replay import get_text_config_attr

    ours = ours or get_text_config_attr
    name = "verl/utils/megatron_utils.py::get_hf_config_attr"
    theirs = upstream.load_upstream("utils/megatron_utils.py", ["get_hf_config_attr"])["get_hf_config_attr"]
    rng = random.Random(seed)
    for i in range(cases):
        nodes: list = []
        config = _random_config(rng, depth=2, nodes=nodes)
        if rng.random() < 0.2:  # a cycle: a child pointing back at the root
            rng.choice(nodes).model_config = config
        a, b = _outcome(ours, config), _outcome(theirs, config)
        if a != b or type(a[1]) is not type(b[1]):
            return Comparison(
                "03",
                name,
                upstream.verl_version(),
                i + 1,
                "differ",
                f"case {i}: ours {a[0]} {a[1]!r}, upstream {b[0]} {b[1]!r}",
            )
    return Comparison("03", name, upstream.verl_version(), cases, "agree")


# ---------------------------------------------------------------- GRPO loss and advantages (lesson 07)


class _ActorConfig(dict):
    """Stand-in for verl's ActorConfig: attribute access plus .get, all the vanilla loss reads."""

    __getattr__ = dict.__getitem__


@functools.lru_cache(maxsize=1)
def core_algos_functions() -> dict[str, Callable]:
    """verl's vanilla policy loss and GRPO outcome advantage, loaded from source with stand-in collaborators."""
    import numpy as np

    def masked_sum(values, mask, axis=None):
        return (values * mask).sum() if axis is None else (values * mask).sum(axis)

    def masked_mean(values, mask, axis=None):
        return masked_sum(values, mask, axis) / (mask.sum() if axis is None else mask.sum(axis))

    def keep(_name):  # the registries only matter for verl's own lookup by name
        return lambda fn: fn

    provided = {
        "torch": torch,
        "np": np,
        "defaultdict": collections.defaultdict,
        "verl_F": types.SimpleNamespace(masked_sum=masked_sum, masked_mean=masked_mean),
        "AlgoConfig": type("AlgoConfig", (), {}),
        "register_policy_loss": keep,
        "register_adv_est": keep,
        "AdvantageEstimator": types.SimpleNamespace(GRPO="grpo"),
    }
    names = ["compute_policy_loss_vanilla", "compute_grpo_outcome_advantage"]
    return upstream.load_upstream("trainer/ppo/core_algos.py", names, provided)


def upstream_policy_loss(logp, old_logp, advantages, mask, clip_low, clip_high, clip_c):
    """Upstream's vanilla loss on one rank, token-mean: (loss, pg_clipfrac, pg_clipfrac_lower, ppo_kl)."""
    fn = core_algos_functions()["compute_policy_loss_vanilla"]
    config = _ActorConfig(
        clip_ratio=clip_low,
        clip_ratio_low=clip_low,
        clip_ratio_high=clip_high,
        clip_ratio_c=clip_c,
        global_batch_info={},
    )
    loss, metrics = fn(old_logp, logp, advantages, mask, "token-mean", config)
    keys = ("actor/pg_clipfrac", "actor/pg_clipfrac_lower", "actor/ppo_kl")
    return (float(loss), *(float(metrics[k]) for k in keys))


def _close(a: float, b: float, tol: float = 1e-9) -> bool:
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def compare_policy_loss(cases: int = 300, seed: int = 0, ours: Callable[..., object] | None = None) -> Comparison:
    from verlstudy.grpo import policy_loss

    ours = ours or policy_loss
    name = "verl/trainer/ppo/core_algos.py::compute_policy_loss_vanilla"
    gen = torch.Generator().manual_seed(seed)
    rng = random.Random(seed)
    for i in range(cases):
        shape = (rng.randint(1, 3), rng.randint(1, 6))
        spread = rng.choice([0.05, 0.3, 1.0, 30.0])  # 30: log-ratios beyond upstream's +-20 clamp
        old = -torch.rand(shape, generator=gen, dtype=torch.float64) * 3
        logp = old + torch.randn(shape, generator=gen, dtype=torch.float64) * spread
        adv = torch.randn(shape, generator=gen, dtype=torch.float64)
        mask = (torch.rand(shape, generator=gen) < 0.8).double()
        mask.view(-1)[0] = 1.0
        clips = (0.2, rng.choice([0.2, 0.28]), rng.choice([3.0, 10.0]))
        out = ours(logp, old, adv, mask, *clips)
        mine = (float(out.loss), out.pg_clipfrac, out.pg_clipfrac_lower, out.ppo_kl)  # type: ignore[attr-defined]
        theirs = upstream_policy_loss(logp, old, adv, mask, *clips)
        if not all(_close(a, b) for a, b in zip(mine, theirs, strict=True)):
            detail = f"case {i}: shape {shape}, clips {clips}: (loss, clipfrac, lower, kl) {mine} vs {theirs}"
            return Comparison("07", name, upstream.verl_version(), i + 1, "differ", detail)
    return Comparison("07", name, upstream.verl_version(), cases, "agree", "token-mean on one rank")


def compare_group_advantages(cases: int = 300, seed: int = 0, ours: Callable[..., object] | None = None) -> Comparison:
    import numpy as np

    from verlstudy.grpo import group_advantages

    ours = ours or group_advantages
    name = "verl/trainer/ppo/core_algos.py::compute_grpo_outcome_advantage"
    theirs = core_algos_functions()["compute_grpo_outcome_advantage"]
    rng = random.Random(seed)
    for i in range(cases):
        groups, n = rng.randint(1, 4), rng.randint(1, 6)
        rewards = torch.tensor(
            [[float(rng.choice([0, 1, 1, 0.5, -1])) for _ in range(n)] for _ in range(groups)], dtype=torch.float64
        )
        scale = rng.random() < 0.8
        token_rewards = torch.zeros(groups * n, 3, dtype=torch.float64)
        token_rewards[:, -1] = rewards.flatten()  # an outcome reward sits on the last response token
        index = np.repeat(np.arange(groups), n)
        up, _ = theirs(token_rewards, torch.ones(groups * n, 3), index, norm_adv_by_std_in_grpo=scale)
        mine = ours(rewards, scale_by_std=scale).flatten()  # type: ignore[attr-defined]
        # 1e-6: for a group of one upstream divides by a float32 1.0 + epsilon, which rounds at ~1e-7
        if not torch.allclose(mine, up[:, 0].to(mine.dtype), rtol=1e-6, atol=1e-9):
            detail = f"case {i}: rewards {rewards.tolist()}, scale_by_std={scale}"
            return Comparison("07", name, upstream.verl_version(), i + 1, "differ", detail)
    return Comparison(
        "07", name, upstream.verl_version(), cases, "agree", "groups of 1..6, incl. constant groups; rtol 1e-6"
    )


# ---------------------------------------------------------------- engine call sites (lesson 02)


def check_engine_call_sites() -> Comparison:
    from verlstudy.astcheck import check_sources, upstream_engine_files

    files = upstream_engine_files(upstream.verl_root())
    report = check_sources({name: path.read_text() for name, path in files.items()})
    stores = [store for found in report.values() for store in found]
    unwrapped = [f"{name}: {s.describe()}" for name, found in report.items() for s in found if not s.wrapped]
    name = "workers/engine/*/transformer_impl.py model_output stores"
    if len(files) != 4 or not stores or unwrapped:
        detail = unwrapped[0] if unwrapped else f"found {len(files)} engine files, {len(stores)} stores"
        return Comparison("02", name, upstream.verl_version(), len(stores), "differ", detail)
    return Comparison(
        "02",
        name,
        upstream.verl_version(),
        len(stores),
        "agree",
        f"all {len(stores)} stores in {len(files)} engines wrap detach_tree",
    )


def verify_all(cases: int = 300, seed: int = 0) -> list[Comparison]:
    """Every comparison, plus a 'not comparable' row for each lesson without an upstream function."""
    version = upstream.verl_version()
    rows = [
        compare_detach_tree(cases, seed),
        check_engine_call_sites(),
        compare_config_attr(cases, seed),
        compare_thd_padding(cases, seed),
        compare_policy_loss(cases, seed),
        compare_group_advantages(cases, seed),
    ]
    rows += [Comparison(lesson, what, version, 0, "not comparable", why) for lesson, what, why in NOT_COMPARABLE]
    return sorted(rows, key=lambda r: r.lesson)


def table(rows: list[Comparison]) -> str:
    lines = ["| lesson | upstream | verl | cases | result | detail |", "| --- | --- | --- | ---: | --- | --- |"]
    lines += [f"| {r.lesson} | {r.upstream} | {r.version} | {r.cases} | {r.status} | {r.detail} |" for r in rows]
    return "\n".join(lines)


def record(rows: list[Comparison], path: Path | None = None) -> Path:
    """Write the verified verl version per lesson (every comparable row agreed) to data/upstream_verified.json."""
    if any(r.status == "differ" for r in rows):
        raise ValueError("not recording: some lessons differ from upstream")
    path = path or course.project_root() / "data" / "upstream_verified.json"
    data = {}
    for lesson in course.LESSONS:
        mine = [r for r in rows if r.lesson == lesson.code]
        compared = [r for r in mine if r.status == "agree"]
        how = (
            f"compared with verlstudy verify-upstream on {sum(r.cases for r in compared)} cases"
            if compared
            else "facts read from the verl source (no single upstream function to compare)"
        )
        data[lesson.code] = {
            "verl_version": mine[0].version if mine else upstream.verl_version(),
            "how": how,
            "on": date.today().isoformat(),
        }
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def upstream_check(lesson_code: str, cases: int = 50) -> None:
    """A lesson's optional upstream cell: run its comparison when verl is installed, else one skip line.

    Prints one line per comparison; raises AssertionError when upstream differs, so a notebook run
    against a newer verl stops at the lesson whose facts moved.
    """
    codes = {lesson.code for lesson in course.LESSONS}
    if lesson_code not in codes:
        raise ValueError(f"unknown lesson {lesson_code!r}; known: {', '.join(sorted(codes))}")
    try:
        version = upstream.verl_version()
        upstream.verl_root()
    except upstream.VerlNotInstalled:
        print("[skip] verl is not installed: the comparison with upstream runs in `make test` (verify-upstream)")
        return
    runs: dict[str, list[Callable[[], Comparison]]] = {
        "02": [lambda: compare_detach_tree(cases), check_engine_call_sites],
        "03": [lambda: compare_config_attr(cases)],
        "04": [lambda: compare_thd_padding(cases)],
        "07": [lambda: compare_policy_loss(cases), lambda: compare_group_advantages(cases)],
    }
    if lesson_code not in runs:
        what, why = next((w, y) for code, w, y in NOT_COMPARABLE if code == lesson_code)
        print(f"[upstream] verl {version}: {what}: not comparable ({why})")
        return
    for run in runs[lesson_code]:
        row = run()
        print(f"[upstream] verl {version}: {row.upstream}: {row.status} on {row.cases} cases")
        if row.status != "agree":
            raise AssertionError(f"upstream differs: {row.detail}")
