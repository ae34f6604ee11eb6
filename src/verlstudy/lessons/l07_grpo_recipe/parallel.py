"""The arithmetic of a large RL recipe: device layouts, pipeline layout strings and batch sizes.

A recipe such as verl #7788 (GLM-5.2 GRPO on 512 NPUs) is a wall of integers that must agree with
each other. This module derives every size from the few that are chosen, and rejects combinations
that do not divide, with an error naming the numbers that disagree.

Conventions follow Megatron-core and verl:
- dense (attention) ranks: world = tp * cp * dp * pp
- expert (MoE) ranks:      world = etp * ep * edp * pp  (Megatron's expert-parallel folding)
- rollout (vLLM) replicas: one replica spans tp * dp * pp devices; with expert parallelism on,
  verl requires ep == tp * dp (``verl/workers/config/rollout.py``)
- ``ppo_mini_batch_size`` counts prompts; verl multiplies it by ``rollout.n`` to get sequences
  (``verl/trainer/ppo/ray_trainer.py::_update_actor``).
"""

from __future__ import annotations

import numbers
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from verlstudy.kit.params import check_path, positive_int
from verlstudy.kit.resources import read_data_text

_LAYOUT_SYMBOLS = {"E": "embedding", "t": "transformer layer", "m": "MTP layer", "L": "loss head"}
_TOKEN = re.compile(r"([EtmL])(?:\*(\d+))?")


@dataclass(frozen=True)
class ParallelLayout:
    """The training-side device layout: nodes x devices, split by tp, pp, cp (dense) and ep, etp (experts).

    ``etp`` defaults to ``tp`` as in Megatron. Construction fails with ValueError when the world
    size is not divisible by ``tp*cp*pp`` (dense) or by ``etp*ep*pp`` (experts).
    """

    nodes: int
    devices_per_node: int
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    etp: int | None = None

    def __post_init__(self) -> None:
        for name in ("nodes", "devices_per_node", "tp", "pp", "cp", "ep"):
            object.__setattr__(self, name, positive_int(name, getattr(self, name)))
        etp = self.tp if self.etp is None else positive_int("etp", self.etp)
        object.__setattr__(self, "etp", etp)
        world = self.world_size
        dense = self.tp * self.cp * self.pp
        if world % dense:
            raise ValueError(
                f"world size {world} (nodes={self.nodes} x devices_per_node={self.devices_per_node}) is not "
                f"divisible by tp*cp*pp = {self.tp}*{self.cp}*{self.pp} = {dense}: no whole data-parallel size"
            )
        expert = etp * self.ep * self.pp
        if world % expert:
            raise ValueError(
                f"world size {world} is not divisible by etp*ep*pp = {etp}*{self.ep}*{self.pp} = {expert}: "
                "no whole expert-data-parallel size"
            )

    @property
    def world_size(self) -> int:
        return self.nodes * self.devices_per_node

    @property
    def dp(self) -> int:
        """Data-parallel size of the dense part: world / (tp * cp * pp)."""
        return self.world_size // (self.tp * self.cp * self.pp)

    @property
    def edp(self) -> int:
        """Expert-data-parallel size: world / (etp * ep * pp); 1 means expert weights are not replicated."""
        return self.world_size // (int(self.etp or 1) * self.ep * self.pp)

    @property
    def ranks_per_stage(self) -> int:
        """Devices holding one pipeline stage: tp*cp*dp, which equals etp*ep*edp."""
        return self.world_size // self.pp

    @property
    def tp_within_node(self) -> bool:
        """True when a tensor-parallel group fits inside one node (its all-reduces stay on the fast links)."""
        return self.devices_per_node % self.tp == 0

    def summary(self) -> dict[str, int]:
        """Every size, chosen and derived, as one flat dict (stable order) for printing and claims."""
        return {
            "world_size": self.world_size,
            "tp": self.tp,
            "pp": self.pp,
            "cp": self.cp,
            "dp": self.dp,
            "ep": self.ep,
            "etp": int(self.etp or 1),
            "edp": self.edp,
            "ranks_per_stage": self.ranks_per_stage,
        }


