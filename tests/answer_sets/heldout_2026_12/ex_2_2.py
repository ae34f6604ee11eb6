"""2.2 forward_step(policy, micro_batch, loss_function) -> (live loss, {"model_output": detached, "metrics": ...})."""
import torch

from verlstudy.common.trees import detach_tree  # the notebook imports it and says to use it


def _log_probs(policy, micro_batch):
    return torch.log_softmax(policy(micro_batch["states"]), dim=-1).gather(-1, micro_batch["actions"][:, None]).squeeze(-1)


# ---------------- wrong
def w_detach_before_loss(policy, micro_batch, loss_function):
    model_output = detach_tree({"log_probs": _log_probs(policy, micro_batch)})
    loss, metrics = loss_function(model_output, micro_batch)
    return loss, {"model_output": model_output, "metrics": metrics}


def w_no_detach(policy, micro_batch, loss_function):
    model_output = {"log_probs": _log_probs(policy, micro_batch)}
    loss, metrics = loss_function(model_output, micro_batch)
    return loss, {"model_output": model_output, "metrics": metrics}


def w_shape_b1(policy, micro_batch, loss_function):
    lp = torch.log_softmax(policy(micro_batch["states"]), dim=-1).gather(-1, micro_batch["actions"][:, None])
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


def w_squeeze_all(policy, micro_batch, loss_function):
    lp = torch.log_softmax(policy(micro_batch["states"]), dim=-1).gather(-1, micro_batch["actions"][:, None]).squeeze()
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


def w_loss_called_twice(policy, micro_batch, loss_function):
    lp = _log_probs(policy, micro_batch)
    loss, _ = loss_function({"log_probs": lp}, micro_batch)
    stored = {"log_probs": lp.detach()}
    _, metrics = loss_function(stored, micro_batch)  # metrics from the stored copy
    return loss, {"model_output": stored, "metrics": metrics}


def w_backward_inside(policy, micro_batch, loss_function):
    lp = _log_probs(policy, micro_batch)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    loss.backward(retain_graph=True)  # "make sure the gradient flows"
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


def w_no_grad_forward(policy, micro_batch, loss_function):
    with torch.no_grad():  # "the stored log-probs need no graph"
        lp = _log_probs(policy, micro_batch)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp}, "metrics": metrics}


def w_stash_in_micro_batch(policy, micro_batch, loss_function):
    lp = _log_probs(policy, micro_batch)
    micro_batch["log_probs"] = lp  # keep them with the batch for later
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


def w_index_not_gather(policy, micro_batch, loss_function):
    logp = torch.log_softmax(policy(micro_batch["states"]), dim=-1)
    lp = logp[:, micro_batch["actions"]]  # (B, B), not (B,)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


def w_log_softmax_dim0(policy, micro_batch, loss_function):
    lp = torch.log_softmax(policy(micro_batch["states"]), dim=0).gather(-1, micro_batch["actions"][:, None]).squeeze(-1)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


def w_drops_metrics(policy, micro_batch, loss_function):
    lp = _log_probs(policy, micro_batch)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp.detach()}}


def w_returns_list(policy, micro_batch, loss_function):
    lp = _log_probs(policy, micro_batch)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return [loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}]


# ---------------- right
def r_detach_method(policy, micro_batch, loss_function):
    logits = policy(micro_batch["states"])
    log_probs = logits.log_softmax(-1).gather(1, micro_batch["actions"].unsqueeze(1)).squeeze(1)
    loss, metrics = loss_function({"log_probs": log_probs}, micro_batch)
    return loss, {"model_output": {"log_probs": log_probs.detach()}, "metrics": metrics}


def r_categorical(policy, micro_batch, loss_function):
    dist = torch.distributions.Categorical(logits=policy(micro_batch["states"]))
    log_probs = dist.log_prob(micro_batch["actions"])
    out = {"log_probs": log_probs}
    loss, metrics = loss_function(out, micro_batch)
    stored = {k: v.detach() for k, v in out.items()}
    return (loss, {"model_output": stored, "metrics": metrics})


def r_copy_stored(policy, micro_batch, loss_function):
    states, actions = micro_batch["states"], micro_batch["actions"]
    logp_all = torch.nn.functional.log_softmax(policy(states), dim=1)
    picked = logp_all[torch.arange(actions.shape[0]), actions]
    loss, metrics = loss_function({"log_probs": picked}, micro_batch)
    return loss, {"model_output": {"log_probs": picked.detach().clone()}, "metrics": metrics}


WRONG = {
    "detach_tree before the loss (the trap)": (w_detach_before_loss,),
    "stores live log-probs": (w_no_detach,),
    "log-probs shape (B, 1)": (w_shape_b1,),
    "squeeze() drops B=1": (w_squeeze_all,),
    "loss_function called twice": (w_loss_called_twice,),
    "backward inside forward_step": (w_backward_inside,),
    "log-probs computed under no_grad": (w_no_grad_forward,),
    "stashes live log-probs in micro_batch": (w_stash_in_micro_batch,),
    "fancy index [:, actions] instead of gather": (w_index_not_gather,),
    "log_softmax over the batch dim": (w_log_softmax_dim0,),
    "drops metrics": (w_drops_metrics,),
    "returns a list, not a tuple": (w_returns_list,),
}
RIGHT = {
    "tensor methods, .detach()": (r_detach_method,),
    "Categorical.log_prob": (r_categorical,),
    "advanced indexing, detach().clone()": (r_copy_stored,),
}
