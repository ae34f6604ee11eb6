"""Exercise 2.2: forward_step(policy, micro_batch, loss_function), held-out answers."""

import torch
import torch.nn.functional as F


def _log_probs(policy, micro_batch):
    logp = torch.log_softmax(policy(micro_batch["states"]), dim=-1)
    return logp.gather(-1, micro_batch["actions"][:, None]).squeeze(-1)


# WRONG ---------------------------------------------------------------
def w_detach_before_loss(policy, micro_batch, loss_function):
    # the detach moved up one line: the loss has no graph to train the policy
    out = {"log_probs": _log_probs(policy, micro_batch).detach()}
    loss, metrics = loss_function(out, micro_batch)
    return loss, {"model_output": out, "metrics": metrics}


def w_output_attached(policy, micro_batch, loss_function):
    # stores the live log-probs: the engine keeps the graph alive for the whole mini-batch
    out = {"log_probs": _log_probs(policy, micro_batch)}
    loss, metrics = loss_function(out, micro_batch)
    return loss, {"model_output": out, "metrics": metrics}


def w_own_backward(policy, micro_batch, loss_function):
    # runs backward itself: the engine's backward doubles the gradients (or fails)
    out = {"log_probs": _log_probs(policy, micro_batch)}
    loss, metrics = loss_function(out, micro_batch)
    loss.backward(retain_graph=True)
    return loss, {"model_output": {"log_probs": out["log_probs"].detach()}, "metrics": metrics}


def w_squeeze_all(policy, micro_batch, loss_function):
    # squeeze() with no dim gives a 0-dim tensor for B = 1; shape must be (B,)
    logp = torch.log_softmax(policy(micro_batch["states"]), dim=-1)
    out = {"log_probs": logp.gather(-1, micro_batch["actions"][:, None]).squeeze()}
    loss, metrics = loss_function(out, micro_batch)
    return loss, {"model_output": {"log_probs": out["log_probs"].detach()}, "metrics": metrics}


def w_probs_not_log(policy, micro_batch, loss_function):
    # softmax probabilities, not log-probabilities
    p = torch.softmax(policy(micro_batch["states"]), dim=-1)
    out = {"log_probs": p.gather(-1, micro_batch["actions"][:, None]).squeeze(-1)}
    loss, metrics = loss_function(out, micro_batch)
    return loss, {"model_output": {"log_probs": out["log_probs"].detach()}, "metrics": metrics}


def w_softmax_dim0(policy, micro_batch, loss_function):
    # normalises over the batch axis, not the actions
    logp = torch.log_softmax(policy(micro_batch["states"]), dim=0)
    out = {"log_probs": logp.gather(-1, micro_batch["actions"][:, None]).squeeze(-1)}
    loss, metrics = loss_function(out, micro_batch)
    return loss, {"model_output": {"log_probs": out["log_probs"].detach()}, "metrics": metrics}


def w_loss_called_twice(policy, micro_batch, loss_function):
    # calls the loss twice (once to peek at metrics): the contract says exactly once
    out = {"log_probs": _log_probs(policy, micro_batch)}
    _, metrics = loss_function(out, micro_batch)
    loss, _ = loss_function(out, micro_batch)
    return loss, {"model_output": {"log_probs": out["log_probs"].detach()}, "metrics": metrics}


def w_returns_list(policy, micro_batch, loss_function):
    # returns a list, the text asks for a tuple
    out = {"log_probs": _log_probs(policy, micro_batch)}
    loss, metrics = loss_function(out, micro_batch)
    return [loss, {"model_output": {"log_probs": out["log_probs"].detach()}, "metrics": metrics}]


def w_writes_into_batch(policy, micro_batch, loss_function):
    # writes the live log-probs into the caller's micro_batch: changes it and keeps a graph
    micro_batch["log_probs"] = _log_probs(policy, micro_batch)
    out = {"log_probs": micro_batch["log_probs"]}
    loss, metrics = loss_function(out, micro_batch)
    return loss, {"model_output": {"log_probs": out["log_probs"].detach()}, "metrics": metrics}