@dataclass(frozen=True)
class RolloutLayout:
    """The inference-side layout: each rollout replica spans tp * dp * pp devices of the world."""

    world_size: int
    tp: int = 1
    dp: int = 1
    ep: int = 1
    pp: int = 1

    def __post_init__(self) -> None:
        for name in ("world_size", "tp", "dp", "ep", "pp"):
            object.__setattr__(self, name, positive_int(name, getattr(self, name)))
        if self.world_size % self.devices_per_replica:
            raise ValueError(
                f"world size {self.world_size} is not divisible by rollout tp*dp*pp = "
                f"{self.tp}*{self.dp}*{self.pp} = {self.devices_per_replica}: replicas would not be whole"
            )
        if self.ep > 1 and self.ep != self.tp * self.dp:
            raise ValueError(
                f"rollout ep={self.ep} must equal tp*dp = {self.tp}*{self.dp} = {self.tp * self.dp} "
                "(verl's rule for vLLM/SGLang expert parallelism)"
            )

    @property
    def devices_per_replica(self) -> int:
        return self.tp * self.dp * self.pp

    @property
    def replicas(self) -> int:
        return self.world_size // self.devices_per_replica


@dataclass(frozen=True)
class StageSpec:
    """One pipeline stage of a layout string: how many decoder layers, and what else it carries."""

    layers: int
    embedding: bool = False
    loss: bool = False
    mtp_layers: int = 0


@dataclass(frozen=True)
class PipelineLayout:
    """A parsed Megatron-style pipeline layout string such as ``"Et*10|t*12|...|t*4L"``."""

    text: str
    stages: tuple[StageSpec, ...]

    @property
    def num_stages(self) -> int:
        return len(self.stages)

    @property
    def num_layers(self) -> int:
        return sum(s.layers for s in self.stages)

    @property
    def layers_per_stage(self) -> tuple[int, ...]:
        return tuple(s.layers for s in self.stages)

    @property
    def imbalance(self) -> float:
        """Largest stage over the mean stage (1.0 = perfectly even); the pipeline runs at the largest's pace."""
        counts = self.layers_per_stage
        return max(counts) / (sum(counts) / len(counts))

    def check(self, pp: int, num_layers: int) -> None:
        """Raise ValueError unless the layout has `pp` stages and `num_layers` decoder layers."""
        pp = positive_int("pp", pp)
        num_layers = positive_int("num_layers", num_layers)
        if self.num_stages != pp:
            raise ValueError(f"layout {self.text!r} has {self.num_stages} stages but pp={pp}")
        if self.num_layers != num_layers:
            raise ValueError(f"layout {self.text!r} places {self.num_layers} layers but the model has {num_layers}")


def parse_pipeline_layout(text: str) -> PipelineLayout:
    """Parse a pipeline layout string: stages split by ``|``, symbols E/t/m/L, optional ``*N`` repeats.

    ``E`` embedding (first stage only, at its start), ``t`` a decoder layer, ``m`` an MTP layer,
    ``L`` the loss head (last stage only, at its end). Megatron also accepts parenthesised groups and
    virtual stages; this parser does not, and says so. A bad token raises ValueError naming it and
    its stage.
    """
    if not isinstance(text, str):
        raise TypeError(f"layout must be a string like 'Et*10|t*12|t*4L', got {type(text).__name__}")
    if not text.strip():
        raise ValueError("layout is empty; expected stages separated by '|', e.g. 'Et*2|t*2L'")
    parts = text.replace(" ", "").split("|")
    for index, part in enumerate(parts):
        if not part:
            raise ValueError(f"stage {index} of layout {text!r} is empty (two '|' in a row or a trailing '|')")
    stages: list[StageSpec] = []
    for index, part in enumerate(parts):
        pos, layers, mtp, embedding, loss = 0, 0, 0, False, False
        while pos < len(part):
            match = _TOKEN.match(part, pos)
            if match is None:
                bad = part[pos:]
                hint = " (parenthesised groups are not supported)" if "(" in bad else ""
                raise ValueError(
                    f"bad token {bad!r} in stage {index} of layout {text!r}{hint}; "
                    f"allowed symbols: {', '.join(f'{k}={v}' for k, v in _LAYOUT_SYMBOLS.items())}, "
                    "each optionally followed by *N"
                )
            symbol, count_text = match.group(1), match.group(2)
            count = int(count_text) if count_text is not None else 1
            if count < 1:
                raise ValueError(f"bad token {match.group(0)!r} in stage {index}: a repeat count must be >= 1")
            if symbol == "E":
                if index != 0 or pos != 0 or count != 1:
                    raise ValueError(f"bad token {match.group(0)!r} in stage {index}: 'E' must open stage 0, once")
                embedding = True
            elif symbol == "L":
                if index != len(parts) - 1 or match.end() != len(part) or count != 1:
                    raise ValueError(f"bad token {match.group(0)!r} in stage {index}: 'L' must close the last stage")
                loss = True
            elif symbol == "t":
                layers += count
            else:
                mtp += count
            pos = match.end()
        stages.append(StageSpec(layers=layers, embedding=embedding, loss=loss, mtp_layers=mtp))
    if not stages[0].embedding:
        raise ValueError(f"layout {text!r} has no 'E': the first stage must start with the embedding")
    if not stages[-1].loss:
        raise ValueError(f"layout {text!r} has no 'L': the last stage must end with the loss head")
    return PipelineLayout(text=text, stages=tuple(stages))


