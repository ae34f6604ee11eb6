"""Editions in other languages, built from the one English source and a gettext catalog per lesson.

`notebooks/locale/<lang>/NN_topic.po` holds one entry per markdown cell of `notebooks/NN_topic.ipynb`: the
cell's id is the entry's context (msgctxt), its English source the msgid, the translation the msgstr. Code
cells are never translated: an edition copies them byte for byte. `update_catalog` brings a catalog up to date
with the English notebook (a new cell is added untranslated, unless its text is word for word one already
translated; a changed cell's entry is marked fuzzy and keeps the English its translation was made from as the
previous msgid, so a translator sees exactly what changed; a removed cell's entry turns obsolete).
`stale_cells` names every cell whose translation is missing or was made from an older English text, and
`build_edition` writes the translated notebooks, outputs cleared.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import nbformat
import polib

from verlstudy.course import registry
from verlstudy.course.files import read_notebook, write_owned
from verlstudy.course.registry import Lesson

LANGUAGES = {"zh_CN": "简体中文 (Simplified Chinese)"}
LANGUAGE_NAMES = {"zh_CN": "zh-CN"}  # the HTML/BCP 47 spelling, for a notebook's metadata
EDITION_KEY = "verlstudy_edition"  # notebook metadata: {"language": ..., "source": the English notebook's name}
WRAP = 0  # no wrapping: a markdown cell's own lines are the catalog's lines, so a diff reads like the notebook's


@dataclass(frozen=True)
class Stale:
    """A markdown cell whose translation is missing or was made from an older English text."""

    lesson: str  # the notebook stem, e.g. "05_checkpoint_strict_loading"
    cell: str  # the cell id (the catalog entry's msgctxt)
    reason: str  # "missing", "untranslated" or "fuzzy" (made from an older English text)

    def line(self) -> str:
        return f"{self.lesson} cell {self.cell}: {self.reason}"


def check_language(lang: object) -> str:
    """`lang` if the course has a catalog folder for it, else ValueError naming the languages it has."""
    if lang not in LANGUAGES:
        raise ValueError(f"no edition in {lang!r}: the course has {', '.join(LANGUAGES)}")
    return str(lang)


def locale_dir(lang: str) -> Path:
    """The folder of `lang`'s catalogs (notebooks/locale/<lang>), in the checkout or the installed bundle."""
    return registry.notebooks_dir() / "locale" / check_language(lang)


def catalog_path(lesson: Lesson, lang: str) -> Path:
    return locale_dir(lang) / f"{lesson.stem}.po"


def markdown_cells(nb: nbformat.NotebookNode, where: str = "notebook") -> list[tuple[str, str]]:
    """(cell id, source) of every markdown cell, in order; a cell without an id, or a repeated id, is an error."""
    found: list[tuple[str, str]] = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        cell_id = cell.get("id")
        if not cell_id:
            raise ValueError(f"{where}, cell {i}: a markdown cell without an id cannot be translated")
        if any(cell_id == seen for seen, _ in found):
            raise ValueError(f"{where}: two markdown cells share the id {cell_id!r}")
        found.append((cell_id, cell.source))
    return found


def _new_catalog(lesson: Lesson, lang: str) -> polib.POFile:
    po = polib.POFile(wrapwidth=WRAP)
    po.header = (
        f"verlstudy lesson {lesson.stem}: markdown cells, {LANGUAGES[lang]}.\n"
        "One entry per markdown cell: msgctxt is the cell id, msgid its English source (notebooks/*.ipynb).\n"
        "Update with `make translations`; check with `verlstudy edition " + lang + " --check` (docs/translating.md)."
    )
    po.metadata = catalog_metadata(f"verlstudy {lesson.stem}", lang)
    return po


def catalog_metadata(project: str, lang: str) -> dict[str, str]:
    """The header fields every catalog of the course carries (UTF-8, one plural form as Chinese has)."""
    return {
        "Project-Id-Version": project,
        "Language": lang,
        "MIME-Version": "1.0",
        "Content-Type": "text/plain; charset=UTF-8",
        "Content-Transfer-Encoding": "8bit",
        "Plural-Forms": "nplurals=1; plural=0;",
    }


def read_catalog(lesson: Lesson, lang: str) -> polib.POFile | None:
    """The lesson's catalog in `lang`, or None when it has none yet; a catalog polib cannot read is a ValueError."""
    return read_po(catalog_path(lesson, lang))


def read_po(path: Path) -> polib.POFile | None:
    """The catalog at `path`, or None when there is none yet; a catalog polib cannot read is a ValueError."""
    if not path.is_file():
        return None
    try:
        return polib.pofile(str(path), wrapwidth=WRAP, encoding="utf-8")
    except (OSError, ValueError) as e:
        raise ValueError(f"{path} is not a readable PO catalog ({e}); restore it, e.g. with git checkout") from e


