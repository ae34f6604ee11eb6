"""The claims' names and upstream notes in a translated edition: one catalog, made from the English notebooks.

A lesson's code cells are the same in every edition, so a claim's name and its upstream note are English text in
code. They are translated where they are printed (`kit.claims` passes them through `kit.i18n`), from
`verlstudy/kit/locale/<lang>/claims.po`: one entry per distinct string that the stored English notebooks' claim
records hold (a name, or an upstream note other than "-"), each commented with the lessons that print it. The
records themselves stay English (data is never translated). `update_claims_catalog` adds a new string untranslated
and turns a string no lesson prints any more obsolete (its translation kept); `stale_claims` names every string
whose translation is missing, like `edition.stale_cells` for markdown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path

import polib

from verlstudy.course import registry
from verlstudy.course.edition import WRAP, Stale, catalog_metadata, check_language, read_po, write_po
from verlstudy.course.files import read_notebook
from verlstudy.course.registry import Lesson
from verlstudy.kit.records import records_in_outputs

CLAIMS_LESSON = "claims"  # what a Stale line names instead of a lesson


def claims_catalog_path(lang: str) -> Path:
    """`verlstudy/kit/locale/<lang>/claims.po`, in the checkout or the installed package."""
    return Path(str(resources.files("verlstudy.kit") / "locale" / check_language(lang) / "claims.po"))


def claim_strings(lessons: Sequence[Lesson] | None = None) -> dict[str, list[str]]:
    """Each claim name and upstream note the stored notebooks print -> the lessons (codes) that print it, in order."""
    found: dict[str, list[str]] = {}
    for lesson in lessons or registry.LESSONS:
        for cell in read_notebook(lesson.notebook).cells:
            for record in records_in_outputs(cell.get("outputs", [])):
                if record.get("kind") != "claim":
                    continue
                for text in (record.get("name"), record.get("upstream")):
                    if isinstance(text, str) and text.strip() and text != "-":
                        where = found.setdefault(text, [])
                        if lesson.code not in where:
                            where.append(lesson.code)
    return found


def read_claims_catalog(lang: str) -> polib.POFile | None:
    return read_po(claims_catalog_path(lang))


def _new_claims_catalog(lang: str) -> polib.POFile:
    po = polib.POFile(wrapwidth=WRAP)
    po.header = (
        "verlstudy: the claims' names and upstream notes, as the English notebooks' claim records hold them.\n"
        "Update with `make translations`; check with `verlstudy edition " + lang + " --check` (docs/translating.md)."
    )
    po.metadata = catalog_metadata("verlstudy claims", lang)
    return po


def update_claims_catalog(lang: str) -> list[str]:
    """Bring claims.po up to date with every lesson's stored claims; one line per string that needs a translator."""
    strings = claim_strings()
    before = read_claims_catalog(lang)
    old = {e.msgid: e for e in before} if before is not None else {}
    po = _new_claims_catalog(lang)
    for text, where in strings.items():
        kept = old.pop(text, None)
        entry = polib.POEntry(msgid=text, msgstr=kept.msgstr if kept else "")
        entry.comment = "lesson " + ", ".join(where)
        if kept is not None and "fuzzy" in kept.flags:
            entry.flags.append("fuzzy")
        po.append(entry)
    for entry in old.values():  # no lesson prints it now: kept, out of the way, in case it comes back
        if entry.msgstr:
            entry.obsolete = True
            po.append(entry)
    write_po(claims_catalog_path(lang), po)
    return [item.line() for item in stale_claims(lang, po, strings)]


def stale_claims(lang: str, po: polib.POFile | None = None, strings: Mapping[str, object] | None = None) -> list[Stale]:
    """Every claim string the notebooks print whose translation in `lang` is missing (or fuzzy); `po` and
    `strings` (`claim_strings()`) when the caller has them already."""
    po = po if po is not None else read_claims_catalog(lang)
    entries = {e.msgid: e for e in po if not e.obsolete} if po is not None else {}
    found = []
    for text in strings if strings is not None else claim_strings():
        entry = entries.get(text)
        reason = "missing" if entry is None else "untranslated" if not entry.msgstr else ""
        reason = reason or ("fuzzy" if "fuzzy" in entry.flags else "")  # type: ignore[union-attr]
        if reason:
            found.append(Stale(CLAIMS_LESSON, repr(text), reason))
    return found
