"""Exercise 5.2: silently_missing(model, state_dict, allowed), held-out answers."""

import torch


def _inside(key, pattern):
    module = pattern[:-1] if pattern.endswith(".") else pattern
    return key == module or key.startswith(module + ".")


# WRONG ---------------------------------------------------------------
def w_strict_true(model, state_dict, allowed):
    # strict=True raises on the very missing keys it should report
    model.load_state_dict(state_dict, strict=True)
    return []


def w_no_load(model, state_dict, allowed):
    # reports the keys but never loads: the model must hold the checkpoint's weights
    missing = set(model.state_dict()) - set(state_dict)
    return sorted(k for k in missing if not any(_inside(k, p) for p in allowed))


def w_unsorted(model, state_dict, allowed):
    # keeps torch's order: the list must be sorted
    result = model.load_state_dict(state_dict, strict=False)
    return [k for k in result.missing_keys if not any(_inside(k, p) for p in allowed)]


def w_plus_unexpected(model, state_dict, allowed):
    # also reports the checkpoint's stray keys: those are not missing
    result = model.load_state_dict(state_dict, strict=False)
    keys = list(result.missing_keys) + list(result.unexpected_keys)
    return sorted(k for k in keys if not any(_inside(k, p) for p in allowed))


def w_string_prefix(model, state_dict, allowed):
    # allows by string prefix: "mtp" hides mtp_extra's keys, "model.layers.7" hides layer 78
    result = model.load_state_dict(state_dict, strict=False)
    return sorted(k for k in result.missing_keys if not any(k.startswith(p) for p in allowed))


def w_parameters_only(model, state_dict, allowed):
    # looks at parameters only: a saved buffer the checkpoint lacks is never reported
    model.load_state_dict(state_dict, strict=False)
    names = [n for n, _ in model.named_parameters()]
    return sorted(n for n in names if n not in state_dict and not any(_inside(n, p) for p in allowed))


def w_all_buffers(model, state_dict, allowed):
    # counts non-persistent buffers as missing
    model.load_state_dict(state_dict, strict=False)
    names = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
    return sorted(n for n in names if n not in state_dict and not any(_inside(n, p) for p in allowed))


def w_assign(model, state_dict, allowed):
    # assign=True puts the checkpoint's own tensors in the model: new objects, its dtype, shared memory
    result = model.load_state_dict(state_dict, strict=False, assign=True)
    return sorted(k for k in result.missing_keys if not any(_inside(k, p) for p in allowed))


def w_pops_unexpected(model, state_dict, allowed):
    # deletes the stray keys from the caller's dict before loading
    own = set(model.state_dict())
    for key in [k for k in state_dict if k not in own]:
        del state_dict[key]
    result = model.load_state_dict(state_dict, strict=False)
    return sorted(k for k in result.missing_keys if not any(_inside(k, p) for p in allowed))


def w_set(model, state_dict, allowed):
    # returns a set: the text asks for a sorted list
    result = model.load_state_dict(state_dict, strict=False)
    return {k for k in result.missing_keys if not any(_inside(k, p) for p in allowed)}


def w_param_data(model, state_dict, allowed):
    # rebinds .data to the checkpoint's tensor: shares its memory and takes its dtype
    params = dict(model.named_parameters())
    for key, value in state_dict.items():
        if key in params:
            params[key].data = value
    missing = [k for k in model.state_dict() if k not in state_dict]
    return sorted(k for k in missing if not any(_inside(k, p) for p in allowed))


# RIGHT ---------------------------------------------------------------
def r_copy_by_hand(model, state_dict, allowed):
    own = model.state_dict()  # parameters and persistent buffers, sharing the model's storage
    with torch.no_grad():
        for key, target in own.items():
            if key in state_dict:
                target.copy_(state_dict[key])
    missing = [k for k in own if k not in state_dict]
    return sorted({k for k in missing if not any(_inside(k, p) for p in allowed)})


def r_set_difference(model, state_dict, allowed):
    model.load_state_dict(state_dict, strict=False)
    expected = set(model.state_dict().keys())
    lacking = expected.difference(state_dict.keys())
    keep = []
    for key in lacking:
        if any(key == p.removesuffix(".") or key.startswith(p.removesuffix(".") + ".") for p in allowed):
            continue
        keep.append(key)
    keep.sort()
    return keep


def r_filtered_load_tuple(model, state_dict, allowed):
    own = set(model.state_dict())
    known = {k: v for k, v in state_dict.items() if k in own}
    report = model.load_state_dict(known, strict=False)
    return tuple(sorted(k for k in report.missing_keys if all(not _inside(k, p) for p in allowed)))


WRONG = {
    "strict=True": (w_strict_true,),
    "no load": (w_no_load,),
    "unsorted": (w_unsorted,),
    "unexpected keys too": (w_plus_unexpected,),
    "string prefix allow": (w_string_prefix,),
    "parameters only": (w_parameters_only,),
    "non-persistent buffers counted": (w_all_buffers,),
    "assign=True": (w_assign,),
    "deletes stray keys from the caller's dict": (w_pops_unexpected,),
    "a set": (w_set,),
    ".data rebound": (w_param_data,),
}
RIGHT = {
    "copy_ into state_dict() tensors": (r_copy_by_hand,),
    "key set difference after load": (r_set_difference,),
    "load only known keys, tuple": (r_filtered_load_tuple,),
}
UNSURE = {}
