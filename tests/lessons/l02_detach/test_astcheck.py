"""Specification of astcheck: finding values stored under "model_output" that skip detach_tree."""

from __future__ import annotations

import ast
import gc
import importlib.util
import textwrap
from pathlib import Path

import pytest
import torch

from verlstudy.common.trees import grad_attached_paths
from verlstudy.kit.upstream import verl_available
from verlstudy.lessons.l02_detach.astcheck import (
    EXAMPLE_ENGINES,
    UPSTREAM_ENGINES,
    _parent_links,
    check_sources,
    find_stores,
    stored_outputs_without,
    unwrap_calls,
    upstream_engine_files,
)
from verlstudy.lessons.l02_detach.upstream import REVIEWED_WRITES, engine_sources, unwrapped_stores

ENGINES = Path(__file__).resolve().parents[3] / "data" / "engines"
ENGINE_FILES = {name: ENGINES / f"{name}_engine.py" for name in EXAMPLE_ENGINES}


def src(text: str) -> str:
    return textwrap.dedent(text)


def unwrapped_lines(text: str) -> list[int]:
    return [s.line for s in stored_outputs_without("detach_tree", src(text))]


# --- the kinds of store --------------------------------------------------------------------------


def test_dict_entry_wrapped_and_not() -> None:
    text = """
    def f(mo):
        a = {"model_output": detach_tree(mo), "loss": 1}
        b = {"model_output": mo}
        return a, b
    """
    stores = find_stores(src(text))
    assert [(s.line, s.kind, s.wrapped) for s in stores] == [(3, "dict entry", True), (4, "dict entry", False)]
    assert stores[1].function == "f" and stores[1].value == "mo"


def test_subscript_assignment_and_attribute_call() -> None:
    text = """
    def f(out, mo):
        out["model_output"] = utils.detach_tree(mo)
        out["model_output"] = mo.detach()
        out["model_output"]["routed_experts"] = mo  # a write into the stored dict: judged too
    """
    assert unwrapped_lines(text) == [4, 5]


def test_annotated_subscript_assignment() -> None:
    assert unwrapped_lines("def f(out, mo):\n    out['model_output']: dict = mo\n") == [2]


def test_nested_dict_displays() -> None:
    text = """
    def f(mo):
        return {"outer": {"inner": [{"model_output": mo}]}, "model_output": detach_tree(mo)}
    """
    stores = find_stores(src(text))
    assert [(s.value, s.wrapped) for s in stores] == [("mo", False), ("detach_tree(mo)", True)]
    assert len(stored_outputs_without("detach_tree", src(text))) == 1


def test_dict_call_and_update_keywords() -> None:
    text = """
    def f(out, mo):
        a = dict(model_output=mo, loss=1)
        b = dict(model_output=detach_tree(mo))
        out.update(model_output=mo)
        loss_function(model_output=mo)  # passing an argument is not a store
    """
    stores = find_stores(src(text))
    assert [(s.line, s.kind, s.wrapped) for s in stores] == [
        (3, "dict(...) keyword", False),
        (4, "dict(...) keyword", True),
        (5, "update(...) keyword", False),
    ]


def test_setdefault_literal_default_is_fine_but_a_live_value_is_not() -> None:
    text = """
    def f(out, mo):
        out.setdefault("model_output", {})["routes"] = 1
        out.setdefault("model_output", mo)
        out.setdefault("model_output")
    """
    assert unwrapped_lines(text) == [4]


def test_writes_into_the_stored_dict_are_judged_and_can_be_reviewed_by_inner_key() -> None:
    text = """
    def f(out, mo, routes):
        out.setdefault("model_output", {})["routed_experts"] = routes
        out["model_output"]["entropy"] = mo
        out["model_output"]["log_probs"] = detach_tree(mo)
        out["metrics"]["entropy"] = mo  # another key's dict: not a store
    """
    stores = find_stores(src(text))
    writes = [(s.line, s.kind, s.written_key, s.wrapped) for s in stores if s.written_key]
    assert writes == [
        (3, "write into model_output['routed_experts']", "routed_experts", False),
        (4, "write into model_output['entropy']", "entropy", False),
        (5, "write into model_output['log_probs']", "log_probs", True),
    ]
    reviewed = find_stores(src(text), reviewed={"routed_experts": "integer indices"})
    assert [s.line for s in reviewed if not s.wrapped] == [4]
    assert next(s for s in reviewed if s.line == 3 and s.written_key).reason == "reviewed: integer indices"
    with pytest.raises(TypeError, match="reviewed must map"):
        find_stores(src(text), reviewed={"routed_experts": 1})  # type: ignore[dict-item]


