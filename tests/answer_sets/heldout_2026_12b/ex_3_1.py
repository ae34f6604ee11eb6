"""Exercise 3.1: stack_by_layer(pairs), routes met in walk order stacked by layer number."""

import torch

# The text: a list of (layer_number, routes (tokens, topk)) pairs in walk order; return one torch.int16 tensor
# (tokens, layers, topk) whose columns follow layer numbers; two routers claiming one layer raise ValueError; the
# list is left as it was; layer numbers have gaps and pass 9; expert ids go above 255.


def _check(pairs):
    numbers = [n for n, _ in pairs]
    if len(set(numbers)) != len(numbers):
        raise ValueError("duplicate layer")


# --- WRONG -----------------------------------------------------------------------------------------------------------


def w_walk_order(pairs):
    # stacks in walk order: the lesson's silent mismatch
    _check(pairs)
    return torch.stack([r.to(torch.int16) for _, r in pairs], dim=1)


def w_no_duplicate_check(pairs):
    # sorts, but two routers on one layer pass silently
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)


def w_duplicate_neighbours_only(pairs):
    # looks for duplicates only between walk-order neighbours: a duplicate far apart passes
    for (a, _), (b, _) in zip(pairs, pairs[1:]):
        if a == b:
            raise ValueError("duplicate layer")
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)


def w_uint8(pairs):
    # value cast to uint8: expert ids above 255 wrap, and the type taught is int16
    _check(pairs)
    return torch.stack([r.to(torch.uint8) for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)


def w_keep_dtype(pairs):
    # keeps the routes' own dtype (int64, int32): the lesson stores int16
    _check(pairs)
    return torch.stack([r for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)


def w_layers_first(pairs):
    # stacks on dim 0: (layers, tokens, topk)
    _check(pairs)
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0])], dim=0)


def w_cat(pairs):
    # concatenates on dim 1: (tokens, layers * topk)
    _check(pairs)
    return torch.cat([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)


def w_text_sort(pairs):
    # sorts layer numbers as text: "10" comes before "2"
    _check(pairs)
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: str(p[0]))], dim=1)


def w_column_is_layer_minus_one(pairs):
    # column n - 1 for layer n: a dense gap or a later stage's range leaves zero columns
    _check(pairs)
    tokens, topk = pairs[0][1].shape
    out = torch.zeros(tokens, max(n for n, _ in pairs), topk, dtype=torch.int16)
    for n, r in pairs:
        out[:, n - 1] = r.to(torch.int16)
    return out


def w_sorts_in_place(pairs):
    # list.sort() reorders the caller's list
    _check(pairs)
    pairs.sort(key=lambda p: p[0])
    return torch.stack([r.to(torch.int16) for _, r in pairs], dim=1)


def w_assert_duplicate(pairs):
    # an assert, not the ValueError the text asks for
    assert len({n for n, _ in pairs}) == len(pairs), "duplicate layer"
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)


def w_descending(pairs):
    # sorted the wrong way round
    _check(pairs)
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0], reverse=True)], dim=1)


def w_dict_last_wins(pairs):
    # a dict by layer number: a duplicate silently overwrites the first router
    by_layer = {n: r for n, r in pairs}
    return torch.stack([by_layer[n].to(torch.int16) for n in sorted(by_layer)], dim=1)


# --- RIGHT -----------------------------------------------------------------------------------------------------------


def r_dict_guarded(pairs):
    # a dict that refuses a second claim on a layer, then its keys in order
    by_layer = {}
    for number, routes in pairs:
        if number in by_layer:
            raise ValueError(f"layer {number} met twice")
        by_layer[number] = routes
    return torch.stack([by_layer[n].to(dtype=torch.int16) for n in sorted(by_layer)], dim=1)


def r_argsort_fill(pairs):
    # torch.argsort of the layer numbers, then fill a preallocated int16 map column by column
    numbers = torch.tensor([n for n, _ in pairs])
    if numbers.unique().numel() != numbers.numel():
        raise ValueError("two routers claim one layer")
    order = torch.argsort(numbers)
    tokens, topk = pairs[0][1].shape
    out = torch.empty(tokens, len(pairs), topk, dtype=torch.int16)
    for column, i in enumerate(order.tolist()):
        out[:, column, :] = pairs[i][1]
    return out


def r_sorted_duplicate_scan(pairs):
    # sort a copy, then a duplicate is a pair of equal sorted neighbours; stack on a new last-but-one axis
    ordered = sorted(pairs, key=lambda p: p[0])
    for (a, _), (b, _) in zip(ordered, ordered[1:]):
        if a == b:
            raise ValueError(f"duplicate layer number {a}")
    return torch.stack([routes.short() for _, routes in ordered], dim=-2)


WRONG = {
    "walk order": (w_walk_order,),
    "no duplicate check": (w_no_duplicate_check,),
    "duplicates checked between neighbours only": (w_duplicate_neighbours_only,),
    "uint8 value cast": (w_uint8,),
    "dtype kept": (w_keep_dtype,),
    "layers first": (w_layers_first,),
    "cat, not stack": (w_cat,),
    "sorted as text": (w_text_sort,),
    "column = layer - 1": (w_column_is_layer_minus_one,),
    "sorts the caller's list": (w_sorts_in_place,),
    "assert for duplicates": (w_assert_duplicate,),
    "descending": (w_descending,),
    "dict, last wins": (w_dict_last_wins,),
}

RIGHT = {
    "guarded dict": (r_dict_guarded,),
    "argsort and fill": (r_argsort_fill,),
    "sorted copy, neighbour scan": (r_sorted_duplicate_scan,),
}

UNSURE = {}
