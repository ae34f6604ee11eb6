"""The load side (the course's extension of lesson 05): reading weights back with an allow-list of missing modules.

verl PR #7836 set `actor_rollout_ref.actor.checkpoint.strict=False` in the GLM-5.2 recipe because the
model's multi-token-prediction (MTP) layers are unused in training and rollout and are left out of the
exported Hugging Face weights. In verl 0.9.1 that flag acts on the *export* (see `export.py`); the same
one-bit problem appears when the export is read back: plain `strict=False` forgets *which* keys may be
absent, so any other missing weight keeps its random initialisation and nothing fails.
`load_state_dict_audited` names the prefixes that may be missing (or unexpected), fails on everything
else, and returns a report of what happened.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import torch
from torch import nn

from verlstudy.kit.params import a_kind, check_instance, check_items

MTP_PREFIX = "mtp."


class CheckpointMismatchError(ValueError):
    """A state dict does not fit a model outside the allowed patterns; lists every offending key."""

    def __init__(
        self,
        missing: tuple[str, ...],
        unexpected: tuple[str, ...],
        shape_mismatches: tuple[tuple[str, tuple[int, ...], tuple[int, ...]], ...],
    ) -> None:
        self.missing = missing
        self.unexpected = unexpected
        self.shape_mismatches = shape_mismatches
        parts = []
        if missing:
            parts.append(f"{len(missing)} missing key(s) not allowed: {', '.join(missing)}")
        if unexpected:
            parts.append(f"{len(unexpected)} unexpected key(s) not allowed: {', '.join(unexpected)}")
        for key, want, got in shape_mismatches:
            parts.append(f"shape mismatch for {key}: model has {list(want)}, checkpoint has {list(got)}")
        super().__init__("checkpoint does not fit the model: " + "; ".join(parts))


@dataclass(frozen=True)
class LoadReport:
    """What an audited load did: every key of model and checkpoint ends up in exactly one group."""

    loaded: tuple[str, ...]
    missing_allowed: tuple[str, ...]
    unexpected_allowed: tuple[str, ...]
    missing_denied: tuple[str, ...] = ()
    unexpected_denied: tuple[str, ...] = ()
    shape_mismatches: tuple[tuple[str, tuple[int, ...], tuple[int, ...]], ...] = ()
    unused_patterns: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when nothing outside the allowed patterns is missing, unexpected or the wrong shape."""
        return not (self.missing_denied or self.unexpected_denied or self.shape_mismatches)

    def summary(self) -> str:
        """A few stable lines: counts, then the keys left at their initial values."""
        lines = [
            f"loaded {len(self.loaded)} tensors; missing (allowed) {len(self.missing_allowed)}; "
            f"unexpected (allowed) {len(self.unexpected_allowed)}",
        ]
        if self.missing_allowed:
            lines.append("  left at initial values: " + ", ".join(self.missing_allowed))
        if self.unexpected_allowed:
            lines.append("  ignored from checkpoint: " + ", ".join(self.unexpected_allowed))
        if self.unused_patterns:
            lines.append("  patterns that matched nothing: " + ", ".join(self.unused_patterns))
        if not self.ok:
            lines.append(
                f"  NOT OK: missing {len(self.missing_denied)}, unexpected {len(self.unexpected_denied)}, "
                f"shape mismatches {len(self.shape_mismatches)}"
            )
        return "\n".join(lines)

    def raise_if_not_ok(self) -> None:
        """Raise CheckpointMismatchError listing every key outside the allowed patterns."""
        if not self.ok:
            raise CheckpointMismatchError(self.missing_denied, self.unexpected_denied, self.shape_mismatches)


