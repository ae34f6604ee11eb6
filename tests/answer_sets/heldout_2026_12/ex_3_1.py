"""3.1 stack_by_layer(pairs): (tokens, layers, topk) int16, columns by layer number, ValueError on duplicates."""
import torch


def _dup_check(pairs):
    nums = [n for n, _ in pairs]
    if len(set(nums)) != len(nums):
        raise ValueError(f"duplicate layer numbers {nums}")


# ---------------- wrong
def w_walk_order(pairs):
    _dup_check(pairs)
    return torch.stack([r.to(torch.int16) for _, r in pairs], dim=1)


def w_sort_as_strings(pairs):
    _dup_check(pairs)
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: str(p[0]))], dim=1)


def w_no_duplicate_check(pairs):
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)


def w_adjacent_duplicates_only(pairs):
    nums = [n for n, _ in pairs]
    if any(a == b for a, b in zip(nums, nums[1:])):
        raise ValueError("duplicate layer")
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)


def w_sorts_in_place(pairs):
    _dup_check(pairs)
    pairs.sort(key=lambda p: p[0])
    return torch.stack([r.to(torch.int16) for _, r in pairs], dim=1)


def w_uint8_cast(pairs):
    _dup_check(pairs)
    return torch.stack([r.to(torch.uint8) for _, r in sorted(pairs, key=lambda p: p[0])], dim=1).to(torch.int16)


def w_stack_dim0(pairs):
    _dup_check(pairs)
    return torch.stack([r.to(torch.int16) for _, r in sorted(pairs, key=lambda p: p[0])], dim=0)


def w_layer_minus_one_index(pairs):
    _dup_check(pairs)
    tokens, k = pairs[0][1].shape
    out = torch.zeros(tokens, len(pairs), k, dtype=torch.int16)
    for n, r in pairs:
        out[:, n - 1] = r  # layer n -> column n - 1
    return out


def w_keeps_dtype(pairs):
    _dup_check(pairs)
    return torch.stack([r for _, r in sorted(pairs, key=lambda p: p[0])], dim=1)


def w_dict_keeps_last(pairs):
    by_layer = dict(pairs)  # a repeated layer silently overwrites
    return torch.stack([by_layer[n].to(torch.int16) for n in sorted(by_layer)], dim=1)


# ---------------- right
def r_dict(pairs):
    by_layer = {}
    for number, routes in pairs:
        if number in by_layer:
            raise ValueError(f"layer {number} claimed twice")
        by_layer[number] = routes
    return torch.stack([by_layer[n].to(torch.int16) for n in sorted(by_layer)], dim=1)


def r_argsort_cat(pairs):
    numbers = torch.tensor([n for n, _ in pairs])
    if numbers.unique().numel() != numbers.numel():
        raise ValueError("two routers claim the same layer")
    order = torch.argsort(numbers).tolist()
    return torch.cat([pairs[i][1].to(torch.int16).unsqueeze(1) for i in order], dim=1)


def r_prefill(pairs):
    numbers = sorted(n for n, _ in pairs)
    for a, b in zip(numbers, numbers[1:]):
        if a == b:
            raise ValueError(f"duplicate layer {a}")
    column = {n: j for j, n in enumerate(numbers)}
    tokens, topk = pairs[0][1].shape
    out = torch.empty((tokens, len(pairs), topk), dtype=torch.int16)
    for n, routes in pairs:
        out[:, column[n], :] = routes.to(torch.int16)
    return out


WRONG = {
    "walk order (no sort)": (w_walk_order,),
    "sorted as strings ('10' < '2')": (w_sort_as_strings,),
    "no duplicate check": (w_no_duplicate_check,),
    "duplicates checked only when adjacent in walk order": (w_adjacent_duplicates_only,),
    "pairs.sort() in place": (w_sorts_in_place,),
    "value cast through uint8": (w_uint8_cast,),
    "stacked on dim 0": (w_stack_dim0,),
    "column = layer_number - 1": (w_layer_minus_one_index,),
    "keeps the input dtype": (w_keeps_dtype,),
    "dict(pairs) keeps the last duplicate": (w_dict_keeps_last,),
}
RIGHT = {"dict with duplicate check": (r_dict,), "argsort + cat": (r_argsort_cat,), "prefilled int16 tensor": (r_prefill,)}
