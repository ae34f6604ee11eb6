"""Exercise 9.2 answers: yaml_only_keys(cls, data) -> sorted dotted keys of `data` that are not fields of `cls`."""

import dataclasses
import types
import typing


def _block_class(annotation):
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        arms = [a for a in typing.get_args(annotation) if a is not type(None)]
        annotation = arms[0] if len(arms) == 1 else None
    return annotation if isinstance(annotation, type) and dataclasses.is_dataclass(annotation) else None


# --- wrong ---
def w_no_recursion(cls, data):
    # compares the top block only: a stale key in a nested block is missed
    names = {f.name for f in dataclasses.fields(cls)}
    return sorted(k for k in data if k != "_target_" and k not in names)


def w_no_prefix(cls, data):
    # recurses but writes nested keys without the names of the blocks above
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out = []
    for key, value in data.items():
        if key == "_target_":
            continue
        if key not in names:
            out.append(key)
        elif (inner := _block_class(hints[key])) is not None and isinstance(value, dict):
            out += w_no_prefix(inner, value)
    return sorted(out)


def w_underscore_skipped(cls, data):
    # skips every key starting with "_": only _target_ itself is allowed
    return [k for k in r_stack(cls, data) if not k.rsplit(".", 1)[-1].startswith("_")]


def w_target_reported(cls, data):
    # forgets that _target_ is allowed
    out = []

    def go(c, block, prefix):
        h = typing.get_type_hints(c)
        fields = {f.name for f in dataclasses.fields(c)}
        for key, value in block.items():
            if key not in fields:
                out.append(prefix + key)
            elif (inner := _block_class(h[key])) is not None and isinstance(value, dict):
                go(inner, value, prefix + key + ".")

    go(cls, data, "")
    return sorted(out)


def w_normalised_spelling(cls, data, prefix=""):
    # lower-cases and maps dashes to underscores: Param_offload and param-offload are not param_offload
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out = []
    for key, value in data.items():
        name = key.lower().replace("-", "_")
        if key == "_target_":
            continue
        if name not in names:
            out.append(prefix + key)
        elif (inner := _block_class(hints[name])) is not None and isinstance(value, dict):
            out += w_normalised_spelling(inner, value, prefix + key + ".")
    return sorted(out)


def w_hasattr(cls, data):
    # hasattr(cls, key): a method, a ClassVar or a class attribute passes as a field; a field without default fails
    out = []
    for key, value in data.items():
        if key == "_target_":
            continue
        if not hasattr(cls, key):
            out.append(key)
    return sorted(out)


def w_own_annotations(cls, data):
    # cls.__annotations__: inherited fields are missed and a ClassVar counts
    names = set(cls.__dict__.get("__annotations__", {}))
    return sorted(k for k in data if k != "_target_" and k not in names)


def w_raw_type(cls, data):
    # uses field.type as it is: under `from __future__ import annotations` it is text, so nothing recurses
    out = []

    def go(c, block, prefix):
        fields = {f.name: f.type for f in dataclasses.fields(c)}
        for key, value in block.items():
            if key == "_target_":
                continue
            if key not in fields:
                out.append(prefix + key)
            elif (inner := _block_class(fields[key])) is not None and isinstance(value, dict):
                go(inner, value, prefix + key + ".")

    go(cls, data, "")
    return sorted(out)


def w_skips_falsy(cls, data):
    # ignores keys whose value is null, false, 0 or empty: a key counts whatever its value
    cleaned = {k: v for k, v in data.items() if v}
    return r_stack(cls, cleaned)


def w_set(cls, data):
    # a set: the order is taught
    return set(r_stack(cls, data))


def w_no_optional(cls, data):
    # does not unwrap Optional[...]: a block typed Optional[Profiler] is never compared
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out = []
    for key, value in data.items():
        if key == "_target_":
            continue
        if key not in names:
            out.append(key)
        elif dataclasses.is_dataclass(hints[key]) and isinstance(hints[key], type) and isinstance(value, dict):
            out += [f"{key}.{k}" for k in w_no_optional(hints[key], value)]
    return sorted(out)