@dataclass(frozen=True)
class BatchPlan:
    """How one GRPO step's sequences are cut: step -> mini-batches -> data-parallel ranks -> micro-batches.

    ``train_batch_size`` and ``ppo_mini_batch_size`` count prompts (verl's convention); each prompt
    yields ``n`` responses. ``micro_batch_size`` is sequences per device per forward/backward.
    """

    train_batch_size: int
    n: int
    ppo_mini_batch_size: int
    micro_batch_size: int
    dp: int

    def __post_init__(self) -> None:
        for name in ("train_batch_size", "n", "ppo_mini_batch_size", "micro_batch_size", "dp"):
            object.__setattr__(self, name, positive_int(name, getattr(self, name)))
        if self.train_batch_size % self.ppo_mini_batch_size:
            raise ValueError(
                f"train_batch_size={self.train_batch_size} is not divisible by "
                f"ppo_mini_batch_size={self.ppo_mini_batch_size}: the last mini-batch would be partial"
            )
        if self.sequences_per_mini_batch % self.dp:
            raise ValueError(
                f"a mini-batch of {self.sequences_per_mini_batch} sequences (ppo_mini_batch_size*n) does not "
                f"split over dp={self.dp} ranks"
            )
        if self.sequences_per_rank % self.micro_batch_size:
            raise ValueError(
                f"{self.sequences_per_rank} sequences per rank per mini-batch are not divisible by "
                f"micro_batch_size={self.micro_batch_size}"
            )

    @property
    def sequences_per_step(self) -> int:
        return self.train_batch_size * self.n

    @property
    def sequences_per_mini_batch(self) -> int:
        return self.ppo_mini_batch_size * self.n

    @property
    def mini_batches_per_step(self) -> int:
        """Optimizer steps per training step (per PPO epoch)."""
        return self.train_batch_size // self.ppo_mini_batch_size

    @property
    def sequences_per_rank(self) -> int:
        """Sequences one data-parallel rank processes per mini-batch."""
        return self.sequences_per_mini_batch // self.dp

    @property
    def micro_batches_per_mini_batch(self) -> int:
        """Micro-batches each data-parallel rank runs per mini-batch (the pipeline's num_microbatches)."""
        return self.sequences_per_rank // self.micro_batch_size


def pipeline_bubble_fraction(pp: int, micro_batches: int) -> float:
    """Idle fraction of a 1F1B/GPipe schedule without virtual stages: (pp - 1) / (m + pp - 1).

    The schedule takes m + pp - 1 slots of which each stage is busy for m (Narayanan et al., 2021).
    """
    pp = positive_int("pp", pp)
    micro_batches = positive_int("micro_batches", micro_batches)
    return (pp - 1) / (micro_batches + pp - 1)