def write_po(path: Path, po: polib.POFile) -> None:
    """Write `po` to `path` unless the file already holds exactly that text (a current catalog is left untouched)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = str(po)
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        from verlstudy.course.files import write_text

        write_text(path, text)


def updated_catalog(lesson: Lesson, lang: str) -> polib.POFile:
    """The lesson's catalog brought up to date with its English notebook (not written; see `update_catalog`)."""
    cells = markdown_cells(read_notebook(lesson.notebook), lesson.notebook.name)
    old = read_catalog(lesson, lang)
    po = _new_catalog(lesson, lang)
    if old is not None:
        po.header, po.metadata = old.header, old.metadata
    # an obsolete entry may share a live one's id or English: the live one (the translator's latest) wins
    entries = sorted(old or [], key=lambda e: not e.obsolete)
    by_id = {e.msgctxt: e for e in entries}
    # a cell whose English is word for word an entry's (a cell moved, split off or given a new id): its translation
    by_text = {e.msgid: e.msgstr for e in entries if e.msgstr and "fuzzy" not in e.flags}
    replaced: list[polib.POEntry] = []
    for cell_id, source in cells:
        entry = by_id.pop(cell_id, None)
        if entry is not None and entry.msgid != source and source in by_text:
            replaced.append(entry)  # the cell now holds another cell's text, translated: take that translation
            entry = None
        if entry is None:
            entry = polib.POEntry(msgctxt=cell_id, msgid=source, msgstr=by_text.get(source, ""))
            if not entry.msgstr and (found := split_off(source, by_text)) is not None:
                entry.previous_msgid, entry.msgstr = found  # a suggestion from the cell it was split off, to check
                entry.flags.append("fuzzy")
            po.append(entry)
            continue
        entry.obsolete = False
        if entry.msgid != source:
            if entry.msgstr and "fuzzy" not in entry.flags:
                entry.previous_msgid = entry.msgid  # the English this translation was made from
                entry.flags.append("fuzzy")
            elif not entry.msgstr:
                entry.flags = [f for f in entry.flags if f != "fuzzy"]
                entry.previous_msgid = None
            entry.msgid = source
        if "fuzzy" in entry.flags and entry.previous_msgid == source:  # changed back: the translation fits again
            entry.flags.remove("fuzzy")
            entry.previous_msgid = None
        po.append(entry)
    for entry in [*by_id.values(), *replaced]:  # cells the English notebook no longer has: kept, marked obsolete
        if entry.msgstr:
            entry.obsolete = True
            po.append(entry)
    return po


def _paragraphs(text: str) -> list[str]:
    return [p.strip("\n") for p in re.split(r"\n\s*\n", text.strip("\n")) if p.strip()]


def split_off(source: str, translated: dict[str, str]) -> tuple[str, str] | None:
    """(old English, its matching paragraphs' translation) when `source` is whole paragraphs of a translated cell.

    A long cell split into shorter ones keeps its paragraphs word for word; where the old cell's translation has as
    many paragraphs as its English, the new cell's paragraphs are taken from it: a suggestion, marked fuzzy.
    """
    wanted = _paragraphs(source)
    for english, chinese in translated.items():
        old, new = _paragraphs(english), _paragraphs(chinese)
        if len(old) != len(new) or len(old) <= len(wanted):
            continue
        for at in range(len(old) - len(wanted) + 1):
            if old[at : at + len(wanted)] == wanted:
                return english, "\n\n".join(new[at : at + len(wanted)])
    return None


def update_catalog(lesson: Lesson, lang: str) -> list[str]:
    """Write the lesson's updated catalog (`make translations`); return one line per entry that changed state."""
    before = read_catalog(lesson, lang)
    before_state = {e.msgctxt: _state(e) for e in before} if before is not None else {}
    po = updated_catalog(lesson, lang)
    write_po(catalog_path(lesson, lang), po)
    changes = []
    for entry in po:
        state = _state(entry)
        if before_state.get(entry.msgctxt) != state and state != "translated":
            changes.append(f"{lesson.stem} cell {entry.msgctxt}: {state}")
    return changes


def _state(entry: polib.POEntry) -> str:
    if entry.obsolete:
        return "obsolete"
    if not entry.msgstr:
        return "untranslated"
    return "fuzzy" if "fuzzy" in entry.flags else "translated"


def stale_cells(lang: str, lessons: Sequence[Lesson] | None = None) -> list[Stale]:
    """Every markdown cell whose translation in `lang` is missing or made from an older English text."""
    check_language(lang)
    found: list[Stale] = []
    for lesson in lessons or registry.LESSONS:
        cells = markdown_cells(read_notebook(lesson.notebook), lesson.notebook.name)
        po = read_catalog(lesson, lang)
        entries = {e.msgctxt: e for e in po if not e.obsolete} if po is not None else {}
        for cell_id, source in cells:
            entry = entries.get(cell_id)
            if entry is None:
                found.append(Stale(lesson.stem, cell_id, "missing"))
            elif not entry.msgstr:
                found.append(Stale(lesson.stem, cell_id, "untranslated"))
            elif "fuzzy" in entry.flags or entry.msgid != source:
                found.append(Stale(lesson.stem, cell_id, "fuzzy"))
    return found