def test_review_clears_writes_only_not_stores_under_the_key() -> None:
    text = "def f(out, mo):\n    out['model_output'] = mo\n"
    assert [s.line for s in find_stores(text, reviewed={"model_output": "x"}) if not s.wrapped] == [2]


def test_unwrap_calls_removes_only_the_call_and_keeps_line_numbers() -> None:
    text = src("""
    a = {"model_output": detach_tree(mo), "loss": 1}
    b = utils.detach_tree(
        mo,
    )
    c = "é" + detach_tree(detach_tree((mo)))
    d = detach_tree(mo, cpu=True)  # not the one-argument form: kept
    """)
    copy, removed = unwrap_calls(text)
    assert removed == 4
    assert copy.splitlines() == [
        "",
        'a = {"model_output": (mo), "loss": 1}',
        "b = (",
        "    mo",
        ")",
        'c = "é" + (((mo)))',
        "d = detach_tree(mo, cpu=True)  # not the one-argument form: kept",
    ]
    assert [s.line for s in stored_outputs_without("detach_tree", copy)] == [2]
    with pytest.raises(ValueError, match="wrapper must be a Python identifier"):
        unwrap_calls(text, wrapper="detach tree")


@pytest.mark.parametrize("name", EXAMPLE_ENGINES)
def test_parent_links_are_ast_walks_links_in_ast_walks_order(name: str) -> None:
    tree = ast.parse(ENGINE_FILES[name].read_text() + "\nx = [y async for y in z if (w := y)]\n")
    walked = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    links = _parent_links(tree)
    assert list(links) == list(walked)  # the same nodes, first met in the same order
    assert all(links[node] is walked[node] for node in walked)  # shared ctx nodes (Load()) keep the last parent


def test_a_parse_error_leaves_the_collector_on() -> None:
    assert gc.isenabled()
    with pytest.raises(ValueError, match="not valid Python"):
        find_stores("def f(:\n")
    assert gc.isenabled()


def test_key_through_module_constant() -> None:
    text = """
    KEY = "model_output"

    def f(out, mo):
        out[KEY] = mo
    """
    assert unwrapped_lines(text) == [5]


def test_other_keys_and_wrappers() -> None:
    text = "def f(mo):\n    return {'outputs': mo, 'model_output': my_detach(mo)}\n"
    assert stored_outputs_without("my_detach", text) == []
    assert [s.line for s in stored_outputs_without("detach_tree", text)] == [2]
    assert [s.value for s in find_stores(text, key="outputs")] == ["mo"]


# --- aliasing through a variable -----------------------------------------------------------------


def test_alias_of_wrapped_value_is_accepted() -> None:
    text = """
    def f(mo):
        stored = detach_tree(mo)
        alias = stored
        return {"model_output": alias}
    """
    (store,) = find_stores(src(text))
    assert store.wrapped and store.reason == "alias of detach_tree(...)"


def test_reassignment_after_wrapping_is_caught() -> None:
    text = """
    def f(mo):
        stored = detach_tree(mo)
        stored = mo
        return {"model_output": stored}
    """
    assert unwrapped_lines(text) == [5]


@pytest.mark.parametrize(
    "rebinding",
    [
        "stored, extra = mo, 1",
        "stored += mo",
        "for stored in [mo]:\n        pass",
        "with ctx(mo) as stored:\n        pass",
        "[stored, *rest] = [mo]",
    ],
)
def test_any_later_rebinding_breaks_the_alias(rebinding: str) -> None:
    text = f"""
def f(mo, ctx):
    stored = detach_tree(mo)
    {rebinding}
    return {{"model_output": stored}}
"""
    (store,) = find_stores(text)
    assert not store.wrapped and "is rebound on line 4" in store.reason


