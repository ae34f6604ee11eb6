"""Exercise 2.2 answers: forward_step(policy, micro_batch, loss_function) -> (live loss, detached output)."""

import torch
import torch.nn.functional as F


def _log_probs(policy, micro_batch):
    logits = policy(micro_batch["states"])
    return torch.log_softmax(logits, dim=-1).gather(-1, micro_batch["actions"][:, None]).squeeze(-1)


# --- wrong ---
def w_no_detach(policy, micro_batch, loss_function):
    # stores the live log-probs under model_output: the engine keeps the graph until the mini-batch ends
    lp = _log_probs(policy, micro_batch)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp}, "metrics": metrics}


def w_detach_before_loss(policy, micro_batch, loss_function):
    # detaches before the loss reads them: the loss no longer trains the policy
    lp = _log_probs(policy, micro_batch).detach()
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp}, "metrics": metrics}


def w_own_backward(policy, micro_batch, loss_function):
    # runs backward itself: the engine's backward doubles the gradients (or fails on a freed graph)
    lp = _log_probs(policy, micro_batch)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    loss.backward(retain_graph=True)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


def w_zero_grad(policy, micro_batch, loss_function):
    # zeroes the gradients: the engine sums them over micro-batches
    policy.zero_grad(set_to_none=False)
    lp = _log_probs(policy, micro_batch)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


def w_squeeze_all(policy, micro_batch, loss_function):
    # squeeze() drops the batch dim too when B = 1: shape () instead of (1,)
    logits = policy(micro_batch["states"])
    lp = torch.log_softmax(logits, dim=-1).gather(-1, micro_batch["actions"][:, None]).squeeze()
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


def w_log_softmax_wrong_dim(policy, micro_batch, loss_function):
    # normalises over the batch, not over the actions
    logits = policy(micro_batch["states"])
    lp = torch.log_softmax(logits, dim=0).gather(-1, micro_batch["actions"][:, None]).squeeze(-1)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


def w_probs_not_log(policy, micro_batch, loss_function):
    # probabilities, not log-probabilities
    logits = policy(micro_batch["states"])
    lp = torch.softmax(logits, dim=-1).gather(-1, micro_batch["actions"][:, None]).squeeze(-1)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


def w_loss_called_twice(policy, micro_batch, loss_function):
    # calls the loss function twice (once for the output): it must be called exactly once
    lp = _log_probs(policy, micro_batch)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    _, metrics = loss_function({"log_probs": lp.detach()}, micro_batch)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


_kept = []


def w_keeps_loss_global(policy, micro_batch, loss_function):
    # keeps the live loss in a module list "for logging": a graph stays reachable after the step
    lp = _log_probs(policy, micro_batch)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    _kept.append(loss)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


def w_writes_into_micro_batch(policy, micro_batch, loss_function):
    # stores the log-probs into the caller's micro_batch: it must be left as it was (and it keeps the graph)
    lp = _log_probs(policy, micro_batch)
    micro_batch["log_probs"] = lp
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


def w_eval_mode(policy, micro_batch, loss_function):
    # switches the policy to eval mode and leaves it there
    policy.eval()
    lp = _log_probs(policy, micro_batch)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


def w_returns_list(policy, micro_batch, loss_function):
    # a list, not the tuple the exercise asks for; and no metrics key
    lp = _log_probs(policy, micro_batch)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return [loss, {"model_output": {"log_probs": lp.detach()}}]


# --- right ---
def r_cross_entropy(policy, micro_batch, loss_function):
    logits = policy(micro_batch["states"])
    log_probs = -F.cross_entropy(logits, micro_batch["actions"], reduction="none")
    loss, metrics = loss_function({"log_probs": log_probs}, micro_batch)
    output = {"log_probs": log_probs.detach().clone()}
    return (loss, {"model_output": output, "metrics": metrics})


def r_index_rows(policy, micro_batch, loss_function):
    states, actions = micro_batch["states"], micro_batch["actions"]
    table = F.log_softmax(policy(states), dim=1)
    picked = table[torch.arange(table.shape[0]), actions]
    loss, metrics = loss_function({"log_probs": picked}, micro_batch)
    detached = {name: t.detach() if isinstance(t, torch.Tensor) else t for name, t in {"log_probs": picked}.items()}
    return loss, dict(model_output=detached, metrics=metrics)


def r_logits_minus_logsumexp(policy, micro_batch, loss_function):
    logits = policy(micro_batch["states"])
    chosen = torch.take_along_dim(logits, micro_batch["actions"].unsqueeze(1), dim=1).reshape(-1)
    log_probs = chosen - torch.logsumexp(logits, dim=-1)
    result = loss_function({"log_probs": log_probs}, micro_batch)
    loss, metrics = result
    with torch.no_grad():
        stored = log_probs.double()  # any float dtype that keeps the values
    return loss, {"model_output": {"log_probs": stored}, "metrics": metrics}


def r_shallow_copy_batch(policy, micro_batch, loss_function):
    # hands the loss a dict of the same entries (the contract allows it)
    batch = dict(micro_batch)
    lp = torch.log_softmax(policy(batch["states"]), -1).gather(1, batch["actions"].view(-1, 1)).view(-1)
    loss, metrics = loss_function({"log_probs": lp}, batch)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


WRONG = {
    "model_output not detached": (w_no_detach,),
    "detached before the loss": (w_detach_before_loss,),
    "own backward": (w_own_backward,),
    "zero_grad": (w_zero_grad,),
    "squeeze() drops B=1": (w_squeeze_all,),
    "log_softmax over the batch": (w_log_softmax_wrong_dim,),
    "probabilities not log": (w_probs_not_log,),
    "loss called twice": (w_loss_called_twice,),
    "live loss kept in a global": (w_keeps_loss_global,),
    "writes into micro_batch": (w_writes_into_micro_batch,),
    "eval mode left on": (w_eval_mode,),
    "list without metrics": (w_returns_list,),
}
RIGHT = {
    "negative cross-entropy": (r_cross_entropy,),
    "advanced indexing": (r_index_rows,),
    "logits minus logsumexp, float64 copy": (r_logits_minus_logsumexp,),
    "shallow copy of the batch": (r_shallow_copy_batch,),
}
UNSURE = {}