def check_patterns(name: str, patterns: object) -> tuple[str, ...]:
    """Validate a collection of prefix patterns (e.g. `("mtp.",)`) and return it as a tuple.

    A bare string is refused (it would be read as one pattern per character), as are non-strings and
    the empty pattern, which would allow every key.
    """
    if isinstance(patterns, str | bytes):
        raise TypeError(f"{name} must be a tuple or list of prefix strings, e.g. ({patterns!r},); got a bare string")
    if not isinstance(patterns, Iterable):
        raise TypeError(f"{name} must be a tuple or list of prefix strings, got {type(patterns).__name__}")
    result = []
    for pattern in patterns:
        if not isinstance(pattern, str):
            raise TypeError(f"{name} holds {type(pattern).__name__} {pattern!r}; every pattern must be a string")
        if not pattern.strip(". "):
            raise ValueError(f"{name} holds the empty pattern {pattern!r}, which would allow every key; name a module")
        result.append(pattern)
    return tuple(result)


def matches_string_prefix(key: str, pattern: str) -> bool:
    """True when `key` starts with `pattern`: Megatron-Bridge's rule for its ignored source prefixes.

    Kept to show the fix as a change: "mtp" also matches "mtp_norm.weight", and "model.layers.7" matches
    GLM-5's MTP layer "model.layers.78.eh_proj.weight".
    """
    if not isinstance(key, str) or not isinstance(pattern, str):
        raise TypeError(f"key and pattern must be strings, got {type(key).__name__} and {type(pattern).__name__}")
    return key.startswith(pattern)


def matches_prefix(key: str, pattern: str) -> bool:
    """True when `key` is `pattern` or lies inside the module it names.

    Matching stops at module boundaries: "mtp" and "mtp." both match "mtp.proj.weight", but neither
    matches "mtp_norm.weight", a different module that merely shares the first letters.
    """
    if not isinstance(key, str) or not isinstance(pattern, str):
        raise TypeError(f"key and pattern must be strings, got {type(key).__name__} and {type(pattern).__name__}")
    module = pattern.rstrip(".")
    return key == module or key.startswith(module + ".")


def _matching(keys: Iterable[str], patterns: tuple[str, ...]) -> tuple[list[str], list[str]]:
    allowed, denied = [], []
    for key in keys:
        (allowed if any(matches_prefix(key, p) for p in patterns) else denied).append(key)
    return allowed, denied


def audit_state_dict(
    expected: Mapping[str, torch.Tensor],
    given: Mapping[str, torch.Tensor],
    allow_missing: Iterable[str] = (),
    allow_unexpected: Iterable[str] = (),
) -> LoadReport:
    """Compare a model's state dict (`expected`) with a checkpoint (`given`) key by key; never raises on content.

    Keys in both with equal shapes are `loaded`; keys only in the model are missing (allowed when a
    pattern of `allow_missing` covers them); keys only in the checkpoint are unexpected (allowed under
    `allow_unexpected`). A shape mismatch is never allowed: no pattern can make a wrong-sized tensor fit.
    """
    allow_missing = check_patterns("allow_missing", allow_missing)
    allow_unexpected = check_patterns("allow_unexpected", allow_unexpected)
    for label, mapping in (("expected", expected), ("given", given)):
        if not isinstance(mapping, Mapping):
            raise TypeError(f"{label} must be a mapping of key -> tensor (a state dict), got {type(mapping).__name__}")
        not_tensors = [k for k, v in mapping.items() if not isinstance(v, torch.Tensor)]
        if not_tensors:  # e.g. a numpy array: torch would refuse it half-way through copying
            first = not_tensors[0]
            raise TypeError(
                f"{label}[{first!r}] is {a_kind(mapping[first])}, not a torch.Tensor "
                f"({len(not_tensors)} such value(s)); convert with torch.from_numpy first"
            )
    shapes_given = {k: tuple(v.shape) for k, v in given.items()}
    loaded, mismatches = [], []
    for key, tensor in expected.items():
        if key in shapes_given:
            if tuple(tensor.shape) == shapes_given[key]:
                loaded.append(key)
            else:
                mismatches.append((key, tuple(tensor.shape), shapes_given[key]))
    missing_allowed, missing_denied = _matching([k for k in expected if k not in given], allow_missing)
    unexpected_allowed, unexpected_denied = _matching([k for k in given if k not in expected], allow_unexpected)
    # A pattern that matched nothing is often a typo ("mpt."): report it rather than pass silently.
    unused = tuple(p for p in allow_missing if not any(matches_prefix(k, p) for k in missing_allowed)) + tuple(
        p for p in allow_unexpected if not any(matches_prefix(k, p) for k in unexpected_allowed)
    )
    return LoadReport(
        loaded=tuple(loaded),
        missing_allowed=tuple(missing_allowed),
        unexpected_allowed=tuple(unexpected_allowed),
        missing_denied=tuple(missing_denied),
        unexpected_denied=tuple(unexpected_denied),
        shape_mismatches=tuple(mismatches),
        unused_patterns=unused,
    )