def test_walrus_and_comprehension_variables() -> None:
    text = """
    def f(mo):
        if (stored := detach_tree(mo)) is not None:
            pass
        names = [stored for stored in ["a", "b"]]  # the comprehension's own variable
        return {"model_output": stored, "names": names}

    def g(mo):
        return {"model_output": (kept := detach_tree(mo))}

    def h(mo):
        return {"model_output": (kept := mo)}
    """
    assert [(s.function, s.wrapped) for s in find_stores(src(text))] == [("f", True), ("g", True), ("h", False)]


def test_assignment_order_is_by_line_not_by_nesting() -> None:
    text = """
    def f(mo, flag):
        if flag:
            stored = mo
        stored = detach_tree(mo)
        return {"model_output": stored}
    """
    assert unwrapped_lines(text) == []


def test_wrapping_after_the_store_does_not_count() -> None:
    text = """
    def f(mo):
        out = {"model_output": mo}
        mo = detach_tree(mo)
        return out
    """
    assert unwrapped_lines(text) == [3]


def test_conditional_wrapping_is_not_trusted() -> None:
    text = """
    def f(mo, flag):
        if flag:
            mo = detach_tree(mo)
        return {"model_output": mo}
    """
    (store,) = find_stores(src(text))
    assert not store.wrapped and "only conditionally" in store.reason


def test_wrapping_in_the_same_branch_is_trusted() -> None:
    text = """
    def f(mo, flag):
        if flag:
            mo = detach_tree(mo)
            return {"model_output": mo}
        return {}
    """
    assert unwrapped_lines(text) == []


def test_alias_does_not_leak_across_functions() -> None:
    text = """
    def g(mo):
        stored = detach_tree(mo)

    def f(stored):
        return {"model_output": stored}
    """
    (store,) = find_stores(src(text))
    assert not store.wrapped and "not assigned" in store.reason


def test_module_level_store() -> None:
    (store,) = find_stores("OUT = {'model_output': x}\n")
    assert store.function == "<module>" and not store.wrapped


def test_describe_line() -> None:
    (store,) = find_stores("def f(mo):\n    return {'model_output': mo}\n")
    assert store.describe() == (
        "line 2 in f: dict entry = mo -> NOT WRAPPED ('mo' is not assigned from detach_tree(...) in this function)"
    )


# --- bad input -----------------------------------------------------------------------------------


def test_bad_input() -> None:
    with pytest.raises(TypeError, match="source must be a str"):
        find_stores(b"x = 1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not valid Python"):
        find_stores("def f(:\n")
    with pytest.raises(ValueError, match="wrapper must be a Python identifier"):
        find_stores("x = 1", wrapper="detach tree")
    with pytest.raises(ValueError, match="key must be a non-empty"):
        find_stores("x = 1", key="")
    with pytest.raises(ValueError, match="non-empty mapping"):
        check_sources({})
    with pytest.raises(ValueError, match="no store under 'model_output'"):
        check_sources({"empty": "x = 1\n"})
    # issue 43 item 8: a broken engine file is named, not only "source is not valid Python"
    with pytest.raises(ValueError, match=r"^megatron/transformer_impl\.py: source is not valid Python: .* at line 2$"):
        check_sources({"megatron/transformer_impl.py": "x = 1\ndef (:\n"})


# --- the example engines in data/engines -----------------------------------------------------


def test_example_engines_exactly_one_unwrapped_once_the_routing_write_is_reviewed() -> None:
    sources = {name: path.read_text() for name, path in ENGINE_FILES.items()}
    report = check_sources(sources, reviewed=REVIEWED_WRITES)
    unwrapped = {name: [s.line for s in stores] for name, stores in unwrapped_stores(report).items()}
    assert unwrapped["torchtitan"] and not any(unwrapped[n] for n in ("fsdp", "megatron", "automodel", "course_alias"))
    kinds = {s.kind for stores in report.values() for s in stores}
    assert {"dict entry", "subscript assignment", "dict(...) keyword", "setdefault"} <= kinds
    strict = unwrapped_stores(check_sources(sources))
    assert [s.written_key for s in strict["megatron"]] == ["routed_experts"]


