"""Exercise 2.2: forward_step(policy, micro_batch, loss_function) returns (live loss, detached output)."""

import torch
import torch.nn.functional as F

# The text: log-probs = log_softmax(policy(states)) gathered at actions, shape (B,); loss, metrics =
# loss_function({"log_probs": ...}, micro_batch); return (loss, {"model_output": {"log_probs": ...}, "metrics": ...});
# no backward or zero_grad of its own, nothing under model_output requires grad, no graph kept, micro_batch unchanged.


def _log_probs(policy, micro_batch):
    lp = torch.log_softmax(policy(micro_batch["states"]), dim=-1)
    return lp.gather(-1, micro_batch["actions"][:, None]).squeeze(-1)


# --- WRONG -----------------------------------------------------------------------------------------------------------


def w_not_detached(policy, micro_batch, loss_function):
    # stores the live log-probs: the engine keeps the graph until the mini-batch ends (the lesson's leak)
    lp = _log_probs(policy, micro_batch)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp}, "metrics": metrics}


def w_detach_before_loss(policy, micro_batch, loss_function):
    # the trap: detaches before the loss reads them, so the loss trains nothing
    lp = _log_probs(policy, micro_batch).detach()
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp}, "metrics": metrics}


def w_own_backward(policy, micro_batch, loss_function):
    # runs backward itself: the engine runs it, so gradients double (or the second backward fails)
    lp = _log_probs(policy, micro_batch)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    loss.backward(retain_graph=True)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


def w_zero_grad(policy, micro_batch, loss_function):
    # zeroes the gradients: the engine accumulates them over micro-batches
    policy.zero_grad()
    lp = _log_probs(policy, micro_batch)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


def w_loss_twice(policy, micro_batch, loss_function):
    # calls the loss function twice (once for the loss, once for the metrics)
    lp = _log_probs(policy, micro_batch)
    loss, _ = loss_function({"log_probs": lp}, micro_batch)
    _, metrics = loss_function({"log_probs": lp.detach()}, micro_batch)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


def w_column_shape(policy, micro_batch, loss_function):
    # forgets to squeeze: log-probs of shape (B, 1), not (B,)
    lp = torch.log_softmax(policy(micro_batch["states"]), dim=-1).gather(-1, micro_batch["actions"][:, None])
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


def w_squeeze_all(policy, micro_batch, loss_function):
    # squeeze() with no dim: for B = 1 the log-probs become 0-dim, not (1,)
    lp = torch.log_softmax(policy(micro_batch["states"]), dim=-1).gather(-1, micro_batch["actions"][:, None]).squeeze()
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


def w_probs(policy, micro_batch, loss_function):
    # softmax probabilities, not log-probabilities
    p = torch.softmax(policy(micro_batch["states"]), dim=-1).gather(-1, micro_batch["actions"][:, None]).squeeze(-1)
    loss, metrics = loss_function({"log_probs": p}, micro_batch)
    return loss, {"model_output": {"log_probs": p.detach()}, "metrics": metrics}


def w_wrong_axis(policy, micro_batch, loss_function):
    # log_softmax over the batch axis, not over the actions
    lp = torch.log_softmax(policy(micro_batch["states"]), dim=0).gather(-1, micro_batch["actions"][:, None]).squeeze(-1)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


def w_writes_micro_batch(policy, micro_batch, loss_function):
    # stores the live log-probs in the caller's micro_batch, which the engine keeps
    micro_batch["log_probs"] = _log_probs(policy, micro_batch)
    loss, metrics = loss_function({"log_probs": micro_batch["log_probs"]}, micro_batch)
    return loss, {"model_output": {"log_probs": micro_batch["log_probs"].detach()}, "metrics": metrics}


def w_keeps_on_policy(policy, micro_batch, loss_function):
    # keeps the live log-probs on the policy "for debugging": a graph reachable after the step
    lp = _log_probs(policy, micro_batch)
    policy.last_log_probs = lp
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


def w_loss_detached(policy, micro_batch, loss_function):
    # detaches the loss too ("nothing returned requires grad"): the engine's backward has nothing to run on
    lp = _log_probs(policy, micro_batch)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss.detach(), {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


def w_list_not_tuple(policy, micro_batch, loss_function):
    # returns a list; the text asks for a tuple
    lp = _log_probs(policy, micro_batch)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return [loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}]


def w_eval_mode(policy, micro_batch, loss_function):
    # switches the policy to eval mode and leaves it there
    policy.eval()
    lp = _log_probs(policy, micro_batch)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return loss, {"model_output": {"log_probs": lp.detach()}, "metrics": metrics}


# --- RIGHT -----------------------------------------------------------------------------------------------------------


def r_take_along(policy, micro_batch, loss_function):
    # F.log_softmax and take_along_dim; the stored copy is a detached clone
    logits = policy(micro_batch["states"])
    idx = micro_batch["actions"].long().unsqueeze(1)
    lp = torch.take_along_dim(F.log_softmax(logits, dim=1), idx, dim=1)[:, 0]
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    return (loss, {"model_output": {"log_probs": lp.detach().clone()}, "metrics": metrics})


def r_logsumexp_index(policy, micro_batch, loss_function):
    # logits minus logsumexp, indexed by arange; stored as float64 (same values)
    logits = policy(micro_batch["states"])
    rows = torch.arange(logits.shape[0])
    lp = logits[rows, micro_batch["actions"]] - torch.logsumexp(logits, dim=-1)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    stored = lp.detach().to(torch.float64)
    return loss, {"model_output": {"log_probs": stored}, "metrics": metrics}


def r_cross_entropy(policy, micro_batch, loss_function):
    # minus the per-sample cross-entropy is the log-prob of the action; stored through .data
    logits = policy(micro_batch["states"])
    lp = -F.cross_entropy(logits, micro_batch["actions"], reduction="none")
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    output = {"log_probs": lp.data}
    return loss, {"model_output": output, "metrics": metrics}


WRONG = {
    "output not detached": (w_not_detached,),
    "detached before the loss": (w_detach_before_loss,),
    "own backward": (w_own_backward,),
    "zero_grad": (w_zero_grad,),
    "loss function called twice": (w_loss_twice,),
    "shape (B, 1)": (w_column_shape,),
    "squeeze() drops B = 1": (w_squeeze_all,),
    "probabilities, not log": (w_probs,),
    "log_softmax over the batch": (w_wrong_axis,),
    "writes into micro_batch": (w_writes_micro_batch,),
    "keeps log-probs on the policy": (w_keeps_on_policy,),
    "loss detached": (w_loss_detached,),
    "list, not tuple": (w_list_not_tuple,),
    "leaves policy in eval mode": (w_eval_mode,),
}

RIGHT = {
    "take_along_dim, cloned copy": (r_take_along,),
    "logsumexp, float64 copy": (r_logsumexp_index,),
    "minus cross_entropy, .data": (r_cross_entropy,),
}


def u_second_forward(policy, micro_batch, loss_function):
    # the stored copy comes from a second forward under no_grad: equal values for a deterministic policy, but the
    # policy runs twice (a forward hook or dropout would see it); the text neither requires nor forbids one forward
    lp = _log_probs(policy, micro_batch)
    loss, metrics = loss_function({"log_probs": lp}, micro_batch)
    with torch.no_grad():
        stored = _log_probs(policy, micro_batch)
    return loss, {"model_output": {"log_probs": stored}, "metrics": metrics}


UNSURE = {
    "second forward under no_grad for the copy": (u_second_forward,),
}
