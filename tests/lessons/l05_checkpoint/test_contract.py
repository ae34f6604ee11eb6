"""Lesson 05's checkers test a contract: new wrong answers of other classes fail, right ones written otherwise pass.

The classes: a wrong value on part of the domain (capitals, a letter where a dot is, eight-deep keys), the
wrong effect on the model (aliasing the checkpoint, taking its dtype, replacing the parameter objects, writing
a key the checkpoint lacks, skipping buffers), on the caller's dict, and state kept between two loads.
"""

from __future__ import annotations

import contextlib
import re

import torch

from conftest import Wrong, checker_tests
from verlstudy.kit.exercises import check_exercise, exercise_results
from verlstudy.lessons.l05_checkpoint.audit_cases import Load, Spec, build_checkpoint, build_model, run_loads, specs


def inside(key: str, pattern: str) -> bool:
    module = pattern.removesuffix(".")
    return key == module or key.startswith(module + ".")


def _allowed_out(keys, allowed):
    return sorted(k for k in keys if not any(inside(k, p) for p in allowed))


# ---------------------------------------------------------------- 5.1


def ignores_capitals(key, pattern):
    return inside(key.lower(), pattern.lower())


def unescaped_regex_fullmatch(key, pattern):  # '.' matches any character
    return re.fullmatch(pattern.removesuffix(".") + r"(\..*)?", key) is not None


def first_pieces_only(key, pattern):  # compares only as many pieces as... the first two
    return key.split(".")[:2] == pattern.removesuffix(".").split(".")[:2]


def rstrip_letters(key, pattern):  # str.rstrip takes a set of characters: "mtp." loses its p as well
    module = pattern.rstrip(".p")
    return key == module or key.startswith(module + ".")


def any_suffix_piece(key, pattern):  # inside the module anywhere along the key
    return ("." + key + ".").find("." + pattern.removesuffix(".") + ".") >= 0


def one_sided_dot(key, pattern):  # a key equal to the module name is forgotten when the pattern has its dot
    return key.startswith(pattern) if pattern.endswith(".") else key == pattern or key.startswith(pattern + ".")


def contains_then_dot(key, pattern):
    module = pattern.removesuffix(".")
    return module in key and key[len(module) : len(module) + 1] in ("", ".")


def startswith_no_case_of_end(key, pattern):  # the next character must not be a letter (digits slip through)
    module = pattern.removesuffix(".")
    return key.startswith(module) and not key[len(module) : len(module) + 1].isalpha()


def drops_two_dots(key, pattern):  # cuts the pattern's last character whatever it is
    module = pattern[:-1]
    return key == module or key.startswith(module + ".")


def returns_match_object(key, pattern):
    return re.match(re.escape(pattern.removesuffix(".")) + r"(\.|$)", key)


# ---------------------------------------------------------------- 5.2


def aliases_checkpoint(model, state_dict, allowed):  # param.data = ckpt[k]
    own = dict([*model.named_parameters(), *model.named_buffers()])
    keys = list(model.state_dict())
    for k, v in state_dict.items():
        if k in keys:
            own[k].data = v
    return _allowed_out([k for k in keys if k not in state_dict], allowed)


def aliases_with_own_dtype(model, state_dict, allowed):  # keeps the dtype, yet shares the flat buffer's memory
    own = dict([*model.named_parameters(), *model.named_buffers()])
    keys = list(model.state_dict())
    for k, v in state_dict.items():
        if k in keys:
            own[k].data = v if v.dtype == own[k].dtype else v.to(own[k].dtype)
    return _allowed_out([k for k in keys if k not in state_dict], allowed)


def assigns(model, state_dict, allowed):  # assign=True: the checkpoint's tensors become the parameters
    result = model.load_state_dict(state_dict, strict=False, assign=True)
    return _allowed_out(result.missing_keys, allowed)


def casts_checkpoint_in_place(model, state_dict, allowed):  # "fixes" the dtype in the caller's dict
    dtype = next(iter(model.state_dict().values())).dtype if model.state_dict() else torch.float32
    for k in state_dict:
        state_dict[k] = state_dict[k].to(dtype)
    return _allowed_out(model.load_state_dict(state_dict, strict=False).missing_keys, allowed)