def w_recurse_on_null(cls, data):
    # recurses into a dataclass field whatever its value: a null block (or a list) raises instead of counting as no block
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out = []
    for key, value in data.items():
        if key == "_target_":
            continue
        if key not in names:
            out.append(key)
        elif (inner := _block_class(hints[key])) is not None:
            out += [f"{key}.{k}" for k in w_recurse_on_null(inner, value)]
    return sorted(out)


def w_pops_target(cls, data):
    # pops _target_ from the caller's blocks: `data` must be left as it was
    data.pop("_target_", None)
    return r_stack(cls, data)


def w_sorted_per_block(cls, data):
    # sorts each block's keys, then puts nested blocks after the top ones: not one sorted list
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    top = sorted(k for k in data if k != "_target_" and k not in names)
    nested = []
    for key, value in data.items():
        if key in names and (inner := _block_class(hints[key])) is not None and isinstance(value, dict):
            nested += [f"{key}.{k}" for k in w_sorted_per_block(inner, value)]
    return top + nested


# --- right ---
def r_stack(cls, data):
    found = []
    stack = [(cls, data, "")]
    while stack:
        current, block, prefix = stack.pop()
        hints = typing.get_type_hints(current)
        fields = {f.name for f in dataclasses.fields(current)}
        for key, value in block.items():
            if key == "_target_":
                continue
            if key not in fields:
                found.append(f"{prefix}{key}")
                continue
            inner = _block_class(hints[key])
            if inner is not None and isinstance(value, typing.Mapping):
                stack.append((inner, value, f"{prefix}{key}."))
    return sorted(found)


def r_generator_tuple(cls, data):
    def resolve(tp):
        args = typing.get_args(tp)
        if args and type(None) in args:
            rest = [a for a in args if a is not type(None)]
            tp = rest[0] if len(rest) == 1 else None
        return tp if dataclasses.is_dataclass(tp) and isinstance(tp, type) else None

    def extra(c, block, path):
        hints = typing.get_type_hints(c)
        field_names = [f.name for f in dataclasses.fields(c)]
        for key in block:
            if key == "_target_":
                continue
            if key not in field_names:
                yield ".".join(path + [key])
            else:
                sub = resolve(hints[key])
                if sub is not None and isinstance(block[key], dict):
                    yield from extra(sub, block[key], path + [key])

    return tuple(sorted(extra(cls, data, [])))


def r_eval_string_types(cls, data, _prefix=""):
    # reads field.type, resolving it through get_type_hints only when it is text; recursion by a keyword prefix
    out = []
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in sorted(data):
        value = data[key]
        if key == "_target_":
            continue
        if key not in fields:
            out.append(_prefix + key)
            continue
        tp = fields[key].type
        if isinstance(tp, str):
            tp = typing.get_type_hints(cls)[key]
        inner = _block_class(tp)
        if inner is not None and isinstance(value, dict):
            out.extend(r_eval_string_types(inner, value, _prefix + key + "."))
    return sorted(out)


WRONG = {
    "no recursion": (w_no_recursion,),
    "nested keys without prefix": (w_no_prefix,),
    "every _key skipped": (w_underscore_skipped,),
    "_target_ reported": (w_target_reported,),
    "spelling normalised": (w_normalised_spelling,),
    "hasattr(cls, key)": (w_hasattr,),
    "own __annotations__": (w_own_annotations,),
    "raw field.type": (w_raw_type,),
    "falsy values skipped": (w_skips_falsy,),
    "set": (w_set,),
    "Optional not unwrapped": (w_no_optional,),
    "recurses into null": (w_recurse_on_null,),
    "pops _target_": (w_pops_target,),
    "sorted per block": (w_sorted_per_block,),
}
RIGHT = {
    "explicit stack": (r_stack,),
    "generator, sorted tuple": (r_generator_tuple,),
    "string types resolved": (r_eval_string_types,),
}
UNSURE = {}
