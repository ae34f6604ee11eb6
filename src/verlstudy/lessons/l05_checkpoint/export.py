"""The course's reconstruction of Megatron-Bridge's HF weight export, where verl's `checkpoint.strict` acts.

verl 0.9.1 passes `checkpoint.strict` to one call: `bridge.save_hf_weights(self.model, hf_ckpt_path,
strict=self.checkpoint_config.strict)` in `verl/utils/checkpoint/megatron_checkpoint_manager.py`
(`MegatronCheckpointManager._save_model_as_hf_via_bridge`). Megatron-Bridge streams the model's HF-named
tensors into `SafeTensorsStateSource.save_generator` (src/megatron/bridge/models/hf_pretrained/state.py),
which lays them out like the *source* HF checkpoint's `model.safetensors.index.json`. The facts this
module carries from Megatron-Bridge (written here in the course's own code, in memory, no files):

- The expected tensors are the source index's `weight_map` minus keys that start with an ignored prefix
  (`_ignore_source_key_prefixes`, plain `str.startswith`). In v0.5.x (the recipe pins v0.5.0)
  `save_hf_weights` ignores `("mtp.",)` only when a config sets the MTP layer count to 0 and the source has
  `mtp.*` keys; GLM-5's config says 1 and its MTP tensors are `model.layers.{num_hidden_layers}.*` anyway.
  #4189 (in v0.6.0, `_model_omits_mtp`, `_mtp_source_key_prefixes`) also strips the MTP source keys whenever
  the *built* model has no MTP layers, with the prefixes `mtp.` and `model.layers.{num_hidden_layers}.`
  (where GLM-4.x and GLM-5 keep their MTP layer), so a strict export of an MTP-less model succeeds there.
- A yielded tensor that is not expected raises KeyError under strict, and is skipped with a warning otherwise.
- A shard is written once all its expected tensors have arrived. At the end, shards still incomplete are
  written with what they hold only under strict=False ("partial shards"); the new index lists only
  the tensors written.
- What v0.5.x prints (and raises nothing): each incomplete shard with the source keys that never arrived
  (here the MTP keys), only the *count* of yielded tensors left unwritten because their shard was incomplete
  (the real tensors, not named), and the count of expected tensors not written. Since #4513 (in v0.6.0)
  strict raises RuntimeError with that count whenever tensors stay unwritten. The course's log says the same
  in its own words.

`export_hf_weights_audited` is the course's design on top: an allow-list of whole module names that may
go unwritten, checked before any shard is written; anything else fails.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import torch

from verlstudy.kit.params import a_kind, check_choice, positive_int
from verlstudy.lessons.l05_checkpoint.checkpoint import check_patterns, matches_prefix

BRIDGE_RELEASES = ("v0.5.0", "v0.6.0")  # v0.5.0: the recipe's pin; v0.6.0: #4189 strips MTP keys, #4513 raises
MTP_SOURCE_PREFIX = "mtp."  # the mtp.* naming (Qwen3.5, DeepSeek-V4; the toy's); GLM-5 and DeepSeek-V3 use
# model.layers.{num_hidden_layers}.


class ExportIncomplete(RuntimeError):
    """A strict export left tensors of the source checkpoint unwritten (Megatron-Bridge v0.6.0, #4513, raises)."""

    def __init__(self, unwritten: tuple[str, ...]) -> None:
        self.unwritten = unwritten
        super().__init__(
            f"{len(unwritten)} tensors of the source checkpoint were not written "
            f"({', '.join(unwritten)}); strict=False would write the partial shards"
        )


class ExportAuditError(ValueError):
    """An audited export differs from the source index outside the allowed modules; nothing was written."""

    def __init__(self, denied: tuple[str, ...], unknown: tuple[str, ...]) -> None:
        self.denied = denied
        self.unknown = unknown
        parts = []
        if denied:
            parts.append(f"{len(denied)} source tensor(s) not written and not allowed: {', '.join(denied)}")
        if unknown:
            parts.append(f"{len(unknown)} tensor(s) not in the source index: {', '.join(unknown)}")
        super().__init__("export refused, no shard written: " + "; ".join(parts))


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote: shards (file -> tensors), the new index, and what it left out."""

    shards: dict[str, dict[str, torch.Tensor]]
    weight_map: dict[str, str]
    unwritten: tuple[str, ...] = ()  # expected source tensors that no shard holds
    partial: tuple[str, ...] = ()  # shards written with fewer tensors than the source index gives them
    dropped: tuple[str, ...] = ()  # shards not written at all (strict, incomplete)
    skipped: tuple[str, ...] = ()  # yielded tensors the source index does not know (strict=False)
    ignored: tuple[str, ...] = ()  # source tensors not expected (ignored prefixes or allowed modules)
    unused_patterns: tuple[str, ...] = ()  # allowed modules that matched nothing (audited export)
    log: tuple[str, ...] = ()

    def written(self) -> list[str]:
        """Every tensor name some shard holds, sorted."""
        return sorted(self.weight_map)

    def summary(self) -> str:
        """Stable lines: shards written, then what was left out."""
        lines = [f"wrote {len(self.shards)} shard(s), {len(self.weight_map)} tensors"]
        for label, items in (
            ("partial shards", self.partial),
            ("shards not written", self.dropped),
            ("not written", self.unwritten),
            ("skipped (not in source index)", self.skipped),
            ("ignored source tensors", self.ignored),
            ("allowed modules that matched nothing", self.unused_patterns),
        ):
            if items:
                lines.append(f"  {label}: {', '.join(items)}")
        return "\n".join(lines)


def shard_file(index: int, count: int) -> str:
    """The HF shard name, e.g. model-00001-of-00003.safetensors."""
    index, count = positive_int("index", index), positive_int("count", count)
    return f"model-{index:05d}-of-{count:05d}.safetensors"


def source_index(state_dict: Mapping[str, torch.Tensor], n_shards: int = 3) -> dict[str, object]:
    """A `model.safetensors.index.json`-like dict for `state_dict`, cut in key order into `n_shards` shards.

    The course cuts by tensor count (HF cuts by bytes), so a small model still gets several shards.
    """
    if not isinstance(state_dict, Mapping) or not state_dict:
        raise TypeError("state_dict must be a non-empty mapping of tensor name -> tensor")
    n_shards = min(positive_int("n_shards", n_shards), len(state_dict))
    for key, tensor in state_dict.items():
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"argument state_dict[{key!r}] must be a torch.Tensor, got {a_kind(tensor)}")
    keys = list(state_dict)
    bounds = [round(i * len(keys) / n_shards) for i in range(n_shards + 1)]
    weight_map = {k: shard_file(i + 1, n_shards) for i in range(n_shards) for k in keys[bounds[i] : bounds[i + 1]]}
    total = sum(t.numel() * t.element_size() for t in state_dict.values())
    return {"metadata": {"total_size": total}, "weight_map": weight_map}


def _weight_map(source: Mapping[str, object]) -> dict[str, str]:
    """Accept a whole index (with 'weight_map') or the weight_map itself."""
    if not isinstance(source, Mapping):
        raise TypeError(f"source must be an index dict or its weight_map, got {type(source).__name__}")
    weight_map = source.get("weight_map", source)
    if not isinstance(weight_map, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
    ):
        raise TypeError("the source weight_map must map tensor names (str) to shard file names (str)")
    return dict(weight_map)


def _pairs(weights: object) -> list[tuple[str, torch.Tensor]]:
    """The exporter's stream: (HF name, tensor) pairs, from a mapping or an iterable of pairs."""
    items = weights.items() if isinstance(weights, Mapping) else weights
    if not isinstance(items, Iterable) or isinstance(items, str | bytes):
        raise TypeError(
            f"weights must be a mapping or an iterable of (name, tensor) pairs, got {type(weights).__name__}"
        )
    pairs = list(items)
    for pair in pairs:
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)):
            raise TypeError(f"every weight must be a (name, tensor) pair, got {pair!r}")
        if not isinstance(pair[1], torch.Tensor):
            raise TypeError(f"weight {pair[0]!r} is {a_kind(pair[1])}, not a torch.Tensor")
    return pairs