def _load(path: Path) -> object:
    spec = importlib.util.spec_from_file_location(f"engine_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", EXAMPLE_ENGINES)
def test_example_engines_run_and_the_static_verdict_matches_what_they_store(name: str) -> None:
    torch.manual_seed(0)
    policy = torch.nn.Sequential(torch.nn.Embedding(3, 4), torch.nn.Linear(4, 5))
    batch = {"states": torch.tensor([0, 1, 2]), "actions": torch.tensor([4, 0, 1])}

    def loss_function(model_output: dict, micro_batch: dict) -> tuple[torch.Tensor, dict]:
        loss = -model_output["log_probs"].mean()
        return loss, {"loss": loss.item()}

    loss, output = _load(ENGINE_FILES[name]).forward_step(policy, batch, loss_function)
    assert loss.requires_grad
    flagged = stored_outputs_without("detach_tree", ENGINE_FILES[name].read_text())
    static_ok = not [s for s in flagged if s.written_key is None]  # megatron's routing write is the reviewed one
    assert static_ok == (grad_attached_paths(output, "output") == [])


# --- upstream's real files (only where verl is installed) ----------------------------------------


def test_upstream_engine_files_rejects_bad_root(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="installed verl package directory"):
        upstream_engine_files(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="lacks engine files"):
        upstream_engine_files(tmp_path)


@pytest.mark.skipif(not verl_available(), reason="verl is not installed")
def test_upstream_091_engines_are_all_wrapped_but_two_reviewed_routing_writes() -> None:
    sources = engine_sources()
    assert all(s.wrapped for stores in check_sources(sources, reviewed=REVIEWED_WRITES).values() for s in stores)
    strict = unwrapped_stores(check_sources(sources))
    assert {n: [s.written_key for s in found] for n, found in strict.items() if found} == {
        "megatron": ["routed_experts", "routed_experts"]
    }


@pytest.mark.skipif(not verl_available(), reason="verl is not installed")
@pytest.mark.parametrize("name", UPSTREAM_ENGINES)
def test_a_091_copy_with_the_call_removed_is_caught(name: str) -> None:
    copy, removed = unwrap_calls(engine_sources()[name])
    assert removed >= 1
    flagged = [s for s in stored_outputs_without("detach_tree", copy) if s.written_key is None]
    assert len(flagged) == 1 and "not from detach_tree" in flagged[0].reason


@pytest.mark.skipif(not verl_available("0.9.0"), reason="verl 0.9.0 was not fetched (make setup fetches it)")
def test_090_before_7874_true_positives_and_the_fsdp_comprehension_flagged() -> None:
    strict = unwrapped_stores(check_sources(engine_sources("0.9.0")))
    stores = {n: [s for s in found if s.written_key is None] for n, found in strict.items()}
    assert all(len(found) == 1 for found in stores.values())  # megatron, automodel, torchtitan; fsdp by name only
    assert "detach_tree" not in engine_sources("0.9.0")["fsdp"]
    assert "grad_fn is not None" in engine_sources("0.9.0")["fsdp"]  # #6699's comprehension


@pytest.mark.parametrize("value", [None, 7, [1], float("nan")])
def test_astcheck_helpers_name_an_argument_of_the_wrong_type(value):
    # issue 43 item 8: these ended in a raw TypeError/AttributeError ('NoneType' object has no attribute 'items')
    from verlstudy.lessons.l02_detach.astcheck import upstream_engine_files

    with pytest.raises(TypeError, match=r"argument verl_root must be the installed verl package directory"):
        upstream_engine_files(value)
    with pytest.raises(TypeError, match=r"argument report must be check_sources' report \{engine: list of Store\}"):
        unwrapped_stores(value)
    with pytest.raises(TypeError, match=r"argument report\['fsdp'\](\[0\])? must be (a list, each item )?a Store"):
        unwrapped_stores({"fsdp": value})
