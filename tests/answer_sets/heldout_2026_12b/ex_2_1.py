"""Exercise 2.1: my_detach_tree(obj) with upstream's detach_tree rules (#7874)."""

import collections.abc
import copy

import torch
from torch.utils import _pytree as pytree

# The text: detach a tensor only if it requires grad (else the same object), dict -> new dict, list/tuple -> same
# type, recursively, anything else unchanged, never mutate the input.

# --- WRONG -----------------------------------------------------------------------------------------------------------


def w_grad_fn_test(obj):
    # tests grad_fn, not requires_grad: a leaf or an nn.Parameter requiring grad comes back attached
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.grad_fn is not None else obj
    if isinstance(obj, dict):
        return {k: w_grad_fn_test(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(w_grad_fn_test(v) for v in obj)
    return obj


def w_detach_always(obj):
    # detaches every tensor: a mask or ids come back as new objects, not the same ones
    if isinstance(obj, torch.Tensor):
        return obj.detach()
    if isinstance(obj, dict):
        return {k: w_detach_always(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(w_detach_always(v) for v in obj)
    return obj


def w_clone(obj):
    # copies the values: a detach must share the storage
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: w_clone(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(w_clone(v) for v in obj)
    return obj


def w_in_place_dict(obj):
    # assigns into the caller's dict and list instead of building new ones
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        for k in obj:
            obj[k] = w_in_place_dict(obj[k])
        return obj
    if isinstance(obj, list):
        for i, v in enumerate(obj):
            obj[i] = w_in_place_dict(v)
        return obj
    if isinstance(obj, tuple):
        return tuple(w_in_place_dict(v) for v in obj)
    return obj


def w_detach_in_place(obj):
    # detach_() changes the caller's tensors (and fails on views)
    if isinstance(obj, torch.Tensor):
        return obj.detach_() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: w_detach_in_place(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(w_detach_in_place(v) for v in obj)
    return obj


def w_tuple_to_list(obj):
    # rebuilds every sequence as a list: a tuple must stay a tuple
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: w_tuple_to_list(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [w_tuple_to_list(v) for v in obj]
    return obj


def w_one_level(obj):
    # no recursion: only the top container's direct tensors are detached
    def leaf(x):
        return x.detach() if isinstance(x, torch.Tensor) and x.requires_grad else x

    if isinstance(obj, dict):
        return {k: leaf(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(leaf(v) for v in obj)
    return leaf(obj)


def w_dict_only(obj):
    # forgets lists and tuples: tensors inside them stay attached
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: w_dict_only(v) for k, v in obj.items()}
    return obj


def w_sequence_abc(obj):
    # any Sequence is rebuilt: a str is a Sequence too, so strings recurse without end or change
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, collections.abc.Mapping):
        return {k: w_sequence_abc(v) for k, v in obj.items()}
    if isinstance(obj, collections.abc.Sequence):
        return type(obj)(w_sequence_abc(v) for v in obj)
    return obj


def w_copy_other(obj):
    # copies "anything else": an arbitrary object must come back as the same object
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: w_copy_other(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(w_copy_other(v) for v in obj)
    return copy.copy(obj)


def w_parameter_always(obj):
    # detaches every nn.Parameter: a frozen one (no grad) must come back as the same object
    if isinstance(obj, torch.nn.Parameter):
        return obj.detach()
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: w_parameter_always(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(w_parameter_always(v) for v in obj)
    return obj


def w_no_grad_copy(obj):
    # "detaches" by computing under no_grad: a new tensor, not a view of the same storage
    if isinstance(obj, torch.Tensor):
        if not obj.requires_grad:
            return obj
        with torch.no_grad():
            return obj * 1
    if isinstance(obj, dict):
        return {k: w_no_grad_copy(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(w_no_grad_copy(v) for v in obj)
    return obj


# --- RIGHT -----------------------------------------------------------------------------------------------------------


def r_match(obj):
    # structural pattern matching, the same rules
    match obj:
        case torch.Tensor() if obj.requires_grad:
            return obj.detach()
        case dict():
            return dict((key, r_match(value)) for key, value in obj.items())
        case list():
            return [r_match(value) for value in obj]
        case tuple():
            return tuple(r_match(value) for value in obj)
        case _:
            return obj


def r_data(obj):
    # .data is a detach too (the text allows it); a tuple is rebuilt only when something in it changed
    if isinstance(obj, torch.Tensor):
        return obj.data if obj.requires_grad else obj
    if isinstance(obj, dict):
        out = {}
        for key in obj:
            out[key] = r_data(obj[key])
        return out
    if isinstance(obj, list):
        return list(map(r_data, obj))
    if isinstance(obj, tuple):
        parts = tuple(map(r_data, obj))
        return obj if all(a is b for a, b in zip(parts, obj)) else parts
    return obj


def _leaf(x):
    return x.detach() if isinstance(x, torch.Tensor) and x.requires_grad else x


def r_pytree(obj):
    # torch's pytree walks dicts, lists and tuples and rebuilds them; everything else is a leaf
    if type(obj) not in (dict, list, tuple):
        return _leaf(obj)
    return pytree.tree_map(_leaf, obj)


WRONG = {
    "tests grad_fn": (w_grad_fn_test,),
    "detaches every tensor": (w_detach_always,),
    "clones instead of detaching": (w_clone,),
    "assigns into the caller's containers": (w_in_place_dict,),
    "detach_ in place": (w_detach_in_place,),
    "tuples become lists": (w_tuple_to_list,),
    "one level only": (w_one_level,),
    "dicts only": (w_dict_only,),
    "Sequence ABC (strings recurse)": (w_sequence_abc,),
    "copies other objects": (w_copy_other,),
    "frozen Parameter detached": (w_parameter_always,),
    "no_grad copy": (w_no_grad_copy,),
}

RIGHT = {
    "match statement": (r_match,),
    ".data, tuple kept when unchanged": (r_data,),
    "torch pytree tree_map": (r_pytree,),
}

UNSURE = {}
