"""8.1 pin_policy(ref, tags, branches) -> unpinned | tag | branch | commit | missing."""
import re
import string


def _hash_ok(ref):
    return re.fullmatch(r"[0-9a-f]{7,40}", ref) is not None


def _base(ref, tags, branches, is_hash=_hash_ok, pre=lambda r: r, unpinned=lambda r: not r):
    if unpinned(ref):
        return "unpinned"
    ref = pre(ref)
    if ref in tags:
        return "tag"
    if ref in branches:
        return "branch"
    return "commit" if is_hash(ref) else "missing"


def w_hash_before_names(ref, tags, branches):
    if not ref:
        return "unpinned"
    if _hash_ok(ref):
        return "commit"
    if ref in tags:
        return "tag"
    return "branch" if ref in branches else "missing"


def w_prefix_tag_match(ref, tags, branches):
    if not ref:
        return "unpinned"
    if any(t.startswith(ref) for t in tags):
        return "tag"
    if any(b.startswith(ref) for b in branches):
        return "branch"
    return "commit" if _hash_ok(ref) else "missing"


def _int16(x):
    try:
        int(x, 16)
    except ValueError:
        return False
    return 7 <= len(x) <= 40


def w_int16(ref, tags, branches):
    return _base(ref, tags, branches, is_hash=_int16)


WRONG = {
    "\\d in the hash class (other scripts' digits)": (lambda r, t, b: _base(r, t, b, is_hash=lambda x: re.fullmatch(r"[\da-f]{7,40}", x) is not None),),
    "re.match with ^...$ (trailing newline)": (lambda r, t, b: _base(r, t, b, is_hash=lambda x: re.match(r"^[0-9a-f]{7,40}$", x) is not None),),
    "upper-case hex accepted": (lambda r, t, b: _base(r, t, b, is_hash=lambda x: re.fullmatch(r"[0-9a-fA-F]{7,40}", x) is not None),),
    "strips blanks before the lookup": (lambda r, t, b: _base(r, t, b, pre=str.strip),),
    "a blank ref is unpinned": (lambda r, t, b: _base(r, t, b, unpinned=lambda x: not x or not x.strip()),),
    "hash tested before tags and branches": (w_hash_before_names,),
    "full 40-digit hashes only": (lambda r, t, b: _base(r, t, b, is_hash=lambda x: re.fullmatch(r"[0-9a-f]{40}", x) is not None),),
    "int(ref, 16) as the hash test": (w_int16,),
    "tag/branch by prefix": (w_prefix_tag_match,),
    "off by one: 7 <= len < 40": (lambda r, t, b: _base(r, t, b, is_hash=lambda x: 7 <= len(x) < 40 and all(c in "0123456789abcdef" for c in x)),),
    "case-insensitive name lookup": (lambda r, t, b: "unpinned" if not r else ("tag" if r.lower() in {x.lower() for x in t} else "branch" if r.lower() in {x.lower() for x in b} else ("commit" if _hash_ok(r) else "missing")),),
}


def r_none_or_empty(ref, tags, branches):
    if ref is None or ref == "":
        return "unpinned"
    if ref in tags:
        return "tag"
    if ref in branches:
        return "branch"
    if 7 <= len(ref) <= 40 and set(ref) <= set("0123456789abcdef"):
        return "commit"
    return "missing"


def r_frozenset(ref, tags, branches):
    if not ref:
        return "unpinned"
    kinds = {name: "tag" for name in frozenset(tags)} | {name: "branch" for name in frozenset(branches)}
    if ref in kinds:
        return kinds[ref]
    hexdigits = set(string.digits + "abcdef")
    return "commit" if len(ref) in range(7, 41) and all(ch in hexdigits for ch in ref) else "missing"


_HASH = re.compile(r"[0-9a-f]{7,40}\Z")


def r_compiled(ref, tags, branches):
    if ref in (None, ""):
        return "unpinned"
    for word, names in (("tag", tags), ("branch", branches)):
        if any(ref == name for name in names):
            return word
    return "commit" if _HASH.match(ref) else "missing"


RIGHT = {"explicit None/'' and set <= hexdigits": (r_none_or_empty,), "dict of kinds": (r_frozenset,), r"compiled [0-9a-f]{7,40}\Z": (r_compiled,)}
