"""Exercise 8.1 answers: pin_policy(ref, tags, branches) -> "unpinned" | "tag" | "branch" | "commit" | "missing"."""

import re
import string

_HEX = frozenset("0123456789abcdef")


# --- wrong ---
def w_blank_is_unpinned(ref, tags, branches):
    # strips the ref: a blank ref is a ref (missing), not "no ref"; " v1 " is not "v1"
    ref = ref.strip() if isinstance(ref, str) else ref
    if not ref:
        return "unpinned"
    if ref in tags:
        return "tag"
    if ref in branches:
        return "branch"
    return "commit" if 7 <= len(ref) <= 40 and set(ref) <= _HEX else "missing"


def w_any_case_hex(ref, tags, branches):
    # accepts upper-case hex digits: the text says lower-case
    if not ref:
        return "unpinned"
    if ref in tags:
        return "tag"
    if ref in branches:
        return "branch"
    return "commit" if re.fullmatch(r"[0-9a-fA-F]{7,40}", ref) else "missing"


def w_regex_dollar(ref, tags, branches):
    # `$` also matches before a final line end: "abcdef1\n" passes as a commit
    if not ref:
        return "unpinned"
    if ref in tags:
        return "tag"
    if ref in branches:
        return "branch"
    return "commit" if re.match(r"^[0-9a-f]{7,40}$", ref) else "missing"


def w_isdigit_unicode(ref, tags, branches):
    # str.isdigit and \d accept other scripts' digits
    if not ref:
        return "unpinned"
    if ref in tags:
        return "tag"
    if ref in branches:
        return "branch"
    return "commit" if re.fullmatch(r"[\da-f]{7,40}", ref) else "missing"


def w_hex_before_names(ref, tags, branches):
    # tests the hash shape first: a tag or branch named with hex digits is called a commit
    if not ref:
        return "unpinned"
    if 7 <= len(ref) <= 40 and set(ref) <= _HEX:
        return "commit"
    if ref in tags:
        return "tag"
    return "branch" if ref in branches else "missing"


def w_prefix_match(ref, tags, branches):
    # a ref that starts a held name counts: "core_v0.18" matches "core_v0.18.0"
    if not ref:
        return "unpinned"
    if any(t.startswith(ref) for t in tags):
        return "tag"
    if any(b.startswith(ref) for b in branches):
        return "branch"
    return "commit" if 7 <= len(ref) <= 40 and set(ref) <= _HEX else "missing"


def w_case_insensitive(ref, tags, branches):
    # compares names case-insensitively: case counts
    if not ref:
        return "unpinned"
    if ref.lower() in {t.lower() for t in tags}:
        return "tag"
    if ref.lower() in {b.lower() for b in branches}:
        return "branch"
    return "commit" if 7 <= len(ref) <= 40 and set(ref) <= _HEX else "missing"


def w_strips_origin(ref, tags, branches):
    # drops "origin/" and "^{}": a ref written so is not the held name
    if not ref:
        return "unpinned"
    name = ref.removeprefix("origin/").removesuffix("^{}")
    if name in tags:
        return "tag"
    if name in branches:
        return "branch"
    return "commit" if 7 <= len(name) <= 40 and set(name) <= _HEX else "missing"


def w_length_64(ref, tags, branches):
    # accepts SHA-256's 64 digits and any length from 4
    if not ref:
        return "unpinned"
    if ref in tags:
        return "tag"
    if ref in branches:
        return "branch"
    return "commit" if 4 <= len(ref) <= 64 and set(ref) <= _HEX else "missing"


def w_none_only(ref, tags, branches):
    # only None is "no ref": "" falls through to missing
    if ref is None:
        return "unpinned"
    if ref in tags:
        return "tag"
    if ref in branches:
        return "branch"
    return "commit" if 7 <= len(ref) <= 40 and set(ref) <= _HEX else "missing"


def w_int_hex(ref, tags, branches):
    # int(ref, 16) accepts "0x", signs, underscores and blanks
    if not ref:
        return "unpinned"
    if ref in tags:
        return "tag"
    if ref in branches:
        return "branch"
    try:
        int(ref, 16)
    except ValueError:
        return "missing"
    return "commit" if 7 <= len(ref.strip()) <= 40 else "missing"


def w_consumes_iterator(ref, tags, branches):
    # empties the caller's collections to search them (pops from lists and sets)
    if not ref:
        return "unpinned"
    found = None
    for kind, names in (("tag", tags), ("branch", branches)):
        while hasattr(names, "pop") and len(names):
            if names.pop() == ref:
                found = kind
        if found:
            return found
    return "commit" if 7 <= len(ref) <= 40 and set(ref) <= _HEX else "missing"


# --- right ---
def r_fullmatch_class(ref, tags, branches):
    if ref is None or ref == "":
        return "unpinned"
    if any(ref == t for t in tags):
        return "tag"
    if any(ref == b for b in branches):
        return "branch"
    if re.fullmatch(r"[0-9a-f]{7,40}", ref, flags=re.ASCII):
        return "commit"
    return "missing"


def r_table(ref, tags, branches):
    if not ref:
        return "unpinned"
    kinds = {name: "tag" for name in tags}
    kinds.update({name: "branch" for name in branches})
    if ref in kinds:
        return kinds[ref]
    looks_like_hash = len(ref) in range(7, 41) and all(c in string.hexdigits.lower()[:16] for c in ref)
    return "commit" if looks_like_hash else "missing"


def r_char_codes(ref, tags, branches):
    if ref in (None, ""):
        return "unpinned"
    for label, names in (("tag", frozenset(tags)), ("branch", frozenset(branches))):
        if ref in names:
            return label
    if not 7 <= len(ref) <= 40:
        return "missing"
    for ch in ref:
        if not ("0" <= ch <= "9" or "a" <= ch <= "f"):
            return "missing"
    return "commit"


WRONG = {
    "blank is unpinned (strip)": (w_blank_is_unpinned,),
    "upper-case hex": (w_any_case_hex,),
    "regex $ before a newline": (w_regex_dollar,),
    "\\d accepts other digits": (w_isdigit_unicode,),
    "hash shape before names": (w_hex_before_names,),
    "prefix of a held name": (w_prefix_match,),
    "case-insensitive names": (w_case_insensitive,),
    "origin/ and ^{} stripped": (w_strips_origin,),
    "lengths 4 to 64": (w_length_64,),
    "only None unpinned": (w_none_only,),
    "int(ref, 16)": (w_int_hex,),
    "pops the collections": (w_consumes_iterator,),
}
RIGHT = {
    "fullmatch ASCII": (r_fullmatch_class,),
    "name table": (r_table,),
    "character ranges": (r_char_codes,),
}
UNSURE = {}