def load_state_dict_audited(
    model: nn.Module,
    state_dict: Mapping[str, torch.Tensor],
    allow_missing: Iterable[str] = (),
    allow_unexpected: Iterable[str] = (),
) -> LoadReport:
    """Load `state_dict` into `model`, allowing only the named prefixes to be missing or unexpected.

    Raises CheckpointMismatchError (a ValueError) listing every key outside the patterns and every
    shape mismatch, before any weight is copied, so a failed load leaves the model untouched.
    Returns the LoadReport otherwise; the allowed-missing weights keep their initial values.
    A tensor whose kind of number differs from the model's (complex into real, integers or bools into floating
    point, or the reverse), which torch's copy would cast silently, is a TypeError naming it; a floating-point
    precision change (a bfloat16 checkpoint into a float32 model) loads as torch loads it.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    expected = model.state_dict()  # once: the audit, the cast check and the copy kept for a failed load
    report = audit_state_dict(expected, state_dict, allow_missing, allow_unexpected)
    report.raise_if_not_ok()
    refuse_silent_casts(expected, state_dict, report.loaded)
    fitting = {k: state_dict[k] for k in report.loaded}
    before = {k: v.detach().clone() for k, v in expected.items()}
    try:
        result = model.load_state_dict(fitting, strict=False)
    except Exception:
        model.load_state_dict(before)  # all or nothing: never a half-loaded model
        raise
    # torch must agree with the audit: what it left missing is exactly what the patterns allowed.
    if sorted(result.missing_keys) != sorted(report.missing_allowed) or result.unexpected_keys:
        raise RuntimeError(
            f"audit and torch disagree: torch missing {result.missing_keys}, unexpected {result.unexpected_keys}"
        )
    return report


def _number_kind(dtype: torch.dtype) -> str:
    if dtype.is_complex:
        return "complex"
    if dtype.is_floating_point:
        return "floating-point"
    return "bool" if dtype == torch.bool else "integer"


def refuse_silent_casts(
    expected: Mapping[str, torch.Tensor], given: Mapping[str, torch.Tensor], keys: Iterable[str]
) -> None:
    """TypeError, one line, when a checkpoint tensor among `keys` holds another kind of number than the model's
    (torch's load_state_dict would cast it on copy: a complex tensor loses its imaginary part, int64 values above
    2**24 lose digits in float32)."""
    check_instance("expected", expected, Mapping, what="the model's state_dict (a mapping of name to tensor)")
    check_instance("given", given, Mapping, what="the checkpoint's state_dict (a mapping of name to tensor)")
    keys = check_items("keys", keys, str, what="a tensor name (a str)")
    missing = [k for k in keys if k not in expected or k not in given]
    if missing:
        raise KeyError(f"argument keys names {missing[0]!r}, which is not in both state_dicts")
    wrong = [k for k in keys if _number_kind(given[k].dtype) != _number_kind(expected[k].dtype)]
    if wrong:
        key = wrong[0]
        have, want = given[key].dtype, expected[key].dtype
        name = str(want).removeprefix("torch.")
        loss = "drop the imaginary part" if have.is_complex else f"turn {_number_kind(have)} values into {name}"
        fix = ".real" if have.is_complex and not want.is_complex else f".to(torch.{name})"
        raise TypeError(
            f"checkpoint tensor {key!r} is {str(have).removeprefix('torch.')} but the model's is {name} "
            f"({len(wrong)} such tensor(s)): loading would silently {loss}; convert it in the checkpoint first "
            f"if that is meant ({fix})"
        )


class TinyLM(nn.Module):
    """A tiny next-token model (embedding, residual layers, head) built *without* MTP layers.

    This is the model as the trainer builds it when the MTP head is left out (Megatron-Bridge v0.5.0's
    GLM-5 bridge sets `mtp_num_layers = None`): its state dict lacks the `mtp.*` tensors that the
    released checkpoint has.
    """

    def __init__(self, vocab: int = 32, hidden: int = 16, n_layers: int = 2) -> None:
        super().__init__()
        for name, value, low in (("vocab", vocab, 2), ("hidden", hidden, 1), ("n_layers", n_layers, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        self.embed = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(n_layers))
        self.head = nn.Linear(hidden, vocab, bias=False)

    def trunk(self, tokens: torch.Tensor) -> torch.Tensor:
        """Hidden states after the residual layers."""
        x = self.embed(tokens)
        for layer in self.layers:
            x = x + torch.tanh(layer(x))
        return x

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.trunk(tokens))


class TinyLMWithMTP(TinyLM):
    """The same model with an extra multi-token-prediction head (`mtp.*`) that forward() never uses.

    Like GLM-5.2's MTP layers, the head predicts a token further ahead; training and rollout here use
    only the main path, so the head's weights do not matter for the outputs.
    """

    def __init__(self, vocab: int = 32, hidden: int = 16, n_layers: int = 2) -> None:
        super().__init__(vocab, hidden, n_layers)
        self.mtp = nn.ModuleDict({"proj": nn.Linear(2 * hidden, hidden), "head": nn.Linear(hidden, vocab)})

    def forward_mtp(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits for the token two steps ahead (the MTP path; the lesson never needs it)."""
        x = torch.cat([self.trunk(tokens), self.embed(tokens)], dim=-1)
        return self.mtp["head"](torch.tanh(self.mtp["proj"](x)))


