"""Lesson 06's picture: each process's imports in order, coloured by what they do, printed as drawn."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from verlstudy.lessons.l06_external_modules.modules_env import ADAPTOR, HOOK_PACKAGE, LIBRARY, Experiment, Outcome
from verlstudy.lessons.l06_external_modules.timeline import draw_timeline, timeline_rows


def _outcome(name, imports, env, worker=None, backend="vanilla", worker_backend=None):
    return Outcome(Experiment(name, imports, env, worker), backend, worker_backend, False)


def test_rows_name_what_each_import_does_and_give_a_worker_its_own_row():
    outcomes = [
        _outcome("verl first", (HOOK_PACKAGE, LIBRARY), ADAPTOR, (LIBRARY,), "patched", "vanilla"),
        _outcome("unset", (HOOK_PACKAGE, LIBRARY), None),
        _outcome("blank", (HOOK_PACKAGE, LIBRARY), " " + ADAPTOR),  # verl does not strip: the hook names nothing
    ]
    rows = timeline_rows(outcomes, {"verl first": "driver", "verl first / worker": "worker"})
    assert [r[0] for r in rows] == ["driver", "worker", "unset", "blank"]
    assert rows[0][1] == [(HOOK_PACKAGE, "hook imports the adaptor"), (LIBRARY, "library: patched")]
    assert rows[1] == ("worker", [(LIBRARY, "library: unpatched")], False)
    assert rows[2][1][0] == (HOOK_PACKAGE, "hook runs, imports nothing") == rows[3][1][0]
    with pytest.raises(ValueError):
        timeline_rows([], {})


def test_the_picture_prints_each_row(capsys):
    outcomes = [_outcome("explicit", (ADAPTOR, LIBRARY), None, None, "patched")]
    fig = draw_timeline(outcomes, {}, show=False)
    out = capsys.readouterr().out
    chain = "toylib_adaptor (adaptor imported directly) -> toylib.model (library: patched)"
    assert out.strip() == f"explicit | {chain} => patched"
    plt.close(fig)


@pytest.mark.parametrize("value", [None, 7, "abc", float("nan")])
def test_timeline_names_an_argument_of_the_wrong_type(value):
    # issue 43 item 8: timeline_rows(7, {}) ended in "'int' object is not iterable"
    with pytest.raises(TypeError, match=r"argument outcomes must be a list, each item an Outcome"):
        timeline_rows(value, {})
    with pytest.raises(TypeError, match=r"argument outcomes\[0\] must be an Outcome"):
        draw_timeline([value], {}, show=False)
    outcome = Outcome(Experiment("e", (HOOK_PACKAGE, LIBRARY), ADAPTOR), "b", None, True)
    with pytest.raises(TypeError, match=r"argument stands_for must be a mapping \{experiment name: row label\}"):
        timeline_rows([outcome], value)
