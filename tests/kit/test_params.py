"""Parameter validation: a bad papermill value names the parameter and what is allowed."""

import pytest

from verlstudy.kit.params import check_choice, check_float, check_int, positive_int


def test_check_choice_accepts_an_allowed_value_and_names_the_rest():
    assert check_choice("mode", "R2", ("disabled", "R2", "R3")) == "R2"
    with pytest.raises(ValueError, match=r"parameter mode='R4' is not allowed; choose one of 'disabled', 'R2', 'R3'"):
        check_choice("mode", "R4", ("disabled", "R2", "R3"))


@pytest.mark.parametrize("bad", ["3", 3.0, True, None])
def test_check_int_rejects_non_integers(bad):
    with pytest.raises(TypeError, match="parameter n must be an integer"):
        check_int("n", bad)


def test_check_int_range():
    assert check_int("n", 3, minimum=1, maximum=3) == 3
    with pytest.raises(ValueError, match="1 <= n <= 3"):
        check_int("n", 4, minimum=1, maximum=3)
    with pytest.raises(ValueError, match="allowed: n <= 0"):
        check_int("n", 1, maximum=0)


def test_check_float():
    assert check_float("lr", 1, minimum=0.0) == 1.0
    with pytest.raises(TypeError, match="lr must be a number"):
        check_float("lr", "0.1")
    with pytest.raises(ValueError, match="out of range"):
        check_float("lr", -0.5, minimum=0.0)


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        (0, ValueError, r"argument tp must be a positive integer \(>= 1\), got 0"),
        (-3, ValueError, "got -3"),
        (2.0, TypeError, "argument tp must be a positive integer, got float 2.0"),
        (True, TypeError, "got bool True"),
        ("2", TypeError, "got str '2'"),
    ],
)
def test_positive_int_names_the_argument_and_what_is_allowed(value, error, match):
    with pytest.raises(error, match=match):
        positive_int("tp", value)


def test_positive_int_returns_a_plain_int():
    import numpy as np

    assert positive_int("tp", np.int64(4)) == 4 and type(positive_int("tp", np.int64(4))) is int


def test_a_range_open_on_one_side_reads_plainly():
    with pytest.raises(ValueError, match=r"allowed: seed >= 0$"):
        check_int("seed", -1, minimum=0)
    with pytest.raises(ValueError, match=r"allowed: 0.0 <= lr <= 1.0$"):
        check_float("lr", 2.0, minimum=0.0, maximum=1.0)


def test_check_str_path_instance_and_items_name_the_argument_on_one_line():
    from pathlib import Path

    from verlstudy.kit.params import check_instance, check_items, check_path, check_str

    assert check_str("text", "a") == "a"
    assert check_path("folder", "x") == Path("x")
    assert check_instance("n", 3, int, what="an int") == 3
    assert check_items("pins", (1, 2), int, what="an int") == [1, 2]
    with pytest.raises(TypeError, match=r"^argument text must be shell text \(a str\), got NoneType None$"):
        check_str("text", None, what="shell text (a str)")
    with pytest.raises(TypeError, match=r"^argument folder must be a path \(str or Path\), got bytes b'x'$"):
        check_path("folder", b"x")
    with pytest.raises(
        TypeError, match=r"^argument pins must be a list, each item a Pin \(from pins_in_files\), got str 'ab'$"
    ):
        check_items("pins", "ab", int, what="a Pin (from pins_in_files)")
    with pytest.raises(TypeError, match=r"^argument pins\[1\] must be a Pin, got str 'b'$"):
        check_items("pins", [1, "b"], int, what="a Pin")
    assert check_items("pins", iter([1]), int, what="an int") == [1]
    with pytest.raises(TypeError, match=r"^argument pins must be a list, each item a Pin, got dict \{'a': 1\}$"):
        check_items("pins", {"a": 1}, int, what="a Pin")
    with pytest.raises(TypeError, match=r"got str 'x{59}\.\.\.$"):
        check_instance("tree", "x" * 200 + "\n", dict, what="a dict")


def test_check_callable_names_what_is_not_a_function():
    from verlstudy.kit.params import check_callable

    assert check_callable("ours", len) is len
    with pytest.raises(TypeError, match=r"^argument ours must be a function \(or None\), got int 7$"):
        check_callable("ours", 7, what="a function (or None)")


@pytest.mark.parametrize(
    ("call", "names"),
    [
        (lambda: __import__("verlstudy.kit.resources", fromlist=["x"]).read_data_csv(None, None), "argument path"),
        (lambda: __import__("verlstudy.kit.resources", fromlist=["x"]).read_data_text(3), "argument path"),
        (lambda: __import__("verlstudy.kit.upstream", fromlist=["x"]).upstream_file(None), "argument relative"),
        (lambda: __import__("verlstudy.kit.upstream", fromlist=["x"]).load_from_source(None, ["f"]), "argument source"),
        (lambda: __import__("verlstudy.kit.upstream", fromlist=["x"]).report_check("01", None), "argument runs"),
        (lambda: __import__("verlstudy.kit.hygiene", fromlist=["x"]).sanitize(None), "argument text"),
        (lambda: __import__("verlstudy.kit.plots", fromlist=["x"]).fit_layout(None), "argument fig"),
        (lambda: __import__("verlstudy.kit.colab", fromlist=["x"]).pins(None), "argument installed"),
        (lambda: __import__("verlstudy.kit.colab", fromlist=["x"]).requirement_name(None), "argument requirement"),
        (lambda: __import__("verlstudy.kit.i18n", fromlist=["x"]).pick(None), "template must be a message"),
    ],
)
def test_the_kits_doors_name_a_wrong_type_in_one_line(call, names):
    # tester case LH9 and the rest of the kit's public helpers: one TypeError naming the argument, never pathlib's
    with pytest.raises(TypeError, match=names) as raised:
        call()
    assert "\n" not in str(raised.value)
