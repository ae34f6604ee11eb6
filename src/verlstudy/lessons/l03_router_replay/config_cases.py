"""Exercise 3.3's cases, configs and mistake names: serves `checks.py` only (nothing else imports it).

A config is drawn as a spec (a nested dict, or the label of a config a dict cannot describe: a namespace, a
composite with get_text_config(), one that contains itself); `_outcome` builds it for every call and turns a
raise into a `_Raised` value, so a raise is compared like a value. `_text_attr_mistake_for` names a wrong
walk by replaying the usual wrong ones (`_variant_lookup`, `_walk_variants`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import permutations
from types import SimpleNamespace
from typing import Any, ClassVar

from hypothesis import strategies as st

from verlstudy.kit import i18n
from verlstudy.lessons.l03_router_replay.text_config import TEXT_BRANCHES, ComposedConfig, ToyConfig


@dataclass(frozen=True)
class _Raised:
    """What a lookup did when it raised (so a raise can be compared with the reference's)."""

    kind: str

    def __repr__(self) -> str:
        return f"<raised {self.kind}>"

    @property
    def described_as(self) -> str:  # how kit.properties names it in a message: never the class's own name
        return f"a raised {self.kind.split(' (')[0]}"


def _outcome(fn: Callable[[object, str], Any]) -> Callable[[object, str], Any]:
    """fn called on the config a spec describes; a raise becomes a `_Raised` value to compare."""

    def call(spec: object, name: str) -> Any:
        try:
            return fn(_build(spec), name)
        except AttributeError:
            return _Raised("AttributeError")
        except (LookupError, ValueError) as e:  # KeyError, IndexError ...: compared, so the message can say so
            return _Raised(type(e).__name__)
        except RecursionError:
            return _Raised("RecursionError (a config that contains itself was walked forever)")

    return call


class _AliasedText(ToyConfig):
    """A text config as Hugging Face writes GPT-2's: `hidden_size` is served from `n_embd` through the class's
    `attribute_map` (as `PretrainedConfig.__getattribute__` does), so it is in no instance `__dict__`."""

    attribute_map: ClassVar[dict[str, str]] = {"hidden_size": "n_embd"}

    def __getattribute__(self, key: str) -> Any:
        aliases = type(self).attribute_map
        return super().__getattribute__(aliases.get(key, key))


ALIASED = "Omni(text_config=GPT2Text(n_embd=768; hidden_size read through its attribute_map))"


def _named_configs() -> dict[str, Callable[[], object]]:
    """Configs a plain nested dict cannot describe: a namespace, a composite, a cycle, an attribute alias."""

    def loop() -> object:
        config = ToyConfig("Loop", hidden_size=None)
        config.model_config = config
        return config

    return {
        "Thinker(hidden_size=1024, thinker_config=(text_config=(hidden_size=3584)))": lambda: SimpleNamespace(
            hidden_size=1024, thinker_config=SimpleNamespace(text_config=SimpleNamespace(hidden_size=3584))
        ),
        "Composite(hidden_size=1024, get_text_config() -> Decoder(hidden_size=8192), "
        "decoder_config=Dec(hidden_size=2048))": lambda: ComposedConfig(
            "Composite",
            ToyConfig("Decoder", hidden_size=8192),
            hidden_size=1024,
            decoder_config=ToyConfig("Dec", hidden_size=2048),
        ),
        "Loop(hidden_size=None, model_config=<itself>)": loop,
        ALIASED: lambda: ToyConfig("Omni", text_config=_AliasedText("GPT2Text", n_embd=768)),
    }


def _build(spec: object) -> object:
    """A config from its spec: a named config's label, or {"kind": ..., attribute: value or sub-spec}."""
    if isinstance(spec, str):
        return _named_configs()[spec]()
    assert isinstance(spec, dict)
    attrs = {
        k: _build(v) if isinstance(v, (dict, str)) and k.endswith("_config") else v
        for k, v in spec.items()
        if k != "kind"
    }
    return ToyConfig(spec["kind"], **attrs)


def _describe(spec: object) -> str:
    if isinstance(spec, str):
        return spec
    inner = ", ".join(f"{k}={_describe(v) if isinstance(v, dict) else repr(v)}" for k, v in spec.items() if k != "kind")
    return f"{spec['kind']}({inner})"


def _show_lookup(args: tuple[Any, ...], kwargs: Any) -> str:
    spec, name = args
    return f"find_text_attr({_describe(spec)}, {name!r})"


def _text_attr_cases() -> list[tuple[str, object, str, Any]]:
    """(label, config spec, name, expected) for exercise 3.3; upstream's get_hf_config_attr agrees on each."""
    text = {"kind": "Text", "hidden_size": 4096, "tie_word_embeddings": False, "num_experts": 0}
    root = {
        "kind": "Omni",
        "hidden_size": 1024,
        "text_config": text,
        "audio_config": {"kind": "Audio", "vocab_size": 7},
    }
    names = list(_named_configs())
    deeper = {
        "kind": "Root",
        "hidden_size": 1024,
        "text_config": {"kind": "Text", "hidden_size": 4096, "language_config": {"kind": "Inner", "hidden_size": 999}},
    }
    return [
        ("root 1024 beside text_config 4096", root, "hidden_size", 4096),
        ("False is a value, not a miss", root, "tie_word_embeddings", False),
        ("0 is a value, not a miss", root, "num_experts", 0),
        ("only the audio sibling has vocab_size", root, "vocab_size", _Raised("AttributeError")),
        (
            "language_config branch",
            {"kind": "VL", "language_config": {"kind": "LM", "rope_theta": 1e6}},
            "rope_theta",
            1e6,
        ),
        ("thinker_config -> text_config", names[0], "hidden_size", 3584),
        (
            "the root when its branch lacks it",
            {"kind": "VL", "vocab_size": 151936, "text_config": {"kind": "Text", "hidden_size": 8}},
            "vocab_size",
            151936,
        ),
        ("get_text_config() 8192 beside root 1024 and decoder_config 2048", names[1], "hidden_size", 8192),
        ("the text config's own 4096 before 999 deeper inside it", deeper, "hidden_size", 4096),
        (
            "a config that contains itself, hidden_size None everywhere",
            names[2],
            "hidden_size",
            _Raised("AttributeError"),
        ),
        ("hidden_size served through a Hugging Face attribute_map alias, in no __dict__", ALIASED, "hidden_size", 768),
    ]


_ROOT_FIRST = (
    "your walk answered with the root's own value: it read the root before its text branch, "
    "or missed the branch that has it"
)
_IGNORES_GETTER = "your walk ignores what the config's get_text_config() returns"
_DICT_ONLY = (
    "your walk reads each config's instance __dict__ (vars), which misses an attribute the class serves: "
    "Hugging Face's attribute_map aliases, a property"
)


def _walk_variants(config: object, name: str) -> dict[str, Any]:
    """What the usual wrong walks answer, by the mistake they make (for naming a mismatch)."""

    def first(nodes: list[object]) -> Any:
        for node in nodes:
            value = getattr(node, name, None)
            if value is not None and not callable(value):
                return value
        return _Raised("AttributeError")

    def branch_only(node: object, seen: set[int]) -> list[object]:
        if node is None or id(node) in seen:
            return []
        seen.add(id(node))
        out: list[object] = []
        for b in TEXT_BRANCHES:
            out += branch_only(getattr(node, b, None), seen)
        return [*out, node]

    text = getattr(config, "text_config", None)
    getter = getattr(config, "get_text_config", None)
    via_getter = getter() if callable(getter) else None
    own = getattr(config, name, None)
    # get_text_config() finds a config no attribute holds (a plain ToyConfig without text_config returns itself)
    composite = via_getter is not None and via_getter is not text and via_getter is not config
    return {
        _ROOT_FIRST: own,
        _IGNORES_GETTER: first(branch_only(config, set())) if composite else None,
        "your walk reads only the text_config attribute": first([text, config]) if text is not None else None,
    }


def _variant_lookup(
    config: object, name: str, *, falsy_absent: bool = False, order: tuple[str, ...], dict_only: bool = False
) -> Any:
    """The text-branch lookup with one thing changed (what counts as absent, the branch order, reading only the
    instance __dict__): a wrong walk."""

    def value_of(node: object) -> Any:
        if dict_only:
            return vars(node).get(name) if hasattr(node, "__dict__") else None
        return getattr(node, name, None)

    def present(node: object) -> bool:
        value = value_of(node)
        return bool(value) if falsy_absent else value is not None

    def text_of(node: object) -> object | None:
        getter = getattr(node, "get_text_config", None)
        text = getter() if callable(getter) else None
        return text if text is not None else getattr(node, "text_config", None)

    seen: set[int] = set()

    def visit(node: object) -> Any:
        if id(node) in seen:
            return None
        seen.add(id(node))
        text = text_of(node)
        children = [text] if text is not None and text is not node else []
        children += [c for b in order if (c := getattr(node, b, None)) is not None and c is not text]
        for child in children:
            found = visit(child)
            if found is not None:
                return found
        return node if present(node) else None

    head = text_of(config)
    node = head if head is not None and present(head) else visit(config)
    return _Raised("AttributeError") if node is None else value_of(node)


def _same_outcome(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _text_attr_mistake_for(find_attr: Callable[[object, str], Any]) -> Callable[..., str | None]:
    def name_it(args: tuple[Any, ...], got: Any, want: Any) -> str | None:
        if got is None and isinstance(want, _Raised):
            try:
                empty = find_attr(ToyConfig("Empty"), "hidden_size")
            except Exception:
                empty = _Raised("something")
            if empty is None:
                return i18n._(
                    "when nothing on the text branch has a value, your lookup returns None: raise AttributeError "
                    "instead, so a miss cannot pass for a value"
                )
            return i18n._(
                "your lookup returned None, a value that counts as absent: a config whose attribute is None does "
                "not have it (is the test whether the attribute exists, rather than whether its value is None?)"
            )
        return _text_attr_mistake(
            args,
            got,
            want,
            skips_falsy=lambda: _skips_falsy(find_attr),
            ignores_getter=lambda: _ignores_getter(find_attr),
        )

    return name_it


def _ignores_getter(find_attr: Callable[[object, str], Any]) -> bool:
    """Whether a lookup misses the value of a text config that only get_text_config() returns (a probe)."""
    probe = ComposedConfig("Composite", ToyConfig("Decoder", hidden_size=8192))
    try:
        return not _same_outcome(find_attr(probe, "hidden_size"), 8192)
    except Exception:
        return True


def _skips_falsy(find_attr: Callable[[object, str], Any]) -> bool:
    """Whether a lookup misses a 0 that sits on the text config, the first place read (a probe)."""
    try:
        return not _same_outcome(
            find_attr(ToyConfig("Root", text_config=ToyConfig("Text", num_experts=0)), "num_experts"), 0
        )
    except Exception:
        return True


def _text_attr_mistake(
    args: tuple[Any, ...],
    got: Any,
    want: Any,
    skips_falsy: Callable[[], bool] = lambda: True,
    ignores_getter: Callable[[], bool] = lambda: True,
) -> str | None:
    spec, name = args
    if isinstance(got, _Raised) and "Recursion" in got.kind:
        return i18n._("your walk revisits configs: a config that contains itself never ends")
    if isinstance(got, _Raised) and isinstance(want, _Raised) and got.kind != want.kind:
        return i18n.pick(
            "when nothing on the text branch has it, raise AttributeError (the exercise asks for it), not {kind}",
            kind=got.kind,
        )
    config = _build(spec)
    dict_only = _variant_lookup(config, name, order=TEXT_BRANCHES, dict_only=True)
    if _same_outcome(got, dict_only) and not _same_outcome(want, dict_only):
        return i18n._(_DICT_ONLY)
    if _same_outcome(got, _variant_lookup(config, name, falsy_absent=True, order=TEXT_BRANCHES)) and skips_falsy():
        return i18n._("your walk takes a falsy value (0, False) for a missing one")
    for order in permutations(TEXT_BRANCHES):
        if order != tuple(TEXT_BRANCHES) and _same_outcome(got, _variant_lookup(_build(spec), name, order=order)):
            return i18n._(
                "your walk reads the named sub-configs in another order than the exercise lists them: when two "
                "of them have a value, the first in that order wins"
            )
    if isinstance(got, _Raised) and not isinstance(want, _Raised):
        return i18n._(
            "your walk missed a text branch that has it (language_config, thinker_config's own text config, ...)"
        )
    if isinstance(want, _Raised) and not isinstance(got, _Raised):
        return i18n._("nothing on the text branch has it, and your walk returned a value: it read a sibling sub-config")
    variants = _walk_variants(_build(spec), name)
    # get_text_config() ignored and the root read first can give one value: a probe tells them apart
    ignoring = variants[_IGNORES_GETTER]
    if ignoring is not None and _same_outcome(got, ignoring) and ignores_getter():
        return i18n._(_IGNORES_GETTER)
    for mistake, value in variants.items():
        if mistake == _IGNORES_GETTER:
            continue
        if value is not None and not isinstance(value, _Raised) and value == got and type(value) is type(got):
            return i18n._(mistake)
    if isinstance(spec, dict) and isinstance(spec.get("text_config"), dict) and got != want:
        return i18n._("a value on the text config itself wins over one deeper inside it, and deeper wins over the root")
    return None


def _config_tree(draw: Any, depth: int, name: str) -> dict[str, object]:
    spec: dict[str, object] = {"kind": f"C{depth}"}
    value = draw(st.sampled_from([None, None, 0, 64, 128, 4096]))
    if value is not None:
        spec[name] = value
    if depth > 0:
        branches = [*TEXT_BRANCHES, "audio_config", "vision_config"]
        for branch in draw(st.lists(st.sampled_from(branches), max_size=2, unique=True)):
            spec[branch] = _config_tree(draw, depth - 1, name)
    return spec


@st.composite
def _config_inputs(draw: Any) -> tuple[dict[str, object], str]:
    return _config_tree(draw, draw(st.integers(0, 3)), "hidden_size"), "hidden_size"