def w_keeps_on_policy(policy, micro_batch, loss_function):
    # keeps the last live log-probs on the policy "for debugging": a graph stays reachable
    out = {"log_probs": _log_probs(policy, micro_batch)}
    policy._last_log_probs = out["log_probs"]
    loss, metrics = loss_function(out, micro_batch)
    return loss, {"model_output": {"log_probs": out["log_probs"].detach()}, "metrics": metrics}


def w_eval_mode(policy, micro_batch, loss_function):
    # switches the policy to eval mode and leaves it there
    policy.eval()
    out = {"log_probs": _log_probs(policy, micro_batch)}
    loss, metrics = loss_function(out, micro_batch)
    return loss, {"model_output": {"log_probs": out["log_probs"].detach()}, "metrics": metrics}


def w_zero_grad(policy, micro_batch, loss_function):
    # zero_grad wipes the gradients the engine accumulated over earlier micro-batches
    policy.zero_grad()
    out = {"log_probs": _log_probs(policy, micro_batch)}
    loss, metrics = loss_function(out, micro_batch)
    return loss, {"model_output": {"log_probs": out["log_probs"].detach()}, "metrics": metrics}


# RIGHT ---------------------------------------------------------------
def r_logsumexp(policy, micro_batch, loss_function):
    logits = policy(micro_batch["states"])
    idx = torch.arange(logits.shape[0])
    log_probs = logits[idx, micro_batch["actions"]] - torch.logsumexp(logits, dim=-1)
    loss, metrics = loss_function({"log_probs": log_probs}, micro_batch)
    return (loss, {"model_output": {"log_probs": log_probs.detach()}, "metrics": metrics})


def r_categorical(policy, micro_batch, loss_function):
    dist = torch.distributions.Categorical(logits=policy(micro_batch["states"]))
    model_output = dict(log_probs=dist.log_prob(micro_batch["actions"]))
    result = loss_function(model_output, micro_batch)
    loss, metrics = result[0], result[1]
    stored = {key: value.detach().clone() for key, value in model_output.items()}
    return loss, {"model_output": stored, "metrics": metrics}


def _detached(tree):
    if isinstance(tree, torch.Tensor):
        return tree.detach() if tree.requires_grad else tree
    if isinstance(tree, dict):
        return {k: _detached(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_detached(v) for v in tree)
    return tree


def r_one_hot_float64_copy(policy, micro_batch, loss_function):
    logp = F.log_softmax(policy(micro_batch["states"]), dim=1)
    chosen = (logp * F.one_hot(micro_batch["actions"], logp.shape[-1]).to(logp.dtype)).sum(dim=1)
    loss, metrics = loss_function({"log_probs": chosen}, micro_batch)
    with torch.no_grad():
        kept = chosen.to(torch.float64)
    return loss, {"model_output": {"log_probs": kept}, "metrics": _detached(metrics)}


WRONG = {
    "detach before the loss": (w_detach_before_loss,),
    "live log-probs stored": (w_output_attached,),
    "own backward": (w_own_backward,),
    "squeeze() drops B=1": (w_squeeze_all,),
    "probabilities not log": (w_probs_not_log,),
    "log_softmax over dim 0": (w_softmax_dim0,),
    "loss called twice": (w_loss_called_twice,),
    "returns a list": (w_returns_list,),
    "writes into micro_batch": (w_writes_into_batch,),
    "graph kept on the policy": (w_keeps_on_policy,),
    "leaves eval mode": (w_eval_mode,),
    "zero_grad inside the step": (w_zero_grad,),
}
RIGHT = {
    "logits minus logsumexp": (r_logsumexp,),
    "Categorical.log_prob, cloned copy": (r_categorical,),
    "one-hot sum, float64 detached copy, metrics detached": (r_one_hot_float64_copy,),
}
UNSURE = {}
