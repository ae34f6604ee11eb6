"""Exercise 9.2: yaml_only_keys(cls, data), held-out answers."""

import collections
import dataclasses
import types
import typing


def _block_class(annotation):
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        arms = [a for a in typing.get_args(annotation) if a is not type(None)]
        annotation = arms[0] if len(arms) == 1 else None
    return annotation if isinstance(annotation, type) and dataclasses.is_dataclass(annotation) else None


# WRONG ---------------------------------------------------------------
def w_top_level_only(cls, data):
    # never looks inside nested blocks
    names = {f.name for f in dataclasses.fields(cls)}
    return sorted(k for k in data if k != "_target_" and k not in names)


def w_own_annotations(cls, data, prefix=""):
    # reads cls.__annotations__: misses inherited fields and counts ClassVars
    hints = typing.get_type_hints(cls)
    names = set(cls.__dict__.get("__annotations__", {}))
    out = []
    for k, v in data.items():
        if k == "_target_":
            continue
        if k not in names:
            out.append(prefix + k)
        elif (inner := _block_class(hints.get(k))) and isinstance(v, dict):
            out += w_own_annotations(inner, v, prefix + k + ".")
    return sorted(out)


def w_field_type_text(cls, data, prefix=""):
    # uses f.type: under `from __future__ import annotations` it is text, so no block is ever entered
    fields = {f.name: f.type for f in dataclasses.fields(cls)}
    out = []
    for k, v in data.items():
        if k == "_target_":
            continue
        if k not in fields:
            out.append(prefix + k)
        elif (inner := _block_class(fields[k])) and isinstance(v, dict):
            out += w_field_type_text(inner, v, prefix + k + ".")
    return sorted(out)


def w_hasattr(cls, data, prefix=""):
    # hasattr(cls, key): methods (get) and class attributes count as fields
    hints = typing.get_type_hints(cls)
    out = []
    for k, v in data.items():
        if k == "_target_":
            continue
        if not hasattr(cls, k) and k not in {f.name for f in dataclasses.fields(cls)}:
            out.append(prefix + k)
        elif (inner := _block_class(hints.get(k))) and isinstance(v, dict):
            out += w_hasattr(inner, v, prefix + k + ".")
    return sorted(out)


def w_skips_falsy(cls, data, prefix=""):
    # skips keys whose value is null, false, 0 or empty: a key counts whatever its value
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out = []
    for k, v in data.items():
        if k == "_target_" or not v:
            continue
        if k not in names:
            out.append(prefix + k)
        elif (inner := _block_class(hints[k])) and isinstance(v, dict):
            out += w_skips_falsy(inner, v, prefix + k + ".")
    return sorted(out)


def w_skips_underscore(cls, data, prefix=""):
    # skips every key starting with "_": only _target_ is allowed
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out = []
    for k, v in data.items():
        if k.startswith("_"):
            continue
        if k not in names:
            out.append(prefix + k)
        elif (inner := _block_class(hints[k])) and isinstance(v, dict):
            out += w_skips_underscore(inner, v, prefix + k + ".")
    return sorted(out)


def w_set(cls, data):
    # a set: the order is asked
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out = set()
    for k, v in data.items():
        if k == "_target_":
            continue
        if k not in names:
            out.add(k)
        elif (inner := _block_class(hints[k])) and isinstance(v, dict):
            out |= {f"{k}.{x}" for x in w_set(inner, v)}
    return out


def w_normalised(cls, data, prefix=""):
    # normalises spelling (dash to underscore, lower case): keys compare exactly as written
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out = []
    for k, v in data.items():
        if k == "_target_":
            continue
        key = k.replace("-", "_").lower()
        if key not in names:
            out.append(prefix + k)
        elif (inner := _block_class(hints[key])) and isinstance(v, dict):
            out += w_normalised(inner, v, prefix + k + ".")
    return sorted(out)


def w_no_optional(cls, data, prefix=""):
    # enters only fields typed as a dataclass itself, not Optional[...] of one
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out = []
    for k, v in data.items():
        if k == "_target_":
            continue
        if k not in names:
            out.append(prefix + k)
        elif dataclasses.is_dataclass(hints[k]) and isinstance(hints[k], type) and isinstance(v, dict):
            out += w_no_optional(hints[k], v, prefix + k + ".")
    return sorted(out)


