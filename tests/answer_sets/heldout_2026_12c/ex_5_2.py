"""Exercise 5.2 answers: silently_missing(model, state_dict, allowed) -> sorted missing keys no allowed module covers."""

import torch


def _inside(key, pattern):
    module = pattern[:-1] if pattern.endswith(".") else pattern
    return key == module or key.startswith(module + ".")


# --- wrong ---
def w_ignores_allowed(model, state_dict, allowed):
    # returns every missing key, allowed modules included
    return sorted(model.load_state_dict(state_dict, strict=False).missing_keys)


def w_prefix_allowed(model, state_dict, allowed):
    # plain prefixes: "mtp" also hides mtp_extra's keys, "model.layers.7" hides layer 78's
    missing = model.load_state_dict(state_dict, strict=False).missing_keys
    return sorted(k for k in missing if not any(k.startswith(p) for p in allowed))


def w_includes_unexpected(model, state_dict, allowed):
    # adds the checkpoint's stray keys: they are not missing
    result = model.load_state_dict(state_dict, strict=False)
    keys = list(result.missing_keys) + list(result.unexpected_keys)
    return sorted(k for k in keys if not any(_inside(k, p) for p in allowed))


def w_unsorted(model, state_dict, allowed):
    # in the model's order, not sorted
    missing = model.load_state_dict(state_dict, strict=False).missing_keys
    return [k for k in missing if not any(_inside(k, p) for p in allowed)]


def w_assign(model, state_dict, allowed):
    # assign=True puts the checkpoint's own tensors in the model: new objects, the checkpoint's dtype, shared memory
    missing = model.load_state_dict(state_dict, strict=False, assign=True).missing_keys
    return sorted(k for k in missing if not any(_inside(k, p) for p in allowed))


def w_no_load(model, state_dict, allowed):
    # names the keys but never loads the weights
    missing = [k for k in model.state_dict() if k not in state_dict]
    return sorted(k for k in missing if not any(_inside(k, p) for p in allowed))


def w_non_persistent_counted(model, state_dict, allowed):
    # walks named_parameters and named_buffers: non-persistent buffers are never missing
    model.load_state_dict(state_dict, strict=False)
    names = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
    return sorted(n for n in names if n not in state_dict and not any(_inside(n, p) for p in allowed))


def w_parameters_only(model, state_dict, allowed):
    # parameters only: a saved buffer the checkpoint lacks is missing too
    model.load_state_dict(state_dict, strict=False)
    names = [n for n, _ in model.named_parameters()]
    return sorted(n for n in names if n not in state_dict and not any(_inside(n, p) for p in allowed))


def w_pops_strays(model, state_dict, allowed):
    # removes the stray keys from the caller's dict before loading: the dict must keep its keys
    own = model.state_dict().keys()
    for key in [k for k in state_dict if k not in own]:
        del state_dict[key]
    missing = model.load_state_dict(state_dict, strict=False).missing_keys
    return sorted(k for k in missing if not any(_inside(k, p) for p in allowed))


def w_converts_in_place(model, state_dict, allowed):
    # converts the caller's tensors to the model's dtype in its dict: values and dtypes must stay
    own = model.state_dict()
    for key in list(state_dict):
        if key in own:
            state_dict[key] = state_dict[key].to(own[key].dtype)
    missing = model.load_state_dict(state_dict, strict=False).missing_keys
    return sorted(k for k in missing if not any(_inside(k, p) for p in allowed))


def w_returns_set(model, state_dict, allowed):
    # a set: the exercise asks for a sorted list
    missing = model.load_state_dict(state_dict, strict=False).missing_keys
    return {k for k in missing if not any(_inside(k, p) for p in allowed)}


def w_allowed_as_one_pattern(model, state_dict, allowed):
    # treats an empty `allowed` as "every module allowed": an empty tuple allows nothing
    missing = model.load_state_dict(state_dict, strict=False).missing_keys
    if not allowed:
        return []
    return sorted(k for k in missing if not any(_inside(k, p) for p in allowed))


# --- right ---
def r_set_difference_then_load(model, state_dict, allowed):
    expected = list(model.state_dict().keys())
    absent = set(expected) - set(state_dict)
    model.load_state_dict(state_dict, strict=False)
    keep = [k for k in absent if all(not _inside(k, p) for p in allowed)]
    return sorted(keep)


def r_manual_copy(model, state_dict, allowed):
    # copies each value into the model's own tensors (state_dict() shares their storage)
    own = model.state_dict()
    missing = []
    with torch.no_grad():
        for name, tensor in own.items():
            if name in state_dict:
                tensor.copy_(state_dict[name])
            else:
                missing.append(name)
    pieces = [p.removesuffix(".").split(".") for p in allowed]
    hidden = [k for k in missing if not any(k.split(".")[: len(pc)] == pc for pc in pieces)]
    return sorted(hidden)


def r_tuple_result(model, state_dict, allowed):
    result = model.load_state_dict(dict(state_dict), strict=False)
    out = []
    for key in result.missing_keys:
        covered = False
        for pattern in allowed:
            module = pattern.rstrip(".")
            if key == module or key.startswith(f"{module}."):
                covered = True
                break
        if not covered and key not in out:
            out.append(key)
    return tuple(sorted(out))


WRONG = {
    "allowed ignored": (w_ignores_allowed,),
    "allowed as prefixes": (w_prefix_allowed,),
    "unexpected keys included": (w_includes_unexpected,),
    "unsorted": (w_unsorted,),
    "assign=True": (w_assign,),
    "never loads": (w_no_load,),
    "non-persistent buffers counted": (w_non_persistent_counted,),
    "parameters only": (w_parameters_only,),
    "pops stray keys from the caller's dict": (w_pops_strays,),
    "converts the caller's tensors": (w_converts_in_place,),
    "set": (w_returns_set,),
    "empty allowed hides everything": (w_allowed_as_one_pattern,),
}
RIGHT = {
    "set difference then load": (r_set_difference_then_load,),
    "manual copy_": (r_manual_copy,),
    "tuple, explicit loop": (r_tuple_result,),
}
UNSURE = {}
