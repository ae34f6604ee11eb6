"""Exercise 2.1: my_detach_tree(obj), held-out answers."""

import collections.abc

import torch


# WRONG ---------------------------------------------------------------
def w_grad_fn_test(obj):
    # tests grad_fn: a leaf or nn.Parameter requiring grad has none and is left attached
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.grad_fn is not None else obj
    if isinstance(obj, dict):
        return {k: w_grad_fn_test(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(w_grad_fn_test(v) for v in obj)
    return obj


def w_detach_all(obj):
    # detaches every tensor: a mask or ids must come back as the very same object
    if isinstance(obj, torch.Tensor):
        return obj.detach()
    if isinstance(obj, dict):
        return {k: w_detach_all(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(w_detach_all(v) for v in obj)
    return obj


def w_clone(obj):
    # copies the values: the rule is a detach over the same storage, not a copy
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: w_clone(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(w_clone(v) for v in obj)
    return obj


def w_in_place(obj):
    # detach_() changes the caller's tensors (and fails on leaves/views)
    if isinstance(obj, torch.Tensor):
        if obj.requires_grad:
            obj.requires_grad_(False)
        return obj
    if isinstance(obj, dict):
        return {k: w_in_place(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(w_in_place(v) for v in obj)
    return obj


def w_assign_into_dict(obj):
    # assigns into the caller's dict instead of building a new one
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        for k in obj:
            obj[k] = w_assign_into_dict(obj[k])
        return obj
    if isinstance(obj, (list, tuple)):
        return type(obj)(w_assign_into_dict(v) for v in obj)
    return obj


def w_tuple_to_list(obj):
    # rebuilds tuples as lists: containers must keep their type
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: w_tuple_to_list(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [w_tuple_to_list(v) for v in obj]
    return obj


def w_one_level(obj):
    # only looks one level deep: nested containers keep attached tensors
    def leaf(v):
        return v.detach() if isinstance(v, torch.Tensor) and v.requires_grad else v

    if isinstance(obj, dict):
        return {k: leaf(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(leaf(v) for v in obj)
    return leaf(obj)


def w_data_contiguous(obj):
    # .contiguous() after detach copies a non-contiguous view: strides and storage change
    if isinstance(obj, torch.Tensor):
        return obj.detach().contiguous() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: w_data_contiguous(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(w_data_contiguous(v) for v in obj)
    return obj


def w_float_only(obj):
    # only detaches float32 tensors: bf16/fp16/fp64 requiring grad stay attached
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad and obj.dtype == torch.float32 else obj
    if isinstance(obj, dict):
        return {k: w_float_only(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(w_float_only(v) for v in obj)
    return obj


def w_str_copy(obj):
    # turns other objects into copies (str() of a non-container): they must come back the same
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: w_str_copy(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(w_str_copy(v) for v in obj)
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return str(obj)


# RIGHT ---------------------------------------------------------------
def r_dot_data(obj):
    if isinstance(obj, torch.Tensor):
        return obj.data if obj.requires_grad else obj
    if type(obj) is dict or isinstance(obj, dict):
        return dict((key, r_dot_data(value)) for key, value in obj.items())
    if isinstance(obj, list):
        return [r_dot_data(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(r_dot_data(v) for v in obj)
    return obj


def r_iterative(obj):
    # explicit stack instead of recursion; builds results bottom-up
    def convert(node):
        if isinstance(node, torch.Tensor):
            return node.detach() if node.requires_grad else node
        return node

    def build(node):
        stack = [(node, False)]
        done = {}
        while stack:
            item, expanded = stack.pop()
            if isinstance(item, (dict, list, tuple)) and not expanded:
                stack.append((item, True))
                children = item.values() if isinstance(item, dict) else item
                stack.extend((c, False) for c in children)
                continue
            if isinstance(item, dict):
                done[id(item)] = {
                    k: done.get(id(v), convert(v)) if isinstance(v, (dict, list, tuple)) else convert(v)
                    for k, v in item.items()
                }
            elif isinstance(item, (list, tuple)):
                parts = [done[id(v)] if isinstance(v, (dict, list, tuple)) else convert(v) for v in item]
                done[id(item)] = type(item)(parts)
        return done[id(node)] if isinstance(node, (dict, list, tuple)) else convert(node)

    return build(obj)


def r_mapping_abc(obj):
    if torch.is_tensor(obj):
        if not obj.requires_grad:
            return obj
        return obj.detach()
    if isinstance(obj, collections.abc.Mapping):
        out = {}
        for key in obj:
            out[key] = r_mapping_abc(obj[key])
        return out
    if isinstance(obj, tuple):
        new = tuple(map(r_mapping_abc, obj))
        return obj if all(a is b for a, b in zip(new, obj)) else new
    if isinstance(obj, list):
        return list(map(r_mapping_abc, obj))
    return obj


WRONG = {
    "tests grad_fn": (w_grad_fn_test,),
    "detaches every tensor": (w_detach_all,),
    "clones": (w_clone,),
    "flips requires_grad in place": (w_in_place,),
    "assigns into the caller's dict": (w_assign_into_dict,),
    "tuples become lists": (w_tuple_to_list,),
    "one level deep": (w_one_level,),
    "contiguous copy": (w_data_contiguous,),
    "float32 only": (w_float_only,),
    "other objects stringified": (w_str_copy,),
}
RIGHT = {
    ".data per type": (r_dot_data,),
    "explicit stack": (r_iterative,),
    "Mapping ABC, tuple kept when unchanged": (r_mapping_abc,),
}
UNSURE = {}
