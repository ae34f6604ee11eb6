"""Lesson 03's comparison with upstream verl's own function, on generated cases (`verlstudy verify-upstream`)."""

from __future__ import annotations

import random
import types
from collections.abc import Callable

from verlstudy.kit import upstream
from verlstudy.kit.upstream import Comparison, report_check
from verlstudy.lessons.l03_router_replay.text_config import get_text_config_attr

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


COMPARISONS = (compare_config_attr,)


def upstream_check(cases: int = 50) -> None:
    """The lesson's upstream cell: one line per comparison, a skip line without verl; raises if upstream differs."""
    report_check("03", [lambda: compare_config_attr(cases)])
