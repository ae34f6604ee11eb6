"""Exercise 8.1: pin_policy(ref, tags, branches), held-out answers."""

import re
import string


def _is_hash(ref):
    return re.fullmatch(r"[0-9a-f]{7,40}", ref) is not None


# WRONG ---------------------------------------------------------------
def w_blank_unpinned(ref, tags, branches):
    # a blank ref is a ref ("missing"), not "unpinned"
    if ref is None or not ref.strip():
        return "unpinned"
    if ref in tags:
        return "tag"
    if ref in branches:
        return "branch"
    return "commit" if _is_hash(ref) else "missing"


def w_case_insensitive(ref, tags, branches):
    # compares names case-insensitively: case counts
    if not ref:
        return "unpinned"
    if ref.lower() in {t.lower() for t in tags}:
        return "tag"
    if ref.lower() in {b.lower() for b in branches}:
        return "branch"
    return "commit" if _is_hash(ref) else "missing"


def w_stripped(ref, tags, branches):
    # strips the ref first: blanks count
    if not ref:
        return "unpinned"
    ref = ref.strip()
    if ref in tags:
        return "tag"
    if ref in branches:
        return "branch"
    return "commit" if _is_hash(ref) else "missing"


def w_dollar_regex(ref, tags, branches):
    # re.match with $: accepts a hash followed by a line end
    if not ref:
        return "unpinned"
    if ref in tags:
        return "tag"
    if ref in branches:
        return "branch"
    return "commit" if re.match(r"[0-9a-f]{7,40}$", ref) else "missing"


def w_int_base16(ref, tags, branches):
    # int(ref, 16) accepts 0x, a sign, blanks, underscores and capitals
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
    return "commit" if 7 <= len(ref) <= 40 else "missing"


def w_sha256_too(ref, tags, branches):
    # accepts 64-digit SHA-256 hashes
    if not ref:
        return "unpinned"
    if ref in tags:
        return "tag"
    if ref in branches:
        return "branch"
    return "commit" if re.fullmatch(r"[0-9a-f]{7,64}", ref) else "missing"


def w_hash_first(ref, tags, branches):
    # tests the hash shape before the names: a branch named of hex digits comes back "commit"
    if not ref:
        return "unpinned"
    if _is_hash(ref):
        return "commit"
    if ref in tags:
        return "tag"
    return "branch" if ref in branches else "missing"


def w_substring(ref, tags, branches):
    # a ref inside a held name counts as that name
    if not ref:
        return "unpinned"
    if any(ref in t for t in tags):
        return "tag"
    if any(ref in b for b in branches):
        return "branch"
    return "commit" if _is_hash(ref) else "missing"


def w_unicode_digits(ref, tags, branches):
    # str.isdigit accepts other scripts' digits
    if not ref:
        return "unpinned"
    if ref in tags:
        return "tag"
    if ref in branches:
        return "branch"
    ok = 7 <= len(ref) <= 40 and all(ch.isdigit() or ch in "abcdef" for ch in ref)
    return "commit" if ok else "missing"


def w_last_path_part(ref, tags, branches):
    # matches the last part of a path: "origin/main" is taken as branch "main"
    if not ref:
        return "unpinned"
    name = ref.rsplit("/", 1)[-1]
    if ref in tags or name in tags:
        return "tag"
    if ref in branches or name in branches:
        return "branch"
    return "commit" if _is_hash(ref) else "missing"


def w_sorts_tags(ref, tags, branches):
    # sorts the caller's list in place (and fails on a tuple or set)
    tags.sort()
    if not ref:
        return "unpinned"
    if ref in tags:
        return "tag"
    if ref in branches:
        return "branch"
    return "commit" if _is_hash(ref) else "missing"


# RIGHT ---------------------------------------------------------------
_HEX = frozenset("0123456789abcdef")


def r_charset(ref, tags, branches):
    if ref is None or ref == "":
        return "unpinned"
    for word, names in (("tag", tags), ("branch", branches)):
        if any(ref == name for name in names):
            return word
    if 7 <= len(ref) <= 40 and set(ref) <= _HEX:
        return "commit"
    return "missing"


def r_early_returns(ref, tags, branches):
    if ref in (None, ""):
        return "unpinned"
    tag_set, branch_set = frozenset(tags), frozenset(branches)
    if ref in tag_set:
        return "tag"
    if ref in branch_set:
        return "branch"
    if len(ref) < 7 or len(ref) > 40:
        return "missing"
    if not all(ch in string.digits or ch in "abcdef" for ch in ref):
        return "missing"
    return "commit"


def r_regex_dict(ref, tags, branches):
    if not ref:
        return "unpinned"
    kinds = {name: "branch" for name in branches}
    kinds.update({name: "tag" for name in tags})
    if ref in kinds:
        return kinds[ref]
    return "commit" if re.fullmatch(r"[0-9a-f]{7,40}", ref, flags=re.ASCII) else "missing"


WRONG = {
    "blank is unpinned": (w_blank_unpinned,),
    "case-insensitive names": (w_case_insensitive,),
    "ref stripped": (w_stripped,),
    "re.match with $": (w_dollar_regex,),
    "int(ref, 16)": (w_int_base16,),
    "SHA-256 accepted": (w_sha256_too,),
    "hash test first": (w_hash_first,),
    "substring of a name": (w_substring,),
    "other scripts' digits": (w_unicode_digits,),
    "last part of a path": (w_last_path_part,),
    "sorts the caller's tags": (w_sorts_tags,),
}
RIGHT = {
    "char set, loop over kinds": (r_charset,),
    "early returns, frozensets": (r_early_returns,),
    "name -> kind dict, fullmatch": (r_regex_dict,),
}
UNSURE = {}
