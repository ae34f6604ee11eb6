"""Example engine (AutoModel style): like upstream's automodel engine, a dict display whose entry is wrapped."""

import torch

from verlstudy.common import trees


def forward_step(policy, micro_batch, loss_function):
    logits = policy(micro_batch["states"])
    log_softmax = torch.log_softmax(logits, dim=-1)
    model_output = {"log_probs": log_softmax.gather(-1, micro_batch["actions"][:, None]).squeeze(-1)}
    loss, metrics = loss_function(model_output, micro_batch)
    output = {
        "model_output": trees.detach_tree(model_output),
        "loss": loss.detach().item(),
        "metrics": metrics,
    }
    return loss, output
