"""Lesson 03's exercise checkers: 3.1 stacks routes by layer number, 3.2 is the dense (VPP with BSHD inputs) branch's
wire format of `pp_gather`, 3.3 reads a config's text branch.

Each checker compares the learner's function with a reference on named edge cases, then on inputs drawn
from the exercise's own domain (`verlstudy.kit.properties`). A wrong answer's message names the mistake
it shows; `where` and `method` are the later rungs of the hint ladder, in words. The mechanism's own
`stack_routes`, `to_wire`/`from_wire` and config walks are refused as answers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import permutations
from types import SimpleNamespace
from typing import Any

import torch
from hypothesis import strategies as st

from verlstudy.kit.exercises import ExerciseFailure, checker
from verlstudy.kit.properties import Case, compare_on_inputs
from verlstudy.lessons.l03_router_replay.moe import ROUTE_DTYPE
from verlstudy.lessons.l03_router_replay.pipeline import from_wire, to_wire
from verlstudy.lessons.l03_router_replay.routes import stack_routes
from verlstudy.lessons.l03_router_replay.text_config import (
    TEXT_BRANCHES,
    ComposedConfig,
    ToyConfig,
    bfs_config_attr,
    get_text_config_attr,
)

# ---------------------------------------------------------------- 3.1 stack routes by layer number


def _routes(seed: int, tokens: int, topk: int, high: int = 8) -> torch.Tensor:
    return torch.randint(0, high, (tokens, topk), generator=torch.Generator().manual_seed(seed))


def _pairs(numbers: list[int], tokens: int = 3, topk: int = 2, seed: int = 0) -> list[tuple[int, torch.Tensor]]:
    return [(n, _routes(seed * 1000 + n, tokens, topk)) for n in numbers]


def _stack_reference(pairs: list[tuple[int, torch.Tensor]]) -> torch.Tensor:
    ordered = sorted(pairs, key=lambda pair: pair[0])
    return torch.stack([routes.to(ROUTE_DTYPE) for _, routes in ordered], dim=1)


def _stack_mistake(args: tuple[Any, ...], got: Any, want: torch.Tensor) -> str | None:
    (pairs,) = args
    if not isinstance(got, torch.Tensor):
        return "return one tensor (tokens, layers, topk)"
    if got.dtype != ROUTE_DTYPE and got.shape == want.shape:
        return "routes are stored as torch.int16"
    if got.shape != want.shape:
        if got.dim() == 3 and got.shape[0] == want.shape[1] and got.shape[1] == want.shape[0]:
            return "your layers are not the middle dim"
        return "the map must be (tokens, layers, topk): one column per router"

    def stacked(order: list[tuple[int, torch.Tensor]]) -> torch.Tensor:
        return torch.stack([r.to(ROUTE_DTYPE) for _, r in order], dim=1)

    if torch.equal(got, stacked(pairs)):
        return "the columns follow the order the pairs came in, not the layer numbers"
    if torch.equal(got, stacked(sorted(pairs, key=lambda p: str(p[0])))):
        return "the layer numbers were sorted as text (10 before 2), not as numbers"
    if torch.equal(got, stacked(sorted(pairs, key=lambda p: -p[0]))):
        return "the columns are in descending layer order"
    return "some column holds another layer's routes: replay would hand them to the wrong layer"


@st.composite
def _stack_inputs(draw: Any) -> tuple[list[tuple[int, torch.Tensor]]]:
    count = draw(st.integers(1, 5))
    numbers = draw(st.lists(st.integers(1, 40), min_size=count, max_size=count, unique=True))
    tokens, topk, seed = draw(st.integers(1, 4)), draw(st.integers(1, 3)), draw(st.integers(0, 50))
    return (_pairs(numbers, tokens, topk, seed),)


def _duplicate_verdict(stack_by_layer: Callable[..., Any]) -> None:
    """A duplicate layer number must raise ValueError (two routers claiming one layer)."""
    for numbers in ([1, 2, 1], [5, 3, 3]):
        try:
            stack_by_layer(_pairs(numbers))
        except ValueError:
            continue
        except (ExerciseFailure, NotImplementedError):
            raise
        except Exception as e:
            raise ExerciseFailure(
                f"layers {numbers}: two routers claimed one layer and your function raised {type(e).__name__} "
                f"({e}); raise ValueError for a duplicate"
            ) from None
        raise ExerciseFailure(
            f"layers {numbers}: two routers claimed one layer and your function raised nothing: "
            "a duplicate went through"
        )


@checker(
    "3.1",
    library_answers=[stack_routes],
    where=(
        "Section 3, the review catch: the walk meets routers in the order the model holds them, and replay "
        "indexes layers by their number. Look at what the shuffled registration did to the stacked map."
    ),
    method=(
        "First collect the layer numbers and refuse the input when one of them appears twice. Then order the "
        "pairs by their layer number alone, compared as numbers (the tensors cannot be compared). Convert each "
        "routes tensor to the 16-bit integer type and stack them so that the layer is the middle dimension. "
        "Build a new list; leave the one you were given as it was."
    ),
    reveals=["sort routers by layer_number before stacking", "sort by layer number, reject duplicates"],
)
def check_stack_by_layer(stack_by_layer: Callable[[list[tuple[int, torch.Tensor]]], torch.Tensor]) -> str:
    """Exercise 3.1: stack (layer_number, routes) pairs met in walk order, by layer number."""
    if not callable(stack_by_layer):
        raise ExerciseFailure(f"pass your function itself, got {type(stack_by_layer).__name__}")
    summary = compare_on_inputs(
        stack_by_layer,
        _stack_reference,
        name="stack_by_layer",
        edge_cases=[
            Case((_pairs([3, 1, 4, 2]),), "walk order 3, 1, 4, 2"),
            Case((_pairs([1, 3]),), "layer numbers with a gap (a dense layer between)"),
            Case((_pairs([2, 10, 9]),), "layer numbers past 9: 10 sorts before 2 as text"),
            Case((_pairs([4, 3, 2, 1]),), "walk order reversed"),
            Case((_pairs([7], tokens=1, topk=1),), "one router, one token, top-1"),
            Case((_pairs([2, 1], tokens=5, topk=3, seed=7),), "another token count and topk"),
        ],
        inputs=_stack_inputs(),
        mistakes=_stack_mistake,
    )
    _duplicate_verdict(stack_by_layer)
    return f"{summary}; duplicates rejected"


# ---------------------------------------------------------------- 3.2 the dense branch's wire format


def _to_wire_reference(routes: torch.Tensor, max_layers: int) -> torch.Tensor:
    payload = routes.contiguous().view(torch.uint8)
    padded = torch.zeros((*payload.shape[:2], max_layers, payload.shape[3]), dtype=torch.uint8)
    padded[:, :, : payload.shape[2]] = payload
    return padded


def _from_wire_reference(payload: torch.Tensor, layer_count: int) -> torch.Tensor:
    return payload[:, :, :layer_count].contiguous().view(ROUTE_DTYPE)


def _route_map(batch: int, seq: int, layers: int, topk: int, seed: int, zero_layer: bool = True) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    routes = torch.randint(0, 384, (batch, seq, layers, topk), generator=gen).to(ROUTE_DTYPE)
    if layers:
        routes[0, 0, 0, 0] = 300  # an expert id above 255: a value cast to uint8 would turn it into 44
    if zero_layer and layers >= 2:
        routes[:, :, -1] = 0  # every token on expert 0 in the last layer: a real layer whose bytes are all zero
    return routes


def _to_wire_mistake(args: tuple[Any, ...], got: Any, want: torch.Tensor) -> str | None:
    routes, max_layers = args
    if not isinstance(got, torch.Tensor) or got.dtype != torch.uint8:
        return "to_wire must return a torch.uint8 tensor (the bytes gloo/NCCL can send)"
    if got.shape != want.shape:
        if got.dim() != 4:
            return "the payload is not 4-dimensional"
        if got.shape[2] == routes.shape[2] and routes.shape[2] != max_layers:
            return "the layer dim is not padded to max_layers"
        if got.shape[3] == routes.shape[3]:
            return "each route became one byte: a value cast to uint8 keeps only the low byte of an expert id"
        return "the padding went onto another dim than the layers, or bytes are missing"
    layers = routes.shape[2]
    front = got[:, :, : max_layers - layers]
    if (
        layers
        and max_layers > layers
        and torch.equal(got[:, :, max_layers - layers :], want[:, :, :layers])
        and not int(front.count_nonzero())
    ):
        return "the real layers sit at the end of the layer dim, after the padding: they must come first"
    if int(got[:, :, layers:].count_nonzero()):
        return "the padding layers hold nonzero bytes, so the padding carries routes that do not exist"
    swapped = want[:, :, :layers].unflatten(-1, (-1, 2)).flip(-1).flatten(-2)
    if layers and torch.equal(got[:, :, :layers], swapped):
        return (
            "the two bytes of each route are in the other order: the payload must be the int16 tensor's own "
            "memory (little-endian on every machine torch runs on), reinterpreted, not bytes you assemble"
        )
    return "the bytes of the real layers differ: a value cast to uint8 keeps only the low byte of an expert id"


def _from_wire_mistake(args: tuple[Any, ...], got: Any, want: torch.Tensor) -> str | None:
    _, layer_count = args
    if not isinstance(got, torch.Tensor) or got.dtype != ROUTE_DTYPE:
        return "from_wire must return torch.int16 routes"
    if got.dim() == 4 and got.shape[2] > layer_count:
        return "your from_wire kept padding layers"
    if got.dim() == 4 and got.shape[2] < layer_count:
        return (
            "your from_wire lost real layers (a layer whose bytes are all zero, every token on expert 0, "
            "is a real layer): use the count you are given"
        )
    if got.shape != want.shape:
        return "your from_wire made one route of each byte, but a route is two bytes on the wire"
    return "routes changed on the round trip: the bytes must be reinterpreted, not converted value by value"


@st.composite
def _wire_inputs(draw: Any) -> tuple[torch.Tensor, int]:
    batch, seq, layers, topk = (
        draw(st.integers(1, 2)),
        draw(st.integers(1, 3)),
        draw(st.integers(0, 4)),
        draw(st.integers(1, 3)),
    )
    extra, seed = draw(st.integers(0, 3)), draw(st.integers(0, 50))
    return _route_map(batch, seq, layers, topk, seed), layers + extra


@checker(
    "3.2",
    library_answers=[to_wire, from_wire],
    where=(
        "Section 4, the dense branch of pp_gather: what a collective needs (the same shape on every rank, a "
        "dtype the backend can send) and which dim differs between stages."
    ),
    method=(
        "to_wire: reinterpret the int16 tensor's memory as bytes (a view, not a conversion of values), which "
        "doubles the last dim; make a zero-filled byte tensor whose layer dim is max_layers and copy the bytes "
        "into its first layers. from_wire: keep only the first layer_count layers (the count you are given, "
        "never guessed from the bytes) and reinterpret those bytes as int16 again."
    ),
    reveals=["uint8 view", "bit view"],
)
def check_wire_roundtrip(
    to_wire_fn: Callable[[torch.Tensor, int], torch.Tensor], from_wire_fn: Callable[[torch.Tensor, int], torch.Tensor]
) -> str:
    """Exercise 3.2: int16 routes -> uint8 payload zero-padded on the layer dim -> the same int16 routes."""
    for fn in (to_wire_fn, from_wire_fn):
        if not callable(fn):
            raise ExerciseFailure(f"pass your two functions themselves, got {type(fn).__name__}")
    named = [
        Case((_route_map(2, 3, 3, 4, 32), 3), "3 layers, no padding needed"),
        Case((_route_map(2, 3, 3, 4, 32), 5), "3 layers padded to 5"),
        Case((_route_map(2, 3, 1, 4, 33), 4), "1 layer padded to 4"),
        Case((_route_map(1, 2, 0, 2, 34), 3), "a stage with 0 MoE layers joins with only padding"),
        Case((_route_map(1, 1, 2, 1, 35), 2), "top-1, one token"),
        Case(
            (_route_map(2, 2, 3, 4, 36).transpose(2, 3).contiguous().transpose(2, 3), 4),
            "a routes map that is not contiguous in memory (its last dim is strided, as after a reordering)",
        ),
    ]
    to_summary = compare_on_inputs(
        to_wire_fn,
        _to_wire_reference,
        name="to_wire",
        edge_cases=named,
        inputs=_wire_inputs(),
        mistakes=_to_wire_mistake,
        max_examples=40,
    )

    def payload_cases(strategy: Any) -> Any:
        return strategy.map(lambda a: (_to_wire_reference(*a), a[0].shape[2]))

    from_summary = compare_on_inputs(
        from_wire_fn,
        _from_wire_reference,
        name="from_wire",
        edge_cases=[Case((_to_wire_reference(*c.args), c.args[0].shape[2]), c.name) for c in named],
        inputs=payload_cases(_wire_inputs()),
        mistakes=_from_wire_mistake,
        max_examples=40,
    )
    return f"to_wire {to_summary}; from_wire {from_summary}"


# ---------------------------------------------------------------- 3.3 the text-branch config walk


@dataclass(frozen=True)
class Raised:
    """What a lookup did when it raised (so a raise can be compared with the reference's)."""

    kind: str

    def __repr__(self) -> str:
        return f"<raised {self.kind}>"


def _outcome(fn: Callable[[object, str], Any]) -> Callable[[object, str], Any]:
    """fn called on the config a spec describes; a raise becomes a `Raised` value to compare."""

    def call(spec: object, name: str) -> Any:
        try:
            return fn(_build(spec), name)
        except AttributeError:
            return Raised("AttributeError")
        except (LookupError, ValueError) as e:  # KeyError, IndexError ...: compared, so the message can say so
            return Raised(type(e).__name__)
        except RecursionError:
            return Raised("RecursionError (a config that contains itself was walked forever)")

    return call


def _named_configs() -> dict[str, Callable[[], object]]:
    """Configs a plain nested dict cannot describe: a namespace, a composite, a cycle."""

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
        ("only the audio sibling has vocab_size", root, "vocab_size", Raised("AttributeError")),
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
            Raised("AttributeError"),
        ),
    ]


