"""Exercise 3.1 answers: stack_by_layer(pairs) -> int16 (tokens, layers, topk), columns by layer number."""

import numpy as np
import torch


# --- wrong ---
def w_walk_order(pairs):
    # stacks in walk order: the very bug of the lesson
    nums = [n for n, _ in pairs]
    if len(set(nums)) != len(nums):
        raise ValueError("duplicate layer")
    return torch.stack([r.to(torch.int16) for _, r in pairs], dim=1)


def w_sort_as_text(pairs):
    # sorts layer numbers as strings: 10 comes before 2
    nums = [n for n, _ in pairs]
    if len(set(nums)) != len(nums):
        raise ValueError("duplicate layer")
    ordered = sorted(pairs, key=lambda p: str(p[0]))
    return torch.stack([r.to(torch.int16) for _, r in ordered], dim=1)


def w_uint8(pairs):
    # uint8 wraps expert ids above 255
    nums = [n for n, _ in pairs]
    if len(set(nums)) != len(nums):
        raise ValueError("duplicate layer")
    ordered = sorted(pairs, key=lambda p: p[0])
    return torch.stack([r.to(torch.uint8) for _, r in ordered], dim=1).to(torch.int16)


def w_keeps_dtype(pairs):
    # keeps the input dtype (int64, int32): the lesson stores routes as int16
    nums = [n for n, _ in pairs]
    if len(set(nums)) != len(nums):
        raise ValueError("duplicate layer")
    return torch.stack([r for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)


def w_no_duplicate_check(pairs):
    # two routers on one layer pass silently
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)


def w_adjacent_duplicates_only(pairs):
    # checks only neighbours in walk order: duplicates far apart pass
    for (a, _), (b, _) in zip(pairs, pairs[1:]):
        if a == b:
            raise ValueError("duplicate layer")
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)


def w_sorts_in_place(pairs):
    # sorts the caller's list in place: the list must be left as it was
    nums = [n for n, _ in pairs]
    if len(set(nums)) != len(nums):
        raise ValueError("duplicate layer")
    pairs.sort(key=lambda p: p[0])
    return torch.stack([r.to(torch.int16) for _, r in pairs], dim=1)


def w_assert_not_value_error(pairs):
    # an assert, not the ValueError asked for
    nums = [n for n, _ in pairs]
    assert len(set(nums)) == len(nums), "duplicate layer"
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)


def w_wrong_axis(pairs):
    # stacks on dim 0: (layers, tokens, topk)
    nums = [n for n, _ in pairs]
    if len(set(nums)) != len(nums):
        raise ValueError("duplicate layer")
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0])], dim=0)


def w_cat_flattens(pairs):
    # concatenates on the topk dim: (tokens, layers * topk)
    nums = [n for n, _ in pairs]
    if len(set(nums)) != len(nums):
        raise ValueError("duplicate layer")
    return torch.cat([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)


def w_index_by_number(pairs):
    # places layer n at column n - 1: gaps in layer numbers (one stage's range) land out of range or leave holes
    nums = [n for n, _ in pairs]
    if len(set(nums)) != len(nums):
        raise ValueError("duplicate layer")
    tokens, topk = pairs[0][1].shape
    out = torch.zeros(tokens, len(pairs), topk, dtype=torch.int16)
    for n, r in pairs:
        out[:, (n - 1) % len(pairs)] = r.to(torch.int16)
    return out


def w_descending(pairs):
    # sorts from the largest layer number down
    nums = [n for n, _ in pairs]
    if len(set(nums)) != len(nums):
        raise ValueError("duplicate layer")
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: -p[0])], dim=1)


# --- right ---
def r_dict_then_sorted_keys(pairs):
    by_layer = {}
    for number, routes in pairs:
        if number in by_layer:
            raise ValueError(f"layer {number} met twice")
        by_layer[number] = routes
    columns = [by_layer[n].to(dtype=torch.int16) for n in sorted(by_layer)]
    return torch.stack(columns, dim=1)


def r_argsort_numpy(pairs):
    numbers = np.array([n for n, _ in pairs])
    if np.unique(numbers).size != numbers.size:
        raise ValueError("two routers claim one layer")
    order = np.argsort(numbers, kind="stable")
    tokens, topk = pairs[0][1].shape
    out = torch.empty((tokens, len(pairs), topk), dtype=torch.int16)
    for column, index in enumerate(order.tolist()):
        out[:, column, :] = pairs[index][1]
    return out


def r_unsqueeze_cat(pairs):
    seen = set()
    for n, _ in pairs:
        if n in seen:
            raise ValueError("duplicate layer number %d" % n)
        seen.add(n)
    ordered = sorted(range(len(pairs)), key=lambda i: pairs[i][0])
    return torch.cat([pairs[i][1].short().unsqueeze(1) for i in ordered], dim=1)


WRONG = {
    "walk order": (w_walk_order,),
    "sorted as text": (w_sort_as_text,),
    "through uint8": (w_uint8,),
    "input dtype kept": (w_keeps_dtype,),
    "no duplicate check": (w_no_duplicate_check,),
    "adjacent duplicates only": (w_adjacent_duplicates_only,),
    "sorts the caller's list": (w_sorts_in_place,),
    "assert not ValueError": (w_assert_not_value_error,),
    "stacked on dim 0": (w_wrong_axis,),
    "cat on topk": (w_cat_flattens,),
    "column n - 1 modulo": (w_index_by_number,),
    "descending": (w_descending,),
}
RIGHT = {
    "dict then sorted keys": (r_dict_then_sorted_keys,),
    "numpy argsort into empty": (r_argsort_numpy,),
    "unsqueeze and cat": (r_unsqueeze_cat,),
}
UNSURE = {}