def translations(lesson: Lesson, lang: str) -> dict[str, str]:
    """Cell id -> translated markdown, for the current (neither fuzzy nor stale) entries of the lesson's catalog."""
    po = read_catalog(lesson, lang)
    if po is None:
        return {}
    return {e.msgctxt: e.msgstr for e in po if not e.obsolete and e.msgstr and "fuzzy" not in e.flags}


def translated_notebook(lesson: Lesson, lang: str) -> tuple[nbformat.NotebookNode, list[str]]:
    """The lesson in `lang` (outputs cleared, code cells as they are) and the ids of cells left in English."""
    nb = read_notebook(lesson.notebook)
    done = translations(lesson, lang)
    po = read_catalog(lesson, lang)
    sources = {e.msgctxt: e.msgid for e in po if not e.obsolete} if po is not None else {}
    missing = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        elif cell.cell_type == "markdown":
            text = done.get(cell.get("id"))
            if text is None or sources.get(cell.get("id")) != cell.source:
                missing.append(str(cell.get("id")))
            else:
                cell.source = text
    nb.metadata[EDITION_KEY] = {"language": lang, "source": lesson.notebook.name}
    return nb, missing


def build_edition(
    lang: str,
    out: Path,
    lessons: Sequence[Lesson] | None = None,
    *,
    allow_missing: bool = False,
    student: bool = False,
) -> tuple[list[Path], list[Stale]]:
    """Write the lessons (default: all) in `lang` into `out`; return the written paths and the cells left in English.

    Without `allow_missing`, a cell without a current translation stops the build (ValueError naming them) and
    nothing is written. `student` writes the student edition of the translated notebooks (course.student). Files
    already in `out` are replaced only if verlstudy wrote them and nobody changed them since (files.Manifest).
    """
    from verlstudy.course.student import student_notebook

    check_language(lang)
    files: dict[str, str] = {}
    left: list[Stale] = []
    for lesson in lessons or registry.LESSONS:
        nb, missing = translated_notebook(lesson, lang)
        left += [Stale(lesson.stem, cell_id, "untranslated") for cell_id in missing]
        if student:
            nb = student_notebook(nb, lesson)
        files[lesson.notebook.name] = nbformat.writes(nb)
    if left and not allow_missing:
        raise ValueError(
            f"{len(left)} markdown cell(s) have no current {lang} translation: "
            + "; ".join(s.line() for s in left[:5])
            + (f" and {len(left) - 5} more" if len(left) > 5 else "")
            + " (pass --allow-missing to keep them in English)"
        )
    write_owned(Path(out), files, "--out")
    return [Path(out) / name for name in files], left


def read_terms(lang: str) -> dict[str, str]:
    """The terminology table (notebooks/locale/<lang>/terms.tsv): English term -> the translation to use."""
    path = locale_dir(lang) / "terms.tsv"
    terms: dict[str, str] = {}
    with path.open(encoding="utf-8", newline="") as f:
        for row in csv.reader(f, delimiter="\t"):
            if not row or row[0].startswith("#"):
                continue
            if len(row) < 2 or not row[0].strip() or not row[1].strip():
                raise ValueError(f"{path}: a row needs an English term and its translation, got {row!r}")
            terms[row[0].strip()] = row[1].strip()
    return terms


# ---------------------------------------------------------------- what a translation must keep, and the term table

CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
LINK_TARGET = re.compile(r"\]\(([^)\s]+)\)")
PR_NUMBER = re.compile(r"(?<![\w/#])#\d{3,5}\b")
URL = re.compile(r"https?://[^\s)>\]]+")


def kept_fragments(markdown: str) -> list[str]:
    """What a translation must carry over unchanged: code spans, link targets, URLs and PR numbers (#7345)."""
    spans = [m.group(0) for m in CODE_SPAN.finditer(markdown)]
    prose = CODE_SPAN.sub(" ", markdown)
    return spans + LINK_TARGET.findall(prose) + URL.findall(prose) + PR_NUMBER.findall(prose)


def lost_fragments(english: str, translated: str) -> list[str]:
    """The fragments of `english` (kept_fragments) that `translated` does not carry, as many times as they occur."""
    have = kept_fragments(translated)
    lost = []
    for fragment in kept_fragments(english):
        if fragment in have:
            have.remove(fragment)
        else:
            lost.append(fragment)
    return lost


def prose_only(markdown: str) -> str:
    """`markdown` without code spans, link targets and URLs: where a term can be used as a word."""
    return URL.sub(" ", LINK_TARGET.sub("] ", CODE_SPAN.sub(" ", markdown)))


def missed_terms(english: str, translated: str, terms: dict[str, str]) -> list[str]:
    """Each term of `terms` the English prose uses (singular or plural, longest first) whose translation is absent."""
    prose = prose_only(english)
    missed = []
    for term in sorted(terms, key=len, reverse=True):
        pattern = re.compile(rf"(?<![\w-]){re.escape(term)}(?:s|es)?(?![\w-])", re.I)
        if pattern.search(prose):
            prose = pattern.sub(" ", prose)  # "router replay" is not also "router"
            if terms[term] not in translated:
                missed.append(f"{term} -> {terms[term]}")
    return missed
