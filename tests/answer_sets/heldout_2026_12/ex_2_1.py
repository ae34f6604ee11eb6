"""2.1 my_detach_tree(obj): upstream detach_tree's rules."""
import functools
from collections.abc import Sequence

import torch


# ---------------- wrong
def w_grad_fn_test(obj):
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.grad_fn is not None else obj
    if isinstance(obj, dict):
        return {k: w_grad_fn_test(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(w_grad_fn_test(v) for v in obj)
    return obj


def w_always_detach(obj):
    if isinstance(obj, torch.Tensor):
        return obj.detach()
    if isinstance(obj, dict):
        return {k: w_always_detach(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(w_always_detach(v) for v in obj)
    return obj


def w_mutates_containers(obj):
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        for k in obj:
            obj[k] = w_mutates_containers(obj[k])
        return obj
    if isinstance(obj, list):
        for i, v in enumerate(obj):
            obj[i] = w_mutates_containers(v)
        return obj
    if isinstance(obj, tuple):
        return tuple(w_mutates_containers(v) for v in obj)
    return obj


def w_tuples_become_lists(obj):
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: w_tuples_become_lists(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [w_tuples_become_lists(v) for v in obj]
    return obj


def w_detach_inplace(obj):
    if isinstance(obj, torch.Tensor):
        if obj.requires_grad:
            try:
                return obj.detach_()
            except RuntimeError:
                return obj.detach()
        return obj
    if isinstance(obj, dict):
        return {k: w_detach_inplace(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(w_detach_inplace(v) for v in obj)
    return obj


def w_one_level(obj):
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: (v.detach() if isinstance(v, torch.Tensor) and v.requires_grad else v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(v.detach() if isinstance(v, torch.Tensor) and v.requires_grad else v for v in obj)
    return obj


def w_clone_detach(obj):
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: w_clone_detach(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(w_clone_detach(v) for v in obj)
    return obj


def w_sequence_abc(obj):
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: w_sequence_abc(v) for k, v in obj.items()}
    if isinstance(obj, Sequence):  # also catches str
        return type(obj)(w_sequence_abc(v) for v in obj)
    return obj


def w_exact_tensor_type(obj):
    if type(obj) is torch.Tensor:  # an nn.Parameter is not exactly a Tensor
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: w_exact_tensor_type(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(w_exact_tensor_type(v) for v in obj)
    return obj


def w_requires_grad_flip(obj):
    if isinstance(obj, torch.Tensor):
        if obj.requires_grad and obj.is_leaf:
            obj.requires_grad_(False)  # "a leaf can simply stop requiring grad"
            return obj
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: w_requires_grad_flip(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(w_requires_grad_flip(v) for v in obj)
    return obj


def w_skips_none(obj):
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: w_skips_none(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, (list, tuple)):
        return type(obj)(w_skips_none(v) for v in obj if v is not None)
    return obj


# ---------------- right
def r_match(obj):
    match obj:
        case torch.Tensor() if obj.requires_grad:
            return obj.detach()
        case torch.Tensor():
            return obj
        case dict():
            return {key: r_match(value) for key, value in obj.items()}
        case list():
            return [r_match(v) for v in obj]
        case tuple():
            return tuple(r_match(v) for v in obj)
        case _:
            return obj


@functools.singledispatch
def r_singledispatch(obj):
    return obj


@r_singledispatch.register
def _(obj: torch.Tensor):
    return obj.detach() if obj.requires_grad else obj


@r_singledispatch.register
def _(obj: dict):
    return {k: r_singledispatch(v) for k, v in obj.items()}


@r_singledispatch.register
def _(obj: list):
    return [r_singledispatch(v) for v in obj]


@r_singledispatch.register
def _(obj: tuple):
    return tuple(r_singledispatch(v) for v in obj)


def r_data(obj):
    if torch.is_tensor(obj):
        return obj.data if obj.requires_grad else obj
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            out[k] = r_data(v)
        return out
    if isinstance(obj, list):
        return list(map(r_data, obj))
    if isinstance(obj, tuple):
        return tuple(map(r_data, obj))
    return obj


WRONG = {
    "tests grad_fn instead of requires_grad": (w_grad_fn_test,),
    "detaches every tensor": (w_always_detach,),
    "assigns into the caller's dict/list": (w_mutates_containers,),
    "tuples come back as lists": (w_tuples_become_lists,),
    "detach_() in place": (w_detach_inplace,),
    "one level deep only": (w_one_level,),
    "detach().clone() (a copy)": (w_clone_detach,),
    "collections.abc.Sequence also catches str": (w_sequence_abc,),
    "type(obj) is torch.Tensor misses Parameters": (w_exact_tensor_type,),
    "flips requires_grad on leaves": (w_requires_grad_flip,),
    "drops None entries": (w_skips_none,),
}
RIGHT = {"match statement": (r_match,), "functools.singledispatch": (r_singledispatch,), ".data with map": (r_data,)}
