"""Example engine of the COURSE'S OWN shape (no upstream engine stores this way): the wrapped value reaches
the output through a variable, stored with dict(model_output=...). It exercises the check's alias rule."""

import torch

from verlstudy.common import trees


def forward_step(policy, micro_batch, loss_function):
    logits = policy(micro_batch["states"])
    log_softmax = torch.log_softmax(logits, dim=-1)
    model_output = {"log_probs": log_softmax.gather(-1, micro_batch["actions"][:, None]).squeeze(-1)}
    loss, metrics = loss_function(model_output, micro_batch)
    stored = trees.detach_tree(model_output)
    return loss, dict(model_output=stored, loss=loss.detach().item(), metrics=metrics)
