"""Exercise 9.2: yaml_only_keys(cls, data), dotted YAML keys that are not fields of the dataclass."""

import dataclasses
import types
import typing

# The text: sorted dotted names of keys of `data` that are not fields of `cls` (dataclasses.fields: inherited ones
# too, not a ClassVar, not an attribute __post_init__ sets), recursing into fields whose type is a dataclass or an
# Optional of one (the fixture uses `from __future__ import annotations`); `_target_` allowed in every block; a
# sorted list (a sorted tuple passes, a set does not); data left as it is.


def _inner(annotation):
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        arms = [a for a in typing.get_args(annotation) if a is not type(None)]
        annotation = arms[0] if len(arms) == 1 else None
    return annotation if isinstance(annotation, type) and dataclasses.is_dataclass(annotation) else None


def _walk(cls, data, prefix, *, names_of, inner_of, skip, recurse_none=False):
    hints = typing.get_type_hints(cls)
    names = names_of(cls)
    out = []
    for key, value in data.items():
        if skip(key, prefix):
            continue
        if key not in names:
            out.append(prefix + key)
            continue
        inner = inner_of(hints.get(key))
        if inner is not None and (isinstance(value, dict) or (recurse_none and value is None)):
            out += _walk(
                inner,
                value,
                prefix + key + ".",
                names_of=names_of,
                inner_of=inner_of,
                skip=skip,
                recurse_none=recurse_none,
            )
    return out


def _fields(cls):
    return {f.name for f in dataclasses.fields(cls)}


def _target(key, prefix):
    return key == "_target_"


# --- WRONG -----------------------------------------------------------------------------------------------------------


def w_no_recursion(cls, data):
    # compares the top block only
    names = _fields(cls)
    return sorted(k for k in data if k != "_target_" and k not in names)


def w_no_optional(cls, data):
    # recurses into a plain dataclass field, not into Optional[...] (verl's profiler)
    def inner(a):
        return a if isinstance(a, type) and dataclasses.is_dataclass(a) else None

    return sorted(_walk(cls, data, "", names_of=_fields, inner_of=inner, skip=_target))


def w_own_annotations(cls, data):
    # cls.__annotations__: inherited fields are missed and a ClassVar counts
    return sorted(
        _walk(
            cls, data, "", names_of=lambda c: set(c.__dict__.get("__annotations__", {})), inner_of=_inner, skip=_target
        )
    )


def w_hasattr(cls, data):
    # hasattr on the class: a method (BaseConfig.get) or a ClassVar counts as a field
    def names_of(c):
        return {k for k in list(_fields(c)) + dir(c)}

    return sorted(_walk(cls, data, "", names_of=names_of, inner_of=_inner, skip=_target))


def w_set(cls, data):
    # a set: the order is asked
    return set(_walk(cls, data, "", names_of=_fields, inner_of=_inner, skip=_target))


def w_unsorted(cls, data):
    # in the YAML's order
    return _walk(cls, data, "", names_of=_fields, inner_of=_inner, skip=_target)


def w_skip_underscore(cls, data):
    # skips every key starting with "_", not only _target_
    return sorted(_walk(cls, data, "", names_of=_fields, inner_of=_inner, skip=lambda k, p: k.startswith("_")))


def w_normalised(cls, data):
    # compares keys case- and dash-insensitively: "param-offload" is not "param_offload"
    def walk(c, d, prefix):
        hints = typing.get_type_hints(c)
        names = {n.lower() for n in _fields(c)}
        out = []
        for key, value in d.items():
            if key == "_target_":
                continue
            norm = key.lower().replace("-", "_")
            if norm not in names:
                out.append(prefix + key)
            elif key in hints and (inner := _inner(hints[key])) is not None and isinstance(value, dict):
                out += walk(inner, value, prefix + key + ".")
        return out

    return sorted(walk(cls, data, ""))


def w_raw_type(cls, data):
    # reads f.type: under `from __future__ import annotations` it is text, so nothing is recursed into
    def walk(c, d, prefix):
        types_ = {f.name: f.type for f in dataclasses.fields(c)}
        out = []
        for key, value in d.items():
            if key == "_target_":
                continue
            if key not in types_:
                out.append(prefix + key)
            elif (inner := _inner(types_[key])) is not None and isinstance(value, dict):
                out += walk(inner, value, prefix + key + ".")
        return out

    return sorted(walk(cls, data, ""))


def w_no_prefix(cls, data):
    # nested keys without the names of the blocks above
    def walk(c, d):
        hints = typing.get_type_hints(c)
        out = []
        for key, value in d.items():
            if key == "_target_":
                continue
            if key not in _fields(c):
                out.append(key)
            elif (inner := _inner(hints[key])) is not None and isinstance(value, dict):
                out += walk(inner, value)
        return out

    return sorted(walk(cls, data))


