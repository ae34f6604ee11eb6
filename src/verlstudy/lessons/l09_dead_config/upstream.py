"""Lesson 09 and upstream verl: upstream's own config classes, loaded from source, against the course's
YAML <-> dataclass helpers (`verlstudy verify-upstream`).

`load_config_classes` executes only the named dataclasses of a verl file (with their stdlib imports and
verl's `BaseConfig`), so no verl dependency is needed. `compare_engine_config` generates configs for
upstream's `McoreEngineConfig` and checks, case by case, that the course's `build` accepts and rejects
what upstream's constructor and `__post_init__` accept and reject (called as hydra's `instantiate` calls a
`_target_` block), and that `to_dict` -> YAML -> `build` gives back configs made in Python.
"""

from __future__ import annotations

import ast
import random
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any

from verlstudy.kit import upstream
from verlstudy.kit.params import check_callable, check_int, check_items, check_str, positive_int
from verlstudy.kit.upstream import Comparison, UpstreamMoved, report_check, upstream_file
from verlstudy.lessons.l09_dead_config import loading, schema
from verlstudy.lessons.l09_dead_config.errors import ConfigError

_STDLIB = {"dataclasses", "typing", "logging", "math", "os", "warnings", "collections", "enum"}
ENGINE_CLASSES = ("EngineRouterReplayConfig", "EngineConfig", "QATEngineConfig", "McoreEngineConfig")


def _module(
    name: str, source: str, filename: str, keep: Callable[[ast.stmt], bool], provided: dict
) -> types.ModuleType:
    tree = ast.parse(source, filename=filename)
    body = [node for node in tree.body if keep(node)]
    module = types.ModuleType(name)
    module.__dict__.update(provided)
    sys.modules[name] = module  # get_type_hints and _target_ resolution look classes' modules up here
    exec(compile(ast.Module(body=body, type_ignores=[]), filename, "exec"), module.__dict__)
    return module


def _stdlib_import(node: ast.stmt) -> bool:
    if isinstance(node, ast.Import):
        return all(alias.name.split(".")[0] in _STDLIB for alias in node.names)
    return isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] in _STDLIB


def load_config_classes(
    relative: str = "workers/config/engine.py", names: tuple[str, ...] = ENGINE_CLASSES, release: str | None = None
) -> dict[str, type]:
    """Upstream's dataclasses `names` from verl/<relative>, executed from source with their annotations
    (the kit's loader strips them, and dataclass fields need them), on top of verl/base_config.py's
    `BaseConfig`. Registered as modules '_verlstudy_upstream_<release>_*' so `_target_` paths resolve."""
    check_str("relative", relative, what="a path inside verl (a str, like 'workers/config/engine.py')")
    names = tuple(check_items("names", names, str, what="a class name (a str)"))
    if release is not None:
        check_str("release", release, what="a verl version like '0.9.0' (a str) or None")
    tag = (release or upstream.verl_version()).replace(".", "_")
    base_text, base_file = upstream_file("base_config.py", release)
    base = _module(f"_verlstudy_upstream_{tag}_base_config", base_text, base_file, lambda n: True, {})
    text, filename = upstream_file(relative, release)
    defined = {n.name for n in ast.parse(text, filename=filename).body if isinstance(n, ast.ClassDef)}
    missing = [n for n in names if n not in defined]
    if missing:
        raise UpstreamMoved(f"{filename} defines no class {', '.join(missing)}: it moved or was renamed")
    stem = relative.removesuffix(".py").replace("/", "_")
    module = _module(
        f"_verlstudy_upstream_{tag}_{stem}",
        text,
        filename,
        lambda n: _stdlib_import(n) or (isinstance(n, ast.ClassDef) and n.name in names),
        {"BaseConfig": base.BaseConfig},
    )
    return {n: getattr(module, n) for n in names}


# ---------------------------------------------------------------- generated cases

_PERTURBATIONS = ("typo", "removed key", "bad router mode", "bad dtype", "bad strategy", "dynamic cp without length")


def _random_kwargs(rng: random.Random, classes: dict[str, type]) -> dict[str, Any]:
    """Type-correct keyword arguments for McoreEngineConfig, nested configs given as mappings."""
    pick = {
        "param_offload": lambda: rng.random() < 0.5,
        "optimizer_offload": lambda: rng.random() < 0.5,
        "dtype": lambda: rng.choice(["bfloat16", "float16"]),
        "tensor_model_parallel_size": lambda: rng.choice([1, 2, 4]),
        "context_parallel_size": lambda: rng.choice([1, 2]),
        "virtual_pipeline_model_parallel_size": lambda: rng.choice([None, 2]),
        "max_token_len_per_gpu": lambda: rng.choice([None, 4096]),
        "override_transformer_config": lambda: rng.choice([{}, {"recompute_granularity": "full"}]),
        "use_mbridge": lambda: rng.random() < 0.5,
        "seed": lambda: rng.randint(0, 99),
        "router_replay": lambda: {"mode": rng.choice(["disabled", "R2", "R3"]), "record_file": rng.choice([None, "r"])},
        "qat": lambda: {"enable": rng.random() < 0.3, "ignore_patterns": rng.choice([["lm_head"], []])},
    }
    return {k: f() for k, f in pick.items() if rng.random() < 0.6}