def export_without(model: nn.Module, drop: Iterable[str] = (MTP_PREFIX,)) -> dict[str, torch.Tensor]:
    """The model's weights as an exporter that leaves out the `drop` prefixes would write them (cloned)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    drop = check_patterns("drop", drop)
    return {k: v.detach().clone() for k, v in model.state_dict().items() if not any(matches_prefix(k, p) for p in drop)}


def save_and_reload(state_dict: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Serialise a state dict with torch.save and read it back (in memory: no temp paths in outputs)."""
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"state_dict must be a mapping of key -> tensor, got {type(state_dict).__name__}")
    buffer = io.BytesIO()
    torch.save(dict(state_dict), buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def export_roundtrip(model: nn.Module, drop: Iterable[str] = (MTP_PREFIX,)) -> dict[str, torch.Tensor]:
    """Export `model` without the `drop` prefixes, save it and load it back: what a resume would read."""
    return save_and_reload(export_without(model, drop))


def output_change(a: nn.Module, b: nn.Module, tokens: torch.Tensor) -> tuple[float, float]:
    """How far two models' outputs on `tokens` differ: (max |logit difference|, fraction of argmax tokens changed)."""
    if not isinstance(tokens, torch.Tensor) or tokens.dtype != torch.long:
        raise TypeError("tokens must be a torch.long tensor of token ids")
    with torch.no_grad():
        la, lb = a(tokens), b(tokens)
    if la.shape != lb.shape:
        raise ValueError(f"the models' outputs have different shapes: {tuple(la.shape)} vs {tuple(lb.shape)}")
    max_diff = float((la - lb).abs().max())
    changed = float((la.argmax(-1) != lb.argmax(-1)).float().mean())
    return max_diff, changed
