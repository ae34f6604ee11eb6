"""The kit's learner-facing text through gettext (issue 45): English unchanged, Chinese when chosen."""

from __future__ import annotations

import json
import re

import polib
import pytest

from verlstudy.kit import claims, devices, exercises, i18n

CATALOG = i18n.resources.files("verlstudy.kit") / "locale" / "zh_CN.po"


@pytest.fixture
def english(monkeypatch):
    monkeypatch.delenv(i18n.LANG_ENV, raising=False)
    monkeypatch.delenv(i18n.SESSION_ENV, raising=False)


@pytest.fixture
def chinese(monkeypatch):
    monkeypatch.setenv(i18n.LANG_ENV, "zh_CN")
    monkeypatch.setenv("VERLSTUDY_ATTEMPTS", "0")  # no attempt log in the checkout


@pytest.mark.parametrize(
    ("value", "expected"),
    [("zh_CN", "zh_CN"), ("zh-CN", "zh_CN"), ("zh_CN.UTF-8", "zh_CN"), ("zh", "zh_CN"), ("en_US.UTF-8", None),
     ("", None), ("  ", None), ("fr", None), (None, None), (3, None)],
)  # fmt: skip
def test_a_language_setting_names_a_catalog_or_english(value, expected):
    assert i18n.normalize(value) == expected


@pytest.mark.parametrize("source", i18n.catalog_files("zh_CN"), ids=lambda f: f.name)
def test_every_catalog_entry_is_translated_and_keeps_its_fields(source):
    catalog = polib.pofile(source.read_text(encoding="utf-8"))
    assert catalog.metadata["Language"] == "zh_CN"
    for entry in catalog:
        assert entry.msgstr and "fuzzy" not in entry.flags, entry.msgid
        fields = re.compile(r"\{\w*\}")
        assert sorted(fields.findall(entry.msgid)) == sorted(fields.findall(entry.msgstr)), entry.msgid


def test_the_kit_and_every_lessons_catalog_are_read_and_agree():
    files = i18n.catalog_files("zh_CN")
    assert [f.name for f in files] == ["zh_CN.po", "claims.po", *(f"l{n:02d}.po" for n in range(10)), "site.po"]
    said: dict[tuple[str | None, str], str] = {}
    for source in files:  # a message two catalogs translate is translated alike (the merged catalog keeps the first)
        for entry in polib.pofile(source.read_text(encoding="utf-8")):
            key = (entry.msgctxt, entry.msgid)
            assert said.setdefault(key, entry.msgstr) == entry.msgstr, f"{source.name}: {entry.msgid!r}"
    assert i18n.translations("zh_CN").gettext("correct") == "正确"


def test_english_output_is_the_english_code_byte_for_byte(english, capsys):
    claims.reset_claims()
    claims.claim("bytes per micro-batch", 4096, 4096, upstream="4 KiB")
    devices.skip_unless("npu")
    assert capsys.readouterr().out == (
        "[claim] bytes per micro-batch: 4096 (expected 4096) | upstream: 4 KiB\n"
        "[skip] no NPU device here: this cell runs only with one (CPU results above stand).\n"
    )
    view = claims.claims_table_view()
    assert view.header == ("claim", "upstream", "ours", "reproduced") and view.rows[0][-1] == "yes"
    assert view.notes == ("1/1 claims reproduced",)


def test_chinese_verdicts_hints_claims_and_skip_lines(chinese, capsys):
    claims.reset_claims()
    exercises.check_exercise("0.1", lambda seed, n: 1 / 0)
    exercises.check_exercise("0.1", lambda seed, n: 1 / 0)
    claims.claim("bytes per micro-batch", 4096, 4096)
    devices.skip_unless("cuda")
    out = capsys.readouterr().out
    assert "练习 0.1：还不对：seeded_sample(7, 5) 抛出了 ZeroDivisionError：division by zero" in out  # the kit's frame
    assert "  该看哪里（第 2 次尝试）：" in out and '  （再试一次；卡住了？exercise_hint("0.1")' in out
    assert "[claim] bytes per micro-batch: 4096（预期 4096）" in out
    assert "[skip] 这里没有 CUDA 设备" in out
    view = claims.claims_table_view()
    assert view.header == ("论断", "上游", "本课程", "已复现") and view.rows[0][-1] == "是"
    assert view.notes == ("1/1 条论断已复现", "0/1 个练习正确：0.1 还不对")
    assert exercises.exercise_results() == {"0.1": "not yet right"}  # data stays English
    claims.reset_claims()


def test_a_notebook_of_the_chinese_edition_chooses_chinese_for_its_kernel(tmp_path, monkeypatch):
    monkeypatch.delenv(i18n.LANG_ENV, raising=False)
    notebook = tmp_path / "00_start_here.ipynb"
    notebook.write_text(json.dumps({"metadata": {i18n.EDITION_KEY: {"language": "zh_CN"}}, "cells": []}))
    monkeypatch.setenv(i18n.SESSION_ENV, str(notebook))
    assert i18n.language() == "zh_CN" and i18n._("not attempted") == "未作答"
    monkeypatch.setenv(i18n.LANG_ENV, "en")  # an explicit choice wins
    assert i18n.language() is None and i18n._("not attempted") == "not attempted"
    monkeypatch.delenv(i18n.LANG_ENV)
    monkeypatch.setenv(i18n.SESSION_ENV, str(tmp_path / "gone.ipynb"))
    assert i18n.language() is None


def test_the_progress_legend_follows_the_language(monkeypatch):
    from verlstudy.course.class_progress import LEGEND, legend

    monkeypatch.delenv(i18n.LANG_ENV, raising=False)
    monkeypatch.delenv(i18n.SESSION_ENV, raising=False)
    assert legend() == LEGEND
    monkeypatch.setenv(i18n.LANG_ENV, "zh_CN")
    assert legend().startswith("ok 正确 · ")


def test_a_field_may_share_the_name_of_picks_own_parameter(english):
    assert i18n.pick("{template}: {message}", template="a", message="b") == "a: b"


def test_chinese_messages_name_kinds_without_an_english_article_and_outcomes_in_words(chinese, capsys):
    from verlstudy.kit.params import a_kind

    assert a_kind(1.5) == "float" and a_kind([]) == "list"  # "得到的是 float", not "得到的是 a float"
    exercises.check_exercise(
        "7.1", lambda world, tp, pp, cp, ep, etp: (world // (tp * cp * pp), world // (etp * ep * pp))
    )
    out = capsys.readouterr().out
    assert "练习 7.1：还不对：" in out and "此处应为 抛出 ValueError" in out and "'raises ValueError'" not in out
    exercises.check_exercise("7.1", lambda world, tp, pp, cp, ep, etp: (world / (tp * cp * pp), 1.0))
    assert "得到的是 float，" in capsys.readouterr().out


def test_english_kinds_keep_their_article(english):
    from verlstudy.kit.params import a_kind

    assert a_kind(1.5) == "a float" and a_kind(3) == "an int"