def zeroes_missing(model, state_dict, allowed):  # a "clean" start: the missing tensors are reset
    result = model.load_state_dict(state_dict, strict=False)
    with torch.no_grad():
        held = dict([*model.named_parameters(), *model.named_buffers()])
        for k in result.missing_keys:
            held[k].zero_()
    return _allowed_out(result.missing_keys, allowed)


def parameters_copied_only(model, state_dict, allowed):  # buffers never loaded
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name in state_dict:
                p.copy_(state_dict[name])
    return _allowed_out([k for k in model.state_dict() if k not in state_dict], allowed)


def every_tensor_by_name(model, state_dict, allowed):  # writes the non-persistent embed.cache as well
    with torch.no_grad():
        for name, t in [*model.named_parameters(), *model.named_buffers()]:
            if name in state_dict:
                t.copy_(state_dict[name])
    return _allowed_out([k for k in model.state_dict() if k not in state_dict], allowed)


_SEEN: set[str] = set()


def remembers_earlier_loads(model, state_dict, allowed):  # a module-level set never cleared
    result = model.load_state_dict(state_dict, strict=False)
    _SEEN.update(result.missing_keys)
    return _allowed_out(_SEEN, allowed)


def first_load_only(model, state_dict, allowed):  # "already loaded": skips a second load into the same model
    if getattr(model, "_loaded", False):
        return []
    model._loaded = True
    return _allowed_out(model.load_state_dict(state_dict, strict=False).missing_keys, allowed)


def requires_grad_off(model, state_dict, allowed):
    result = model.load_state_dict(state_dict, strict=False)
    for p in model.parameters():
        p.requires_grad_(False)
    return _allowed_out(result.missing_keys, allowed)


def casts_model(model, state_dict, allowed):  # the model follows the checkpoint's dtype
    tensors = list(state_dict.values())
    if tensors:
        model.to(tensors[0].dtype)
    return _allowed_out(model.load_state_dict(state_dict, strict=False).missing_keys, allowed)


def duplicates(model, state_dict, allowed):
    keys = model.load_state_dict(state_dict, strict=False).missing_keys
    return sorted(_allowed_out(keys, allowed) * 2)


# ---------------------------------------------------------------- right answers written otherwise


def pieces(key, pattern):
    name = pattern[:-1] if pattern[-1] == "." else pattern
    return key.split(".")[: name.count(".") + 1] == name.split(".")


def char_after(key, pattern):
    name = pattern.removesuffix(".")
    return key[: len(name)] == name and key[len(name) : len(name) + 1] in ("", ".")


def partition_by_dot(key, pattern):
    name = pattern.rstrip(".")
    head, sep, _ = key.partition(name)
    return head == "" and sep == name and key[len(name) :][:1] in ("", ".")


def copies_by_hand(model, state_dict, allowed):
    own = dict([*model.named_parameters(), *model.named_buffers(recurse=True)])
    saved = list(model.state_dict())
    with torch.no_grad():
        for k in saved:
            if k in state_dict:
                own[k].copy_(state_dict[k])
    return tuple(sorted(k for k in saved if k not in state_dict and not any(pieces(k, p) for p in allowed)))


def strict_then_caught(model, state_dict, allowed):  # strict=True copies everything before it raises
    with contextlib.suppress(RuntimeError):
        model.load_state_dict(state_dict)
    missing = set(model.state_dict()) - set(state_dict)
    return sorted(k for k in missing if not any(partition_by_dot(k, p) for p in allowed))


def via_copy_of_dict(model, state_dict, allowed):
    result = model.load_state_dict({k: v.clone() for k, v in state_dict.items()}, strict=False)
    return [k for k in sorted(set(result.missing_keys)) if all(not inside(k, p) for p in allowed)]


