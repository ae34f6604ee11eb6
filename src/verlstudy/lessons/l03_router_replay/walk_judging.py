"""Exercise 3.3's configs shaped like Hugging Face's (serves checks.py only), drawn beside config_cases' trees.

A drawn config is one of the shapes the lesson names: a plain language model (get_text_config() returns the config
itself), a vision-language model (text_config or language_config, a vision sibling), an Omni model (thinker_config
holding text_config, talker and token2wav siblings with attributes of the same name), a composite whose
get_text_config() returns a config no attribute holds. Each node's get_text_config takes transformers' keywords
(decoder=, encoder=); a text config can serve its value through an attribute_map alias; two names can hold one
sub-config; a sub-config can point back at the root. The attribute asked for is one of a model's (hidden_size,
num_hidden_layers, vocab_size, rope_theta, tie_word_embeddings, num_experts, model_type) and values are of any type,
0 and False included.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from hypothesis import strategies as st

from verlstudy.lessons.l03_router_replay.config_cases import _Raised
from verlstudy.lessons.l03_router_replay.text_config import ToyConfig

NAMES = ("hidden_size", "num_hidden_layers", "vocab_size", "rope_theta", "tie_word_embeddings", "num_experts")
VALUES: dict[str, tuple[object, ...]] = {
    "hidden_size": (None, 2048, 3584, 7168, 0),
    "num_hidden_layers": (None, 28, 61, 94, 0),
    "vocab_size": (None, 151936, 163840, 32000),
    "rope_theta": (None, 1000000.0, 50000.0, 0.0),
    "tie_word_embeddings": (None, False, True),
    "num_experts": (None, 384, 256, 0),
}


class HFConfig(ToyConfig):
    """A ToyConfig whose get_text_config takes transformers' keywords and whose text config is `text_config`
    or, for a composite, one no attribute holds (`_hidden_text`)."""

    def get_text_config(self, decoder: bool | None = None, encoder: bool | None = None) -> object:
        hidden = self.__dict__.get("_hidden_text")
        if hidden is not None:
            return hidden
        text = getattr(self, "text_config", None)
        return self if text is None else text


class AliasedConfig(HFConfig):
    """A text config serving `attribute_map`'s names from another attribute, as PretrainedConfig does."""

    attribute_map: ClassVar[dict[str, str]] = {}

    def __getattribute__(self, key: str) -> Any:
        aliases = object.__getattribute__(self, "aliases")
        return super().__getattribute__(aliases.get(key, key))


@dataclass(frozen=True)
class DrawnConfig:
    """A config drawn from `seed` (built afresh for every call) and the attribute asked for."""

    seed: int

    def build(self) -> tuple[object, str, str]:
        """(config, attribute name, a one-line description of the config)."""
        rng = random.Random(self.seed)
        name = rng.choice(NAMES)

        def value() -> object:
            return rng.choice(VALUES[name])

        def node(kind: str, *, aliased: bool = False, **subs: object) -> HFConfig:
            own = value()
            if aliased and own is not None:
                config: HFConfig = AliasedConfig(kind, _stored=own)
                object.__setattr__(config, "aliases", {name: "_stored"})
                described = f"{kind}({name}={own!r} through an attribute_map alias"
            else:
                config = HFConfig(kind, **({name: own} if own is not None else {}))
                described = f"{kind}({name}={own!r}" if own is not None else f"{kind}("
            for key, sub in subs.items():
                setattr(config, key, sub)
            return config, described

        shape = rng.choice(("lm", "vl", "vl_language", "omni", "composite"))
        text, text_d = node("Text", aliased=rng.random() < 0.25)
        inner, inner_d = node("Inner")
        if rng.random() < 0.4:
            text.model_config = inner
            text_d += f", model_config={inner_d})"
        elif rng.random() < 0.6:  # a text config wrapping the language model's own text config
            text.text_config = inner
            text_d += f", text_config={inner_d})"
        text_d += ")"
        if shape == "lm":
            root, root_d = node("LM")
            if rng.random() < 0.5:
                root.model_config = text
                root_d += f", model_config={text_d}"
        elif shape in ("vl", "vl_language"):
            key = "text_config" if shape == "vl" else "language_config"
            root, root_d = node("VL")
            vision, vision_d = node("Vision")
            setattr(root, key, text)
            root.vision_config = vision
            root_d += f", {key}={text_d}, vision_config={vision_d})"
            if shape == "vl" and rng.random() < 0.3:
                root.language_config = text  # two names, one sub-config
                root_d += ", language_config=<the same text config>"
        elif shape == "omni":
            root, root_d = node("Omni")
            thinker, thinker_d = node("Thinker")
            talker, talker_d = node("Talker")
            thinker.text_config = text
            root.thinker_config, root.talker_config = thinker, talker
            root.token2wav_config = HFConfig("Token2Wav", **{name: 1})
            root_d += f", thinker_config={thinker_d}, text_config={text_d}), talker_config={talker_d}))"
        else:
            root, root_d = node("Composite")
            decoder, decoder_d = node("Decoder")
            root.__dict__["_hidden_text"] = text
            root.decoder_config = decoder
            root_d += f", get_text_config() -> {text_d}, decoder_config={decoder_d}))"
        if rng.random() < 0.2:
            text.model_config = root  # a sub-config that points back at the root
            root_d += " (its text config's model_config is the root itself)"
        return root, name, root_d + ")" * (root_d.count("(") - root_d.count(")"))

    def __repr__(self) -> str:
        return self.build()[2]


@st.composite
def drawn_configs(draw: Any) -> tuple[DrawnConfig, str]:
    """(a drawn config, the attribute asked for): the name travels with the config it was drawn for."""
    drawn = DrawnConfig(draw(st.integers(0, 10**6)))
    return drawn, drawn.build()[1]


def with_drawn(
    outcome: Callable[[Callable[[object, str], Any]], Callable[[object, str], Any]],
    fn: Callable[[object, str], Any],
) -> Callable[[object, str], Any]:
    """`outcome(fn)` (config_cases' spec -> outcome), also for a DrawnConfig: built, then its raise compared
    as config_cases compares one."""
    on_spec = outcome(fn)

    def call(spec: object, name: str) -> Any:
        if not isinstance(spec, DrawnConfig):
            return on_spec(spec, name)
        config = spec.build()[0]
        try:
            return fn(config, name)
        except AttributeError:
            return _Raised("AttributeError")
        except (LookupError, ValueError) as e:
            return _Raised(type(e).__name__)
        except RecursionError:
            return _Raised("RecursionError (a config that contains itself was walked forever)")

    return call


def naming_drawn(
    mistakes: Callable[..., str | None], show: Callable[[tuple[Any, ...], Any], str]
) -> tuple[Callable[..., str | None], Callable[[tuple[Any, ...], Any], str]]:
    """The mistake namer and the input's description, also for a DrawnConfig (named only where recognised)."""

    def name(args: tuple[Any, ...], got: Any, want: Any) -> str | None:
        try:
            return mistakes(args, got, want)
        except Exception:  # a namer that reads config_cases' specs: a drawn config is shown, not named
            return None

    def shown(args: tuple[Any, ...], kwargs: Any) -> str:
        spec, attr = args
        return f"find_text_attr({spec!r}, {attr!r})" if isinstance(spec, DrawnConfig) else show(args, kwargs)

    return name, shown