def w_skip_falsy(cls, data):
    # skips keys whose value is null, false, 0 or empty: a key counts whatever its value
    def walk(c, d, prefix):
        hints = typing.get_type_hints(c)
        out = []
        for key, value in d.items():
            if key == "_target_" or not value:
                continue
            if key not in _fields(c):
                out.append(prefix + key)
            elif (inner := _inner(hints[key])) is not None and isinstance(value, dict):
                out += walk(inner, value, prefix + key + ".")
        return out

    return sorted(walk(cls, data, ""))


def w_sorted_per_level(cls, data):
    # sorts each level, then appends nested results after the top's: the whole list is not sorted
    def walk(c, d, prefix):
        hints = typing.get_type_hints(c)
        names = _fields(c)
        here = sorted(prefix + k for k in d if k != "_target_" and k not in names)
        below = []
        for key, value in d.items():
            if key in names and (inner := _inner(hints[key])) is not None and isinstance(value, dict):
                below += walk(inner, value, prefix + key + ".")
        return here + below

    return walk(cls, data, "")


def w_target_top_only(cls, data):
    # allows _target_ only in the top block
    return sorted(_walk(cls, data, "", names_of=_fields, inner_of=_inner, skip=lambda k, p: k == "_target_" and not p))


def w_union_typing_only(cls, data):
    # recognises typing.Optional / Union but not `X | None` (types.UnionType)
    def inner(a):
        if typing.get_origin(a) is typing.Union:
            arms = [x for x in typing.get_args(a) if x is not type(None)]
            a = arms[0] if len(arms) == 1 else None
        return a if isinstance(a, type) and dataclasses.is_dataclass(a) else None

    return sorted(_walk(cls, data, "", names_of=_fields, inner_of=inner, skip=_target))


# --- RIGHT -----------------------------------------------------------------------------------------------------------


def r_stack(cls, data):
    # an explicit stack of (class, block, prefix); Optional unwrapped with get_args
    found = []
    stack = [(cls, data, "")]
    while stack:
        klass, block, prefix = stack.pop()
        hints = typing.get_type_hints(klass)
        fields = {f.name for f in dataclasses.fields(klass)}
        for key in block:
            if key == "_target_":
                continue
            if key not in fields:
                found.append(f"{prefix}{key}")
                continue
            hint = hints[key]
            if typing.get_origin(hint) in (typing.Union, types.UnionType):
                arms = [a for a in typing.get_args(hint) if a is not type(None)]
                hint = arms[0] if len(arms) == 1 else None
            target = hint
            if dataclasses.is_dataclass(target) and isinstance(target, type) and isinstance(block[key], dict):
                stack.append((target, block[key], f"{prefix}{key}."))
    return sorted(found)


def r_recursive_tuple(cls, data):
    # recursion; a sorted tuple
    return tuple(sorted(_walk(cls, data, "", names_of=_fields, inner_of=_inner, skip=_target)))


def r_mapping_abc(cls, data):
    # dataclasses.fields for names and get_type_hints for types; Mapping test for blocks; a list
    from collections.abc import Mapping

    def dataclass_of(hint):
        origin = typing.get_origin(hint)
        if origin is typing.Union or origin is types.UnionType:
            rest = [h for h in typing.get_args(hint) if h is not type(None)]
            if len(rest) != 1:
                return None
            hint = rest[0]
        return hint if isinstance(hint, type) and dataclasses.is_dataclass(hint) else None

    def walk(klass, block, path):
        hints = typing.get_type_hints(klass)
        fields = {f.name: hints[f.name] for f in dataclasses.fields(klass)}
        for key, value in block.items():
            if key == "_target_":
                continue
            if key not in fields:
                yield ".".join(path + [key])
            elif isinstance(value, Mapping) and (inner := dataclass_of(fields[key])) is not None:
                yield from walk(inner, value, path + [key])

    return sorted(walk(cls, data, []))


WRONG = {
    "no recursion": (w_no_recursion,),
    "no Optional": (w_no_optional,),
    "own __annotations__": (w_own_annotations,),
    "hasattr / dir": (w_hasattr,),
    "a set": (w_set,),
    "unsorted": (w_unsorted,),
    "every _ key skipped": (w_skip_underscore,),
    "normalised comparison": (w_normalised,),
    "raw f.type": (w_raw_type,),
    "no dotted prefix": (w_no_prefix,),
    "falsy values skipped": (w_skip_falsy,),
    "sorted per level": (w_sorted_per_level,),
    "_target_ top only": (w_target_top_only,),
    "X | None missed": (w_union_typing_only,),
}

RIGHT = {
    "explicit stack": (r_stack,),
    "recursion, sorted tuple": (r_recursive_tuple,),
    "Mapping, generator": (r_mapping_abc,),
}

UNSURE = {}
