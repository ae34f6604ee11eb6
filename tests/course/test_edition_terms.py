"""The Chinese edition's wording (issue 45): the term table is used, and what is code stays code.

Each translated markdown cell whose English prose (outside code spans and link targets) uses a term of
notebooks/locale/zh_CN/terms.tsv has the table's Chinese for it; every code span, link target, URL and PR number
(#7345) of the English cell appears unchanged in the Chinese one.
"""

from __future__ import annotations

import nbformat
import pytest

from verlstudy.course import edition, registry

LANG = "zh_CN"
TERMS = edition.read_terms(LANG)


def _entries():
    for lesson in registry.LESSONS:
        for entry in edition.read_catalog(lesson, LANG) or []:
            if entry.msgstr and not entry.obsolete:
                yield lesson, entry


def test_the_term_table_has_the_terms_the_brief_names_and_no_duplicates():
    must = {
        "memory leak": "显存泄漏",
        "pipeline parallelism": "流水线并行",
        "micro-batch": "微批次",
        "router replay": "路由重放",
        "1F1B": "1F1B",
    }
    assert {k: TERMS[k] for k in must} == must
    assert len(TERMS) >= 40
    lines = [line.split("\t")[0] for line in (edition.locale_dir(LANG) / "terms.tsv").read_text().splitlines()]
    terms = [t for t in lines if t and not t.startswith("#")]
    assert len(terms) == len(set(terms))


@pytest.mark.parametrize("lesson", registry.LESSONS, ids=lambda lesson: lesson.code)
def test_each_translated_cell_uses_the_term_table(lesson):
    missed = [
        f"{entry.msgctxt}: {', '.join(m)}"
        for entry in edition.read_catalog(lesson, LANG) or []
        if entry.msgstr and not entry.obsolete and (m := edition.missed_terms(entry.msgid, entry.msgstr, TERMS))
    ]
    assert not missed, f"{lesson.stem}: " + "; ".join(missed)


@pytest.mark.parametrize("lesson", registry.LESSONS, ids=lambda lesson: lesson.code)
def test_code_spans_links_urls_and_pr_numbers_are_never_translated(lesson):
    lost = [
        f"{entry.msgctxt}: {lost}"
        for entry in edition.read_catalog(lesson, LANG) or []
        if entry.msgstr and not entry.obsolete and (lost := edition.lost_fragments(entry.msgid, entry.msgstr))
    ]
    assert not lost, f"{lesson.stem}: " + "; ".join(lost)


def test_the_glossary_keeps_its_english_anchors():
    """Every lesson links to 00_start_here.ipynb#<term>: the glossary's headings stay as they are."""
    lesson = registry.get_lesson("00")
    done = edition.translations(lesson, LANG)
    english = edition.markdown_cells(nbformat.read(lesson.notebook, as_version=4))

    def headings(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.startswith("#### ")]

    assert sum(len(headings(text)) for _, text in english) > 30
    for cell_id, text in english:
        assert headings(done[cell_id]) == headings(text), cell_id


def test_the_checks_catch_what_they_are_for():
    english = "The [micro-batch](00_start_here.ipynb#micro-batch) leak, `detach_tree`, #7874 and https://x.org/a."
    assert edition.lost_fragments(
        english, "[微批次](00_start_here.ipynb#micro-batch) 的泄漏，`detach_tree`，#7874"
    ) == ["https://x.org/a."]
    assert edition.lost_fragments(english, "[微批次](#micro-batch)，`detach tree`，#7874，https://x.org/a.") == [
        "`detach_tree`",
        "00_start_here.ipynb#micro-batch",
    ]
    assert edition.missed_terms(english, "小批次", TERMS) == ["micro-batch -> 微批次"]
    assert edition.missed_terms("router replay mode", "路由重放模式", TERMS) == []  # not also "router"
    assert edition.missed_terms("`micro_batch` only", "只有 `micro_batch`", TERMS) == []  # code is not prose
