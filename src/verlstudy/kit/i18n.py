"""The kit's learner-facing text in the learner's language, through Python's gettext.

English is the source: every message is written in English in the code, and `_()` returns it unchanged unless
a language is chosen, so English output stays byte for byte what nbval stored. A language is chosen by the
environment variable `VERLSTUDY_LANG` (`zh_CN`; `make lab LANG=zh_CN` and the Chinese edition's test set it),
or, when that is unset, by the notebook a Jupyter kernel runs: JupyterLab names it in `JPY_SESSION_NAME`, and a
notebook of a translated edition carries its language in its metadata (`verlstudy_edition.language`).

The catalogs are gettext PO files shipped in this package (`verlstudy/kit/locale/<lang>.po`); they are read with
polib and handed to the standard library's `gettext.GNUTranslations`, so there is no compiled file to keep in
step. A message the catalog lacks (or marks fuzzy) stays English. Data is never translated: verdicts and claims
are recorded in English (`records`, the attempt log); only the printed and displayed lines change, and a checker's
message is recorded as the learner read it.
"""

from __future__ import annotations

import functools
import gettext
import io
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

LANG_ENV = "VERLSTUDY_LANG"
SESSION_ENV = "JPY_SESSION_NAME"  # set by jupyter_server for a notebook's kernel: the notebook's path
LANGUAGES = ("zh_CN",)
EDITION_KEY = "verlstudy_edition"  # the notebook metadata a translated edition writes (course.edition)
_HELD: list[str | None] = []  # languages chosen by `held` blocks, innermost last


def normalize(value: object) -> str | None:
    """The catalog a language setting names ("zh_CN", "zh-CN", "zh_CN.UTF-8", "zh"), or None for English."""
    if not isinstance(value, str) or not value.strip():
        return None
    tag = value.strip().split(".")[0].replace("-", "_")
    if tag.lower() in ("zh", "zh_cn", "zh_hans", "zh_hans_cn"):
        return "zh_CN"
    return tag if tag in LANGUAGES else None


@functools.lru_cache(maxsize=8)
def _notebook_language(path: str, mtime: float) -> str | None:
    try:
        metadata = json.loads(Path(path).read_text(encoding="utf-8")).get("metadata", {})
    except (OSError, ValueError, AttributeError):
        return None
    edition = metadata.get(EDITION_KEY) if isinstance(metadata, dict) else None
    return normalize(edition.get("language")) if isinstance(edition, dict) else None


def language() -> str | None:
    """The language the learner's messages are in: a catalog name such as "zh_CN", or None for English."""
    if _HELD:
        return _HELD[-1]
    chosen = os.environ.get(LANG_ENV)
    if chosen is not None and chosen.strip():
        return normalize(chosen)
    session = os.environ.get(SESSION_ENV, "")
    if session.endswith(".ipynb"):
        try:
            return _notebook_language(session, os.stat(session).st_mtime)
        except OSError:
            return None
    return None


@contextmanager
def held(lang: str | None) -> Iterator[None]:
    """Messages inside the block are in `lang` (None: English) whatever the environment says.

    For code that reads the kit's printed lines back, such as lesson 00's demonstration of the hint ladder, which
    finds each rung by its English words: it holds English so that the same code runs in every edition.
    """
    if lang is not None and normalize(lang) is None:
        raise ValueError(f"no catalog for {lang!r}: the kit has {', '.join(LANGUAGES)} (or None for English)")
    _HELD.append(normalize(lang))
    try:
        yield
    finally:
        _HELD.pop()


def catalog_files(lang: str) -> list:
    """The PO files of `lang`: the kit's own (`locale/<lang>.po`), then one per lesson's checker messages
    (`locale/<lang>/lNN.po`, so lessons are translated apart without editing one file), in name order."""
    if not isinstance(lang, str):
        raise TypeError(f"lang must be a catalog's name such as 'zh_CN', got {type(lang).__name__}")
    locale = resources.files("verlstudy.kit") / "locale"
    found = [locale / f"{lang}.po"] if (locale / f"{lang}.po").is_file() else []
    folder = locale / lang
    if folder.is_dir():
        found += sorted((f for f in folder.iterdir() if f.name.endswith(".po")), key=lambda f: f.name)
    return found


@functools.lru_cache(maxsize=4)
def translations(lang: str) -> gettext.NullTranslations:
    """The catalogs of `lang` as stdlib gettext translations (fuzzy entries left out); English if there is none.

    One message translated in two catalogs must be translated alike (a test holds them to it); the first wins."""
    import polib

    files = catalog_files(lang)
    if not files:
        return gettext.NullTranslations()
    merged = polib.POFile()
    merged.metadata = {"Content-Type": "text/plain; charset=UTF-8", "Language": lang}
    seen: set[tuple[str | None, str]] = set()
    for source in files:
        for entry in polib.pofile(source.read_text(encoding="utf-8")):
            if (entry.msgctxt, entry.msgid) not in seen and not entry.obsolete:
                seen.add((entry.msgctxt, entry.msgid))
                merged.append(entry)
    return gettext.GNUTranslations(io.BytesIO(merged.to_binary()))


def _(message: str) -> str:
    """`message` in the learner's language (itself when English is chosen or the catalog lacks it)."""
    lang = language()
    if lang is None or not message:  # gettext("") is the catalog's header, never a translation
        return message
    return translations(lang).gettext(message)


def pick(template: str, /, **values: object) -> str:
    """`_(template)` with its `{named}` fields filled in: one template per line, in every language alike (a field
    may be called anything, `message` and `template` too)."""
    if not isinstance(template, str):
        raise TypeError(f"pick's template must be a message (a str), got {type(template).__name__}")
    return _(template).format(**values)