def _write(
    pairs: list[tuple[str, torch.Tensor]], expected: dict[str, str], strict: bool, log: list[str]
) -> tuple[dict[str, dict[str, torch.Tensor]], list[str], list[str], list[str]]:
    """The streaming loop: buffer tensors, write each shard once complete, then handle incomplete shards."""
    by_file: dict[str, set[str]] = {}
    for key, file in expected.items():
        by_file.setdefault(file, set()).add(key)
    pending, buffered, shards, skipped = dict(by_file), {}, {}, []
    for name, tensor in pairs:
        if name not in expected:
            if strict:
                raise KeyError(f"tensor {name!r} is not in the source index; strict=False would skip it")
            log.append(f"warning: {name} is not in the source index; skipped")
            skipped.append(name)
            continue
        buffered[name] = tensor.detach().clone()
        file = expected[name]
        if file in pending and pending[file] <= buffered.keys():
            shards[file] = {k: buffered.pop(k) for k in sorted(pending.pop(file))}
    partial, dropped = [], []
    for file in sorted(pending):
        missing = sorted(pending[file] - buffered.keys())
        log.append(f"warning: {file} lacks {len(missing)} of its {len(pending[file])} tensors: {', '.join(missing)}")
        if strict:
            dropped.append(file)  # not written: its tensors that did arrive are lost too
        else:
            shards[file] = {k: buffered.pop(k) for k in sorted(pending[file]) if k in buffered}
            partial.append(file)
    if buffered:
        log.append(f"warning: {len(buffered)} tensors arrived but were not written: their shards were incomplete")
    return dict(sorted(shards.items())), partial, dropped, skipped


