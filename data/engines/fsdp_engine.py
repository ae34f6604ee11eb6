"""Example engine (FSDP style): the output dict is a display whose "model_output" entry is wrapped."""

import torch

from verlstudy.common.trees import detach_tree


def forward_step(policy, micro_batch, loss_function):
    logits = policy(micro_batch["states"])
    log_softmax = torch.log_softmax(logits, dim=-1)
    model_output = {
        "log_probs": log_softmax.gather(-1, micro_batch["actions"][:, None]).squeeze(-1),
        "entropy": -(log_softmax.exp() * log_softmax).sum(-1),
    }
    loss, metrics = loss_function(model_output, micro_batch)
    # Detach before this lands in the per-micro-batch output list.
    output = {
        "model_output": detach_tree(model_output),
        "loss": loss.detach().item(),
        "metrics": metrics,
    }
    return loss, output
