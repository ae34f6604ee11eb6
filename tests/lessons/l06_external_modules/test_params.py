import pytest

from verlstudy.lessons.l06_external_modules.params import lesson_params


def test_lesson_params_validates_and_reports(capsys):
    p = lesson_params("cpu", 20.0, 0)
    assert p.device.type == "cpu" and p.timeout_s == 20.0
    assert "running on cpu" in capsys.readouterr().out
    for bad in ((0.5, 0), (121.0, 0), (20.0, -1)):
        with pytest.raises(ValueError):
            lesson_params("cpu", *bad)
