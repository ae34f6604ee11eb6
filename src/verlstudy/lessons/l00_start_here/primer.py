"""verl in brief: the RL step every lesson sits in, as data, and drawn once.

`RL_STEP` lists the phases of one PPO/GRPO training step in verl 0.9.1's order (the default trainer's
`_step_once` in `verl/trainer/ppo/v1/trainer_base.py`; the legacy `ray_trainer.py` keeps the same order):
generate responses, score them, compute the old and the reference log-probabilities, advantages, then update
the actor (and critic) mini-batch by mini-batch, each mini-batch in micro-batches. `batch_split` is the
arithmetic of that last part; `draw_rl_step` draws the whole step and prints what it draws, so nbval checks the
text while the picture is for the reader.
"""

from __future__ import annotations

from dataclasses import dataclass

from verlstudy.kit.params import check_instance, positive_int


@dataclass(frozen=True)
class Phase:
    """One phase of an RL step: what runs, on which model, and what it adds to the batch."""

    name: str
    model: str  # the role that runs it: rollout (inference engine), actor, ref, critic, reward
    adds: str
    grad: bool = False  # does this phase build an autograd graph and step an optimizer?


RL_STEP: tuple[Phase, ...] = (
    Phase("rollout", "vLLM/SGLang/TRT-LLM (inference)", "responses to each prompt"),
    Phase("reward", "reward (function or model)", "a score per response"),
    Phase("old log-prob", "actor (forward only)", "old_log_probs: the sampling weights, re-run by the actor"),
    Phase("ref log-prob", "ref (frozen copy)", "ref_log_prob: for the KL term"),
    Phase("values", "critic (PPO; not GRPO)", "values"),
    Phase("advantages", "driver (CPU)", "advantages: GRPO compares responses of one prompt"),
    Phase("update", "actor (+ critic)", "new weights: mini-batches of micro-batches", grad=True),
)


@dataclass(frozen=True)
class BatchSplit:
    """How one step's batch of responses is cut: optimizer steps (mini-batches) and forward/backward passes."""

    responses: int
    mini_batches: int
    micro_per_mini: int
    per_micro: int

    def describe(self) -> str:
        return (
            f"{self.responses} responses -> {self.mini_batches} mini-batches (one optimizer step each) "
            f"-> {self.micro_per_mini} micro-batches of {self.per_micro} per mini-batch and rank"
        )


def batch_split(prompts: int, n: int, mini_batch_prompts: int, micro_batch: int, dp: int = 1) -> BatchSplit:
    """The mini/micro split of one step: `prompts` x `n` responses, mini-batches of `mini_batch_prompts` x `n`
    responses, each cut per data-parallel rank (`dp`) into micro-batches of `micro_batch` responses.

    verl's own names: `data.train_batch_size` (prompts), `rollout.n`, `actor.ppo_mini_batch_size` (counted in
    prompts and multiplied by n), `actor.ppo_micro_batch_size_per_gpu`.
    """
    prompts, n, mini, micro, dp = (positive_int(k, v) for k, v in
                                   (("prompts", prompts), ("n", n), ("mini_batch_prompts", mini_batch_prompts),
                                    ("micro_batch", micro_batch), ("dp", dp)))  # fmt: skip
    if prompts % mini:
        raise ValueError(f"prompts={prompts} must be a multiple of mini_batch_prompts={mini}")
    per_rank = mini * n // dp
    if (mini * n) % dp or per_rank % micro:
        raise ValueError(f"a mini-batch of {mini * n} responses does not split into dp={dp} x micro_batch={micro}")
    return BatchSplit(prompts * n, prompts // mini, per_rank // micro, micro)


def draw_rl_step(split: BatchSplit) -> None:
    """Draw the RL step (phases left to right, the update opened into mini- and micro-batches); print it too."""
    check_instance("split", split, BatchSplit, what="a BatchSplit (from batch_split)")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    from verlstudy.kit.plots import COLORS, apply_style, fit_layout

    apply_style()
    fig, ax = plt.subplots(figsize=(7.3, 3.0))  # the size the picture had when printed trimmed
    ax.set_xlim(0, len(RL_STEP) * 1.1)
    ax.set_ylim(0, 3.4)
    ax.axis("off")
    for i, phase in enumerate(RL_STEP):
        x = i * 1.1 + 0.05
        color = COLORS[1] if phase.grad else COLORS[0]
        ax.add_patch(FancyBboxPatch((x, 2.2), 0.95, 0.9, boxstyle="round,pad=0.02", fc=color, alpha=0.18, ec=color))
        ax.text(x + 0.475, 2.8, phase.name, ha="center", va="center", fontsize=8, weight="bold")
        ax.text(x + 0.475, 2.45, phase.model.replace(" (", "\n("), ha="center", va="center", fontsize=7)
        if i:
            ax.annotate("", (x, 2.65), (x - 0.15, 2.65), arrowprops={"arrowstyle": "->"})
    # the update, opened: mini-batches in sequence, each a run of micro-batches (forward + backward)
    shown = min(split.mini_batches, 4)
    width = (len(RL_STEP) * 1.1 - 0.2) / shown
    for m in range(shown):
        x0 = 0.1 + m * width
        ax.text(x0 + width / 2 - 0.05, 1.6, f"mini-batch {m + 1}\n(one optimizer step)", ha="center", fontsize=7)
        micro_shown = min(split.micro_per_mini, 6)
        w = (width - 0.2) / micro_shown
        for k in range(micro_shown):
            ax.add_patch(FancyBboxPatch((x0 + k * w, 0.95), w * 0.85, 0.5, boxstyle="round,pad=0.01",
                                        fc=COLORS[2], alpha=0.25, ec=COLORS[2]))  # fmt: skip
            ax.text(x0 + k * w + w * 0.42, 1.2, f"μ{k + 1}", ha="center", va="center", fontsize=6)
    ax.annotate("", (0.3, 2.0), (len(RL_STEP) * 1.1 - 0.5, 2.18), arrowprops={"arrowstyle": "->", "color": "grey"})
    ax.text(0.1, 0.55, split.describe(), fontsize=7)
    ax.text(0.1, 0.2, "red: builds an autograd graph and steps an optimizer; blue: forward only", fontsize=7)
    ax.set_title("One RL step in verl (v1/trainer_base.py), and its update opened")
    fit_layout(fig)  # the figure is shown untrimmed: lay the drawing out over all of it
    plt.show()
    for i, phase in enumerate(RL_STEP, start=1):
        print(f"{i}. {phase.name:<19} {phase.model:<34} adds {phase.adds}")
    print(split.describe())
