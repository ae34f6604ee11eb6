"""Example engine (AutoModel style): the wrapped value reaches the dict through a variable."""

import torch

from verlstudy.common import trees


def forward_step(policy, micro_batch, loss_function):
    logits = policy(micro_batch["states"])
    log_softmax = torch.log_softmax(logits, dim=-1)
    model_output = {"log_probs": log_softmax.gather(-1, micro_batch["actions"][:, None]).squeeze(-1)}
    loss, metrics = loss_function(model_output, micro_batch)
    stored = trees.detach_tree(model_output)
    return loss, dict(model_output=stored, loss=loss.detach().item(), metrics=metrics)