def estimate_train_memory_per_device(
    layout: ParallelLayout,
    dense_params: float,
    expert_params: float,
    *,
    param_bytes: int = 2,
    grad_bytes: int = 4,
    optimizer_bytes: int = 12,
    distributed_optimizer: bool = True,
) -> dict[str, float]:
    """An ESTIMATE of parameter + gradient + optimizer bytes per device, for an evenly split model.

    Formula (mixed-precision Adam, Megatron-style):
        dense share  = dense_params  / (tp * pp)
        expert share = expert_params / (etp * ep * pp)
        bytes = share * (param_bytes + grad_bytes) + share * optimizer_bytes / shard
    where ``shard`` is dp * cp for dense and edp for expert weights when the optimizer state is
    distributed (ZeRO-1 style), else 1: Megatron-core shards the dense optimizer state over the
    data-and-context-parallel group (context-parallel ranks hold the same dense weights) and the
    expert state over the expert-data-parallel group. Defaults: bf16 weights (2), fp32 main grads
    (4), fp32 master + Adam m and v (12). Ignored: activations, buffers, uneven stages, embeddings
    on one stage.
    """
    if not isinstance(layout, ParallelLayout):
        raise TypeError(f"layout must be a ParallelLayout, got {type(layout).__name__}")
    for name, value in (("dense_params", dense_params), ("expert_params", expert_params)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or value < 0:
            raise ValueError(f"{name} must be a non-negative number of parameters, got {value!r}")
    for name, value in (("param_bytes", param_bytes), ("grad_bytes", grad_bytes), ("optimizer_bytes", optimizer_bytes)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer byte count, got {value!r}")
    if not isinstance(distributed_optimizer, bool):
        raise TypeError(f"distributed_optimizer must be True or False, got {distributed_optimizer!r}")
    dense_share = float(dense_params) / (layout.tp * layout.pp)
    expert_share = float(expert_params) / (int(layout.etp or 1) * layout.ep * layout.pp)
    dense_shard = layout.dp * layout.cp if distributed_optimizer else 1
    expert_shard = layout.edp if distributed_optimizer else 1
    weights_and_grads = (dense_share + expert_share) * (param_bytes + grad_bytes)
    optimizer = dense_share * optimizer_bytes / dense_shard + expert_share * optimizer_bytes / expert_shard
    return {
        "dense_params_per_device": dense_share,
        "expert_params_per_device": expert_share,
        "weights_and_grads_bytes": weights_and_grads,
        "optimizer_bytes": optimizer,
        "total_bytes": weights_and_grads + optimizer,
    }


RECIPE_KEYS: dict[str, tuple[str, ...]] = {
    "cluster": ("nodes", "devices_per_node"),
    "train": ("tp", "pp", "cp", "ep", "etp", "num_layers", "pipeline_layout"),
    "rollout": ("tp", "dp", "ep"),
    "batch": (
        "train_batch_size",
        "n",
        "ppo_mini_batch_size",
        "micro_batch_size_per_device",
        "max_prompt_length",
        "max_response_length",
    ),
    "algorithm": ("clip_ratio_low", "clip_ratio_high", "clip_ratio_c", "use_kl_loss", "kl_loss_coef", "kl_loss_type"),
    "rollout_correction": (
        "rollout_is",
        "rollout_is_threshold",
        "rollout_is_batch_normalize",
        "rollout_rs",
        "rollout_rs_threshold",
    ),
    "offload": (
        "param_offload",
        "optimizer_offload",
        "optimizer_cpu_offload",
        "optimizer_offload_fraction",
        "use_precision_aware_optimizer",
        "use_distributed_optimizer",
        "ref_param_offload",
    ),
}


def load_recipe(path: str | Path) -> dict[str, dict[str, object]]:
    """Read a recipe YAML (see data/recipes/) and check every section and key the lesson needs is there."""
    path = check_path("path", path, what="a recipe YAML file's path (str or Path)")
    if not path.is_file():
        raise ValueError(f"recipe file {path} does not exist")
    try:
        data = yaml.safe_load(read_data_text(path))  # not UTF-8: one line naming the file
    except yaml.YAMLError as e:  # PyYAML names "<unicode string>", not the file
        where = getattr(e, "problem_mark", None)
        line = f", line {where.line + 1}" if where is not None else ""
        raise ValueError(f"recipe {path}{line}: not valid YAML ({getattr(e, 'problem', None) or e})") from e
    if not isinstance(data, dict):
        raise ValueError(f"recipe {path.name} must be a mapping of sections, got {type(data).__name__}")
    for section, keys in RECIPE_KEYS.items():
        if not isinstance(data.get(section), dict):
            raise ValueError(f"recipe {path.name} has no section {section!r} (expected keys: {', '.join(keys)})")
        missing = [k for k in keys if k not in data[section]]
        if missing:
            raise ValueError(f"recipe {path.name} section {section!r} lacks {', '.join(missing)}")
    return data
