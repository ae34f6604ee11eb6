"""The claims' names and upstream notes in the Chinese edition (issue 45 item 1): one catalog, kept current."""

from __future__ import annotations

import re
import shutil

import polib
import pytest

from verlstudy.course import claim_catalog, cli, edition, registry
from verlstudy.kit import claims, i18n

LANG = "zh_CN"


def test_every_claim_string_the_notebooks_print_is_translated():
    assert claim_catalog.stale_claims(LANG) == []


def test_the_strings_are_read_from_the_stored_claim_records():
    strings = claim_catalog.claim_strings()
    assert strings["lessons in the course"] == ["00"]
    assert strings["verl 0.9.1 verl/workers/engine/utils.py::detach_tree"] == ["01", "02"]  # one entry, both lessons
    assert "-" not in strings and "" not in strings  # no upstream note is no string


def test_translations_keep_every_number_pr_and_path_and_follow_the_term_table():
    terms = edition.read_terms(LANG)
    identifier = re.compile(r"\S*[._:=/]\S*")  # config keys, paths, code: never translated, never a term
    for entry in polib.pofile(str(claim_catalog.claims_catalog_path(LANG))):
        if entry.obsolete:
            continue
        for kept in re.findall(r"#\d+|[\w./-]+\.(?:py|sh|yaml)|\d+(?:\.\d+)?", entry.msgid):
            assert kept in entry.msgstr, f"{entry.msgid!r}: {kept!r} lost"
        assert edition.missed_terms(identifier.sub(" ", entry.msgid), entry.msgstr, terms) == [], entry.msgid


@pytest.fixture
def claims_copy(tmp_path, monkeypatch):
    """The claims catalog copied to tmp_path and the stored strings replaced by `strings`."""
    path = tmp_path / "claims.po"
    shutil.copy(claim_catalog.claims_catalog_path(LANG), path)
    monkeypatch.setattr(claim_catalog, "claims_catalog_path", lambda lang: path)
    return path


def test_a_new_claim_is_added_untranslated_and_a_gone_one_kept_obsolete(claims_copy, monkeypatch, capsys):
    strings = dict(claim_catalog.claim_strings())
    del strings["lessons in the course"]
    strings["a claim added today"] = ["05"]
    monkeypatch.setattr(claim_catalog, "claim_strings", lambda lessons=None: strings)
    assert claim_catalog.stale_claims(LANG) == [edition.Stale("claims", "'a claim added today'", "missing")]
    assert cli.main(["edition", LANG, "05", "--check"]) == 1
    assert "claims cell 'a claim added today': missing" in capsys.readouterr().out
    assert claim_catalog.update_claims_catalog(LANG) == ["claims cell 'a claim added today': untranslated"]
    po = polib.pofile(str(claims_copy), wrapwidth=edition.WRAP)
    assert po.find("a claim added today").comment == "lesson 05"
    gone = po.find("lessons in the course", include_obsolete_entries=True)
    assert gone.obsolete and gone.msgstr == "课程中的课数"  # kept, in case it comes back
    po.find("a claim added today").msgstr = "今天加的声明"
    po.save(str(claims_copy))
    assert claim_catalog.stale_claims(LANG) == []
    before = claims_copy.read_text(encoding="utf-8")
    assert claim_catalog.update_claims_catalog(LANG) == [] and claims_copy.read_text(encoding="utf-8") == before


def test_a_claim_prints_its_name_and_upstream_note_in_chinese_and_records_them_in_english(monkeypatch, capsys):
    monkeypatch.setenv(i18n.LANG_ENV, LANG)
    claims.reset_claims()
    claims.claim("slope of #6699's quoted memory figures", 0.27, 0.27, upstream="~0.27 GiB per micro-batch (#6699)")
    out = capsys.readouterr().out
    assert "#6699 引用的显存数字的斜率" in out and "每个微批次约 0.27 GiB (#6699)" in out
    assert claims.recorded_claims()[0].name == "slope of #6699's quoted memory figures"  # data stays English
    assert claims.claims_table_view().rows[0][:2] == ("#6699 引用的显存数字的斜率", "每个微批次约 0.27 GiB (#6699)")
    monkeypatch.delenv(i18n.LANG_ENV)
    claims.claim("a name no catalog has", 1, 1)
    assert capsys.readouterr().out == "[claim] a name no catalog has: 1 (expected 1)\n"


def test_the_empty_message_is_never_the_catalogs_header(monkeypatch):
    monkeypatch.setenv(i18n.LANG_ENV, LANG)
    assert i18n._("") == ""


def test_the_catalog_ships_with_the_kit():
    assert claim_catalog.claims_catalog_path(LANG).is_file()
    assert [f.name for f in i18n.catalog_files(LANG)][:2] == ["zh_CN.po", "claims.po"]
    assert registry.LESSONS  # the strings come from the registry's notebooks
