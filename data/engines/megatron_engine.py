"""Example engine (Megatron style): "model_output" is stored by subscript assignment, wrapped."""

import torch

from verlstudy.common.trees import detach_tree


def attach_routes(micro_output, routes):
    # The {} default holds no tensors, but the write into it is judged like any store: routing
    # indices, cleared only by review (lesson 02's REVIEWED_WRITES).
    micro_output.setdefault("model_output", {})["routed_experts"] = routes


def forward_step(policy, micro_batch, loss_function):
    logits = policy(micro_batch["states"])
    log_softmax = torch.log_softmax(logits, dim=-1)
    model_output = {"log_probs": log_softmax.gather(-1, micro_batch["actions"][:, None]).squeeze(-1)}
    loss, metrics = loss_function(model_output, micro_batch)
    output = {"loss": loss.detach().item(), "metrics": metrics}
    # Detach before this reaches the schedule's forward_data_store.
    output["model_output"] = detach_tree(model_output)
    return loss, output
