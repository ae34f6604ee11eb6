"""5.2 silently_missing(model, state_dict, allowed): load strict=False, return the sorted missing keys not allowed."""
import torch


def matches_module(key, pattern):
    module = pattern[:-1] if pattern.endswith(".") else pattern
    return key == module or key.startswith(module + ".")


def _not_allowed(keys, allowed):
    return sorted(k for k in keys if not any(matches_module(k, p) for p in allowed))


# ---------------- wrong
def w_plain_prefix(model, state_dict, allowed):
    res = model.load_state_dict(state_dict, strict=False)
    return sorted(k for k in res.missing_keys if not any(k.startswith(p) for p in allowed))


def w_never_loads(model, state_dict, allowed):
    return _not_allowed(set(model.state_dict()) - set(state_dict), allowed)


def w_assign_true(model, state_dict, allowed):
    res = model.load_state_dict(state_dict, strict=False, assign=True)
    return _not_allowed(res.missing_keys, allowed)


def w_deletes_unexpected(model, state_dict, allowed):
    own = model.state_dict()
    for k in list(state_dict):
        if k not in own:
            del state_dict[k]  # clean the checkpoint first
    res = model.load_state_dict(state_dict, strict=False)
    return _not_allowed(res.missing_keys, allowed)


def w_adds_unexpected(model, state_dict, allowed):
    res = model.load_state_dict(state_dict, strict=False)
    return _not_allowed(res.missing_keys + res.unexpected_keys, allowed)


def w_parameters_only(model, state_dict, allowed):
    model.load_state_dict(state_dict, strict=False)
    return _not_allowed([n for n, _ in model.named_parameters() if n not in state_dict], allowed)


def w_unsorted(model, state_dict, allowed):
    res = model.load_state_dict(state_dict, strict=False)
    return [k for k in res.missing_keys if not any(matches_module(k, p) for p in allowed)]


def w_named_buffers_all(model, state_dict, allowed):
    model.load_state_dict(state_dict, strict=False)
    names = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
    return _not_allowed([n for n in names if n not in state_dict], allowed)


def w_all_instead_of_any(model, state_dict, allowed):
    res = model.load_state_dict(state_dict, strict=False)
    return sorted(k for k in res.missing_keys if not all(matches_module(k, p) for p in allowed))


def w_setattr_parameters(model, state_dict, allowed):
    # copy by hand: replace each parameter with the checkpoint's tensor
    own = dict(model.named_parameters())
    for k, v in state_dict.items():
        if k in own:
            own[k].data = v
    missing = [k for k in model.state_dict() if k not in state_dict]
    return _not_allowed(missing, allowed)


# ---------------- right
def r_missing_before_load(model, state_dict, allowed):
    missing = [k for k in model.state_dict().keys() if k not in state_dict]
    model.load_state_dict(state_dict, strict=False)
    return sorted(k for k in missing if not any(matches_module(k, p) for p in allowed))


def r_filtered_load(model, state_dict, allowed):
    own_keys = set(model.state_dict())
    result = model.load_state_dict({k: v for k, v in state_dict.items() if k in own_keys}, strict=False)
    hidden = {k for k in result.missing_keys if not any(matches_module(k, p) for p in allowed)}
    return tuple(sorted(hidden))


def r_copy_under_no_grad(model, state_dict, allowed):
    result = model.load_state_dict(dict(state_dict), strict=False)
    keep = []
    for key in result.missing_keys:
        if any(matches_module(key, pattern) for pattern in allowed):
            continue
        keep.append(key)
    keep.sort()
    return keep


WRONG = {
    "plain startswith for allowed": (w_plain_prefix,),
    "computes the keys, never loads": (w_never_loads,),
    "load_state_dict(assign=True)": (w_assign_true,),
    "deletes unexpected keys from the caller's dict": (w_deletes_unexpected,),
    "adds unexpected keys": (w_adds_unexpected,),
    "parameters only (buffers forgotten)": (w_parameters_only,),
    "not sorted": (w_unsorted,),
    "named_buffers includes non-persistent": (w_named_buffers_all,),
    "all() instead of any() over patterns": (w_all_instead_of_any,),
    "param.data = checkpoint tensor": (w_setattr_parameters,),
}
RIGHT = {"missing keys before loading": (r_missing_before_load,), "load a filtered dict, tuple": (r_filtered_load,),
         "copy of dict, sort in place": (r_copy_under_no_grad,)}