WRONG = {
    "5.1": [
        Wrong(ignores_capitals, "capitals", why="case-insensitive"),
        Wrong(unescaped_regex_fullmatch, "a dot in a module name is a dot", why="regex fullmatch, dots unescaped"),
        Wrong(first_pieces_only, ("misses", "letters", "not the first", "own name", "is the pattern"), why="2 pieces"),
        Wrong(rstrip_letters, ("misses", "letters", "own name"), why="rstrip with a character set"),
        Wrong(any_suffix_piece, "further in", why="a module anywhere along the key"),
        Wrong(one_sided_dot, "own name", why="the key equal to a dotted pattern's module"),
        Wrong(contains_then_dot, ("further in", "not the first"), why="`in` instead of the start"),
        Wrong(startswith_no_case_of_end, "letters", why="only letters stop the name: layers.10 inside layers.1"),
        Wrong(drops_two_dots, ("misses", "ends with a dot"), why="cuts the last character always"),
        Wrong(returns_match_object, "True or False", why="a match object"),
    ],
    "5.2": [
        Wrong(aliases_checkpoint, ("shares memory", "bfloat16", "float32", "float64"), why="param.data = ckpt[k]"),
        Wrong(aliases_with_own_dtype, "shares memory", why="param.data = ckpt[k] when dtypes agree"),
        Wrong(assigns, "another tensor object", why="load_state_dict(assign=True)"),
        Wrong(casts_checkpoint_in_place, "changed the checkpoint", why="casts the caller's dict"),
        Wrong(zeroes_missing, "keeps the model's own value", why="resets what the checkpoint lacks"),
        Wrong(parameters_copied_only, "skipped", why="buffers never loaded"),
        Wrong(every_tensor_by_name, "never saves", why="writes a non-persistent buffer"),
        Wrong(remembers_earlier_loads, "second load", why="state kept between calls"),
        Wrong(first_load_only, "second load", why="a second load skipped"),
        Wrong(requires_grad_off, "requires_grad", why="freezes the model"),
        Wrong(casts_model, ("bfloat16", "float32", "float64"), why="the model takes the checkpoint's dtype"),
        Wrong(duplicates, "more than once", why="each key twice"),
    ],
}
RIGHT = {
    "5.1": [pieces, char_after, partition_by_dot],
    "5.2": [copies_by_hand, strict_then_caught, via_copy_of_dict],
}
test_new_wrong_answers_fail, test_new_right_answers_pass = checker_tests(WRONG, RIGHT)


def test_the_generated_specs_span_the_domain() -> None:
    """Every layout, both model dtypes, all three checkpoint dtypes, the empty model and stray keys are drawn."""
    from hypothesis import given, settings

    seen: dict[str, set] = {"layout": set(), "model": set(), "ckpt": set(), "sizes": set(), "strays": set()}

    @settings(max_examples=200, derandomize=True, database=None)
    @given(specs())
    def record(spec: Spec) -> None:
        seen["layout"].update(load.layout for load in spec.loads)
        seen["model"].add(spec.model_dtype)
        seen["ckpt"].add(spec.checkpoint_dtype)
        seen["sizes"].add(len(spec.leaves))
        seen["strays"].update(s for load in spec.loads for s in load.strays)

    record()
    assert seen["layout"] == {"own", "strided", "flat"}
    assert len(seen["model"]) == 2 and len(seen["ckpt"]) == 3
    assert {0, 1, 6} <= seen["sizes"]
    assert "embed.cache" in seen["strays"]


def test_checkpoint_layouts_hold_the_same_values() -> None:
    spec = Spec(("embed", "mtp.proj", "layers.2"), (Load(()), Load((), (), "strided"), Load((), (), "flat")), ())
    own, strided, flat = (build_checkpoint(spec, i) for i in range(3))
    assert not all(v.is_contiguous() for v in strided.values())
    assert len({v.untyped_storage().data_ptr() for v in flat.values()}) == 1
    model = build_model(spec.leaves)
    assert list(own) == list(model.state_dict())  # the model's own order, so a load writes every key


def test_the_harness_is_the_reference_on_a_right_load() -> None:
    spec = Spec(("embed", "mtp.proj"), (Load(("mtp.proj",)), Load(())), ("mtp.",), torch.bfloat16, torch.float64)
    assert run_loads(lambda m, sd, a: _allowed_out(m.load_state_dict(sd, strict=False).missing_keys, a), spec) == (
        [],
        [],
    )


def test_a_stub_is_not_attempted_and_prints_nothing(capsys) -> None:
    def stub(*args):
        raise NotImplementedError

    for exercise_id in ("5.1", "5.2"):
        check_exercise(exercise_id, stub)
        assert exercise_results()[exercise_id] == "not attempted"
    printed = capsys.readouterr().out
    assert "rstrip" not in printed and "startswith" not in printed and "load_state_dict" not in printed
