"""9.2 yaml_only_keys(cls, data): sorted dotted YAML keys that are not dataclass fields (recursive)."""
import dataclasses
import types
import typing


def _inner(annotation):
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        arms = [a for a in typing.get_args(annotation) if a is not type(None)]
        annotation = arms[0] if len(arms) == 1 else None
    return annotation if isinstance(annotation, type) and dataclasses.is_dataclass(annotation) else None


def _generic(cls, data, prefix="", *, names_of=None, type_of=None, inner=_inner, skip_target=True,
             recurse_if=lambda v: isinstance(v, dict), child_prefix=None, key_eq=None):
    names = names_of(cls) if names_of else {f.name for f in dataclasses.fields(cls)}
    hints = type_of(cls) if type_of else typing.get_type_hints(cls)
    out = []
    for key, value in data.items():
        if skip_target and key == "_target_":
            continue
        k = key_eq(key) if key_eq else key
        if k not in names:
            out.append(prefix + key)
            continue
        sub = inner(hints.get(k))
        if sub is not None and recurse_if(value):
            nxt = child_prefix(prefix, key) if child_prefix else prefix + key + "."
            out += _generic(sub, value, nxt, names_of=names_of, type_of=type_of, inner=inner,
                            skip_target=True, recurse_if=recurse_if, child_prefix=child_prefix, key_eq=key_eq)
    return sorted(out)


def w_field_type_directly(cls, data):
    return _generic(cls, data, type_of=lambda c: {f.name: f.type for f in dataclasses.fields(c)})


def w_no_optional(cls, data):
    return _generic(cls, data, inner=lambda a: a if isinstance(a, type) and dataclasses.is_dataclass(a) else None)


def w_own_annotations(cls, data):
    return _generic(cls, data, names_of=lambda c: set(c.__dict__.get("__annotations__", {})))


def w_hasattr(cls, data):
    return _generic(cls, data, names_of=lambda c: {n for n in dir(c)})


def _top_target_only(cls, data, prefix=""):
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out = []
    for key, value in data.items():
        if key == "_target_" and prefix == "":
            continue
        if key not in names:
            out.append(prefix + key)
        elif (sub := _inner(hints[key])) is not None and isinstance(value, dict):
            out += _top_target_only(sub, value, prefix + key + ".")
    return sorted(out)


def w_unsorted_set(cls, data):
    return set(_generic(cls, data))


def w_no_prefix(cls, data):
    return _generic(cls, data, child_prefix=lambda prefix, key: "")


def w_parent_prefix_only(cls, data):
    return _generic(cls, data, child_prefix=lambda prefix, key: key + ".")


def w_pops_target(cls, data, prefix=""):
    data.pop("_target_", None)
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out = []
    for key, value in data.items():
        if key not in names:
            out.append(prefix + key)
        elif (sub := _inner(hints[key])) is not None and isinstance(value, dict):
            out += w_pops_target(sub, value, prefix + key + ".")
    return sorted(out)


def w_truthy_value(cls, data):
    return _generic(cls, data, recurse_if=bool)


def w_normalises_dashes(cls, data):
    return _generic(cls, data, key_eq=lambda k: k.replace("-", "_"))


WRONG = {
    "field.type used directly (text under __future__ annotations)": (w_field_type_directly,),
    "Optional[...] not unwrapped": (w_no_optional,),
    "own __annotations__ (misses inherited, counts ClassVar)": (w_own_annotations,),
    "hasattr/dir(cls) as the field test": (w_hasattr,),
    "_target_ skipped at the top only": (_top_target_only,),
    "returns a set": (w_unsorted_set,),
    "nested keys without the block prefix": (w_no_prefix,),
    "only the parent block as prefix": (w_parent_prefix_only,),
    "pops _target_ from the caller's data": (w_pops_target,),
    "recurses into any truthy value": (w_truthy_value,),
    "normalises '-' to '_'": (w_normalises_dashes,),
}


def r_stack(cls, data):
    out = []
    stack = [(cls, data, "")]
    while stack:
        klass, block, prefix = stack.pop()
        hints = typing.get_type_hints(klass)
        fields = {f.name for f in dataclasses.fields(klass)}
        for key, value in block.items():
            if key == "_target_":
                continue
            if key not in fields:
                out.append(f"{prefix}{key}")
                continue
            sub = _inner(hints[key])
            if sub is not None and isinstance(value, dict):
                stack.append((sub, value, f"{prefix}{key}."))
    return sorted(out)


def r_optional_args(cls, data, prefix=""):
    hints = typing.get_type_hints(cls)
    result = []
    for key in data:
        if key == "_target_":
            continue
        field = next((f for f in dataclasses.fields(cls) if f.name == key), None)
        if field is None:
            result.append(prefix + key)
            continue
        t = hints[field.name]
        candidates = [a for a in typing.get_args(t) if a is not type(None)] if typing.get_origin(t) in (typing.Union, types.UnionType) else [t]
        dc = [c for c in candidates if dataclasses.is_dataclass(c) and isinstance(c, type)]
        if len(dc) == 1 and len(candidates) == 1 and isinstance(data[key], dict):
            result.extend(r_optional_args(dc[0], data[key], prefix + key + "."))
    return sorted(result)


def r_tuple(cls, data):
    def walk(klass, block, path):
        hints = typing.get_type_hints(klass)
        names = {f.name for f in dataclasses.fields(klass)}
        for key, value in block.items():
            if key == "_target_":
                continue
            dotted = ".".join((*path, key))
            if key not in names:
                yield dotted
            elif isinstance(value, dict) and (sub := _inner(hints[key])) is not None:
                yield from walk(sub, value, (*path, key))

    return tuple(sorted(walk(cls, data, ())))


RIGHT = {"explicit stack": (r_stack,), "Union args by hand": (r_optional_args,), "generator, sorted tuple": (r_tuple,)}