ROOT_FIRST = (
    "your walk answered with the root's own value: it read the root before its text branch, "
    "or missed the branch that has it"
)


def _walk_variants(config: object, name: str) -> dict[str, Any]:
    """What the usual wrong walks answer, by the mistake they make (for naming a mismatch)."""

    def first(nodes: list[object]) -> Any:
        for node in nodes:
            value = getattr(node, name, None)
            if value is not None and not callable(value):
                return value
        return Raised("AttributeError")

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
    return {
        ROOT_FIRST: own,
        "your walk ignores what the config's get_text_config() returns": first(branch_only(config, set()))
        if via_getter is not None and via_getter is not text
        else None,
        "your walk reads only the text_config attribute": first([text, config]) if text is not None else None,
    }


def _variant_lookup(config: object, name: str, *, falsy_absent: bool = False, order: tuple[str, ...]) -> Any:
    """The text-branch lookup with one thing changed (what counts as absent, the branch order): a wrong walk."""

    def present(node: object) -> bool:
        value = getattr(node, name, None)
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
    return Raised("AttributeError") if node is None else getattr(node, name)


def _same_outcome(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _text_attr_mistake_for(find_attr: Callable[[object, str], Any]) -> Callable[..., str | None]:
    def name_it(args: tuple[Any, ...], got: Any, want: Any) -> str | None:
        if got is None and isinstance(want, Raised):
            try:
                empty = find_attr(ToyConfig("Empty"), "hidden_size")
            except Exception:
                empty = Raised("something")
            if empty is None:
                return (
                    "when nothing on the text branch has a value, your lookup returns None: raise AttributeError "
                    "instead, so a miss cannot pass for a value"
                )
            return (
                "your lookup returned None, a value that counts as absent: a config whose attribute is None does "
                "not have it (is the test whether the attribute exists, rather than whether its value is None?)"
            )
        return _text_attr_mistake(args, got, want, skips_falsy=lambda: _skips_falsy(find_attr))

    return name_it


def _skips_falsy(find_attr: Callable[[object, str], Any]) -> bool:
    """Whether a lookup misses a 0 that sits on the text config, the first place read (a probe)."""
    try:
        return not _same_outcome(
            find_attr(ToyConfig("Root", text_config=ToyConfig("Text", num_experts=0)), "num_experts"), 0
        )
    except Exception:
        return True


def _text_attr_mistake(
    args: tuple[Any, ...], got: Any, want: Any, skips_falsy: Callable[[], bool] = lambda: True
) -> str | None:
    spec, name = args
    if isinstance(got, Raised) and "Recursion" in got.kind:
        return "your walk revisits configs: a config that contains itself never ends"
    if isinstance(got, Raised) and isinstance(want, Raised) and got.kind != want.kind:
        return (
            f"when nothing on the text branch has it, raise AttributeError (the exercise asks for it), not {got.kind}"
        )
    config = _build(spec)
    if _same_outcome(got, _variant_lookup(config, name, falsy_absent=True, order=TEXT_BRANCHES)) and skips_falsy():
        return "your walk takes a falsy value (0, False) for a missing one"
    for order in permutations(TEXT_BRANCHES):
        if order != tuple(TEXT_BRANCHES) and _same_outcome(got, _variant_lookup(_build(spec), name, order=order)):
            return (
                "your walk reads the named sub-configs in another order than the exercise lists them: when two "
                "of them have a value, the first in that order wins"
            )
    if isinstance(got, Raised) and not isinstance(want, Raised):
        return "your walk missed a text branch that has it (language_config, thinker_config's own text config, ...)"
    if isinstance(want, Raised) and not isinstance(got, Raised):
        return "nothing on the text branch has it, and your walk returned a value: it read a sibling sub-config"
    for mistake, value in _walk_variants(_build(spec), name).items():
        if value is not None and not isinstance(value, Raised) and value == got and type(value) is type(got):
            return mistake
    if isinstance(spec, dict) and isinstance(spec.get("text_config"), dict) and got != want:
        return "a value on the text config itself wins over one deeper inside it, and deeper wins over the root"
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


@checker(
    "3.3",
    library_answers=[get_text_config_attr, bfs_config_attr],
    where=(
        "Section 5, the config walk: which sub-configs are on the text branch, in which order they are read, "
        "and what counts as 'absent'."
    ),
    method=(
        "Step 1: ask the config for its text config (its get_text_config method when it has one, else its "
        "text_config attribute) and return that config's own value if it is not None. Step 2: walk the branch "
        "recursively, remembering every config already visited: for a node, first walk its text config, then "
        "each of the four named sub-configs, and only then consider the node itself. Return the first value "
        "that is not None; if there is none, raise AttributeError. Never look at any other sub-config."
    ),
    reveals=["each node after its branches", "deepest first"],
)
def check_text_config_attr(find_attr: Callable[[object, str], Any]) -> str:
    """Exercise 3.3: your text-branch lookup must answer as the reference (verl's get_hf_config_attr) does."""
    if not callable(find_attr):
        raise ExerciseFailure(f"pass your function itself, got {type(find_attr).__name__}")
    return compare_on_inputs(
        _outcome(find_attr),
        _outcome(get_text_config_attr),
        name="find_text_attr",
        edge_cases=[Case((spec, name), label) for label, spec, name, _ in _text_attr_cases()],
        inputs=_config_inputs(),
        mistakes=_text_attr_mistake_for(find_attr),
        show=_show_lookup,
        max_examples=60,
    )