def _upstream_outcome(classes: dict[str, type], kwargs: dict[str, Any]) -> tuple[str, Any]:
    """What upstream does with a block: nested configs built by their own classes, then the constructor."""
    nested = {"router_replay": classes["EngineRouterReplayConfig"], "qat": classes["QATEngineConfig"]}
    try:
        built = {k: nested[k](**v) if k in nested and isinstance(v, dict) else v for k, v in kwargs.items()}
        return "built", classes["McoreEngineConfig"](**built)
    except (TypeError, ValueError, AssertionError) as err:
        return "rejected", type(err).__name__


def _course_outcome(build: Callable[..., Any], cls: type, data: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "built", build(cls, data)
    except ConfigError:
        return "rejected", "ConfigError"


def _perturb(rng: random.Random, kwargs: dict[str, Any]) -> str:
    kind = rng.choice(_PERTURBATIONS)
    if kind == "typo":
        kwargs["param_ofload"] = True
    elif kind == "removed key":
        kwargs["grad_offload"] = rng.random() < 0.5
    elif kind == "bad router mode":
        kwargs["router_replay"] = {"mode": "R4"}
    elif kind == "bad dtype":
        kwargs["dtype"] = "float32"
    elif kind == "bad strategy":
        kwargs["strategy"] = "fsdp"
    else:
        kwargs.update(dynamic_context_parallel=True, max_seqlen_per_dp_cp_rank=None)
    return kind


def compare_engine_config(
    cases: int = 300,
    seed: int = 0,
    build: Callable[..., Any] | None = None,
    to_dict: Callable[[Any], dict[str, Any]] | None = None,
) -> Comparison:
    """The course's `build` and `to_dict` against upstream's McoreEngineConfig on `cases` generated configs.

    Even cases: a YAML block (half with a perturbation upstream rejects); both must reject, or both build
    equal configs. Odd cases: a config made in Python by upstream's classes must come back equal from
    `to_dict` -> YAML text -> `build`. Type mismatches are not generated: upstream's `_target_` path does not
    check types (hydra passes the values to the constructor), so the course's stricter `build` differs by design.
    """
    cases = positive_int("cases", cases)
    seed = check_int("seed", seed, minimum=0, kind="argument")
    if build is not None:
        check_callable("build", build, what="a function (the code under comparison) or None")
    if to_dict is not None:
        check_callable("to_dict", to_dict, what="a function (the code under comparison) or None")
    build, to_dict = build or schema.build, to_dict or schema.to_dict
    name = "verl/workers/config/engine.py::McoreEngineConfig"
    version = upstream.verl_version()
    classes = load_config_classes()
    cls = classes["McoreEngineConfig"]
    rng = random.Random(seed)

    def differ(i: int, text: str) -> Comparison:
        return Comparison("09", name, version, i + 1, "differ", f"case {i}: {text}")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # __post_init__ warns about sequence_parallel and vanilla_mbridge
        for i in range(cases):
            kwargs = _random_kwargs(rng, classes)
            if i % 2 == 0:
                kind = _perturb(rng, kwargs) if rng.random() < 0.5 else "valid"
                data = {schema.TARGET_KEY: schema.class_path(cls), **kwargs} if rng.random() < 0.5 else dict(kwargs)
                ours, theirs = _course_outcome(build, cls, data), _upstream_outcome(classes, kwargs)
                if ours[0] != theirs[0] or (ours[0] == "built" and ours[1] != theirs[1]):
                    return differ(i, f"{kind} block {kwargs!r}: ours {ours[0]}, upstream {theirs[0]} {theirs[1]!r}")
            else:
                status, made = _upstream_outcome(classes, kwargs)
                if status != "built":  # the generator makes only valid configs here
                    raise AssertionError(f"case {i}: upstream rejected a generated config {kwargs!r}: {made}")
                text = schema.dump_yaml(to_dict(made))
                try:
                    back = build(cls, loading.parse_yaml(text, "roundtrip.yaml"))
                except ConfigError as err:
                    return differ(i, f"a config made in Python does not read back: {err}")
                if back != made:
                    return differ(i, f"a config made in Python reads back different: {back!r}")
    return Comparison("09", name, version, cases, "agree")


COMPARISONS = (compare_engine_config,)


def upstream_check(cases: int = 50) -> None:
    """The lesson's upstream cell: one line per comparison, a skip line without verl; raises if upstream differs."""
    cases = positive_int("cases", cases)
    # a case writes and reads YAML text, a few times the cost of other lessons' cases; verify-upstream runs 300
    report_check("09", [lambda: compare_engine_config(max(cases // 2, 1))])
