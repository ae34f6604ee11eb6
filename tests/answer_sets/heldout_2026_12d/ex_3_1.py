"""Exercise 3.1: stack_by_layer(pairs), held-out answers."""

import numpy as np
import torch


# WRONG ---------------------------------------------------------------
def w_walk_order(pairs):
    # stacks in walk order: the very bug of the section
    numbers = [n for n, _ in pairs]
    if len(set(numbers)) != len(numbers):
        raise ValueError("duplicate layer")
    return torch.stack([r.to(torch.int16) for _, r in pairs], dim=1)


def w_string_sort(pairs):
    # sorts layer numbers as text: "10" comes before "9"
    numbers = [n for n, _ in pairs]
    if len(set(numbers)) != len(numbers):
        raise ValueError("duplicate layer")
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: str(p[0]))], dim=1)


def w_uint8(pairs):
    # uint8 wraps expert ids above 255
    numbers = [n for n, _ in pairs]
    if len(set(numbers)) != len(numbers):
        raise ValueError("duplicate layer")
    return torch.stack([r.to(torch.uint8) for _, r in sorted(pairs, key=lambda p: p[0])], dim=1).to(torch.int16)


def w_keeps_dtype(pairs):
    # keeps the routes' own dtype (int64/int32): the map must be int16
    numbers = [n for n, _ in pairs]
    if len(set(numbers)) != len(numbers):
        raise ValueError("duplicate layer")
    return torch.stack([r for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)


def w_dict_overwrites(pairs):
    # a dict by layer number silently keeps the last of two duplicates: no ValueError
    by_layer = dict(pairs)
    return torch.stack([by_layer[n].to(torch.int16) for n in sorted(by_layer)], dim=1)


def w_adjacent_dup_only(pairs):
    # checks only neighbours in walk order: duplicates far apart pass
    for (a, _), (b, _) in zip(pairs, pairs[1:]):
        if a == b:
            raise ValueError("duplicate layer")
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)


def w_sort_in_place(pairs):
    # sorts the caller's list in place: the list must be left as it was
    pairs.sort(key=lambda p: p[0])
    numbers = [n for n, _ in pairs]
    if len(set(numbers)) != len(numbers):
        raise ValueError("duplicate layer")
    return torch.stack([r.to(torch.int16) for _, r in pairs], dim=1)


def w_stack_dim0(pairs):
    # stacks on dim 0: (layers, tokens, topk), not (tokens, layers, topk)
    numbers = [n for n, _ in pairs]
    if len(set(numbers)) != len(numbers):
        raise ValueError("duplicate layer")
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0])], dim=0)


def w_assert_dup(pairs):
    # an assert, not the ValueError the text asks for
    numbers = [n for n, _ in pairs]
    assert len(set(numbers)) == len(numbers), "duplicate layer"
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)


def w_cat_not_stack(pairs):
    # concatenates along topk: (tokens, layers * topk)
    numbers = [n for n, _ in pairs]
    if len(set(numbers)) != len(numbers):
        raise ValueError("duplicate layer")
    return torch.cat([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)


# RIGHT ---------------------------------------------------------------
def r_argsort_index(pairs):
    numbers = torch.tensor([n for n, _ in pairs])
    if numbers.unique().numel() != numbers.numel():
        raise ValueError(f"two routers claim one layer: {numbers.tolist()}")
    order = torch.argsort(numbers).tolist()
    out = torch.empty(pairs[0][1].shape[0], len(pairs), pairs[0][1].shape[1], dtype=torch.int16)
    for column, i in enumerate(order):
        out[:, column, :] = pairs[i][1]
    return out


def r_dict_then_check(pairs):
    seen = {}
    for number, routes in pairs:
        if number in seen:
            raise ValueError(f"layer {number} recorded twice")
        seen[number] = routes
    columns = [seen[n].to(dtype=torch.int16).unsqueeze(1) for n in sorted(seen)]
    return torch.cat(columns, dim=1)


def r_numpy(pairs):
    numbers = np.array([n for n, _ in pairs])
    if len(np.unique(numbers)) < len(numbers):
        raise ValueError("duplicate layer numbers")
    stacked = np.stack([pairs[i][1].numpy().astype(np.int16) for i in np.argsort(numbers, kind="stable")], axis=1)
    return torch.from_numpy(stacked)


WRONG = {
    "walk order": (w_walk_order,),
    "layer numbers sorted as text": (w_string_sort,),
    "through uint8": (w_uint8,),
    "keeps the input dtype": (w_keeps_dtype,),
    "dict keeps the last duplicate": (w_dict_overwrites,),
    "only adjacent duplicates": (w_adjacent_dup_only,),
    "sorts the caller's list": (w_sort_in_place,),
    "stacked on dim 0": (w_stack_dim0,),
    "assert for duplicates": (w_assert_dup,),
    "cat along topk": (w_cat_not_stack,),
}
RIGHT = {
    "argsort into a preallocated map": (r_argsort_index,),
    "dict with duplicate check, cat of unsqueezed": (r_dict_then_check,),
    "numpy argsort and stack": (r_numpy,),
}
UNSURE = {}
