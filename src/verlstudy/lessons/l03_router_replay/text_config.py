"""Reading a model attribute from the text branch of a nested (multimodal) config (lesson 03).

As upstream's `verl/utils/megatron_utils.py::get_hf_config_attr` (verl 0.9.1), which replaced #7106's
root-first queue over the four names below: `get_text_config_attr` reads the text config, then
`text_config`, `language_config`, `thinker_config`, `model_config` deepest first, never audio or code2wav
siblings. `bfs_config_attr` is the course's naive walk, root first like #7106's queue but over every
sub-config; `ToyConfig` stands in for a Hugging Face config.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any

__all__ = ["TEXT_BRANCHES", "ComposedConfig", "ToyConfig", "bfs_config_attr", "get_text_config_attr"]


# ---------------------------------------------------------------------------------------------
# The config walk
# ---------------------------------------------------------------------------------------------

TEXT_BRANCHES: tuple[str, ...] = ("text_config", "language_config", "thinker_config", "model_config")


class ToyConfig:
    """A stand-in for a Hugging Face config: attributes plus nested sub-configs.

    `get_text_config()` returns `text_config` when there is one, else the config itself (the shape of
    `transformers.PretrainedConfig.get_text_config` for the cases here).
    """

    def __init__(self, kind: str, **attributes: object) -> None:
        if not isinstance(kind, str) or not kind:
            raise TypeError("kind must be a non-empty string naming the config type")
        self.kind = kind
        for key, value in attributes.items():
            setattr(self, key, value)

    def __repr__(self) -> str:
        return f"{self.kind}Config"

    def get_text_config(self, decoder: bool | None = None, encoder: bool | None = None) -> object:
        # Hugging Face's PretrainedConfig.get_text_config takes these keywords; a learner may pass them
        text = getattr(self, "text_config", None)
        return self if text is None else text


class ComposedConfig(ToyConfig):
    """A composite config whose `get_text_config()` returns a text config it does not store as `text_config`.

    (transformers' composite configs resolve their text config this way; a walk over named attributes
    alone never finds it.)
    """

    def __init__(self, kind: str, text: object, **attributes: object) -> None:
        super().__init__(kind, **attributes)
        self._text = text

    def get_text_config(self, decoder: bool | None = None, encoder: bool | None = None) -> object:
        return self._text


def _config_name(config: object) -> str:
    return repr(config) if isinstance(config, ToyConfig) else type(config).__name__


def _text_config(config: object) -> object | None:
    get_text_config = getattr(config, "get_text_config", None)
    if callable(get_text_config):
        text = get_text_config()
        if text is not None:
            return text
    return getattr(config, "text_config", None)


def _text_branch(config: object) -> Iterator[object]:
    """Configs on the text branch, deepest first: the text config and named LM wrappers, then the node.

    Never arbitrary sub-configs (audio, vision, code2wav): they can carry conflicting attributes.
    Cycle-safe: a config already visited is skipped.
    """
    seen: set[int] = set()

    def visit(node: object) -> Iterator[object]:
        if id(node) in seen:
            return
        seen.add(id(node))
        text = _text_config(node)
        if text is not None and text is not node:
            yield from visit(text)
        for branch in TEXT_BRANCHES:
            child = getattr(node, branch, None)
            if child is not None and child is not text:
                yield from visit(child)
        yield node

    yield from visit(config)


def _check_attr_name(name: object) -> str:
    if not isinstance(name, str):
        raise TypeError(f"name must be an attribute name (str), got {type(name).__name__} {name!r}")
    if not name.isidentifier():
        raise ValueError(f"name must be a valid attribute name, got {name!r}")
    return name


def _sub_configs(config: object) -> Iterator[tuple[str, object]]:
    for key, value in vars(config).items() if hasattr(config, "__dict__") else ():
        if hasattr(value, "__dict__") and (isinstance(value, ToyConfig) or type(value).__name__.endswith("Config")):
            yield key, value


def get_text_config_attr(config: object, name: str) -> Any:
    """Read `name` from the text branch of a (possibly nested, multimodal) model config.

    As upstream's `verl/utils/megatron_utils.py::get_hf_config_attr` (verl 0.9.1): first the text
    config (`get_text_config()`, else `text_config`), then the text branch walked deepest first
    (`text_config`, `language_config`, `thinker_config`, `model_config`, then the node itself).
    A value that is None counts as absent; falsy values (0, False) are returned. Audio/code2wav
    siblings are never read: if only they have it, AttributeError names the config type, the
    attribute and where it was seen.
    """
    name = _check_attr_name(name)
    if config is None:
        raise TypeError("config must be a model config object, got None")
    text = _text_config(config)
    if text is not None:
        value = getattr(text, name, None)
        if value is not None:
            return value
    on_branch: set[int] = set()
    for node in _text_branch(config):
        on_branch.add(id(node))
        value = getattr(node, name, None)
        if value is not None:
            return value
    seen_on = [path for path, node in _walk_all(config) if id(node) not in on_branch and hasattr(node, name)]
    hint = f"; only off-branch sub-configs have it ({', '.join(seen_on)}), which are never read" if seen_on else ""
    raise AttributeError(f"{_config_name(config)} has no nested {name!r} on its text branch{hint}")


def _walk_all(config: object) -> Iterator[tuple[str, object]]:
    """Every config reachable through sub-config attributes, breadth first, root first (cycle-safe)."""
    seen = {id(config)}
    queue: deque[tuple[str, object]] = deque([("<root>", config)])
    while queue:
        path, node = queue.popleft()
        yield path, node
        for key, child in _sub_configs(node):
            if id(child) not in seen:
                seen.add(id(child))
                queue.append((key if path == "<root>" else f"{path}.{key}", child))


def bfs_config_attr(config: object, name: str) -> Any:
    """The course's naive walk: breadth first from the root over *every* sub-config.

    The root answers first (1024 where the language model says 4096), and an audio sibling answers
    when the text branch has nothing: both silently wrong.
    """
    name = _check_attr_name(name)
    for _, node in _walk_all(config):
        value = getattr(node, name, None)
        if value is not None:
            return value
    raise AttributeError(f"{_config_name(config)} has no {name!r} anywhere")
