"""verlstudy.lessons.l05_checkpoint.checkpoint: audited strict=False loading (verl #7836), read as a specification."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from verlstudy.lessons.l05_checkpoint.checkpoint import (
    MTP_PREFIX,
    CheckpointMismatchError,
    LoadReport,
    TinyLM,
    TinyLMWithMTP,
    audit_state_dict,
    check_patterns,
    export_roundtrip,
    export_without,
    load_state_dict_audited,
    matches_prefix,
    matches_string_prefix,
    output_change,
    save_and_reload,
)

MTP_KEYS = ["mtp.proj.weight", "mtp.proj.bias", "mtp.head.weight", "mtp.head.bias"]


def make(seed: int, **sizes: int) -> TinyLMWithMTP:
    torch.manual_seed(seed)
    return TinyLMWithMTP(**sizes)


@pytest.fixture
def trained() -> TinyLMWithMTP:
    return make(0)


@pytest.fixture
def fresh() -> TinyLMWithMTP:
    return make(1)


# --- the toy model and its export ---------------------------------------------------------------------------


def test_toy_model_keys_and_mtp_unused_by_forward(trained: TinyLMWithMTP) -> None:
    keys = list(trained.state_dict())
    assert [k for k in keys if k.startswith(MTP_PREFIX)] == MTP_KEYS
    tokens = torch.arange(6).reshape(1, 6)
    before = trained(tokens)
    with torch.no_grad():
        for p in trained.mtp.parameters():
            p.add_(1.0)
    assert torch.equal(trained(tokens), before), "forward() must not depend on the MTP head"
    assert trained.forward_mtp(tokens).shape == before.shape


@pytest.mark.parametrize(("name", "value"), [("vocab", 1), ("hidden", 0), ("n_layers", True), ("hidden", 2.0)])
def test_toy_model_rejects_bad_sizes(name: str, value: object) -> None:
    with pytest.raises(ValueError, match=name):
        TinyLMWithMTP(**{name: value})


def test_export_without_drops_only_the_named_module_and_clones(trained: TinyLMWithMTP) -> None:
    exported = export_without(trained)
    assert not any(k.startswith(MTP_PREFIX) for k in exported)
    assert len(exported) == len(trained.state_dict()) - len(MTP_KEYS)
    exported["head.weight"].add_(1.0)
    assert not torch.equal(exported["head.weight"], trained.head.weight), "the export must be a copy"


def test_save_and_reload_round_trips_exactly(trained: TinyLMWithMTP) -> None:
    state = export_without(trained)
    back = save_and_reload(state)
    assert list(back) == list(state)
    assert all(torch.equal(back[k], state[k]) for k in state)
    assert list(export_roundtrip(trained)) == list(state)


def test_save_and_reload_rejects_non_mapping() -> None:
    with pytest.raises(TypeError, match="state_dict must be a mapping"):
        save_and_reload([torch.zeros(1)])  # type: ignore[arg-type]


# --- patterns ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "pattern", "want"),
    [
        ("mtp.proj.weight", "mtp.", True),
        ("mtp.proj.weight", "mtp", True),
        ("mtp", "mtp.", True),
        ("mtp_norm.weight", "mtp", False),
        ("mtp_norm.weight", "mtp.", False),
        ("layers.10.weight", "layers.1", False),
        ("layers.1.weight", "layers.1.", True),
        ("model.mtp.proj.weight", "mtp.", False),
    ],
)
def test_matches_prefix_respects_module_boundaries(key: str, pattern: str, want: bool) -> None:
    assert matches_prefix(key, pattern) is want


@given(
    module=st.from_regex(r"[a-z]{1,6}(\.[0-9])?", fullmatch=True), rest=st.from_regex(r"[a-z_]{1,6}", fullmatch=True)
)
def test_matches_prefix_property(module: str, rest: str) -> None:
    assert matches_prefix(f"{module}.{rest}", module)
    assert matches_prefix(f"{module}.{rest}", module + ".")
    assert not matches_prefix(f"{module}x.{rest}", module)


@pytest.mark.parametrize(
    ("key", "pattern"),
    [("mtp_norm.weight", "mtp"), ("model.layers.78.eh_proj.weight", "model.layers.7"), ("mtp_extra.scale", "mtp")],
)
def test_the_plain_string_prefix_covers_a_neighbouring_module_where_the_fix_does_not(key: str, pattern: str) -> None:
    assert matches_string_prefix(key, pattern) and not matches_prefix(key, pattern)
    with pytest.raises(TypeError, match="strings"):
        matches_string_prefix(key, 1)  # type: ignore[arg-type]


def test_matches_prefix_rejects_non_strings() -> None:
    with pytest.raises(TypeError, match="strings"):
        matches_prefix("a.b", 3)  # type: ignore[arg-type]


def test_check_patterns_accepts_tuples_lists_and_empty() -> None:
    assert check_patterns("allow_missing", ["mtp."]) == ("mtp.",)
    assert check_patterns("allow_missing", ()) == ()


@pytest.mark.parametrize(
    ("patterns", "exc", "match"),
    [
        ("mtp.", TypeError, r"e\.g\. \('mtp\.',\); got a bare string"),
        (b"mtp.", TypeError, "bare string"),
        (3, TypeError, "tuple or list"),
        (("mtp.", 3), TypeError, "every pattern must be a string"),
        (("",), ValueError, "empty pattern"),
        ((".",), ValueError, "empty pattern"),
    ],
)
def test_check_patterns_rejects_bad_patterns(patterns: object, exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        check_patterns("allow_missing", patterns)


def test_loader_rejects_bad_pattern_types_before_touching_the_model(trained: TinyLMWithMTP) -> None:
    model = make(1)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(TypeError, match="allow_missing"):
        load_state_dict_audited(model, export_without(trained), allow_missing="mtp.")  # type: ignore[arg-type]
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


# --- the audit -----------------------------------------------------------------------------------------------


def test_plain_strict_true_fails_on_the_mtp_export(trained: TinyLMWithMTP, fresh: TinyLMWithMTP) -> None:
    with pytest.raises(RuntimeError, match=r"mtp\.proj\.weight"):
        fresh.load_state_dict(export_roundtrip(trained))


def test_plain_strict_false_hides_a_missing_real_layer(trained: TinyLMWithMTP, fresh: TinyLMWithMTP) -> None:
    broken = export_without(trained, (MTP_PREFIX, "layers.1"))
    result = fresh.load_state_dict(broken, strict=False)  # no error: the danger the lesson shows
    assert "layers.1.weight" in result.missing_keys
    max_diff, _ = output_change(trained, fresh, torch.arange(8).reshape(1, 8))
    assert max_diff > 0


def test_audited_load_accepts_only_mtp_and_copies_everything_else(trained: TinyLMWithMTP, fresh: TinyLMWithMTP) -> None:
    report = load_state_dict_audited(fresh, export_roundtrip(trained), allow_missing=(MTP_PREFIX,))
    assert report.ok
    assert report.missing_allowed == tuple(MTP_KEYS)
    assert report.unexpected_allowed == () and report.unused_patterns == ()
    assert set(report.loaded) == set(trained.state_dict()) - set(MTP_KEYS)
    tokens = torch.arange(10).reshape(2, 5)
    assert output_change(trained, fresh, tokens) == (0.0, 0.0)
    assert "left at initial values: mtp.proj.weight" in report.summary()


def test_audited_load_rejects_a_missing_real_layer_and_lists_every_key(
    trained: TinyLMWithMTP, fresh: TinyLMWithMTP
) -> None:
    before = {k: v.clone() for k, v in fresh.state_dict().items()}
    broken = export_without(trained, (MTP_PREFIX, "layers.1"))
    with pytest.raises(CheckpointMismatchError) as info:
        load_state_dict_audited(fresh, broken, allow_missing=(MTP_PREFIX,))
    err = info.value
    assert isinstance(err, ValueError)
    assert err.missing == ("layers.1.weight", "layers.1.bias")
    assert "layers.1.weight" in str(err) and "layers.1.bias" in str(err) and "mtp" not in str(err)
    assert all(torch.equal(before[k], v) for k, v in fresh.state_dict().items()), "failed load must copy nothing"


def test_without_patterns_the_audited_loader_is_strict(trained: TinyLMWithMTP, fresh: TinyLMWithMTP) -> None:
    with pytest.raises(CheckpointMismatchError, match="4 missing key"):
        load_state_dict_audited(fresh, export_without(trained))


def test_unexpected_keys_need_their_own_pattern(trained: TinyLMWithMTP, fresh: TinyLMWithMTP) -> None:
    state = export_without(trained)
    state["extra.scale"] = torch.ones(1)
    with pytest.raises(CheckpointMismatchError, match=r"unexpected key.*extra\.scale"):
        load_state_dict_audited(fresh, state, allow_missing=(MTP_PREFIX,))
    with pytest.raises(CheckpointMismatchError, match="unexpected"):
        load_state_dict_audited(fresh, state, allow_missing=(MTP_PREFIX, "extra"))  # missing != unexpected
    report = load_state_dict_audited(fresh, state, allow_missing=(MTP_PREFIX,), allow_unexpected=("extra",))
    assert report.unexpected_allowed == ("extra.scale",)


def test_shape_mismatch_is_never_allowed(trained: TinyLMWithMTP) -> None:
    wider = make(2, vocab=40)
    state = export_without(trained)
    with pytest.raises(CheckpointMismatchError) as info:
        load_state_dict_audited(wider, state, allow_missing=(MTP_PREFIX, "embed", "head"))
    assert {key for key, _, _ in info.value.shape_mismatches} == {"embed.weight", "head.weight"}
    assert "model has [40, 16], checkpoint has [32, 16]" in str(info.value)


def test_torch_strict_false_still_raises_on_shape_mismatch(trained: TinyLMWithMTP) -> None:
    with pytest.raises(RuntimeError, match="size mismatch"):
        make(2, vocab=40).load_state_dict(export_without(trained), strict=False)


def test_unused_pattern_is_reported(trained: TinyLMWithMTP, fresh: TinyLMWithMTP) -> None:
    report = load_state_dict_audited(fresh, export_without(trained), allow_missing=(MTP_PREFIX, "mpt."))
    assert report.unused_patterns == ("mpt.",)
    assert "patterns that matched nothing: mpt." in report.summary()


def test_audit_state_dict_does_not_raise_on_content_and_reports_not_ok() -> None:
    expected = {"a.w": torch.zeros(2), "b.w": torch.zeros(3)}
    given_sd = {"a.w": torch.zeros(2), "c.w": torch.zeros(1)}
    report = audit_state_dict(expected, given_sd)
    assert isinstance(report, LoadReport) and not report.ok
    assert report.missing_denied == ("b.w",) and report.unexpected_denied == ("c.w",)
    assert "NOT OK" in report.summary()
    with pytest.raises(CheckpointMismatchError):
        report.raise_if_not_ok()


def test_empty_checkpoint_and_empty_model() -> None:
    assert audit_state_dict({}, {}).ok
    report = audit_state_dict({"a.w": torch.zeros(1)}, {}, allow_missing=("a",))
    assert report.ok and report.missing_allowed == ("a.w",)


@pytest.mark.parametrize(("expected", "given_sd"), [([], {}), ({}, [])])
def test_audit_rejects_non_mappings(expected: object, given_sd: object) -> None:
    with pytest.raises(TypeError, match="state dict"):
        audit_state_dict(expected, given_sd)  # type: ignore[arg-type]


def test_loader_rejects_non_module() -> None:
    with pytest.raises(TypeError, match=r"nn\.Module"):
        load_state_dict_audited({"a": 1}, {})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"nn\.Module"):
        export_without("model")  # type: ignore[arg-type]


def test_output_change_validates_inputs(trained: TinyLMWithMTP) -> None:
    with pytest.raises(TypeError, match=r"torch\.long"):
        output_change(trained, trained, torch.zeros(2, 3))
    with pytest.raises(ValueError, match="different shapes"):
        output_change(trained, make(3, vocab=40), torch.arange(4).reshape(1, 4))


def test_a_refused_load_leaves_the_model_untouched_even_for_a_value_that_is_not_a_tensor(trained, fresh) -> None:
    state = {k: v.clone() for k, v in trained.state_dict().items()}
    first = next(iter(state))
    state[first] = state[first].numpy()  # an easy slip when a checkpoint was read with numpy
    before = {k: v.clone() for k, v in fresh.state_dict().items()}
    with pytest.raises(TypeError, match=rf"given\['{first}'\] is a ndarray, not a torch.Tensor"):
        load_state_dict_audited(fresh, state)
    assert all(torch.equal(before[k], v) for k, v in fresh.state_dict().items())


@pytest.mark.parametrize(
    ("dtype", "said"),
    [
        (torch.complex64, "is complex64 but the model's is float32.*drop the imaginary part.*\\.real"),
        (torch.int64, "is int64 but the model's is float32.*turn integer values into float32"),
        (torch.bool, "is bool but the model's is float32"),
    ],
)
def test_a_checkpoint_of_another_kind_of_number_is_refused_not_cast(dtype, said):
    # issue 43 item 8: complex and int64 tensors were cast into float32 silently
    model, source = TinyLM(8, 4, 2), TinyLM(8, 4, 2)
    state = {k: (v.to(dtype) if k == "embed.weight" else v) for k, v in source.state_dict().items()}
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(TypeError, match=said) as info:
        load_state_dict_audited(model, state)
    assert "\n" not in str(info.value) and "'embed.weight'" in str(info.value)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items()), "nothing loaded"


def test_a_floating_point_precision_change_still_loads():
    model, source = TinyLM(8, 4, 2), TinyLM(8, 4, 2)
    state = {k: v.to(torch.bfloat16) for k, v in source.state_dict().items()}
    assert load_state_dict_audited(model, state).ok


@pytest.mark.parametrize("value", [None, 7, "w", float("nan")])
def test_refuse_silent_casts_names_an_argument_of_the_wrong_type(value):
    # issue 43 item 8: refuse_silent_casts(None, ...) ended in "'NoneType' object is not subscriptable"
    from verlstudy.lessons.l05_checkpoint.checkpoint import refuse_silent_casts

    sd = {"w": torch.zeros(2)}
    for call, named in [
        (lambda v: refuse_silent_casts(v, sd, ["w"]), r"argument expected must be the model's state_dict"),
        (lambda v: refuse_silent_casts(sd, v, ["w"]), r"argument given must be the checkpoint's state_dict"),
        (lambda v: refuse_silent_casts(sd, sd, v), r"argument keys must be a list, each item a tensor name"),
    ]:
        with pytest.raises(TypeError, match=named):
            call(value)
    with pytest.raises(KeyError, match=r"argument keys names 'x', which is not in both state_dicts"):
        refuse_silent_casts(sd, sd, ["x"])
    refuse_silent_casts(sd, sd, ["w"])