def export_hf_weights(
    weights: object,
    source: Mapping[str, object],
    *,
    strict: bool = True,
    ignored_source_prefixes: Iterable[str] = (),
    bridge: str = "v0.5.0",
    num_hidden_layers: int | None = None,
) -> ExportResult:
    """Write `weights` in the source checkpoint's shard layout, as Megatron-Bridge's `save_generator` does.

    `ignored_source_prefixes` are matched with plain `str.startswith`, as Megatron-Bridge does. With
    `bridge="v0.5.0"` (the recipe's pin) a strict export drops incomplete shards and raises nothing: the log
    names the keys each incomplete shard never received and counts, without naming, the tensors lost with it.
    With `bridge="v0.6.0"`, when the weights hold no MTP tensor (the built model omits MTP, #4189), the
    source keys under `mtp.` and `layers.{num_hidden_layers}.` (when given) are ignored too; a strict export
    that still leaves source tensors unwritten raises ExportIncomplete (#4513).
    """
    if not isinstance(strict, bool):
        raise TypeError(f"strict must be True or False, got {strict!r}")
    check_choice("bridge", bridge, BRIDGE_RELEASES, kind="argument")
    prefixes = check_patterns("ignored_source_prefixes", ignored_source_prefixes)
    weight_map, pairs, log = _weight_map(source), _pairs(weights), []
    if bridge == "v0.6.0":
        mtp = (MTP_SOURCE_PREFIX,)
        if num_hidden_layers is not None:
            mtp += (f"layers.{positive_int('num_hidden_layers', num_hidden_layers)}.",)
        if not any(name.startswith(mtp) for name, _ in pairs):  # the built model omits MTP
            prefixes += mtp
    ignored = tuple(k for k in weight_map if k.startswith(prefixes)) if prefixes else ()
    expected = {k: f for k, f in weight_map.items() if k not in ignored}
    shards, partial, dropped, skipped = _write(pairs, expected, strict, log)
    new_map = {k: f for f, tensors in shards.items() for k in tensors}
    unwritten = tuple(sorted(set(expected) - set(new_map)))
    if unwritten:
        log.append(f"error: {len(unwritten)} tensors of the source checkpoint were not written")
        if strict and bridge != "v0.5.0":
            raise ExportIncomplete(unwritten)
    return ExportResult(
        shards, new_map, unwritten, tuple(partial), tuple(dropped), tuple(skipped), ignored, log=tuple(log)
    )


def export_hf_weights_audited(
    weights: object, source: Mapping[str, object], allow_unwritten: Iterable[str] = ()
) -> ExportResult:
    """The course's audited export: only source tensors inside the named modules may go unwritten.

    Modules match whole names (`"mtp."` covers `mtp.head.weight`, not `mtp_extra.weight`). Any other
    source tensor not written, or any tensor the source index does not know, raises ExportAuditError
    before a single shard is written. An allowed module that matched nothing is reported (a typo?).
    """
    allowed = check_patterns("allow_unwritten", allow_unwritten)
    weight_map, pairs = _weight_map(source), _pairs(weights)
    names = [name for name, _ in pairs]
    absent = [k for k in weight_map if k not in set(names)]
    ok = [k for k in absent if any(matches_prefix(k, p) for p in allowed)]
    denied = tuple(k for k in absent if k not in ok)
    unknown = tuple(n for n in names if n not in weight_map)
    if denied or unknown:
        raise ExportAuditError(denied, unknown)
    unused = tuple(p for p in allowed if not any(matches_prefix(k, p) for k in ok))
    expected = {k: f for k, f in weight_map.items() if k not in ok}
    log: list[str] = []
    shards, _, _, _ = _write(pairs, expected, True, log)
    new_map = {k: f for f, tensors in shards.items() for k in tensors}
    return ExportResult(shards, new_map, ignored=tuple(ok), unused_patterns=unused, log=tuple(log))


def load_export(result: ExportResult) -> dict[str, torch.Tensor]:
    """The exported HF weights as one state dict (what a later load reads from the shards)."""
    if not isinstance(result, ExportResult):
        raise TypeError(f"result must be an ExportResult, got {type(result).__name__}")
    return {k: result.shards[f][k] for k, f in sorted(result.weight_map.items())}
