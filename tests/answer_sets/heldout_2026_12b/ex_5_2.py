"""Exercise 5.2: silently_missing(model, state_dict, allowed), load strict=False, name the unallowed missing keys."""

import torch

# The text: load state_dict with strict=False (the model ends up holding the checkpoint's weights, in its own tensor
# objects and dtype, as copies); return the sorted missing keys no allowed module covers (whole module names, as
# 5.1); unexpected keys are not missing; a saved buffer counts, a non-persistent buffer never; state_dict unchanged.


def _covered(key, pattern):
    module = pattern.rstrip(".")
    return key == module or key.startswith(module + ".")


def _ok(result, allowed):
    return sorted(k for k in result.missing_keys if not any(_covered(k, p) for p in allowed))


# --- WRONG -----------------------------------------------------------------------------------------------------------


def w_strict(model, state_dict, allowed):
    # strict=True raises on the very keys it should report
    return _ok(model.load_state_dict(state_dict, strict=True), allowed)


def w_allowed_ignored(model, state_dict, allowed):
    # reports every missing key, allowed modules too
    return sorted(model.load_state_dict(state_dict, strict=False).missing_keys)


def w_plain_prefix(model, state_dict, allowed):
    # allowed as plain string prefixes: "mtp" hides mtp_extra's keys
    result = model.load_state_dict(state_dict, strict=False)
    return sorted(k for k in result.missing_keys if not any(k.startswith(p) for p in allowed))


def w_with_unexpected(model, state_dict, allowed):
    # adds the checkpoint's unexpected keys: they are not missing
    result = model.load_state_dict(state_dict, strict=False)
    return sorted(set(_ok(result, allowed)) | set(result.unexpected_keys))


def w_no_load(model, state_dict, allowed):
    # computes the missing keys but never loads: the model keeps its old weights
    missing = set(model.state_dict()) - set(state_dict)
    return sorted(k for k in missing if not any(_covered(k, p) for p in allowed))


def w_all_buffers(model, state_dict, allowed):
    # counts every named buffer, non-persistent ones too
    model.load_state_dict(state_dict, strict=False)
    names = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
    return sorted(k for k in set(names) - set(state_dict) if not any(_covered(k, p) for p in allowed))


def w_parameters_only(model, state_dict, allowed):
    # counts parameters only: a saved buffer the checkpoint lacks is not reported
    model.load_state_dict(state_dict, strict=False)
    names = {n for n, _ in model.named_parameters()}
    return sorted(k for k in names - set(state_dict) if not any(_covered(k, p) for p in allowed))


def w_unsorted(model, state_dict, allowed):
    # in the model's order, not sorted
    result = model.load_state_dict(state_dict, strict=False)
    return [k for k in result.missing_keys if not any(_covered(k, p) for p in allowed)]


def w_pops_unexpected(model, state_dict, allowed):
    # removes the stray keys from the caller's dict before loading
    for k in [k for k in state_dict if k not in model.state_dict()]:
        del state_dict[k]
    return _ok(model.load_state_dict(state_dict, strict=False), allowed)


def w_assign(model, state_dict, allowed):
    # assign=True puts the checkpoint's tensors into the model: its dtype, memory shared, new objects
    return _ok(model.load_state_dict(state_dict, strict=False, assign=True), allowed)


def w_data_swap(model, state_dict, allowed):
    # swaps each parameter's .data for the checkpoint tensor: shares memory, keeps the checkpoint's dtype
    own = model.state_dict(keep_vars=True)
    for name, value in state_dict.items():
        if name in own:
            own[name].data = value
    missing = [k for k in own if k not in state_dict]
    return sorted(k for k in missing if not any(_covered(k, p) for p in allowed))


def w_set(model, state_dict, allowed):
    # a set: the text asks for a sorted list
    return set(_ok(model.load_state_dict(state_dict, strict=False), allowed))


def w_nested_covered(model, state_dict, allowed):
    # a module name anywhere in the key: a nested blocks.mtp is hidden by "mtp."
    result = model.load_state_dict(state_dict, strict=False)
    return sorted(k for k in result.missing_keys if not any(p.rstrip(".") in k.split(".") for p in allowed))


# --- RIGHT -----------------------------------------------------------------------------------------------------------


def r_diff_then_load(model, state_dict, allowed):
    # missing = the model's saved keys the checkpoint lacks (state_dict() skips non-persistent buffers); then load
    own = set(model.state_dict().keys())
    missing = own.difference(state_dict.keys())
    model.load_state_dict(state_dict, strict=False)
    modules = [p[:-1] if p.endswith(".") else p for p in allowed]
    keep = [k for k in missing if not any(k.split(".")[: len(m.split("."))] == m.split(".") for m in modules)]
    return sorted(keep)


def r_filtered_dict(model, state_dict, allowed):
    # hands load_state_dict only the keys the model has (a new dict), then filters missing_keys
    own = model.state_dict()
    wanted = {k: v for k, v in state_dict.items() if k in own}
    result = model.load_state_dict(wanted, strict=False)
    return tuple(sorted({k for k in result.missing_keys if not any(_covered(k, p) for p in allowed)}))


def r_copy_by_hand(model, state_dict, allowed):
    # copies each value into the model's own tensor under no_grad (copy_ converts the dtype)
    own = model.state_dict(keep_vars=True)
    missing = []
    with torch.no_grad():
        for name, tensor in own.items():
            if name in state_dict:
                tensor.copy_(state_dict[name])
            else:
                missing.append(name)
    return sorted(name for name in missing if all(not _covered(name, p) for p in allowed))


WRONG = {
    "strict=True": (w_strict,),
    "allowed ignored": (w_allowed_ignored,),
    "plain string prefixes": (w_plain_prefix,),
    "unexpected keys added": (w_with_unexpected,),
    "never loads": (w_no_load,),
    "non-persistent buffers counted": (w_all_buffers,),
    "parameters only": (w_parameters_only,),
    "unsorted": (w_unsorted,),
    "pops the caller's stray keys": (w_pops_unexpected,),
    "assign=True": (w_assign,),
    ".data swapped": (w_data_swap,),
    "a set": (w_set,),
    "module name anywhere": (w_nested_covered,),
}

RIGHT = {
    "diff of keys, then load": (r_diff_then_load,),
    "filtered dict, a tuple": (r_filtered_dict,),
    "copy_ by hand": (r_copy_by_hand,),
}

UNSURE = {}