def w_no_prefix(cls, data):
    # nested keys come back without the names of the blocks above
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out = []
    for k, v in data.items():
        if k == "_target_":
            continue
        if k not in names:
            out.append(k)
        elif (inner := _block_class(hints[k])) and isinstance(v, dict):
            out += w_no_prefix(inner, v)
    return sorted(out)


def w_pops_target(cls, data, prefix=""):
    # pops _target_ out of the caller's blocks
    data.pop("_target_", None)
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out = []
    for k, v in data.items():
        if k not in names:
            out.append(prefix + k)
        elif (inner := _block_class(hints[k])) and isinstance(v, dict):
            out += w_pops_target(inner, v, prefix + k + ".")
    return sorted(out)


def w_sorted_per_level(cls, data, prefix=""):
    # sorts each block's own keys, then appends nested ones: not one sorted list
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    own, nested = [], []
    for k, v in data.items():
        if k == "_target_":
            continue
        if k not in names:
            own.append(prefix + k)
        elif (inner := _block_class(hints[k])) and isinstance(v, dict):
            nested += w_sorted_per_level(inner, v, prefix + k + ".")
    return sorted(own) + nested


# RIGHT ---------------------------------------------------------------
def r_queue(cls, data):
    found = []
    queue = collections.deque([(cls, data, ())])
    while queue:
        klass, block, path = queue.popleft()
        hints = typing.get_type_hints(klass)
        field_names = [f.name for f in dataclasses.fields(klass)]
        for key, value in block.items():
            if key == "_target_":
                continue
            if key not in field_names:
                found.append(".".join(path + (key,)))
                continue
            inner = _block_class(hints[key])
            if inner is not None and isinstance(value, dict):
                queue.append((inner, value, path + (key,)))
    return sorted(found)


def _unwrap(tp):
    args = typing.get_args(tp)
    if args and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1:
            return None
        tp = rest[0]
    return tp if dataclasses.is_dataclass(tp) and isinstance(tp, type) else None


def r_recursive_tuple(cls, data):
    def walk(klass, block, parts):
        hints = typing.get_type_hints(klass)
        fields = {f.name for f in dataclasses.fields(klass)}
        for key in block:
            if key == "_target_":
                continue
            if key not in fields:
                yield ".".join([*parts, key])
                continue
            sub = _unwrap(hints[key])
            if sub is not None and isinstance(block[key], dict):
                yield from walk(sub, block[key], [*parts, key])

    return tuple(sorted(walk(cls, data, [])))


def r_collect_then_sort(cls, data):
    collected = []

    def visit(klass, block, prefix):
        types_by_name = typing.get_type_hints(klass)
        known = frozenset(f.name for f in dataclasses.fields(klass))
        extras = [k for k in block if k != "_target_" and k not in known]
        collected.extend(prefix + k for k in extras)
        for name in known & set(block):
            cls_of_block = _block_class(types_by_name[name])
            if cls_of_block and isinstance(block[name], dict):
                visit(cls_of_block, block[name], f"{prefix}{name}.")

    visit(cls, data, "")
    collected.sort()
    return collected


WRONG = {
    "top level only": (w_top_level_only,),
    "own __annotations__": (w_own_annotations,),
    "f.type text": (w_field_type_text,),
    "hasattr on the class": (w_hasattr,),
    "falsy values skipped": (w_skips_falsy,),
    "every _key skipped": (w_skips_underscore,),
    "a set": (w_set,),
    "spelling normalised": (w_normalised,),
    "Optional not unwrapped": (w_no_optional,),
    "no block prefix": (w_no_prefix,),
    "pops _target_": (w_pops_target,),
    "sorted per level": (w_sorted_per_level,),
}
RIGHT = {
    "breadth-first queue": (r_queue,),
    "generator, sorted tuple": (r_recursive_tuple,),
    "collect then sort in place": (r_collect_then_sort,),
}
UNSURE = {}
