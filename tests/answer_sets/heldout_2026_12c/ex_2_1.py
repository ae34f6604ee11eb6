"""Exercise 2.1 answers: my_detach_tree(obj) with upstream detach_tree's rules (#7874)."""

import copy

import torch


# --- wrong ---
def w_detach_every_tensor(obj):
    # detaches tensors that do not require grad too: they must come back as the same object
    if isinstance(obj, torch.Tensor):
        return obj.detach()
    if isinstance(obj, dict):
        return {k: w_detach_every_tensor(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(w_detach_every_tensor(v) for v in obj)
    return obj


def w_clone(obj):
    # copies instead of detaching: new storage, not a view of the same values
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: w_clone(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(w_clone(v) for v in obj)
    return obj


def w_detach_in_place(obj):
    # detach_() changes the caller's tensor (and fails on views / leaves); the input must never change
    if isinstance(obj, torch.Tensor):
        if obj.requires_grad:
            try:
                return obj.detach_()
            except RuntimeError:
                return obj.detach()
        return obj
    if isinstance(obj, dict):
        return {k: w_detach_in_place(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(w_detach_in_place(v) for v in obj)
    return obj


def w_mutates_dict(obj):
    # writes back into the caller's dict and list instead of building new ones
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        for k in obj:
            obj[k] = w_mutates_dict(obj[k])
        return obj
    if isinstance(obj, list):
        for i, v in enumerate(obj):
            obj[i] = w_mutates_dict(v)
        return obj
    if isinstance(obj, tuple):
        return tuple(w_mutates_dict(v) for v in obj)
    return obj


def w_tuple_becomes_list(obj):
    # tuples come back as lists: the container type must be kept
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: w_tuple_becomes_list(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [w_tuple_becomes_list(v) for v in obj]
    return obj


def w_one_level(obj):
    # recurses one level only: nested containers keep their live tensors
    def leaf(x):
        if isinstance(x, torch.Tensor) and x.requires_grad:
            return x.detach()
        return x

    if isinstance(obj, dict):
        return {k: leaf(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(leaf(v) for v in obj)
    return leaf(obj)


def w_grad_fn_test(obj):
    # tests grad_fn instead of requires_grad: leaves and nn.Parameters stay attached
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.grad_fn is not None else obj
    if isinstance(obj, dict):
        return {k: w_grad_fn_test(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(w_grad_fn_test(v) for v in obj)
    return obj


def w_float_only(obj):
    # detaches only float32: bfloat16/float16/float64 tensors that require grad stay attached
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad and obj.dtype == torch.float32 else obj
    if isinstance(obj, dict):
        return {k: w_float_only(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(w_float_only(v) for v in obj)
    return obj


def w_deepcopy_others(obj):
    # copies "anything else": an arbitrary object must come back as the same object
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: w_deepcopy_others(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(w_deepcopy_others(v) for v in obj)
    return copy.deepcopy(obj)


def w_contiguous(obj):
    # makes the detached tensor contiguous: a non-contiguous view loses its strides and storage
    if isinstance(obj, torch.Tensor):
        return obj.detach().contiguous() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: w_contiguous(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(w_contiguous(v) for v in obj)
    return obj


def w_requires_grad_false(obj):
    # flips requires_grad on the caller's leaf instead of detaching (fails on non-leaves, so it detaches those)
    if isinstance(obj, torch.Tensor):
        if obj.requires_grad:
            if obj.is_leaf:
                obj.requires_grad_(False)
                return obj
            return obj.detach()
        return obj
    if isinstance(obj, dict):
        return {k: w_requires_grad_false(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(w_requires_grad_false(v) for v in obj)
    return obj


def w_same_dict_object_when_nothing_to_do(obj):
    # returns the caller's dict when nothing in it requires grad: a dict must always be a new dict
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        new = {k: w_same_dict_object_when_nothing_to_do(v) for k, v in obj.items()}
        return obj if all(new[k] is obj[k] for k in obj) else new
    if isinstance(obj, list | tuple):
        return type(obj)(w_same_dict_object_when_nothing_to_do(v) for v in obj)
    return obj


# --- right ---
def r_data_attribute(obj):
    # .data is a detach too (the contract says so)
    if torch.is_tensor(obj):
        return obj.data if obj.requires_grad else obj
    if type(obj) is dict or isinstance(obj, dict):
        return dict((key, r_data_attribute(value)) for key, value in obj.items())
    if isinstance(obj, tuple):
        return tuple(map(r_data_attribute, obj))
    if isinstance(obj, list):
        return list(map(r_data_attribute, obj))
    return obj


def r_iterative_stack(obj):
    # no recursion: builds containers with an explicit stack, children first
    def convert_leaf(x):
        if isinstance(x, torch.Tensor):
            return x.detach() if x.requires_grad else x
        return x

    def is_container(x):
        return isinstance(x, (dict, list, tuple))

    if not is_container(obj):
        return convert_leaf(obj)
    results = {}
    stack = [(obj, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in results and expanded is False and node is not obj:
            continue
        children = list(node.values()) if isinstance(node, dict) else list(node)
        if not expanded:
            stack.append((node, True))
            for child in children:
                if is_container(child):
                    stack.append((child, False))
            continue
        done = [results[id(c)] if is_container(c) else convert_leaf(c) for c in children]
        if isinstance(node, dict):
            results[id(node)] = dict(zip(node.keys(), done))
        elif isinstance(node, tuple):
            results[id(node)] = tuple(done)
        else:
            results[id(node)] = list(done)
    return results[id(obj)]


def r_dispatch_table(obj):
    def tensor(t):
        return torch.Tensor.detach(t) if t.requires_grad else t

    if isinstance(obj, torch.Tensor):
        return tensor(obj)
    if isinstance(obj, dict):
        out = {}
        for key in obj:
            out[key] = r_dispatch_table(obj[key])
        return out
    if isinstance(obj, (list, tuple)):
        items = [r_dispatch_table(x) for x in obj]
        return items if isinstance(obj, list) else tuple(items)
    return obj


def r_tuple_kept_when_clean(obj):
    # an immutable tuple holding nothing that requires grad may come back as the same object (the contract allows it)
    if isinstance(obj, torch.Tensor):
        return obj.detach() if obj.requires_grad else obj
    if isinstance(obj, dict):
        return {k: r_tuple_kept_when_clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [r_tuple_kept_when_clean(v) for v in obj]
    if isinstance(obj, tuple):
        parts = tuple(r_tuple_kept_when_clean(v) for v in obj)
        return obj if all(a is b for a, b in zip(parts, obj)) else parts
    return obj


WRONG = {
    "detaches every tensor": (w_detach_every_tensor,),
    "clones": (w_clone,),
    "detach_ in place": (w_detach_in_place,),
    "mutates the input containers": (w_mutates_dict,),
    "tuple becomes list": (w_tuple_becomes_list,),
    "one level only": (w_one_level,),
    "grad_fn instead of requires_grad": (w_grad_fn_test,),
    "float32 only": (w_float_only,),
    "deep-copies other objects": (w_deepcopy_others,),
    "contiguous copy": (w_contiguous,),
    "requires_grad_(False) on leaves": (w_requires_grad_false,),
    "same dict when clean": (w_same_dict_object_when_nothing_to_do,),
}
RIGHT = {
    ".data": (r_data_attribute,),
    "explicit stack": (r_iterative_stack,),
    "dispatch with loops": (r_dispatch_table,),
    "clean tuple kept": (r_tuple_kept_when_clean,),
}
UNSURE = {}
